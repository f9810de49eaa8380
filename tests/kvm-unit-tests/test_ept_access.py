"""The EPT access matrix of kvm-unit-tests (x86/vmx_tests.c, ept_access_test_*), replayed
through the engine. Each expectation below is transcribed from that file: the EPT
permissions a test installs, the guest operation, and the exit it expects (an EPT
violation with its exit qualification, an EPT misconfiguration, or no exit). The
layout copies ept_access_test_setup(): the data page at gpa 1 << 39 (a PML4 entry of its
own), mapped by the guest with 4 KiB pages, EPT A/D off unless a test turns it on."""
import json
import os
import pathlib
import subprocess
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))

# vmx.h
EPT_RA, EPT_WA, EPT_EA = 1, 2, 4
EPT_PRESENT = 7
EPT_LARGE_PAGE = 1 << 7
EPT_VLT_RD, EPT_VLT_WR, EPT_VLT_FETCH = 1, 2, 4
EPT_VLT_PERM_RD, EPT_VLT_PERM_WR, EPT_VLT_PERM_EX = 1 << 3, 1 << 4, 1 << 5
EPT_VLT_LADDR_VLD, EPT_VLT_PADDR = 1 << 7, 1 << 8
PT_ACCESSED, PT_DIRTY = 1 << 5, 1 << 6
PT_AD = PT_ACCESSED | PT_DIRTY

DATA_GPA = 1 << 39
DATA_HPA = 1 << 30          # get_1g_page(): 1 GiB aligned, so mkhuge can point a 1G leaf at it
DATA_GVA = 0x40000000
MAXPHYADDR = 46
OPS = {"OP_READ": ("read", False), "OP_WRITE": ("write", False), "OP_EXEC": ("fetch", False),
       "OP_EXEC_USER": ("fetch", True)}
ALLOWED = "allowed"
MISCONFIG = "misconfig"


def scenario(op, nested_overrides=(), guest_overrides=(), ad=False):
    kind, user = OPS[op]
    return {
        "name": "kut-ept-access",
        "mode": "ept",
        "machine": {"maxphyaddr": MAXPHYADDR},
        "guest": {
            "paging": "4level",
            "table_base": "0x100000",
            "mappings": [{"gva": hex(DATA_GVA), "gpa": hex(DATA_GPA), "user": True}],
            "overrides": list(guest_overrides),
        },
        "nested": {
            "ad": ad,
            "mappings": [
                {"gpa": "0x0", "hpa": "0x80000000", "pages": 512},      # guest page tables, 4K each
                {"gpa": hex(DATA_GPA), "hpa": hex(DATA_HPA)},
            ],
            "overrides": list(nested_overrides),
        },
        "accesses": [{"gva": hex(DATA_GVA + 8), "op": kind, "user": user}],
    }


def run_many(scenarios):
    """Runs scenarios through the CLI; returns the single access of each."""
    assert os.path.exists(VMSIM), "build the engine first: make -C wasm-core native"
    out = []
    with tempfile.TemporaryDirectory() as d:
        for i, s in enumerate(scenarios):
            path = os.path.join(d, f"{i}.json")
            with open(path, "w") as f:
                json.dump(s, f)
            p = subprocess.run([VMSIM, "run", path], capture_output=True, text=True, timeout=30)
            assert p.returncode == 0, p.stderr
            out.append(json.loads(p.stdout)["accesses"][0])
    return out


def twiddle(level, clear, set_, mkhuge=False, gpa=DATA_GPA):
    """ept_twiddle(): rewrite the EPT entry at `level` for gpa; mkhuge makes it a large
    leaf pointing at the data page's host frame."""
    if mkhuge:
        addr_mask = ((1 << MAXPHYADDR) - 1) & ~0xFFF
        clear |= addr_mask
        set_ |= DATA_HPA | EPT_LARGE_PAGE
    return {"gpa": hex(gpa), "level": level, "clear": hex(clear & ~set_), "set": hex(set_)}


def check(acc, expect, label):
    if expect == ALLOWED:
        assert acc["outcome"] == "ok", f"{label}: {acc['outcome']} {acc['fault']}"
    elif expect == MISCONFIG:
        assert acc["outcome"] == "ept_misconfig", f"{label}: {acc['outcome']}"
    else:
        assert acc["outcome"] == "ept_violation", f"{label}: {acc['outcome']} {acc['fault']}"
        assert int(acc["fault"]["qualification"], 16) == expect, \
            f"{label}: qualification {acc['fault']['qualification']}, kvm-unit-tests expects {hex(expect)}"


def final(qual):
    # ept_access_violation() adds EPT_VLT_LADDR_VLD | EPT_VLT_PADDR for the data access
    return qual | EPT_VLT_LADDR_VLD | EPT_VLT_PADDR


# (test name, EPT access installed, {op: expectation}); expectations as in vmx_tests.c
ACCESS_MATRIX = [
    ("ept_access_test_not_present", 0,
     {"OP_READ": final(EPT_VLT_RD), "OP_WRITE": final(EPT_VLT_WR), "OP_EXEC": final(EPT_VLT_FETCH),
      "OP_EXEC_USER": final(EPT_VLT_FETCH)}),
    ("ept_access_test_read_only", EPT_RA,
     {"OP_READ": ALLOWED, "OP_WRITE": final(EPT_VLT_WR | EPT_VLT_PERM_RD),
      "OP_EXEC": final(EPT_VLT_FETCH | EPT_VLT_PERM_RD), "OP_EXEC_USER": final(EPT_VLT_FETCH | EPT_VLT_PERM_RD)}),
    ("ept_access_test_write_only", EPT_WA, {op: MISCONFIG for op in ("OP_READ", "OP_WRITE", "OP_EXEC")}),
    ("ept_access_test_read_write", EPT_RA | EPT_WA,
     {"OP_READ": ALLOWED, "OP_WRITE": ALLOWED,
      "OP_EXEC": final(EPT_VLT_FETCH | EPT_VLT_PERM_RD | EPT_VLT_PERM_WR),
      "OP_EXEC_USER": final(EPT_VLT_FETCH | EPT_VLT_PERM_RD | EPT_VLT_PERM_WR)}),
    ("ept_access_test_execute_only", EPT_EA,
     {"OP_READ": final(EPT_VLT_RD | EPT_VLT_PERM_EX), "OP_WRITE": final(EPT_VLT_WR | EPT_VLT_PERM_EX),
      "OP_EXEC": ALLOWED, "OP_EXEC_USER": ALLOWED}),
    ("ept_access_test_read_execute", EPT_RA | EPT_EA,
     {"OP_READ": ALLOWED, "OP_WRITE": final(EPT_VLT_WR | EPT_VLT_PERM_RD | EPT_VLT_PERM_EX),
      "OP_EXEC": ALLOWED, "OP_EXEC_USER": ALLOWED}),
    ("ept_access_test_write_execute", EPT_WA | EPT_EA, {op: MISCONFIG for op in ("OP_READ", "OP_WRITE", "OP_EXEC")}),
    ("ept_access_test_read_write_execute", EPT_RA | EPT_WA | EPT_EA, {op: ALLOWED for op in OPS}),
]


@pytest.mark.parametrize("name,access,expect", ACCESS_MATRIX, ids=[m[0] for m in ACCESS_MATRIX])
def test_access_matrix_at_each_level(name, access, expect):
    # ept_violation(): at levels 1-4; ept_*_at_level() also tries a huge page at 2 and 3.
    cases = []
    for level in (1, 2, 3, 4):
        for mkhuge in ((False, True) if level in (2, 3) else (False,)):
            for op, want in expect.items():
                cases.append((f"{name} level {level}{' huge' if mkhuge else ''} {op}",
                              scenario(op, [twiddle(level, EPT_PRESENT, access, mkhuge)]), want))
    for (label, _, want), acc in zip(cases, run_many([c[1] for c in cases])):
        check(acc, want, label)


def test_execute_only_unsupported_is_a_misconfiguration():
    # Without execute-only support (IA32_VMX_EPT_VPID_CAP bit 0), X alone misconfigures.
    s = scenario("OP_EXEC", [twiddle(1, EPT_PRESENT, EPT_EA)])
    s["nested"]["execute_only"] = False
    (acc,) = run_many([s])
    check(acc, MISCONFIG, "execute-only unsupported")
    assert acc["fault"]["detail"] == "execute_only_unsupported"


def test_reserved_bits():
    """ept_access_test_reserved_bits(): setting a reserved bit misconfigures; in a
    not-present entry the same bit is ignored and the access is a violation."""
    cases = []
    not_present = final(EPT_VLT_RD)

    def add(level, bit, huge):
        cases.append((f"bit {bit} level {level}{' huge' if huge else ''}",
                      scenario("OP_READ", [twiddle(level, 0, 1 << bit, huge)]), MISCONFIG))
        cases.append((f"bit {bit} level {level} not present",
                      scenario("OP_READ", [twiddle(level, EPT_PRESENT, 1 << bit, huge)]), not_present))

    for bit in range(MAXPHYADDR, 52):
        for level in (1, 2, 3, 4):
            add(level, bit, False)
    for bit in (3, 4, 5, 6):
        add(2, bit, False)
        add(3, bit, False)
    for bit in range(12, 20):
        add(2, bit, True)       # 2M alignment
    for bit in range(12, 29):
        add(3, bit, True)       # 1G alignment
    for bit in (3, 4, 5, 6, 7):
        add(4, bit, False)
    for (label, _, want), acc in zip(cases, run_many([c[1] for c in cases])):
        check(acc, want, label)


def test_ignored_bits():
    """ept_access_test_ignored_bits(): bits 8, 9 (A/D), 10 (no MBEC), 11 and 52-63 change
    nothing, set or clear, at any level, for any operation."""
    cases = []
    for bit in [8, 9, 10, 11] + list(range(52, 64)):
        for level in (1, 2, 3, 4):
            for op in OPS:
                cases.append((f"bit {bit} level {level} {op}", scenario(op, [twiddle(level, 0, 1 << bit)])))
    for (label, _), acc in zip(cases, run_many([c[1] for c in cases])):
        check(acc, ALLOWED, label)


def test_memory_type_of_a_leaf():
    # SDM 29.3.3.1: a leaf memory type of 2, 3 or 7 is a misconfiguration; 0, 1, 4, 5, 6 are fine.
    cases = [(mt, scenario("OP_READ", [twiddle(1, 0x38, mt << 3)])) for mt in range(8)]
    for (mt, _), acc in zip(cases, run_many([c[1] for c in cases])):
        check(acc, MISCONFIG if mt in (2, 3, 7) else ALLOWED, f"memory type {mt}")


def paddr_scenario(ept_access, pte_ad, op, ad):
    """ept_access_paddr(): the guest PTE of the data page gets A/D bits `pte_ad`; the EPT
    entry for the guest page-table page holding it gets `ept_access` at level 1."""
    g = [{"gva": hex(DATA_GVA), "level": 1, "set": hex(pte_ad), "clear": hex(PT_AD & ~pte_ad)}]
    n = [{"guest_table": {"gva": hex(DATA_GVA), "level": 1}, "level": 1,
          "clear": hex(EPT_PRESENT & ~ept_access), "set": hex(ept_access)}]
    return scenario(op, n, g, ad=ad)


def paddr(qual):
    # paging-structure accesses: EPT_VLT_LADDR_VLD, never EPT_VLT_PADDR
    return qual | EPT_VLT_LADDR_VLD


RD_WR_PERM_RD = EPT_VLT_WR | EPT_VLT_RD | EPT_VLT_PERM_RD
PADDR_MATRIX = [
    # (test, ad, ept_access, pte_ad, {op: expectation})
    ("paddr_not_present_ad_disabled", False, 0, PT_AD, {op: paddr(EPT_VLT_RD) for op in OPS}),
    ("paddr_not_present_ad_enabled", True, 0, PT_AD, {op: paddr(EPT_VLT_RD | EPT_VLT_WR) for op in OPS}),
    ("paddr_read_only_ad_disabled", False, EPT_RA, 0, {op: paddr(RD_WR_PERM_RD) for op in OPS}),
    ("paddr_read_only_ad_disabled (A set)", False, EPT_RA, PT_ACCESSED,
     {"OP_READ": ALLOWED, "OP_WRITE": paddr(RD_WR_PERM_RD), "OP_EXEC": ALLOWED, "OP_EXEC_USER": ALLOWED}),
    ("paddr_read_only_ad_disabled (A+D set)", False, EPT_RA, PT_AD, {op: ALLOWED for op in OPS}),
    ("paddr_read_only_ad_enabled", True, EPT_RA, 0, {op: paddr(RD_WR_PERM_RD) for op in OPS}),
    ("paddr_read_only_ad_enabled (A set)", True, EPT_RA, PT_ACCESSED, {op: paddr(RD_WR_PERM_RD) for op in OPS}),
    ("paddr_read_only_ad_enabled (A+D set)", True, EPT_RA, PT_AD, {op: paddr(RD_WR_PERM_RD) for op in OPS}),
    ("paddr_read_write", False, EPT_RA | EPT_WA, 0, {op: ALLOWED for op in OPS}),
    ("paddr_read_write_execute", False, EPT_PRESENT, 0, {op: ALLOWED for op in OPS}),
    ("paddr_read_execute_ad_disabled", False, EPT_RA | EPT_EA, 0,
     {op: paddr(RD_WR_PERM_RD | EPT_VLT_PERM_EX) for op in OPS}),
    ("paddr_read_execute_ad_disabled (A set)", False, EPT_RA | EPT_EA, PT_ACCESSED,
     {"OP_READ": ALLOWED, "OP_WRITE": paddr(RD_WR_PERM_RD | EPT_VLT_PERM_EX), "OP_EXEC": ALLOWED,
      "OP_EXEC_USER": ALLOWED}),
    ("paddr_read_execute_ad_enabled", True, EPT_RA | EPT_EA, PT_ACCESSED,
     {op: paddr(RD_WR_PERM_RD | EPT_VLT_PERM_EX) for op in OPS}),
]


@pytest.mark.parametrize("name,ad,access,pte_ad,expect", PADDR_MATRIX, ids=[m[0] for m in PADDR_MATRIX])
def test_guest_paging_structure_accesses(name, ad, access, pte_ad, expect):
    ops = list(expect)
    accs = run_many([paddr_scenario(access, pte_ad, op, ad) for op in ops])
    for op, acc in zip(ops, accs):
        check(acc, expect[op], f"{name} {op}")
        if expect[op] == ALLOWED:
            # ept_access_paddr(): afterwards the guest PTE has A, and D after a write
            writes = [s for s in acc["steps"] if s["kind"] == "ad_write" and s["level"] == 1]
            had = pte_ad
            got = had | (PT_ACCESSED if not writes else (PT_ACCESSED | (PT_DIRTY if "D" in writes[0]["ad_set"] else 0)))
            assert got & PT_ACCESSED
            if OPS[op][0] == "write":
                assert (had & PT_DIRTY) or (writes and "D" in writes[0]["ad_set"])
        else:
            assert acc["fault"]["stage"] == 1          # the walk was locating the guest PTE
            assert acc["fault"]["guest_physical_address"] == hex(0x103000 + 8 * ((DATA_GVA >> 12) & 511))


def test_ept_ad_bits_on_guest_page_table_page():
    """With EPT A/D on, the EPT entries mapping the guest PTE's page get A at every level
    and D at the leaf, because guest paging-structure accesses count as writes."""
    (acc,) = run_many([paddr_scenario(EPT_PRESENT, 0, "OP_READ", True)])
    assert acc["outcome"] == "ok"
    steps = [s for s in acc["steps"] if s["dim"] == "nested" and s["stage"] == 1]
    assert [s["level"] for s in steps] == [4, 3, 2, 1]
    # levels 4-2 were already accessed while locating upper guest tables in this walk
    assert "D" in steps[-1]["ad_set"] and "A" in steps[-1]["ad_set"]


def test_force_2m_page():
    """ept_access_test_force_2m_page(): a 2M EPT leaf at level 2 works, read-only blocks
    writes, write-only misconfigures."""
    cases = [
        ("2M read", scenario("OP_READ", [twiddle(2, 0, 0, True)]), ALLOWED),
        ("2M read-only write", scenario("OP_WRITE", [twiddle(2, EPT_PRESENT, EPT_RA, True)]),
         final(EPT_VLT_WR | EPT_VLT_PERM_RD)),
        ("2M write-only", scenario("OP_READ", [twiddle(2, EPT_PRESENT, EPT_WA, True)]), MISCONFIG),
    ]
    for (label, _, want), acc in zip(cases, run_many([c[1] for c in cases])):
        check(acc, want, label)
