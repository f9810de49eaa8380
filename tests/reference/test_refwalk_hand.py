"""Hand-derived checks of refwalk.py alone (no C engine needed).

The expected numbers come from the model (model.md) and the hardware manuals, worked
out by hand: reference counts g + (g+1)*n, table addresses from the bump allocators,
EPT exit qualifications (SDM Table 28-7) and the NPT EXITINFO1 values that
kvm-unit-tests x86/svm_npt.c checks on real AMD hardware.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen  # noqa: E402
import refwalk  # noqa: E402
from refwalk import run  # noqa: E402


def scenario(mode="ept", paging="4level", gmaps=None, nmaps=None, accesses=(), levels=4,
             goverrides=None, noverrides=None, guest_extra=None, nested_extra=None,
             machine=None):
    """A scenario with a data page gva 0x400000 -> gpa 0x200000 unless told otherwise,
    nested memory gpa 0..8M -> hpa 1G.. in 4K pages (enough for tables and data)."""
    sc = {"name": "hand", "mode": mode,
          "guest": {"paging": paging,
                    "mappings": gmaps if gmaps is not None else
                    [{"gva": "0x400000", "gpa": "0x200000"}]},
          "accesses": [dict(gva=g, op=o, user=u) for g, o, u in accesses]}
    if machine:
        sc["machine"] = machine
    if guest_extra:
        sc["guest"].update(guest_extra)
    if goverrides:
        sc["guest"]["overrides"] = goverrides
    if mode != "native":
        sc["nested"] = {"levels": levels,
                        "mappings": nmaps if nmaps is not None else
                        [{"gpa": "0x0", "hpa": "0x40000000", "pages": 2048}]}
        if nested_extra:
            sc["nested"].update(nested_extra)
        if noverrides:
            sc["nested"]["overrides"] = noverrides
    return sc


def one(sc):
    """Run and return the single access's result."""
    r = run(sc)
    assert len(r["accesses"]) == 1
    return r["accesses"][0]


READ = [("0x400123", "read", False)]


# --- reference counts: g + (g+1)*n -------------------------------------------------------

def test_ept_4_plus_4_is_24_refs():
    a = one(scenario(accesses=READ))
    assert a["outcome"] == "ok"
    assert (a["memory_refs"], a["guest_refs"], a["nested_refs"]) == (24, 4, 20)
    assert a["gpa"] == "0x200123" and a["hpa"] == "0x40200123"
    # 4 nested reads (stage 4) precede the first guest read; the final gpa is stage 0.
    kinds = [(s["dim"], s["stage"]) for s in a["steps"] if s["kind"] == "read"]
    assert kinds[:5] == [("nested", 4)] * 4 + [("guest", 4)]
    assert kinds[-4:] == [("nested", 0)] * 4
    assert [s["ref"] for s in a["steps"] if s["kind"] == "read"] == list(range(1, 25))
    # First access: every guest entry gets its A bit, one ad_write step each.
    assert a["ad_writes"] == 4


def test_ept_registers():
    r = run(scenario(accesses=READ))
    # Guest root = first guest frame; nested root = first nested frame;
    # EPTP = root | (4-1)<<3 | memory type 6.
    assert (r["cr3"], r["eptp"], r["ncr3"]) == ("0x100000", "0x1000001e", None)
    assert r["nested_levels"] == 4


def test_5_plus_5_is_35_refs():
    for mode in ("ept", "npt"):
        a = one(scenario(mode=mode, paging="5level", levels=5, accesses=READ))
        assert a["outcome"] == "ok"
        assert (a["memory_refs"], a["guest_refs"], a["nested_refs"]) == (35, 5, 30)


def test_2m_ept_leaf_is_19_refs():
    a = one(scenario(nmaps=[{"gpa": "0x0", "hpa": "0x40000000", "page": "2M", "pages": 4}],
                     accesses=READ))
    assert a["outcome"] == "ok"
    assert (a["memory_refs"], a["nested_refs"]) == (19, 15)
    assert a["nested_page_size"] == 2 * 1024 * 1024
    leaf = a["steps"][-1]
    assert (leaf["level"], leaf["result"]) == (2, "page")
    assert leaf["flags"] == ["R", "W", "X", "MT=6", "PS"]


def test_2m_guest_page_on_4level_ept_is_19_refs():
    a = one(scenario(gmaps=[{"gva": "0x400000", "gpa": "0x200000", "page": "2M"}],
                     accesses=READ))
    assert (a["memory_refs"], a["guest_refs"], a["guest_page_size"]) == (19, 3, 1 << 21)


def test_native_4level_is_4_refs():
    a = one(scenario(mode="native", accesses=READ))
    assert a["outcome"] == "ok"
    assert (a["memory_refs"], a["guest_refs"], a["nested_refs"]) == (4, 4, 0)
    assert a["gpa"] == a["hpa"] == "0x200123"
    assert a["nested_page_size"] is None
    # Native guest steps have no gpa; table addresses are physical.
    s = a["steps"][0]
    assert (s["gpa"], s["table"], s["entry_hpa"], s["entry"]) == \
        (None, "0x100000", "0x100000", "0x101007")


def test_native_32bit_is_2_refs():
    a = one(scenario(mode="native", paging="32bit", accesses=READ))
    assert (a["memory_refs"], a["outcome"]) == (2, "ok")
    # gva 0x400123: PDE index 1 (4-byte entries), PTE index 0.
    assert [(s["level"], s["index"], s["entry_hpa"]) for s in a["steps"][:2]] == \
        [(2, 1, "0x100004"), (1, 0, "0x101000")]


def test_pae_is_2_refs_plus_pdpte_step():
    a = one(scenario(mode="native", paging="pae", accesses=READ))
    assert a["outcome"] == "ok"
    assert a["memory_refs"] == 2
    first = a["steps"][0]
    assert (first["kind"], first["ref"], first["level"]) == ("pdpte", None, 3)
    assert first["flags"] == ["P"] and first["entry"] == "0x101001"
    assert [s["kind"] for s in a["steps"]] == ["pdpte", "read", "read", "ad_write",
                                               "ad_write"]   # PDPTEs have no A bit


def test_pae_under_ept_is_14_refs():
    a = one(scenario(paging="pae", accesses=READ))
    # The PDPTE register needs no nested walk: 2 guest reads, 3 nested walks of 4.
    assert (a["memory_refs"], a["nested_refs"]) == (14, 12)
    assert a["steps"][0]["kind"] == "pdpte" and a["steps"][1]["stage"] == 2


def test_32bit_pse36_large_page():
    # 4 MiB page at gpa 0x3_0040_0000: bits 35:32 go to PDE bits 16:13 (SDM 4.3).
    a = one(scenario(mode="native", paging="32bit", machine={"maxphyaddr": 36},
                     gmaps=[{"gva": "0x800000", "gpa": "0x300400000", "page": "4M"}],
                     accesses=[("0x9abcde", "read", False)]))
    assert a["steps"][0]["entry"] == hex(0x00400000 | (3 << 13) | 0x87)
    assert (a["gpa"], a["guest_page_size"]) == ("0x3005abcde", 4 << 20)


# --- A/D -----------------------------------------------------------------------------------

def test_guest_ad_persist_between_accesses():
    r = run(scenario(mode="native", accesses=READ + [("0x400123", "read", False),
                                                     ("0x400123", "write", False),
                                                     ("0x400123", "write", False)]))
    assert [a["ad_writes"] for a in r["accesses"]] == [4, 0, 1, 0]
    d_step = r["accesses"][2]["steps"][-1]
    assert (d_step["kind"], d_step["ad_set"], d_step["level"]) == ("ad_write", "D", 1)


def test_ept_ad_sets_nested_bits():
    a = one(scenario(nested_extra={"ad": True}, accesses=[("0x400123", "write", False)]))
    assert a["outcome"] == "ok"
    # The first nested walk sets A on every entry, D on the leaf (guest-table accesses
    # are writes with EPT A/D); later walks find A already set.
    assert [s["ad_set"] for s in a["steps"][:4]] == ["A", "A", "A", "AD"]
    assert a["steps"][5]["ad_set"] == ""
    assert a["steps"][-1]["ad_set"] == "AD"          # final write, fresh leaf


# --- NPT: the EXITINFO1 values kvm-unit-tests x86/svm_npt.c expects -------------------------

def npt_data_pte(set_="0x0", clear="0x0"):
    return [{"gpa": "0x200000", "level": 1, "set": set_, "clear": clear}]


def test_npt_not_present_final_page():
    a = one(scenario(mode="npt", noverrides=npt_data_pte(clear="0x1"), accesses=READ))
    f = a["fault"]
    assert a["outcome"] == "npt_fault" and a["exit"] is True
    assert (f["exitinfo1"], f["exitinfo2"], f["stage"], f["level"]) == \
        ("0x100000004", "0x200123", 0, 1)
    assert a["gpa"] == "0x200123" and a["hpa"] is None


def test_npt_write_protected_guest_cr3_page():
    # gva 0x8000400123 has PML4 index 1: the first guest read is the entry at cr3 + 8.
    sc = scenario(mode="npt", gmaps=[{"gva": "0x8000400000", "gpa": "0x200000"}],
                  noverrides=[{"guest_table": {"gva": "0x8000400000", "level": 4},
                               "level": 1, "clear": "0x2"}],
                  accesses=[("0x8000400123", "read", False)])
    a = one(sc)
    f = a["fault"]
    assert (f["exitinfo1"], f["exitinfo2"]) == ("0x200000007", "0x100008")
    assert (f["stage"], f["level"], f["reason"]) == (4, 1, "permission")
    assert a["gpa"] is None and a["memory_refs"] == 4
    # As in svm_npt.c, a gva with PML4 index 0 faults with exitinfo2 == CR3.
    sc["guest"]["mappings"].append({"gva": "0x400000", "gpa": "0x201000"})
    sc["accesses"] = [{"gva": "0x400123", "op": "read"}]
    assert one(sc)["fault"]["exitinfo2"] == run(sc)["cr3"] == "0x100000"


def test_npt_nx_on_code_page():
    a = one(scenario(mode="npt", noverrides=npt_data_pte(set_="0x8000000000000000"),
                     accesses=[("0x400123", "fetch", False)]))
    assert a["fault"]["exitinfo1"] == "0x100000015"


def test_npt_user_bit_clear():
    a = one(scenario(mode="npt", noverrides=npt_data_pte(clear="0x4"), accesses=READ))
    assert a["fault"]["exitinfo1"] == "0x100000005"


def test_npt_rw_clear_write():
    r = run(scenario(mode="npt", noverrides=npt_data_pte(clear="0x2"),
                     accesses=[("0x400123", "write", False), ("0x400123", "read", False)]))
    assert r["accesses"][0]["fault"]["exitinfo1"] == "0x100000007"
    assert r["accesses"][1]["outcome"] == "ok"
    assert r["totals"]["npt_fault"] == 1 and r["totals"]["exits"] == 1


# --- EPT faults ---------------------------------------------------------------------------

def test_ept_write_to_read_only_page():
    a = one(scenario(nmaps=[{"gpa": "0x0", "hpa": "0x40000000", "pages": 512},
                            {"gpa": "0x200000", "hpa": "0x50000000", "perm": "r"}],
                     accesses=[("0x400123", "write", False)]))
    f = a["fault"]
    # bit 1 write, bits 5:3 = R only (0b001), bit 7 linear valid, bit 8 final gpa.
    assert (f["qualification"], f["guest_physical_address"], f["guest_linear_address"]) \
        == ("0x18a", "0x200123", "0x400123")
    assert (f["exit_reason"], f["stage"], f["level"]) == (48, 0, 1)


def test_ept_not_present_guest_table():
    a = one(scenario(nmaps=[{"gpa": "0x200000", "hpa": "0x50000000"},
                            {"gpa": "0x101000", "hpa": "0x51000000", "pages": 3},
                            {"gpa": "0x100000", "hpa": "0x52000000"}],
                     noverrides=[{"gpa": "0x101000", "level": 1, "clear": "0x7"}],
                     accesses=READ))
    f = a["fault"]
    # A guest paging-structure read: bit 0, nothing allowed, bit 7, bit 8 clear.
    assert (f["qualification"], f["stage"], f["reason"]) == ("0x81", 3, "not_present")


def test_ept_blocked_guest_ad_write():
    # Guest tables readable but not writable in EPT, A/D off: the walk reads fine, the
    # A-bit write to the PML4E is an EPT violation (bits 0+1, R in 5:3, bit 7).
    a = one(scenario(nmaps=[{"gpa": "0x100000", "hpa": "0x50000000", "pages": 4,
                             "perm": "r"},
                            {"gpa": "0x200000", "hpa": "0x51000000"}], accesses=READ))
    f = a["fault"]
    assert (f["qualification"], f["stage"], f["level"], f["guest_physical_address"]) == \
        ("0x8b", 4, 1, "0x100000")
    blocked = a["steps"][-1]
    assert (blocked["kind"], blocked["result"], blocked["level"]) == ("ad_write", "blocked", 4)
    assert a["gpa"] is None and a["ad_writes"] == 1


def test_ept_write_only_leaf_is_misconfig():
    a = one(scenario(nmaps=[{"gpa": "0x0", "hpa": "0x40000000", "pages": 512},
                            {"gpa": "0x200000", "hpa": "0x50000000", "perm": "w"}],
                     accesses=READ))
    f = a["fault"]
    assert (a["outcome"], f["detail"], f["exit_reason"], f["level"]) == \
        ("ept_misconfig", "write_without_read", 49, 1)
    assert a["steps"][-1]["result"] == "misconfig"


def test_ept_execute_only_unsupported():
    a = one(scenario(nmaps=[{"gpa": "0x0", "hpa": "0x40000000", "pages": 512},
                            {"gpa": "0x200000", "hpa": "0x50000000", "perm": "x"}],
                     nested_extra={"execute_only": False},
                     accesses=[("0x400123", "fetch", False)]))
    assert a["fault"]["detail"] == "execute_only_unsupported"


# --- guest faults -------------------------------------------------------------------------

def test_guest_user_write_to_supervisor_read_only():
    a = one(scenario(mode="native", gmaps=[{"gva": "0x400000", "gpa": "0x200000",
                                            "writable": False, "user": False}],
                     accesses=[("0x400123", "write", True)]))
    f = a["fault"]
    assert (f["error_code"], f["cr2"], f["level"], f["vector"]) == ("0x7", "0x400123", 1, 14)
    assert a["exit"] is False and a["ad_writes"] == 0


def test_guest_smep_fetch():
    a = one(scenario(mode="native", guest_extra={"cr4_smep": True},
                     accesses=[("0x400123", "fetch", False)]))
    assert a["fault"]["error_code"] == "0x11"


def test_guest_reserved_bit():
    a = one(scenario(mode="native", machine={"maxphyaddr": 40},
                     goverrides=[{"gva": "0x400000", "level": 3, "set": "0x10000000000"}],
                     accesses=READ))
    f = a["fault"]
    assert (f["reason"], f["level"], f["error_code"]) == ("reserved", 3, "0x9")


def test_guest_not_present():
    # 0x401000 shares the page table of 0x400000 (PTE index 1 is empty); 0x600000 is in
    # the next 2 MiB, whose PDE is empty.
    r = run(scenario(mode="native", accesses=[("0x401000", "write", True),
                                              ("0x600000", "read", False)]))
    faults = [a["fault"] for a in r["accesses"]]
    assert [(f["error_code"], f["level"], f["reason"]) for f in faults] == \
        [("0x6", 1, "not_present"), ("0x0", 2, "not_present")]


# --- given tables (guest.tables + guest.cr3) -----------------------------------------------

def raw(paging, cr3, tables, accesses, mode="native", guest_extra=None, nested=None,
        machine=None):
    """A scenario with the guest tables given as they are: tables = {gpa: {index: value}}."""
    sc = {"name": "hand-raw", "mode": mode,
          "guest": {"paging": paging, "cr3": hex(cr3),
                    "tables": [{"gpa": hex(g), "entries": {str(i): hex(v)
                                                           for i, v in e.items()}}
                               for g, e in tables.items()]},
          "accesses": [dict(gva=g, op=o, user=u) for g, o, u in accesses]}
    if guest_extra:
        sc["guest"].update(guest_extra)
    if nested is not None:
        sc["nested"] = nested
    if machine:
        sc["machine"] = machine
    return sc


# 32-bit paging, CR3 = 0x7000: PDE 1 maps a 4 MiB page at 0xc00000 (P|RW|US|PS = 0x87),
# PDE 2 points at the page table at 0x9000, whose PTE 3 maps 0x12345000 (P|RW|US).
RAW_32BIT = {0x7000: {1: 0x00C00087, 2: 0x9007}, 0x9000: {3: 0x12345007}}


def test_raw_32bit_pse_and_4k_pages():
    r = run(raw("32bit", 0x7000, RAW_32BIT, [("0x523456", "read", False),
                                             ("0x803abc", "write", True)]))
    assert r["cr3"] == "0x7000"
    big, small = r["accesses"]
    # gva 0x523456: PDE index 0x523456 >> 22 = 1 at 0x7000 + 4*1; a 4 MiB page, so the
    # low 22 bits are the offset: 0xc00000 + 0x123456.
    assert (big["outcome"], big["gpa"], big["guest_page_size"]) == ("ok", "0xd23456", 4 << 20)
    assert big["memory_refs"] == 1
    s = big["steps"][0]
    assert (s["level"], s["index"], s["entry_hpa"], s["entry"], s["result"]) == \
        (2, 1, "0x7004", "0xc00087", "page")
    assert s["flags"] == ["P", "RW", "US", "PS"]
    assert [(a["kind"], a["ad_set"]) for a in big["steps"][1:]] == [("ad_write", "A")]
    # gva 0x803abc: PDE index 2 (0x7008), PTE index 3 (0x9000 + 4*3), offset 0xabc.
    assert (small["outcome"], small["gpa"], small["guest_page_size"]) == \
        ("ok", "0x12345abc", 4096)
    assert [(s["level"], s["index"], s["entry_hpa"], s["entry"]) for s in small["steps"][:2]] \
        == [(2, 2, "0x7008", "0x9007"), (1, 3, "0x900c", "0x12345007")]
    # A in the PDE; A and D in the PTE (a write).
    assert [(s["level"], s["ad_set"]) for s in small["steps"][2:]] == [(2, "A"), (1, "AD")]


def test_raw_32bit_without_pse_ps_is_ignored():
    # Without CR4.PSE bit 7 of a PDE is ignored (SDM 4.3): PDE 1 points at a page table
    # at 0xc00000, which is no given table and reads as zero: PTE index
    # (0x523456 >> 12) & 0x3ff = 0x123 at 0xc00000 + 4*0x123 is not present.
    a = one(raw("32bit", 0x7000, RAW_32BIT, [("0x523456", "read", False)],
                guest_extra={"cr4_pse": False}))
    assert [(s["level"], s["entry_hpa"], s["entry"], s["result"]) for s in a["steps"]] == \
        [(2, "0x7004", "0xc00087", "table"), (1, "0xc0048c", "0x0", "not_present")]
    assert (a["outcome"], a["fault"]["level"], a["fault"]["error_code"]) == \
        ("guest_page_fault", 1, "0x0")


def test_raw_32bit_pse36_page():
    # maxphyaddr 36: PDE bits 16:13 hold address bits 35:32 (PSE-36); bit 17 is reserved.
    pde = 0x00400000 | (0x3 << 13) | 0x83                   # gpa 0x3_0040_0000, P|RW|PS
    r = run(raw("32bit", 0x7000, {0x7000: {0: pde, 1: pde | (1 << 17)}},
                [("0x12345", "read", False), ("0x412345", "read", False)],
                machine={"maxphyaddr": 36}))
    ok, rsvd = r["accesses"]
    assert (ok["gpa"], ok["guest_page_size"]) == ("0x300412345", 4 << 20)
    assert (rsvd["fault"]["reason"], rsvd["fault"]["error_code"]) == ("reserved", "0x9")


# PAE: CR3 = 0x3060 is 32-byte aligned inside the frame 0x3000, so the four PDPTEs are
# entries 12..15 of that frame (0x3060 / 8 = 12); entry 0 of the frame is no PDPTE.
# PDPTE 0 -> page directory 0x4000; PDPTE 1 not present.  PDE 2 maps a 2 MiB page at
# 0x200000, PDE 3 points at the page table 0x6000, whose PTE 5 maps 0xabc000.
RAW_PAE = {0x3000: {0: 0x5001, 12: 0x4001, 13: 0x0},
           0x4000: {2: 0x200087, 3: 0x6007},
           0x6000: {5: 0xABC007}}


def test_raw_pae_pdpt_inside_a_frame():
    r = run(raw("pae", 0x3060, RAW_PAE, [("0x400123", "read", False),
                                         ("0x40000000", "read", False),
                                         ("0x605123", "write", False)]))
    assert r["cr3"] == "0x3060"
    big, absent, small = r["accesses"]
    # The PDPTE comes from the register loaded from 0x3060 + 8*0: no memory reference.
    p = big["steps"][0]
    assert (p["kind"], p["ref"], p["table"], p["index"], p["entry_hpa"], p["entry"]) == \
        ("pdpte", None, "0x3060", 0, "0x3060", "0x4001")
    # gva 0x400123: PDPT index 0, PD index 2 -> 0x4000 + 8*2; a 2 MiB page.
    s = big["steps"][1]
    assert (s["entry_hpa"], s["entry"], s["result"]) == ("0x4010", "0x200087", "page")
    assert (big["gpa"], big["guest_page_size"], big["memory_refs"]) == ("0x200123", 2 << 20, 1)
    # gva 0x40000000: PDPT index 1 is entry 13 of the frame (0x3068): not present.
    p = absent["steps"][0]
    assert (p["kind"], p["index"], p["entry_hpa"], p["result"]) == \
        ("pdpte", 1, "0x3068", "not_present")
    assert (absent["fault"]["level"], absent["fault"]["error_code"]) == (3, "0x0")
    # gva 0x605123: PD index 3 (0x4018) -> PT 0x6000, PTE index 5 (0x6028).
    assert [s["entry_hpa"] for s in small["steps"] if s["kind"] == "read"] == \
        ["0x4018", "0x6028"]
    assert small["gpa"] == "0xabc123"


def test_raw_pae_cr3_rules():
    # CR3 must be 32-byte aligned; a present PDPTE with a reserved bit (bit 1, RW) is a
    # scenario error (mov cr3 would #GP, SDM 4.4.1); one inside the frame but outside the
    # four PDPTEs (entry 0 here) is not checked, nor is a not-present one.
    with pytest.raises(refwalk.ScenarioError, match="^guest.cr3"):
        run(raw("pae", 0x3050, RAW_PAE, []))
    bad = {**RAW_PAE, 0x3000: {0: 0x5003, 12: 0x4003}}
    with pytest.raises(refwalk.ScenarioError, match="PDPTE 0"):
        run(raw("pae", 0x3060, bad, []))
    fine = {**RAW_PAE, 0x3000: {0: 0x5003, 12: 0x4001, 13: 0x8000000000000006}}
    assert run(raw("pae", 0x3060, fine, []))["cr3"] == "0x3060"


# 4-level: PML4E 0 -> 0x6000 (given), PDPTE 0 -> 0x99000, which is no given table.
RAW_STRAY = {0x5000: {0: 0x6007}, 0x6000: {0: 0x99007}}


def test_raw_entry_points_at_a_frame_that_is_not_given():
    a = one(raw("4level", 0x5000, RAW_STRAY, [("0x123", "read", False)]))
    # The page directory at 0x99000 reads as zero: not present at level 2.
    assert [(s["level"], s["table"], s["entry"], s["result"]) for s in a["steps"]] == \
        [(4, "0x5000", "0x6007", "table"), (3, "0x6000", "0x99007", "table"),
         (2, "0x99000", "0x0", "not_present")]
    assert (a["memory_refs"], a["fault"]["level"], a["ad_writes"]) == (3, 2, 0)


def test_raw_ept_frame_that_is_not_given_nor_mapped():
    # EPT maps only the two tables (4 KiB each: nested root, then one table per level).
    # The entry of the page directory at gpa 0x99000 needs a nested walk, which finds
    # no leaf for it: an EPT violation at nested level 1 while locating guest level 2.
    nested = {"mappings": [{"gpa": "0x5000", "hpa": "0x40005000"},
                           {"gpa": "0x6000", "hpa": "0x40006000"}]}
    a = one(raw("4level", 0x5000, RAW_STRAY, [("0x123", "read", False)], mode="ept",
                nested=nested))
    f = a["fault"]
    # 4 nested + 1 guest (level 4) + 4 + 1 (level 3) + 4 nested for gpa 0x99000.
    assert (a["memory_refs"], a["guest_refs"], a["nested_refs"]) == (14, 2, 12)
    # Paging-structure read (bit 0), nothing allowed (5:3 = 0), linear address valid
    # (bit 7), bit 8 clear.
    assert (f["reason"], f["level"], f["stage"], f["qualification"],
            f["guest_physical_address"]) == ("not_present", 1, 2, "0x81", "0x99000")
    # Mapped to a host frame of its own, the same frame reads as zero: a guest #PF.
    nested["mappings"].append({"gpa": "0x99000", "hpa": "0x40099000"})
    a = one(raw("4level", 0x5000, RAW_STRAY, [("0x123", "read", False)], mode="ept",
                nested=nested))
    assert (a["outcome"], a["fault"]["level"], a["steps"][-1]["entry_hpa"]) == \
        ("guest_page_fault", 2, "0x40099000")


def test_raw_self_referencing_pml4e():
    # PML4E 511 points back at the PML4 itself (P|RW, supervisor): gva
    # 0xfffffffffffff010 selects entry 511 at every level, so the walk reads that one
    # entry four times and the last read makes it a 4 KiB leaf mapping the PML4 frame.
    a = one(raw("4level", 0x5000, {0x5000: {511: 0x5003}},
                [("0xfffffffffffff010", "write", False)]))
    reads = [s for s in a["steps"] if s["kind"] == "read"]
    assert [(s["level"], s["entry_hpa"], s["entry"]) for s in reads] == \
        [(lvl, "0x5ff8", "0x5003") for lvl in (4, 3, 2, 1)]
    assert (a["gpa"], a["guest_page_size"]) == ("0x5010", 4096)
    # A/D decided on memory at update time: A once (level 4), then D on the leaf, which
    # by then already has A.
    ads = [s for s in a["steps"] if s["kind"] == "ad_write"]
    assert [(s["level"], s["entry"], s["ad_set"]) for s in ads] == \
        [(4, "0x5003", "A"), (1, "0x5023", "D")]


def test_raw_rejects():
    tables = {0x5000: {0: 0x6007}}
    with pytest.raises(refwalk.ScenarioError, match=r"^guest.mappings"):
        sc = raw("4level", 0x5000, tables, [])
        sc["guest"]["mappings"] = []
        run(sc)
    with pytest.raises(refwalk.ScenarioError, match=r"^guest.cr3"):
        run(raw("4level", 0x6000, tables, []))
    with pytest.raises(refwalk.ScenarioError, match=r"^guest.tables\[0\].entries.1"):
        run(raw("32bit", 0x5000, {0x5000: {1: 1 << 32}}, []))
    with pytest.raises(refwalk.ScenarioError, match=r"^guest.tables\[0\].entries.512"):
        run(raw("4level", 0x5000, {0x5000: {512: 1}}, []))


# --- invalid scenarios ------------------------------------------------------------------

@pytest.mark.parametrize("case", gen.INVALID_SCENARIOS + gen.LENIENT_INDEX_SCENARIOS,
                         ids=[c[0] for c in gen.INVALID_SCENARIOS + gen.LENIENT_INDEX_SCENARIOS])
def test_refwalk_rejects(case):
    _, sc, field_path = case
    with pytest.raises(refwalk.ScenarioError) as err:
        run(sc)
    assert str(err.value).startswith(field_path)


def test_cli(tmp_path):
    """`refwalk.py run FILE`: compact JSON on stdout; invalid: exit 2, one stderr line."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "refwalk.py")
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(scenario(mode="native", accesses=READ)))
    bad.write_text(json.dumps(gen.INVALID_SCENARIOS[0][1]))
    p = subprocess.run([sys.executable, script, "run", str(good)], capture_output=True,
                       text=True)
    assert p.returncode == 0 and p.stdout.startswith('{"format":"vmsim-result/1","name"')
    assert json.loads(p.stdout) == run(scenario(mode="native", accesses=READ))
    p = subprocess.run([sys.executable, script, "run", str(bad)], capture_output=True,
                       text=True)
    assert p.returncode == 2 and p.stdout == ""
    assert len(p.stderr.strip().splitlines()) == 1


# --- agile paging (model.md 1, "Agile paging") ---------------------------------------

def agile(switch_level, levels=4, paging="4level", accesses=None, **extra):
    sc = scenario(mode="ept", paging=paging, levels=levels)
    sc["mode"] = "agile"
    sc["agile"] = {"switch_level": switch_level, **extra}
    sc["accesses"] = accesses or [{"gva": "0x400123", "op": "read", "user": False}] * 2
    return sc


@pytest.mark.parametrize("n,m", [(4, 4), (5, 5), (5, 4), (4, 5)])
def test_agile_references_at_every_switching_level(n, m):
    """The second (warm) walk of a page: (n - S) shadow entries, S guest entries each
    behind an m-level nested walk, the final nested walk; n when all shadow.  By hand
    for n = m = 4: 4, 12, 16, 20, 24."""
    paging = {4: "4level", 5: "5level"}[n]
    for s in range(n + 1):
        warm = run(agile(s, levels=m, paging=paging))["accesses"][1]
        expected = n if s == 0 else (n - s) + s * (m + 1) + m
        assert warm["memory_refs"] == expected, (n, m, s)
        assert warm["exits"] == 0 and warm["outcome"] == "ok"
        shadow = [st for st in warm["steps"] if st["dim"] == "nested" and st["stage"] == 0
                  and st["gpa"] is None]
        assert len(shadow) == n - s
        if 0 < s < n:
            assert "SW" in shadow[-1]["flags"] and all("SW" not in st["flags"] for st in shadow[:-1])
    assert [run(agile(s))["accesses"][1]["memory_refs"] for s in range(5)] == [4, 12, 16, 20, 24]


def test_agile_cold_walk_fills_the_switching_entry():
    """Switch at L2: the cold walk reads the empty shadow root (1), exits, the VMM reads
    guest L4 and L3, fills shadow L4 -> table and the L3 switching entry, and the retry
    costs 16: 17 references and one exit."""
    cold = run(agile(2))["accesses"][0]
    assert cold["memory_refs"] == 17 and cold["exits"] == 1
    kinds = [(st["kind"], st["level"]) for st in cold["steps"]
             if st["kind"] in ("vmexit", "vmm_read", "vmm_fill")]
    assert kinds == [("vmexit", 1), ("vmm_read", 4), ("vmm_read", 3), ("vmm_fill", 3)]
    # then the guest's own L2 and L1 entries set their A bits in the 2-D part
    assert [st["level"] for st in cold["steps"] if st["kind"] == "ad_write"] == [2, 1]


@pytest.mark.parametrize("s", range(5))
def test_agile_writes_exit_above_the_switch_only(s):
    """After a walk of 0x400000 (the VMM has walked the shadowed tables), a write to the
    guest's level-L entry exits exactly when L > S."""
    acc = [{"gva": "0x400123", "op": "read", "user": False}]
    acc += [{"pte_write": {"gva": "0x400000", "level": lv}} for lv in (1, 2, 3, 4)]
    r = run(agile(s, accesses=acc))
    exits = {lv: r["accesses"][i + 1]["exits"] for i, lv in enumerate((1, 2, 3, 4))}
    assert exits == {lv: int(lv > s) for lv in (1, 2, 3, 4)}


def test_agile_policy_moves_a_subtree_and_back():
    """nested_after_writes 2, shadow_after_quiet 4: the second pt_write exit to the L1
    table (tick 4) makes its subtree nested (tick 5 refills a switching entry at L2, one
    exit; then 12 references a walk); the write at tick 7 does not exit and restarts the
    quiet period; at tick 11 = 7 + 4 the subtree is shadow again: the walk reads L4, L3
    and the zapped L2 entry (3), exits, and the retry costs 4."""
    rd = {"gva": "0x400123", "op": "read", "user": False}
    wr = {"pte_write": {"gva": "0x400000", "level": 1}}
    r = run(agile(0, accesses=[rd, wr, rd, wr, rd, rd, wr, rd, rd, rd, rd],
                  nested_after_writes=2, shadow_after_quiet=4))
    refs = [a["memory_refs"] for a in r["accesses"]]
    exits = [a["exits"] for a in r["accesses"]]
    assert exits == [1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1]
    assert [refs[i] for i in (5, 7, 8, 9, 10)] == [12, 12, 12, 12, 3 + 4]
    assert r["shadow"]["to_nested"] == 1 and r["shadow"]["to_shadow"] == 1


def test_agile_rejects_other_guests():
    sc = agile(1, paging="pae")
    with pytest.raises(refwalk.ScenarioError):
        run(sc)
