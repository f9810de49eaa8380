"""The nested-paging tests of kvm-unit-tests (x86/svm_npt.c) replayed through the engine:
each test's nested-PTE change and the EXITINFO1 its check function expects, literally.
Layout as in those tests: guest code and data in low memory, the guest's page tables in
the same 1 GiB (so they share the nested PDPE and PML4E) but another 2 MiB."""
import json
import os
import pathlib
import subprocess
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))

CODE = 0x400000          # basic_guest_main / null_test
SCRATCH = 0x600000       # scratch_page
PT64_NX = 1 << 63
PAGE_SIZE_BIT = 1 << 7
MAXPHYADDR = 46


def scenario(accesses, overrides, host_nxe=True, host_smep=False, guest_nxe=True, guest_smep=False):
    return {
        "name": "kut-svm-npt",
        "mode": "npt",
        "machine": {"maxphyaddr": MAXPHYADDR},
        "guest": {
            "paging": "4level", "table_base": "0x100000", "efer_nxe": guest_nxe, "cr4_smep": guest_smep,
            "mappings": [{"gva": hex(CODE), "gpa": hex(CODE), "user": False},
                         {"gva": hex(SCRATCH), "gpa": hex(SCRATCH), "user": False},
                         {"gva": "0x80000", "gpa": "0x80000", "user": False}],
        },
        "nested": {
            "host_nxe": host_nxe, "host_smep": host_smep,
            "mappings": [{"gpa": "0x0", "hpa": "0x40000000", "pages": 2048}],   # 8 MiB identity-like, 4K pages
            "overrides": overrides,
        },
        "accesses": accesses,
    }


def run(s):
    assert os.path.exists(VMSIM), "build the engine first: make -C wasm-core native"
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(s, f)
        f.flush()
        p = subprocess.run([VMSIM, "run", f.name], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["accesses"]


def npf(acc):
    assert acc["outcome"] == "npt_fault", f"{acc['outcome']} {acc['fault']}"
    return int(acc["fault"]["exitinfo1"], 16), int(acc["fault"]["exitinfo2"], 16)


def test_npt_np():
    # npt_np_prepare: *pte &= ~1 for scratch_page; the guest reads it -> 0x100000004
    (acc,) = run(scenario([{"gva": hex(SCRATCH), "op": "read"}], [{"gpa": hex(SCRATCH), "level": 1, "clear": "0x1"}]))
    assert npf(acc) == (0x100000004, SCRATCH)


def test_npt_nx():
    # npt_nx_prepare: host EFER.NX on, guest EFER.NX off, NX in null_test's nested PTE -> 0x100000015
    (acc,) = run(scenario([{"gva": hex(CODE), "op": "fetch"}], [{"gpa": hex(CODE), "level": 1, "set": hex(PT64_NX)}],
                          guest_nxe=False))
    assert npf(acc)[0] == 0x100000015


def test_npt_us():
    # npt_us_prepare: *pte &= ~(1 << 2) for scratch_page; the guest reads it -> 0x100000005
    (acc,) = run(scenario([{"gva": hex(SCRATCH), "op": "read"}], [{"gpa": hex(SCRATCH), "level": 1, "clear": "0x4"}]))
    assert npf(acc)[0] == 0x100000005


def test_npt_rw():
    # npt_rw_prepare: *pte &= ~(1 << 1) for gpa 0x80000; the guest writes it -> 0x100000007
    (acc,) = run(scenario([{"gva": "0x80000", "op": "write"}], [{"gpa": "0x80000", "level": 1, "clear": "0x2"}]))
    assert npf(acc) == (0x100000007, 0x80000)


def test_npt_rw_pfwalk():
    # npt_rw_pfwalk_prepare: *npt_get_pte(read_cr3()) &= ~(1 << 1); any guest access walks
    # the guest tables as a user write -> 0x200000007, EXITINFO2 == read_cr3()
    (acc,) = run(scenario([{"gva": hex(CODE), "op": "fetch"}], [{"gpa": "0x100000", "level": 1, "clear": "0x2"}]))
    assert npf(acc) == (0x200000007, 0x100000)   # CODE's PML4 index is 0: the entry is at CR3 + 0


# svm_npt_rsvd_bits_test: the nested PxE of basic_guest_main gets reserved bits; the
# expected PFEC depends on which entry and on host EFER.NX / CR4.SMEP, never on the guest's.
ENTRIES = [
    # (name, nested level, reserved bits when host NX is on, faults during the guest walk?)
    ("pte", 1, 1 << 47, False),                         # get_random_bits(51, maxphyaddr)
    ("pde", 2, (1 << 14) | PAGE_SIZE_BIT, False),       # get_random_bits(20, 13) | PT_PAGE_SIZE_MASK
    ("pdpe", 3, PAGE_SIZE_BIT | (1 << 20), True),       # PT_PAGE_SIZE_MASK | get_random_bits(29, 13)
    ("pml4e", 4, 1 << 8, True),                         # BIT_ULL(8)
]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e[0] for e in ENTRIES])
def test_npt_rsvd_bits(entry):
    name, level, bits, in_walk = entry
    for i in range(16):
        host_nx, host_smep, guest_nx, guest_smep = bool(i & 1), bool(i & 2), bool(i & 4), bool(i & 8)
        rsvd = bits if host_nx else PT64_NX       # host EFER.NX=0: use NX as the reserved bit
        if in_walk:
            pfec = 0x20000000F
        else:
            pfec = 0x10000000D | (0x10 if (host_smep or host_nx) else 0)
        (acc,) = run(scenario([{"gva": hex(CODE), "op": "fetch"}], [{"gpa": hex(CODE), "level": level, "set": hex(rsvd)}],
                              host_nxe=host_nx, host_smep=host_smep, guest_nxe=guest_nx, guest_smep=guest_smep))
        got = npf(acc)[0]
        assert got == pfec, (f"{name} combo {i} (host NX {host_nx}, host SMEP {host_smep}, guest NX {guest_nx}, "
                             f"guest SMEP {guest_smep}): PFEC {hex(got)}, kvm-unit-tests wants {hex(pfec)}")
        assert acc["fault"]["reason"] == "reserved"
