"""Tables at the start (model.md 1): built in advance or filled on demand, in scenarios.

- `nested.on_demand`: the nested table starts with its root only; the first touch of each
  nested page is one EPT violation (NPT fault) the VMM fills from its memory slots, the
  walk is retried and the access ends ok; the exits and the retried references are
  counted here from the walk's shape, not from the engine.
- `shadow.prefill`: every mapped page shadowed at build time: no hidden page fault, the
  walk reads the shadow table only.
- What cannot be filled stays a fault, and the options that make no sense together are
  refused with one line naming the field."""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))

SLOTS = [{"gpa": "0x0", "hpa": "0x80000000", "pages": 1024}]


def run(s):
    p = subprocess.run([VMSIM, "run", "-"], input=json.dumps(s), capture_output=True, text=True, timeout=60)
    return p


def ok(s):
    p = run(s)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def two_d(mode, accesses, on_demand=True, page="4K", slots=None):
    slots = slots or [dict(SLOTS[0], page=page, pages=1024 if page == "4K" else 2)]
    return {"name": "t", "mode": mode,
            "guest": {"paging": "4level", "mappings": [{"gva": "0x400000", "gpa": "0x200000", "pages": 4}]},
            "nested": {"on_demand": on_demand, "mappings": slots}, "accesses": accesses}


@pytest.mark.parametrize("mode", ["ept", "npt"])
def test_first_touch_one_violation_per_nested_page(mode):
    acc = [{"gva": "0x400000", "op": "read"}, {"gva": "0x400000", "op": "read"},
           {"gva": "0x401010", "op": "write"}, {"gva": "0x403000", "op": "fetch"}]
    r = ok(two_d(mode, acc))["accesses"]
    # 4 guest tables at gpa 0x100000.. (model.md 3) and the data page: five 4 KiB nested pages
    assert [a["exits"] for a in r] == [5, 0, 1, 1]
    assert all(a["outcome"] == "ok" for a in r)
    assert [a["hpa"] for a in r] == ["0x80200000", "0x80200000", "0x80201010", "0x80203000"]
    # the walk that fails reads down to the first missing entry, then the fill, then the
    # whole nested walk again. First access: gpa 0x100000 stops at the root (1 reference);
    # 0x101000-0x103000 share the tables that fill made and stop at their level-1 entry
    # (4 each); the data page 0x200000 stops at its level-2 entry (another 2 MiB: 3)
    built = ok(two_d(mode, acc, on_demand=False))["accesses"]
    assert [a["exits"] for a in built] == [0, 0, 0, 0]
    assert r[1]["memory_refs"] == built[1]["memory_refs"] == 24
    extra = [a["memory_refs"] - b["memory_refs"] for a, b in zip(r, built)]
    # the last two: the data page's walk fails at its level-1 entry: 4 references more
    assert extra[2:] == [4, 4] and extra[0] == 1 + 4 + 4 + 4 + 3
    fills = [s for s in r[0]["steps"] if s["kind"] == "vmm_fill"]
    assert len(fills) == 5 and all(s["dim"] == "nested" for s in fills)


def test_host_2m_pages_one_violation_per_2m():
    acc = [{"gva": "0x400000", "op": "read"}, {"gva": "0x402000", "op": "read"}]
    r = ok(two_d("ept", acc, page="2M"))["accesses"]
    # tables at 0x100000.. and data at 0x200000..: two 2 MiB nested pages
    assert [a["exits"] for a in r] == [2, 0]


def test_gpa_outside_every_slot_is_still_a_violation():
    s = two_d("ept", [{"gva": "0x400000", "op": "read"}],
              slots=[{"gpa": "0x0", "hpa": "0x80000000", "pages": 0x200}])     # 2 MiB: not the data page
    a = ok(s)["accesses"][0]
    assert a["outcome"] == "ept_violation" and a["fault"]["guest_physical_address"] == "0x200000"
    assert a["exits"] == 4 + 1       # the four table fills, then the violation the VMM cannot fill


def test_on_demand_refuses_overrides_and_vmfunc():
    s = two_d("ept", [])
    s["nested"]["overrides"] = [{"gpa": "0x200000", "level": 1, "set": "0x0", "clear": "0x2"}]
    p = run(s)
    assert p.returncode == 2 and "nested.on_demand" in p.stderr
    s = two_d("ept", [])
    s["nested"]["vmfunc"] = True
    p = run(s)
    assert p.returncode == 2 and "nested.on_demand" in p.stderr


def shadow(prefill, accesses, tables=None):
    g = {"paging": "4level", "mappings": [{"gva": "0x400000", "gpa": "0x200000", "pages": 4},
                                          {"gva": "0x600000", "gpa": "0x300000", "writable": False}]}
    if tables:
        g = tables
    return {"name": "t", "mode": "shadow", "guest": g, "shadow": {"prefill": prefill, "mappings": SLOTS},
            "accesses": accesses}


def test_shadow_prefill_no_hidden_page_fault():
    acc = [{"gva": hex(0x400000 + 0x1000 * i), "op": op} for i in range(4) for op in ("read", "write")]
    acc += [{"gva": "0x600000", "op": "read"}]
    built = ok(shadow(True, acc))
    assert [a["exits"] for a in built["accesses"]] == [0] * len(acc)
    assert all(a["memory_refs"] == 4 for a in built["accesses"])
    assert built["shadow"]["hidden_page_faults"] == 0
    demand = ok(shadow(False, acc))
    # read, then write: the read fill leaves the page read-only until the guest's D bit is set
    assert demand["shadow"]["hidden_page_faults"] == 4 * 2 + 1
    # the read-only mapping is still read-only: a write is reflected as a #PF
    w = ok(shadow(True, [{"gva": "0x600000", "op": "write"}]))["accesses"][0]
    assert w["outcome"] == "guest_page_fault"


def test_shadow_prefill_needs_mappings():
    p = run(shadow(True, [], tables={"paging": "4level", "cr3": "0x100000", "tables": [{"gpa": "0x100000", "entries": {}}]}))
    assert p.returncode == 2 and "shadow.prefill" in p.stderr
