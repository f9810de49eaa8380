"""The AMD rules of mode npt (an AMD CPU; native and ept stay Intel), and the case of a
gpa at or above 2^48 under 4-level EPT. Expectations derived by hand from the AMD APM
vol. 2 (5.3.3 long-mode entry formats, 15.25.10 nested paging with legacy PAE) and the
Intel SDM vol. 3C (28.2.2 EPT translation), checked on the engine (vmsim) and on the
reference walker (tests/reference/refwalk.py), which implement them separately."""
import copy
import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))
sys.path.insert(0, str(ROOT / "tests" / "reference"))
import refwalk  # noqa: E402


def vmsim(sc):
    assert os.path.exists(VMSIM), "build the engine first: make -C wasm-core native"
    p = subprocess.run([VMSIM, "run", "-"], input=json.dumps(sc), capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def both(sc):
    """The engine's result, after checking that the reference walker agrees."""
    r = vmsim(sc)
    assert refwalk.run(copy.deepcopy(sc)) == r
    return r


# The example: a PAE guest (CR3 0x100000, PDPT[0] -> PD 0x101000 -> PT 0x102000
# -> page 0x200000) on two 2 MiB nested pages (a 3-level nested walk).
PAE = {"name": "amd-pae", "mode": "npt",
       "guest": {"paging": "pae", "cr3": "0x100000", "tables": [
           {"gpa": "0x100000", "entries": {"0": "0x101001"}},
           {"gpa": "0x101000", "entries": {"0": "0x102007"}},
           {"gpa": "0x102000", "entries": {"0": "0x200007"}}]},
       "nested": {"mappings": [{"gpa": "0x0", "hpa": "0x80000000", "page": "2M", "pages": 2}]},
       "accesses": [{"gva": "0x10", "op": "read"}]}


def test_pae_under_npt_reads_the_pdpte_through_the_nested_walk():
    a = both(PAE)["accesses"][0]
    assert (a["outcome"], a["hpa"]) == ("ok", "0x80200010")
    # 3 nested (CR3's gpa) + PDPTE, 3 + PDE, 3 + PTE, 3 for the final gpa: 15, not the
    # 11 of a CPU with PDPTE registers
    assert a["memory_refs"] == 15
    reads = [(s["dim"], s["level"], s["stage"]) for s in a["steps"] if s["kind"] == "read"]
    assert reads[:4] == [("nested", 4, 3), ("nested", 3, 3), ("nested", 2, 3), ("guest", 3, 3)]
    pdpte = a["steps"][3]
    assert (pdpte["gpa"], pdpte["entry_hpa"], pdpte["entry"]) == ("0x100000", "0x80100000", "0x101001")
    assert not any(s["kind"] == "pdpte" for s in a["steps"])


def test_pae_under_ept_keeps_pdpte_registers():
    sc = copy.deepcopy(PAE)
    sc["mode"] = "ept"
    a = both(sc)["accesses"][0]
    assert a["memory_refs"] == 11                     # 3 + PDE, 3 + PTE, 3: the PDPTE is a register
    assert a["steps"][0]["kind"] == "pdpte"


def test_reserved_pdpte_under_npt_is_a_page_fault_not_a_gp():
    sc = copy.deepcopy(PAE)
    sc["guest"]["tables"][0]["entries"]["0"] = "0x101003"      # bit 1 is reserved in a PDPTE
    a = both(sc)["accesses"][0]
    assert a["outcome"] == "guest_page_fault"
    assert (a["fault"]["error_code"], a["fault"]["cr2"], a["fault"]["level"]) == ("0x9", "0x10", 3)
    assert a["memory_refs"] == 4                       # 3 nested + the PDPTE
    # under EPT the same PDPT is refused when the scenario is built (mov cr3 would #GP)
    sc["mode"] = "ept"
    p = subprocess.run([VMSIM, "run", "-"], input=json.dumps(sc), capture_output=True, text=True)
    assert p.returncode == 2 and "#GP" in p.stderr


def test_pdpt_write_takes_effect_without_mov_cr3_under_npt():
    sc = {"name": "amd-pdpt-write", "mode": "npt",
          "guest": {"paging": "pae", "mappings": [{"gva": "0x400000", "gpa": "0x200000"}]},
          "nested": {"mappings": [{"gpa": "0x0", "hpa": "0x80000000", "pages": 1024}]},
          "accesses": [{"gva": "0x400000", "op": "read"},
                       {"pte_write": {"gva": "0x400000", "level": 3, "clear": "0x1"}},
                       {"gva": "0x400000", "op": "read"}]}
    r = vmsim(sc)["accesses"]
    assert r[0]["outcome"] == "ok"
    assert r[2]["outcome"] == "guest_page_fault"       # the PDPTE just cleared is read
    assert (r[2]["fault"]["level"], r[2]["fault"]["error_code"]) == (3, "0x0")
    # Intel keeps the register until the next mov cr3
    sc["mode"] = "ept"
    r = vmsim(sc)["accesses"]
    assert r[2]["outcome"] == "ok"
    sc["accesses"].insert(2, {"mov_cr3": 0})
    assert vmsim(sc)["accesses"][3]["outcome"] == "guest_page_fault"


PML4 = {"name": "amd-pml4", "mode": "npt",
        "guest": {"paging": "4level", "cr3": "0x100000", "tables": [
            {"gpa": "0x100000", "entries": {"0": "0x101107"}},     # bit 8 set in the PML4E
            {"gpa": "0x101000", "entries": {"0": "0x102007"}},
            {"gpa": "0x102000", "entries": {"0": "0x103007"}},
            {"gpa": "0x103000", "entries": {"0": "0x200007"}}]},
        "nested": {"mappings": [{"gpa": "0x0", "hpa": "0x80000000", "page": "2M", "pages": 2}]},
        "accesses": [{"gva": "0x10", "op": "read"}]}


@pytest.mark.parametrize("paging", ["4level", "5level"])
def test_pml4e_bit8_is_reserved_under_npt(paging):
    sc = copy.deepcopy(PML4)
    if paging == "5level":
        sc["guest"]["paging"] = "5level"
        sc["guest"]["tables"].insert(0, {"gpa": "0x104000", "entries": {"0": "0x100107"}})
        sc["guest"]["cr3"] = "0x104000"
    a = both(sc)["accesses"][0]
    assert a["outcome"] == "guest_page_fault"
    top = 5 if paging == "5level" else 4
    assert (a["fault"]["error_code"], a["fault"]["level"]) == ("0x9", top)
    assert a["memory_refs"] == 4                       # 3 nested, then the PML5E/PML4E
    assert a["ad_writes"] == 0


def test_pml4e_bit8_is_ignored_by_intel():
    for mode in ("ept", "native"):
        sc = copy.deepcopy(PML4)
        sc["mode"] = mode
        if mode == "native":
            del sc["nested"]
        a = both(sc)["accesses"][0]
        assert a["outcome"] == "ok", mode
    # bit 8 of a PDPTE (a global bit there, ignored in a non-leaf entry) stays ignored under npt
    sc = copy.deepcopy(PML4)
    sc["guest"]["tables"][0]["entries"]["0"] = "0x101007"
    sc["guest"]["tables"][1]["entries"]["0"] = "0x102107"
    assert both(sc)["accesses"][0]["outcome"] == "ok"


def test_gpa_at_or_above_2_48_under_4level_ept_uses_bits_47_0():
    """SDM vol. 3C 28.2.2: "The EPT translation mechanism uses only bits 47:0 of each
    guest-physical address"; Bochs' translate_guest_physical indexes the four levels
    with bits 47:12 and keeps the page offset, and reports the whole gpa in the VMCS.
    So a gpa with bit 48 set (MAXPHYADDR 52) translates like its low 48 bits, and an
    exit names the full gpa."""
    sc = {"name": "gpa48", "mode": "ept", "machine": {"maxphyaddr": 52},
          "guest": {"paging": "4level", "cr3": "0x100000", "tables": [
              {"gpa": "0x100000", "entries": {"0": "0x101007"}},
              {"gpa": "0x101000", "entries": {"0": "0x102007"}},
              {"gpa": "0x102000", "entries": {"0": "0x103007"}},
              {"gpa": "0x103000", "entries": {"0": "0x1000000200007", "1": "0x1000000400007"}}]},
          "nested": {"mappings": [{"gpa": "0x0", "hpa": "0x80000000", "page": "2M", "pages": 2}]},
          "accesses": [{"gva": "0x10", "op": "read"}, {"gva": "0x1010", "op": "read"}]}
    a, b = both(sc)["accesses"]
    assert (a["outcome"], a["gpa"], a["hpa"]) == ("ok", "0x1000000200010", "0x80200010")
    final = [s for s in a["steps"] if s["stage"] == 0]
    assert [s["index"] for s in final] == [0, 0, 1]    # bits 47:39, 38:30, 29:21 of the gpa
    assert b["outcome"] == "ept_violation"             # 0x400000 is not mapped
    assert b["fault"]["guest_physical_address"] == "0x1000000400010"
    assert b["fault"]["qualification"] == "0x181"


def test_pae_under_npt_walk_cache_hit_skips_the_pdpte():
    """With the caches on, a directory entry in the guest walk cache stands for the path
    above it, the PDPTE included: the second page of the same table reads only its PTE
    (1 reference, its nested walk answered by the nested TLB), no PDPTE."""
    sc = copy.deepcopy(PAE)
    sc["caches"] = {"preset": "x86-server"}
    sc["guest"]["tables"][2]["entries"]["1"] = "0x201007"
    sc["accesses"].append({"gva": "0x1010", "op": "read"})
    first, second = vmsim(sc)["accesses"]
    assert [s["kind"] for s in first["steps"]][:4] == ["read"] * 4       # PDPTE read once
    assert second["memory_refs"] == 1
    assert second["steps"][0]["kind"] == "pwc_hit" and second["steps"][0]["level"] == 2
    assert not any(s["dim"] == "guest" and s["level"] == 3 for s in second["steps"])


# The A bit on a walk that faults (APM vol. 2, 5.4.1, "Accessed (A) Bit": "set to 1 by
# the processor the first time the table or physical page is either read from or written
# to"): under npt every entry whose table was read gets A, the leaf of a refused access
# does not; under ept (Intel, SDM 29.3.5) nothing is set on a faulting walk. Checked on
# an executing CPU by tests/svm (QEMU's SVM).
A_FAULT = {"name": "a-on-fault", "mode": "npt",
           "guest": {"paging": "4level", "cr3": "0x100000", "tables": [
               {"gpa": "0x100000", "entries": {"0": "0x101003"}},
               {"gpa": "0x101000", "entries": {"0": "0x102003"}},
               {"gpa": "0x102000", "entries": {"2": "0x103003"}},
               {"gpa": "0x103000", "entries": {"0": "0x0"}}]},
           "nested": {"mappings": [{"gpa": "0x0", "hpa": "0x80000000", "page": "4K",
                                    "pages": 1024, "perm": "rwx"}]},
           "accesses": [{"gva": "0x400000", "op": "read"}]}


def test_npt_guest_fault_sets_a_in_the_entries_whose_table_was_read():
    a = both(A_FAULT)["accesses"][0]
    assert (a["outcome"], a["fault"]["error_code"]) == ("guest_page_fault", "0x0")
    writes = [(s["level"], s["ad_set"], s["result"]) for s in a["steps"] if s["kind"] == "ad_write"]
    assert writes == [(4, "A", "written"), (3, "A", "written"), (2, "A", "written")]
    assert a["ad_writes"] == 3
    # the first nested walk (CR3's gpa) succeeded and set A in its four entries; later
    # walks find them set
    first = [s["ad_set"] for s in a["steps"]
             if s["kind"] == "read" and s["dim"] == "nested" and s["stage"] == 4]
    assert first == ["A", "A", "A", "AD"]


def test_npt_nested_fault_sets_a_above_the_faulting_entry_only():
    sc = copy.deepcopy(A_FAULT)
    sc["guest"]["tables"][3]["entries"]["0"] = "0x200003"
    sc["nested"]["overrides"] = [{"gpa": "0x200000", "level": 1, "clear": "0x1"}]
    a = both(sc)["accesses"][0]
    assert (a["outcome"], a["fault"]["exitinfo1"]) == ("npt_fault", "0x100000004")
    # the final gpa's nested walk: its PDE (index 1, no walk has used it) points to a table
    # that was read, so it gets A; the not-present PTE gets nothing
    final = [(s["level"], s["ad_set"], s["result"]) for s in a["steps"]
             if s["kind"] == "read" and s["dim"] == "nested" and s["stage"] == 0]
    assert final == [(4, "", "table"), (3, "", "table"), (2, "A", "table"), (1, "", "not_present")]


def test_ept_fault_sets_no_a_bit():
    sc = copy.deepcopy(A_FAULT)
    sc["mode"] = "ept"
    sc["nested"]["ad"] = True
    a = both(sc)["accesses"][0]
    assert a["outcome"] == "guest_page_fault"
    assert not any(s["kind"] == "ad_write" for s in a["steps"])
