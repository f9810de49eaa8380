"""`vmsim replay`: a recorded trace through every mode.

- The streaming replay's counters equal `vmsim run` on the same accesses: for a short
  trace the machine is rebuilt here as scenarios from the layout rule of
  wasm-core/docs/replay.md (written again in this file), every access is run through
  `vmsim run`, and the per-access results are added up, for every mode, both presets,
  cold and warm starts, 4 KiB and 2 MiB guest pages, 2 MiB and 4 KiB host pages.
- Traces are written by hwlab.tracefile (Python, apart from the C encoder and decoder).
- Truncated, corrupt, oversized, wrong-version and not-a-trace files are refused with
  exit 2 and a message that says what is wrong."""
import json
import os
import pathlib
import random
import struct
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))
sys.path.insert(0, str(ROOT / "hw-lab" / "lib"))

from hwlab.tracefile import KIND, encode_body, gzip_bytes, make_header, pack, write_trace  # noqa: E402

MODES = ["native", "ept", "npt", "shadow", "flat"]
OPS = {0: "read", 1: "write", 2: "fetch", 3: "write"}
DATA_GPA, TABLES, HOST, HOST_TABLES = 0x4000000, 0x1000000, 0x100000000, 0x800000000
COST = {"x86-server": (10, 40, 1700, 0), "sunway-1621": (10, 40, 1700, 20)}


def replay(path, *args, fmt="json"):
    p = subprocess.run([VMSIM, "replay", str(path), "--quiet", "--format", fmt, *args],
                       capture_output=True, text=True, timeout=300)
    return p


def replay_json(path, *args):
    p = replay(path, *args)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["format"] == "vmsim-replay/1"
    return out


def synthetic(seed, n=1500):
    """A program-like stream: code pages fetched in runs, a stack, a heap, a 2 MiB region
    touched densely (for 2 MiB pages), and a far mapping."""
    rnd = random.Random(seed)
    code = [0x401000 + 0x1000 * i for i in range(6)]
    stack = [0x7ffd_ff00_0000 - 0x1000 * i for i in range(3)]
    heap = [0x5555_5560_0000 + 0x1000 * i for i in range(40)]
    far = [0x7f12_3400_0000 + 0x1000 * i for i in range(4)]
    out = []
    pc = code[0]
    for _ in range(n):
        r = rnd.random()
        if r < 0.5:
            pc = rnd.choice(code) + rnd.randrange(0, 4096, 4) if rnd.random() < 0.1 else pc + 3
            if pc >> 12 not in {c >> 12 for c in code}:
                pc = code[0]
            out.append((KIND["fetch"], pc))
        elif r < 0.7:
            out.append((rnd.choice([KIND["load"], KIND["store"]]), rnd.choice(stack) + rnd.randrange(0, 4096, 8)))
        elif r < 0.95:
            out.append((rnd.choice([KIND["load"], KIND["store"], KIND["modify"]]), rnd.choice(heap) + rnd.randrange(4096)))
        else:
            out.append((KIND["load"], rnd.choice(far) + rnd.randrange(4096)))
    return out


# ---- the machine, written again from docs/replay.md ----

def layout(accesses, guest_2m, huge_min):
    pages = sorted({a >> 12 for _, a in accesses})
    huge_regions = []
    if guest_2m:
        regions = {}
        for p in pages:
            regions.setdefault(p >> 9, []).append(p)
        huge_regions = sorted(r for r, ps in regions.items() if len(ps) >= huge_min)
    huge = set(huge_regions)
    small = [p for p in pages if p >> 9 not in huge]
    gpa4k_base = DATA_GPA + (len(huge_regions) << 21)
    items = [(r << 21, DATA_GPA + (i << 21), "2M") for i, r in enumerate(huge_regions)]
    items += [(p << 12, gpa4k_base + (i << 12), "4K") for i, p in enumerate(small)]
    items.sort()
    maps = []
    for gva, gpa, size in items:
        step = 1 << (21 if size == "2M" else 12)
        if maps and maps[-1]["page"] == size and maps[-1]["_gva"] + maps[-1]["pages"] * step == gva \
                and maps[-1]["_gpa"] + maps[-1]["pages"] * step == gpa:
            maps[-1]["pages"] += 1
        else:
            maps.append({"_gva": gva, "_gpa": gpa, "page": size, "pages": 1})
    ram = gpa4k_base + (len(small) << 12)
    ram = (ram + (2 << 20) - 1) & ~((2 << 20) - 1)
    return pages, [{"gva": hex(m["_gva"]), "gpa": hex(m["_gpa"]), "page": m["page"], "pages": m["pages"]}
                   for m in maps], ram


def scenario(mode, maps, ram, preset, host_4k, accesses, agile_sw=0):
    s = {"name": "replay-check", "mode": mode,
         "guest": {"paging": "4level", "table_base": hex(TABLES), "mappings": maps},
         "caches": {"preset": preset}, "accesses": accesses}
    slots = [{"gpa": "0x0", "hpa": hex(HOST), "pages": ram >> 12}]
    if mode == "agile":
        s["agile"] = {"table_base": hex(HOST_TABLES + (1 << 30)), "switch_level": agile_sw}
    if mode in ("ept", "npt", "agile"):
        s["nested"] = {"table_base": hex(HOST_TABLES), "mappings": [
            {"gpa": "0x0", "hpa": hex(HOST), "page": "4K" if host_4k else "2M",
             "pages": (ram >> 12) if host_4k else (ram >> 21)}]}
    elif mode == "flat":
        s["flat"] = {"table_base": hex(HOST_TABLES), "guest_ram": hex(ram), "prefill": True, "mappings": slots}
    elif mode == "shadow":
        s["shadow"] = {"table_base": hex(HOST_TABLES), "mappings": slots}
    return s


def expected(accesses, mode, preset="x86-server", guest_2m=False, huge_min=1, host_4k=False, warm=False, agile_sw=0):
    pages, maps, ram = layout(accesses, guest_2m, huge_min)
    seen = {}
    for k, a in accesses:
        seen.setdefault(a >> 12, set()).add(OPS[k] if k != 3 else "write")
        if k == 3:
            seen[a >> 12].add("read")
    warmup = [{"gva": hex(p << 12), "op": op, "user": True}
              for p in pages for op in ("fetch", "read", "write") if op in seen[p]] if warm else []
    run = [{"gva": hex(a), "op": OPS[k], "user": True} for k, a in accesses]
    assert len(warmup) + len(run) <= 4096
    s = scenario(mode, maps, ram, preset, host_4k, warmup + run, agile_sw)
    p = subprocess.run([VMSIM, "run", "-"], input=json.dumps(s), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)["accesses"][len(warmup):]
    e = {k: sum(r[k] for r in res) for k in ("memory_refs", "guest_refs", "nested_refs", "ad_writes", "exits")}
    e["accesses"] = len(res)
    e["tlb_misses"] = sum(1 for r in res if r["cache"]["tlb"] == "miss")
    e["pwc_hits"] = sum(r["cache"]["pwc_hits"] for r in res)
    e["ntlb_hits"] = sum(r["cache"]["ntlb_hits"] for r in res)
    hpf = sum(1 for r in res for st in r["steps"] if st["result"] == "hidden_page_fault")
    e["hidden_page_fault"] = hpf
    e["walks"] = e["tlb_misses"] + (hpf if mode in ("shadow", "agile") else 0)
    e["faults"] = sum(1 for r in res if r["outcome"] != "ok")
    ca, cr, ce, trap = COST[preset]
    e["cycles"] = round(len(res) * ca + e["memory_refs"] * cr + e["exits"] * ce + e["tlb_misses"] * trap)
    return e


def check(path, accesses, **kw):
    args = []
    if kw.get("preset"):
        args += ["--preset", kw["preset"]]
    if kw.get("guest_2m"):
        args += ["--guest-pages", "2m", "--huge-min", str(kw.get("huge_min", 1))]
    if kw.get("host_4k"):
        args += ["--host-pages", "4k"]
    if kw.get("warm"):
        args += ["--start", "warm"]
    out = replay_json(path, *args)
    got = {m["mode"]: m for m in out["modes"]}
    assert list(got) == MODES
    for mode in MODES:
        e = expected(accesses, mode, **kw)
        g = got[mode]
        assert g["accesses"] == e["accesses"]
        assert g["refs"] == e["memory_refs"], mode
        assert g["guest_refs"] == e["guest_refs"], mode
        assert g["nested_refs"] == e["nested_refs"], mode
        assert g["ad_writes"] == e["ad_writes"], mode
        assert g["exits"] == e["exits"], mode
        assert g["tlb_misses"] == e["tlb_misses"], mode
        assert g["pwc_hits"] == e["pwc_hits"], mode
        assert g["ntlb_hits"] == e["ntlb_hits"], mode
        assert g["walks"] == e["walks"], mode
        assert g["faults"] == e["faults"] == 0, mode
        assert g["exits_by_kind"]["hidden_page_fault"] == (e["hidden_page_fault"] if mode == "shadow" else 0)
        assert sum(g["exits_by_kind"].values()) == g["exits"], mode
        assert g["cycles"] == e["cycles"], mode
    return out


@pytest.fixture(scope="module")
def short(tmp_path_factory):
    accesses = synthetic(7)
    path = tmp_path_factory.mktemp("replay") / "short.vmtrace"
    write_trace(str(path), accesses, program="synthetic", args=["7"])
    return path, accesses


@pytest.mark.parametrize("kw", [
    {},
    {"warm": True},
    {"preset": "sunway-1621"},
    {"preset": "sunway-1621", "warm": True},
    {"guest_2m": True},
    {"guest_2m": True, "huge_min": 8, "warm": True},
    {"host_4k": True},
    {"host_4k": True, "preset": "sunway-1621", "guest_2m": True, "huge_min": 30},
])
def test_replay_counters_equal_vmsim_run(short, kw):
    path, accesses = short
    out = check(path, accesses, **kw)
    m = out["machine"]
    assert m["start"] == ("warm" if kw.get("warm") else "cold")
    assert m["guest_4k_pages"] + m["guest_2m_pages"] > 0


def test_cold_shadow_fills_every_page_and_warm_does_not(short):
    path, accesses = short
    pages = len({a >> 12 for _, a in accesses})
    cold = {m["mode"]: m for m in replay_json(path)["modes"]}
    warm = {m["mode"]: m for m in replay_json(path, "--start", "warm")["modes"]}
    # each touched page takes at least one hidden page fault the first time
    assert cold["shadow"]["exits_by_kind"]["hidden_page_fault"] >= pages
    assert warm["shadow"]["exits"] == 0
    assert all(m["exits"] == 0 for k, m in cold.items() if k != "shadow")
    assert cold["native"]["overhead_pct"] == 0


def test_real_recorded_trace_matches_vmsim_run(tmp_path):
    """A real program's first accesses (valgrind, 2,500 of them) through the same check."""
    if subprocess.run(["sh", "-c", "command -v valgrind"], capture_output=True).returncode:
        pytest.skip("valgrind is not installed")
    out = tmp_path / "ls.vmtrace"
    r = subprocess.run([sys.executable, str(ROOT / "hw-lab" / "run"), "trace", "--out", str(out), "--limit", "2500",
                        "--", "ls", "/"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    from hwlab.tracefile import read_trace
    header, accesses = read_trace(str(out))
    res = check(out, accesses)
    assert res["trace"]["partial"] is True and "--limit of 2500" in res["trace"]["partial_reason"]
    check(out, accesses, warm=True, guest_2m=True)


def test_formats_agree(short):
    path, _ = short
    j = replay_json(path)
    p = replay(path, fmt="csv")
    assert p.returncode == 0
    lines = p.stdout.strip().splitlines()
    head = lines[0].split(",")
    rows = [dict(zip(head, line.split(","))) for line in lines[1:]]
    assert [r["mode"] for r in rows] == MODES
    for r, m in zip(rows, j["modes"]):
        assert int(r["refs"]) == m["refs"] and int(r["exits"]) == m["exits"] and int(r["cycles"]) == m["cycles"]
    t = replay(path, fmt="table")
    assert t.returncode == 0
    assert "trace: synthetic 7" in t.stdout and "overhead" in t.stdout
    for mode in MODES:
        assert f"\n{mode} " in t.stdout


def test_modes_option(short):
    path, _ = short
    j = replay_json(path, "--modes", "ept,shadow")
    assert [m["mode"] for m in j["modes"]] == ["ept", "shadow"]
    assert all(m["overhead_pct"] is None for m in j["modes"])   # no native to compare with


# ---- refusals ----

def good_bytes(accesses=None):
    accesses = accesses or [(KIND["load"], 0x1000 * i + 8) for i in range(1, 50)]
    gz = gzip_bytes(encode_body(accesses))
    return pack(make_header(accesses, len(gz)), gz), accesses


def refused(tmp_path, data, needle, name="bad.vmtrace"):
    f = tmp_path / name
    f.write_bytes(data)
    p = replay(f)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert needle in p.stderr, p.stderr
    assert p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1     # one line


def test_truncated(tmp_path):
    data, _ = good_bytes()
    refused(tmp_path, data[:-10], "the trace is truncated: its header announces")
    refused(tmp_path, data[:12], "shorter than the 16-byte prefix")
    refused(tmp_path, data[:40], "the trace is truncated: its header is")
    # cut inside the body, header patched to the shorter length: the gzip stream ends early
    header_len = struct.unpack_from("<I", data, 12)[0]
    head = json.loads(data[16:16 + header_len])
    body = data[16 + header_len:]
    head["body"]["bytes"] = len(body) // 2
    refused(tmp_path, pack(head, body[:len(body) // 2]), "truncated")
    # a body without its end record
    acc = [(KIND["load"], 0x5000)]
    raw = encode_body(acc)[:-2]
    gz = gzip_bytes(raw)
    refused(tmp_path, pack(make_header(acc, len(gz)), gz), "without the end record")


def test_corrupt(tmp_path):
    data, acc = good_bytes()
    header_len = struct.unpack_from("<I", data, 12)[0]
    b = bytearray(data)
    b[16 + header_len + 20] ^= 0xFF           # inside the deflate stream
    refused(tmp_path, bytes(b), "corrupt")
    refused(tmp_path, data[:16] + b"{not json" + data[25:], "the trace header is not valid JSON")
    # an unknown record type
    gz = gzip_bytes(bytes([0xF9]) + encode_body([]))
    refused(tmp_path, pack(make_header([], len(gz)), gz), "unknown record type 0xf9")
    # an end record that miscounts
    gz = gzip_bytes(encode_body(acc, end_count=len(acc) + 1))
    refused(tmp_path, pack(make_header(acc, len(gz)), gz), "its end record counts")
    # a header that announces other counts than the body holds
    gz = gzip_bytes(encode_body(acc))
    refused(tmp_path, pack(make_header(acc, len(gz), pages=3), gz), "announces 3 distinct pages")
    h = make_header(acc, len(gz))
    h["accesses"] -= 1
    h["counts"]["load"] -= 1
    refused(tmp_path, pack(h, gz), "more than the")
    # an offset outside its page
    raw = bytes([0 | (30 << 3), 0xFE, 0x7F]) + bytes([31 << 3, 1])      # offset delta +8191
    gz = gzip_bytes(raw)
    refused(tmp_path, pack(make_header([(0, 0)], len(gz)), gz), "page offset of 8191")
    # a varint longer than 64 bits
    raw = bytes([4]) + b"\xff" * 11 + bytes([31 << 3, 1])
    gz = gzip_bytes(raw)
    refused(tmp_path, pack(make_header([(0, 0)], len(gz)), gz), "longer than 64 bits")


def test_wrong_version(tmp_path):
    data, _ = good_bytes()
    refused(tmp_path, data[:8] + struct.pack("<H", 2) + data[10:], "this trace is format version 2; this vmsim reads version 1")
    header_len = struct.unpack_from("<I", data, 12)[0]
    head = json.loads(data[16:16 + header_len])
    head["version"] = 7
    refused(tmp_path, pack(head, data[16 + header_len:]), "says format version 7")


def test_oversized(tmp_path):
    # more distinct pages than the replay builds tables for
    acc = [(KIND["store"], 0x10000000 + (i << 12)) for i in range(270_000)]
    gz = gzip_bytes(encode_body(acc))
    refused(tmp_path, pack(make_header(acc, len(gz)), gz), "more than 262144 distinct 4 KiB pages")
    # pages spread so thin that their tables would not fit
    acc = [(KIND["store"], i << 21) for i in range(1, 5000)]
    gz = gzip_bytes(encode_body(acc))
    refused(tmp_path, pack(make_header(acc, len(gz)), gz), "spread so thinly")
    # 2 MiB pages for more regions than the guest memory the replay builds
    acc = [(KIND["store"], 0x10000000000 + (i << 21)) for i in range(1100)]
    gz = gzip_bytes(encode_body(acc))
    f = tmp_path / "regions.vmtrace"
    f.write_bytes(pack(make_header(acc, len(gz)), gz))
    p = replay(f, "--guest-pages", "2m")
    assert p.returncode == 2 and "raise --huge-min" in p.stderr, p.stderr
    assert replay(f).returncode == 2     # with 4 KiB pages: 1,100 page tables, too thin
    # an address beyond the 47-bit user half
    acc = [(KIND["load"], 1 << 47)]
    gz = gzip_bytes(encode_body(acc))
    refused(tmp_path, pack(make_header(acc, len(gz)), gz), "above the 47-bit user half")


def test_not_a_trace(tmp_path):
    refused(tmp_path, b'{"format": "vmemlab-hw-lab-result"}' + b" " * 20, "this is a JSON file, not a vmemlab trace")
    refused(tmp_path, gzip_bytes(b"hello world, this is gzip"), "plain gzip file, not a vmemlab trace")
    refused(tmp_path, b"==123== Lackey, an example Valgrind tool\nI  00401000,3\n", "valgrind lackey log")
    refused(tmp_path, b"\x00" * 64, "not a vmemlab trace")


def test_bad_options(short):
    path, _ = short
    for args, needle in [(["--modes", "ept,bogus"], "bogus is not a mode"),
                         (["--preset", "arm"], "--preset must be one of"),
                         (["--huge-min", "0"], "--huge-min needs a number from 1 to 512"),
                         (["--frobnicate", "1"], "unknown option --frobnicate")]:
        p = subprocess.run([VMSIM, "replay", str(path), *args], capture_output=True, text=True)
        assert p.returncode == 2 and needle in p.stderr, p.stderr
    p = subprocess.run([VMSIM, "replay", "-"], capture_output=True, text=True)
    assert p.returncode == 2 and "give the trace as a file" in p.stderr
    p = subprocess.run([VMSIM, "replay", "/no/such.vmtrace"], capture_output=True, text=True)
    assert p.returncode == 1 and "cannot open /no/such.vmtrace" in p.stderr


def test_lesson_4_your_own_program(tmp_path):
    """What lesson 4's 'Your own program' section tells learners they will see: the pointer
    chase suffers most under EPT (with every setting it names), the x86 server's caches on
    2 MiB host pages hide most of it, 4 KiB host pages and the Sunway preset bring the 2-D walk
    back, and shadow paging's cold-start exits are gone when warm."""
    examples = ROOT / "hw-lab" / "build" / "traces"
    chase, scan = examples / "pointer-chase.vmtrace", examples / "sequential-scan.vmtrace"
    if not chase.exists() or not scan.exists():
        pytest.skip("the example traces are recorded by make build")
    if subprocess.run(["sh", "-c", "command -v valgrind"], capture_output=True).returncode:
        pytest.skip("valgrind is not installed")
    ls = tmp_path / "ls.vmtrace"
    r = subprocess.run([sys.executable, str(ROOT / "hw-lab" / "run"), "trace", "--out", str(ls), "--", "ls", "/"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr

    def modes(path, *args):
        return {m["mode"]: m for m in replay_json(path, *args)["modes"]}

    ept = {}
    for args in [(), ("--host-pages", "4k"), ("--preset", "sunway-1621")]:
        ept[args] = {name: modes(p, *args)["ept"]["overhead_pct"] for name, p in
                     (("chase", chase), ("scan", scan), ("ls", ls))}
        assert ept[args]["chase"] > ept[args]["scan"] and ept[args]["chase"] > ept[args]["ls"], (args, ept[args])
    # the caches on 2 MiB host pages hide most of it; 4 KiB host pages bring the nested walks back
    assert ept[()]["chase"] < 1 < ept[("--host-pages", "4k")]["chase"]
    sunway = modes(chase, "--preset", "sunway-1621")
    assert sunway["ept"]["refs_per_access"] > 3 * sunway["native"]["refs_per_access"]
    for p in (chase, scan, ls):
        assert modes(p)["shadow"]["exits_by_kind"]["hidden_page_fault"] > 0
        assert modes(p, "--start", "warm")["shadow"]["exits"] == 0


@pytest.mark.parametrize("sw", range(5))
@pytest.mark.parametrize("warm", [False, True])
def test_replay_agile_at_every_switching_level_equals_vmsim_run(short, sw, warm):
    """--modes agile --agile-switch-level S: the replay's counters are those of `vmsim run`
    on the same machine in mode agile (a trace writes no page table: the switch stays)."""
    path, accesses = short
    args = ["--modes", "ept,shadow,agile", "--agile-switch-level", str(sw)] + (["--start", "warm"] if warm else [])
    got = {m["mode"]: m for m in replay_json(path, *args)["modes"]}
    assert list(got) == ["ept", "shadow", "agile"]
    e, g = expected(accesses, "agile", warm=warm, agile_sw=sw), got["agile"]
    for k in ("refs", "guest_refs", "nested_refs", "ad_writes", "exits", "tlb_misses", "pwc_hits", "ntlb_hits",
              "walks", "cycles"):
        assert g[k] == e["memory_refs" if k == "refs" else k], k
    assert g["exits_by_kind"]["hidden_page_fault"] == e["hidden_page_fault"]
    if sw == 4:     # switched at the root: EPT's walk, walk caches included
        assert (g["refs"], g["exits"]) == (got["ept"]["refs"], 0)
    if warm:
        assert g["exits"] == 0


def test_replay_modes_default_leaves_agile_out_and_checks_the_level(short):
    path, _ = short
    assert [m["mode"] for m in replay_json(path)["modes"]] == MODES
    p = replay(path, "--modes", "agile", "--agile-switch-level", "5")
    assert p.returncode != 0 and "agile-switch-level" in p.stderr


def test_replay_report_names_the_agile_level_only_when_agile_ran(short):
    path, _ = short
    assert "agile_switch_level" not in replay_json(path)["machine"]
    assert replay_json(path, "--modes", "agile", "--agile-switch-level", "3")["machine"]["agile_switch_level"] == 3
