"""What the caches hold (`caches.contents`, model.md 5) against the walk's own record.

The contents come from the cache module (src/cache.c), the hit steps from the walk
(src/translate.c, shadow.c, agile.c): every access's served lines must be exactly the lines
its hit steps name, a hit must yield the access's hpa, and the LRU order must be the one
worked out by hand for a two-way TLB set."""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "wasm-core" / "examples"
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))
SCHEMA = ROOT / "wasm-core" / "schema" / "result.schema.json"


def run(scenario):
    assert os.path.exists(VMSIM), "build the engine first: make -C wasm-core native"
    p = subprocess.run([VMSIM, "run", "-"], input=json.dumps(scenario), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def with_contents(name, mode=None):
    s = json.loads((EXAMPLES / f"{name}.json").read_text())
    s["caches"] = {**s.get("caches", {"preset": "x86-server"}), "contents": True}
    if mode:
        s["mode"] = mode
    return s


def covers(line, addr):
    a, lo = int(addr, 16), int(line["from"], 16)
    return lo <= a < lo + line["size"]


def key(line):
    return (line["level"], line["from"], line["size"])


CASES = [("caches-ept", None), ("context-switch", None), ("vmfunc-tlb", None),
         ("caches-ept", "npt"), ("ept-4k", None), ("shadow", None), ("agile-switch-l2", None),
         ("native-4k", None), ("ept-5level", None), ("ept-2m", None)]


@pytest.mark.parametrize("name,mode", CASES, ids=[f"{n}-{m or 'own'}" for n, m in CASES])
def test_served_lines_are_the_hits_of_the_walk(name, mode):
    result = run(with_contents(name, mode))
    for i, a in enumerate(result["accesses"]):
        held = a["cache_contents"]
        tlb = held["tlb"]
        served = {k: [l for l in (held[k] or {"lines": []})["lines"] if l["served"]] for k in held}
        where = f"access {i} ({a['op']} {a['gva']})"
        # the TLB: a hit is the one served line, and it yields the access's hpa
        if a["cache"] and a["cache"]["tlb"] == "hit":
            assert len(served["tlb"]) == 1, where
            line = served["tlb"][0]
            assert covers(line, a["gva"]), where
            assert int(line["to"], 16) + int(a["gva"], 16) - int(line["from"], 16) == int(a["hpa"], 16), where
            assert tlb["lines"][0] is line or tlb["lines"][0] == line, f"{where}: a hit makes the line the most recent"
        else:
            assert served["tlb"] == [], where
        # a completed walk leaves its page in the TLB, most recently used
        if a["op"] in ("read", "write", "fetch") and a["outcome"] == "ok" and a["cache"]["tlb"] == "miss":
            first = tlb["lines"][0]
            assert first["filled"] and first["rank"] == 0 and covers(first, a["gva"]), where
        # the walk caches: each pwc_hit step names a served line at its level covering the address
        hits = [s for s in a["steps"] if s["kind"] == "pwc_hit"]
        # shadow and agile record their shadow-table walk-cache hits as nested steps without a gpa
        guest_hits = [s for s in hits if s["dim"] == "guest" or s["gpa"] is None]
        nested_hits = [s for s in hits if s not in guest_hits]
        assert {(s["level"],) for s in guest_hits} == {(l["level"],) for l in served["guest_pwc"]}, where
        for s in guest_hits:
            assert any(l["level"] == s["level"] and covers(l, a["gva"]) and int(l["to"], 16) == int(s["table"], 16)
                       for l in served["guest_pwc"]), f"{where}: guest walk cache L{s['level']}"
        want = {(s["level"], s["gpa"]) for s in nested_hits}
        for lvl, gpa in want:
            assert any(l["level"] == lvl and covers(l, gpa) for l in served["nested_pwc"]), f"{where}: nested L{lvl} {gpa}"
        assert len(served["nested_pwc"]) == len({key(l) for l in served["nested_pwc"]})
        assert all(any(l["level"] == lvl and covers(l, gpa) for lvl, gpa in want) for l in served["nested_pwc"]), where
        # the nested TLB: each ntlb_hit step's gpa is covered by a served line that yields its hpa
        nt = [s for s in a["steps"] if s["kind"] == "ntlb_hit"]
        for s in nt:
            assert any(covers(l, s["gpa"]) and int(l["to"], 16) == int(s["entry"], 16) for l in served["ntlb"]), where
        assert all(any(covers(l, s["gpa"]) for s in nt) for l in served["ntlb"]), where
        # LRU order: ranks in a set are 0..k-1, in list order; no cache over its size
        for k, c in held.items():
            if c is None:
                continue
            assert c["valid"] <= c["entries"] and len(c["lines"]) == min(c["valid"], 32)
            by_set = {}
            for l in c["lines"]:
                by_set.setdefault(l["set"], []).append(l["rank"])
            for ranks in by_set.values():
                assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks) and max(ranks) < c["ways"]
            if c["valid"] <= 32:
                for ranks in by_set.values():
                    assert ranks == list(range(len(ranks))), f"{where}: {k} ranks {ranks}"


def test_two_way_tlb_set_evicts_the_least_recently_used_page():
    """A fully associative 2-entry TLB: A, B, A, C -> C replaces B (A was used after B);
    then B replaces A. Worked out by hand from LRU, not recorded."""
    s = json.loads((EXAMPLES / "ept-4k.json").read_text())
    s["guest"]["mappings"] = [{"gva": "0x400000", "gpa": "0x200000", "pages": 4}]
    s["nested"] = {"mappings": [{"gpa": "0x0", "hpa": "0x80000000", "pages": 1024}]}
    s["caches"] = {"tlb": {"entries": 2, "ways": 0}, "contents": True}
    A, B, C = "0x400000", "0x401000", "0x402000"
    s["accesses"] = [{"gva": g, "op": "read"} for g in (A, B, A, C, B)]
    r = run(s)
    held = [[(l["from"], l["rank"], l["served"], l["filled"]) for l in a["cache_contents"]["tlb"]["lines"]]
            for a in r["accesses"]]
    assert held[0] == [(A, 0, False, True)]
    assert held[1] == [(B, 0, False, True), (A, 1, False, False)]
    assert held[2] == [(A, 0, True, False), (B, 1, False, False)]
    assert held[3] == [(C, 0, False, True), (A, 1, False, False)]
    assert held[4] == [(B, 0, False, True), (C, 1, False, False)]
    assert [a["cache"]["tlb"] for a in r["accesses"]] == ["miss", "miss", "hit", "miss", "miss"]
    assert all(a["cache_contents"]["guest_pwc"] is None and a["cache_contents"]["ntlb"] is None for a in r["accesses"])


def test_contents_only_when_asked_and_bounded():
    s = with_contents("caches-ept")
    del s["caches"]["contents"]
    assert all("cache_contents" not in a for a in run(s)["accesses"])
    s = with_contents("caches-ept")
    s["accesses"] = [{"gva": hex(0x400000 + (i % 4) * 0x1000), "op": "read"} for i in range(300)]
    r = run(s)
    assert sum("cache_contents" in a for a in r["accesses"]) == 256
    assert "cache_contents" not in r["accesses"][256]


def test_result_with_contents_matches_the_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    for name, mode in CASES[:4]:
        jsonschema.validate(run(with_contents(name, mode)), schema)
