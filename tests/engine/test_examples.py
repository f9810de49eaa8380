"""Every scenario in wasm-core/examples is also a test: it must pass the JSON Schema,
run under the native CLI, and give the outcome, reference count and exit information
derived by hand below (from the SDM/APM rules, not from a recording)."""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "wasm-core" / "examples"
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))


def run(path):
    assert os.path.exists(VMSIM), "build the engine first: make -C wasm-core native"
    p = subprocess.run([VMSIM, "run", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def refs_2d(g, n):
    """References of a completed 2-D walk: each of g guest reads needs an n-level nested
    walk first, and so does the final gpa: g + (g + 1) * n."""
    return g + (g + 1) * n


def refs_agile(s, n=4, m=4):
    """References of a completed agile walk switched at guest level s (model.md 1,
    "Agile paging"): n - s shadow entries, s guest entries each behind an m-level nested
    walk, the final nested walk; n when all shadow (the shadow leaf holds the hpa)."""
    return n if s == 0 else (n - s) + s * (m + 1) + m


def agile_switch_example(s):
    """agile-switch-l<s>: cold (the empty shadow root, an exit, the refill, the walk),
    warm, a write below the switch (no exit), a write at level s + 1 (an exit that zaps
    the switching entry: the next walk reads the n - s shadow entries down to it, exits,
    and walks again), and a write to the page whose PTE lost RW: a guest #PF (P|W) after
    every guest level, with no exit and no final nested walk."""
    return [("ok", 1 + refs_agile(s), {"exits": 1}),
            ("ok", refs_agile(s), {"exits": 0, "exit": False}),
            ("ok", 0, {"exits": 0}),
            ("ok", 0, {"exits": 1}),
            ("ok", (4 - s) + refs_agile(s), {"exits": 1}),
            ("guest_page_fault", (4 - s) + s * 5, {"exits": 0, "fault.error_code": "0x3"})]


# (outcome, memory_refs, extra fields to check) per access, derived by hand.
EXPECT = {
    "agile-switch-l1": agile_switch_example(1),
    "agile-switch-l2": agile_switch_example(2),
    "agile-switch-l3": agile_switch_example(3),
    # all shadow (4); two pt_write exits on the L1 table move it nested: the next walk
    # reads L4, L3 and the zapped L2 entry (3), exits and walks 12; 4 quiet entries after
    # the write at entry 7 it is shadow again: 3 reads to the zapped L2 entry, exit, 4
    "agile-policy": [("ok", 1 + 4, {"exits": 1}), ("ok", 0, {"exits": 1}),
                     ("ok", 4 + 4, {"exits": 1}),        # the zapped PTE: 4 reads, exit, 4
                     ("ok", 0, {"exits": 1}),
                     ("ok", 3 + refs_agile(1), {"exits": 1}),
                     ("ok", refs_agile(1), {"exits": 0}),
                     ("ok", 0, {"exits": 0}),            # below the switch now: a store
                     ("ok", refs_agile(1), {}), ("ok", refs_agile(1), {}), ("ok", refs_agile(1), {}),
                     ("ok", 3 + 4, {"exits": 1})],
    "native-4k": [("ok", 4, {"ad_writes": 4, "hpa": "0x200123"}),  # A set at 4 levels
                  ("ok", 4, {"ad_writes": 1})],                     # then only D on the PTE
    "ept-4k": [("ok", refs_2d(4, 4), {"hpa": "0x80200123", "guest_refs": 4, "nested_refs": 20})],
    "npt-4k": [("ok", refs_2d(4, 4), {"hpa": "0x80200123"})],
    "ept-2m": [("ok", refs_2d(4, 3), {"nested_page_size": 2 << 20})],
    "ept-5level": [("ok", refs_2d(5, 5), {})],
    "pae-ept": [("ok", refs_2d(2, 4), {})],
    "32bit-native": [("ok", 2, {"hpa": "0x200123"}), ("ok", 1, {"hpa": "0x1123456", "guest_page_size": 4 << 20})],
    "guest-page-fault": [
        # not-present PTE, user read: error code U (0x4); all 4 guest levels were read
        ("guest_page_fault", refs_2d(4, 4) - 4, {"fault.error_code": "0x4", "exit": False}),
        # user write to a read-only page: P|W|U
        ("guest_page_fault", 20, {"fault.error_code": "0x7"}),
        # user fetch from an NX page with EFER.NXE: P|U|I/D
        ("guest_page_fault", 20, {"fault.error_code": "0x15"}),
        # supervisor write to the read-only page with CR0.WP = 0 is allowed
        ("ok", 24, {}),
    ],
    "ept-violation": [
        # kvm-unit-tests ept_access_test_not_present, OP_READ: RD | LADDR_VLD | PADDR
        ("ept_violation", 24, {"fault.qualification": "0x181", "fault.stage": 0}),
        # ept_access_test_read_only, OP_WRITE: WR | PERM_RD | LADDR_VLD | PADDR
        ("ept_violation", 24, {"fault.qualification": "0x18a"}),
        # paddr_not_present_ad_disabled: RD | LADDR_VLD, bit 8 clear; PD page gpa 0x104000
        ("ept_violation", 5 + 5 + 4, {"fault.qualification": "0x81", "fault.guest_physical_address": "0x104000",
                                       "fault.stage": 2}),
    ],
    "ept-misconfig": [
        ("ept_misconfig", 24, {"fault.detail": "write_without_read", "fault.exit_reason": 49}),
        ("ept_misconfig", 24, {"fault.detail": "memory_type"}),
        ("ok", 24, {}),
        ("ept_misconfig", 21, {"fault.detail": "reserved_bits", "fault.level": 4}),
    ],
    # a flat nested table costs one reference per gpa: 4 + (4 + 1) x 1 = 9
    "flat-sunway": [("ok", refs_2d(4, 1), {"hpa": "0x80201234", "guest_page_size": 8192, "exits": 0}),
                    # write to a page without KWE/UWE: Sunway access violation (ACV = 1)
                    ("guest_page_fault", 8, {"fault.error_code": "0x1", "fault.reason": "permission"})],
    "flat-x86-lazy": [
        # five flat-table misses, each an exit, a fill and a second read: 9 + 5
        ("ok", refs_2d(4, 1) + 5, {"exits": 5, "exit": True}),
        ("ok", refs_2d(4, 1), {"exits": 0, "exit": False}),
        # gpa 0x3ff000 lies outside every memory slot: the VMM cannot fill it
        ("flat_fault", refs_2d(4, 1), {"exits": 1, "fault.reason": "unmapped", "fault.stage": 0}),
    ],
    # ELISA gate: the object is reachable only through EPTP-list entry 1
    "vmfunc-gate": [
        ("ok", 24, {"eptp_index": 0}),
        ("ept_violation", 24, {"fault.qualification": "0x181", "fault.guest_physical_address": "0x300000"}),
        ("ok", 1, {"eptp_index": 1, "exits": 0, "gva": None}),      # VMFUNC reads one EPTP-list entry
        ("ok", 24, {"eptp_index": 1, "hpa": "0x80300000"}),
        ("ok", 1, {"eptp_index": 0, "exits": 0}),
        ("ept_violation", 24, {"eptp_index": 0}),
        ("vmcall_exit", 0, {"fault.exit_reason": 18, "exits": 1}),
        ("vmfunc_exit", 0, {"fault.exit_reason": 59, "fault.reason": "index_out_of_range", "eptp_index": 0}),
        ("vmfunc_exit", 1, {"fault.reason": "invalid_eptp", "eptp_index": 0}),   # entry 7 was never filled
    ],
    # Caches, derived by hand. The guest tables (gpa 0x100000-0x103fff) share every nested
    # upper entry, so after the first nested walk (4 reads) each guest table's gpa costs
    # 1 read (the nested PDE cache hit leaves the PTE); the data gpa 0x200000 sits under
    # another nested PDE (PDPTE cache hit, 2 reads): 4+1 + 3x(1+1) + 2 = 13.
    # EPTP-tagged caches: VMFUNC flushes nothing. EPT 1's nested caches start empty: the
    # guest PDE cache (gpa-valued, not tagged) leaves 1 guest read, the PT page gpa 0x103000
    # takes a 4-level nested walk, the object's gpa 0x300000 a nested PDPTE-cache hit + 2.
    "vmfunc-tlb": [
        ("ok", 13, {"cache.tlb": "miss", "eptp_index": 0}),
        ("ok", 1, {"eptp_index": 1, "exits": 0}),
        ("ok", 1 + 4 + 2, {"cache.tlb": "miss", "hpa": "0x80300000"}),
        ("ok", 1, {"eptp_index": 0}),
        ("ok", 0, {"cache.tlb": "hit", "eptp_index": 0}),      # the entry EPT 0 left is still there
        ("ok", 1, {"eptp_index": 1}),
        ("ok", 0, {"cache.tlb": "hit", "hpa": "0x80300000"}),
    ],
    "caches-ept": [
        ("ok", 13, {"cache.tlb": "miss", "cache.pwc_hits": 4}),
        ("ok", 0, {"cache.tlb": "hit", "hpa": "0x80200008"}),
        # guest PDE cache hit: read the PTE (its page in the nested TLB), final gpa: nested PDE hit
        ("ok", 2, {"cache.tlb": "miss", "cache.ntlb_hits": 1}),
        # clean TLB entry: walk again to set the guest D bit; the PTE's page and the data
        # page are both in the nested TLB (EPT A/D off: no nested D to set) -> 1 read
        ("ok", 1, {"cache.tlb": "miss", "cache.ntlb_hits": 2}),
        ("ok", 0, {"cache.tlb": "hit"}),
        ("ok", 0, {"gva": "0x400000"}),                     # invlpg
        ("ok", 4, {"cache.ntlb_hits": 5, "cache.pwc_hits": 0}),
    ],
    "context-switch": [
        ("ok", 13, {}), ("ok", 0, {"cache.tlb": "hit"}),
        ("ok", 0, {}),                                      # mov cr3 without PCID: flush
        ("ok", 8, {"cache.ntlb_hits": 1}),                  # new tables: 4 guest reads, nested PWC hits
        ("ok", 0, {}),
        ("ok", 4, {"cache.tlb": "miss", "cache.ntlb_hits": 5}),
    ],
    # Shadow paging: the hardware walks the shadow table (4 references); a missing entry
    # stops the walk where it is missing, exits, and the retry walks all 4 levels.
    "shadow": [
        ("ok", 1 + 4, {"exits": 1, "hpa": "0x80200010"}),      # empty root: miss at level 4
        ("ok", 4, {"exits": 0}),                                # filled: a plain 1-D walk
        ("ok", 4 + 4, {"exits": 1}),                            # read-only until the guest D bit is set
        ("ok", 0, {"exits": 1, "gva": "0x401000"}),             # pte_write to a write-protected table
        ("ok", 4 + 4, {"exits": 1, "hpa": "0x80201000"}),      # zapped leaf: miss at level 1
        ("ok", 0, {"exits": 1}),                                # mov cr3 to a non-target: exit
        ("ok", 1 + 4, {"exits": 1}),                            # address space 1's own empty shadow
        ("ok", 0, {"exits": 0}),                                # back to the CR3-target value: no exit
        ("guest_page_fault", 4, {"exits": 1, "fault.error_code": "0x0"}),  # reflected into the guest
    ],
    # A 32-bit guest under a PAE-format shadow: the shadow PDPTE is a register (no reference),
    # directory + table = 2 references; a miss at the directory costs 1 + 2. The 4 MiB guest
    # page is two 2 MiB shadow directory entries, filled one at a time and zapped together.
    "shadow-32bit": [
        ("ok", 0 + 2, {"exits": 1, "hpa": "0x80200010"}),      # empty shadow: PDPTE not present
        ("ok", 2, {"exits": 0}),
        ("ok", 1 + 2, {"exits": 1, "hpa": "0x80e12345"}),      # 0xa12345 - 0x800000 + 0xc00000
        ("ok", 1 + 2, {"exits": 1, "hpa": "0x80c12345"}),      # the other 2 MiB half: its own fill
        ("ok", 0, {"exits": 1}),                                # pt_write to the guest directory
        ("ok", 1 + 2, {"exits": 1}),                            # zapped
        ("guest_page_fault", 1, {"exits": 1, "fault.error_code": "0x3"}),  # P | W, reflected
    ],
    # kvm-unit-tests svm_npt.c npt_np: 0x100000004
    "npt-fault": [("npt_fault", 24, {"fault.exitinfo1": "0x100000004", "fault.exitinfo2": "0x200000"})],
    # svm_npt.c npt_rw_pfwalk: 0x200000007, EXITINFO2 = guest CR3 (+ index 0 of the PML4)
    "npt-fault-walk": [("npt_fault", 4, {"fault.exitinfo1": "0x200000007", "fault.exitinfo2": "0x100000"})],
}


def get(obj, dotted):
    for part in dotted.split("."):
        obj = obj[part]
    return obj


def test_flat_table_size_is_1_1024_of_guest_ram():
    # 1 GiB of guest RAM in 8 KiB frames: 131072 entries of 8 bytes = 1 MiB
    assert run(EXAMPLES / "flat-sunway.json")["flat_table_bytes"] == (1 << 30) // 1024
    assert run(EXAMPLES / "flat-x86-lazy.json")["flat_table_bytes"] == (1 << 30) // 4096 * 8


def test_every_example_has_expectations():
    names = sorted(p.stem for p in EXAMPLES.glob("*.json"))
    assert names == sorted(EXPECT), "add hand-derived expectations for new examples"


@pytest.mark.parametrize("name", sorted(EXPECT))
def test_example(name):
    result = run(EXAMPLES / f"{name}.json")
    assert len(result["accesses"]) == len(EXPECT[name])
    for i, (acc, (outcome, refs, extra)) in enumerate(zip(result["accesses"], EXPECT[name])):
        assert acc["outcome"] == outcome, f"access {i}"
        assert acc["memory_refs"] == refs, f"access {i}"
        assert acc["memory_refs"] == sum(1 for s in acc["steps"] if s["ref"] is not None)
        assert acc["exit"] == (acc["exits"] > 0)
        if outcome in ("ept_violation", "ept_misconfig", "npt_fault", "flat_fault", "vmfunc_exit", "vmcall_exit",
                       "shadow_unmapped"):
            assert acc["exit"]
        for key, want in extra.items():
            assert get(acc, key) == want, f"access {i}: {key}"


@pytest.mark.parametrize("path", sorted(p for p in EXAMPLES.glob("invalid/*.json") if p.name != "expected-errors.json"), ids=lambda p: p.stem)
def test_invalid_example_rejected_with_one_line(path):
    p = subprocess.run([VMSIM, "run", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vmsim: ")
    expected = json.loads((path.parent / "expected-errors.json").read_text())[path.name]
    assert expected in lines[0]


def run_scenario(s):
    p = subprocess.run([VMSIM, "run", "-"], input=json.dumps(s), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_vmfunc_without_vm_functions_is_ud_in_the_guest():
    s = json.loads((EXAMPLES / "vmfunc-gate.json").read_text())
    s["nested"]["vmfunc"] = False
    del s["nested"]["eptp_list"]
    s["accesses"] = [{"vmfunc": 1}, {"vmfunc": 0, "function": 1}]
    a, b = run_scenario(s)["accesses"]
    assert (a["outcome"], a["exit"], a["fault"]["vector"]) == ("invalid_opcode", False, 6)
    assert b["outcome"] == "invalid_opcode"


def test_vmfunc_function_other_than_0_exits():
    s = json.loads((EXAMPLES / "vmfunc-gate.json").read_text())
    s["accesses"] = [{"vmfunc": 1, "function": 1}]
    (a,) = run_scenario(s)["accesses"]
    assert (a["outcome"], a["fault"]["reason"], a["eptp_index"]) == ("vmfunc_exit", "function_disabled", 0)


def test_eptp_switch_keeps_the_guest_tables():
    """Both EPTs map the guest tables to the same host frames, so after the switch the
    guest walk reads the same entries; only the final gpa's translation differs."""
    r = run_scenario(json.loads((EXAMPLES / "vmfunc-gate.json").read_text()))
    before, after = r["accesses"][0], r["accesses"][3]
    g = lambda acc: [(st["level"], st["entry_hpa"]) for st in acc["steps"] if st["dim"] == "guest" and st["kind"] == "read"]
    assert [h for _, h in g(before)][:3] == [h for _, h in g(after)][:3]


def test_pcid_keeps_tlb_entries_across_mov_cr3():
    s = json.loads((EXAMPLES / "context-switch.json").read_text())
    s["guest"]["pcid"] = True
    acc = run_scenario(s)["accesses"]
    assert acc[5]["cache"]["tlb"] == "hit" and acc[5]["memory_refs"] == 0


def test_caches_off_by_default_keep_the_full_walk():
    s = json.loads((EXAMPLES / "caches-ept.json").read_text())
    del s["caches"]
    acc = run_scenario(s)["accesses"]
    assert [a["memory_refs"] for a in acc if a["op"] == "read"] == [24, 24, 24]
    assert all(a["cache"] is None for a in acc)


def test_eptp_switch_does_not_flush_tagged_entries_unless_asked():
    """Entries are tagged by EPTP index: switching to the gate EPT and back finds the
    default EPT's TLB entry again; with flush_on_eptp_switch (as Bochs models it) the
    walk starts over."""
    s = json.loads((EXAMPLES / "vmfunc-gate.json").read_text())
    s["caches"] = {"preset": "x86-server"}
    s["accesses"] = [{"gva": "0x400000", "op": "read"}, {"vmfunc": 1}, {"vmfunc": 0},
                     {"gva": "0x400000", "op": "read"}]
    assert run_scenario(s)["accesses"][3]["cache"]["tlb"] == "hit"
    s["caches"]["flush_on_eptp_switch"] = True
    acc = run_scenario(s)["accesses"]
    # everything flushed: the walk after the round trip costs what the cold first one did
    assert acc[3]["cache"]["tlb"] == "miss" and acc[3]["memory_refs"] == acc[0]["memory_refs"] == 13


def test_shadow_pae_guest():
    # A PAE guest under shadow paging: its PDPTEs are registers for the VMM's software walk
    # too (no guest memory read for them); a not-present PDPTE is the guest's own #PF.
    s = {"name": "sh-pae", "mode": "shadow",
         "guest": {"paging": "pae", "mappings": [{"gva": "0x400000", "gpa": "0x200000"},
                                                  {"gva": "0xa00000", "gpa": "0xc00000", "page": "2M"}]},
         "shadow": {"mappings": [{"gpa": "0x0", "hpa": "0x80000000", "pages": 8192}]},
         "accesses": [{"gva": "0x400008", "op": "read"}, {"gva": "0xa12345", "op": "read"},
                      {"gva": "0x40000000", "op": "read"}]}
    r = run_scenario(s)
    a = r["accesses"]
    assert [x["outcome"] for x in a] == ["ok", "ok", "guest_page_fault"]
    assert a[0]["hpa"] == "0x80200008" and a[0]["memory_refs"] == 2
    assert a[1]["hpa"] == hex(0x80000000 + 0xc00000 + 0x12345) and a[1]["memory_refs"] == 1 + 2
    vmm = [st for st in a[0]["steps"] if st["dim"] == "guest"]
    assert [st["kind"] for st in vmm] == ["pdpte", "vmm_read", "vmm_read"]
    # gva 0x40000000: PDPTE 1 is not present in the guest -> reflected #PF (error code 0)
    assert a[2]["fault"]["error_code"] == "0x0" and a[2]["exits"] == 1


def test_agile_counters():
    r = run(EXAMPLES / "agile-policy.json")
    assert r["mode"] == "agile" and r["eptp"] is not None
    assert r["shadow"]["to_nested"] == 1 and r["shadow"]["to_shadow"] == 1
    assert r["shadow"]["pt_write_exits"] == 2 and r["shadow"]["nested_subtrees"] == 0
    for lv in (1, 2, 3):
        r = run(EXAMPLES / f"agile-switch-l{lv}.json")
        # the VMM write-protects only the tables above the switch: 4 - lv of them
        assert r["shadow"]["write_protected_pages"] == 4 - lv
        assert r["shadow"]["switch_level"] == lv


def test_shadow_counters():
    r = run(EXAMPLES / "shadow.json")
    # 4 guest tables per address space are write-protected; 2 roots + 3 tables under
    # each for the one path walked
    assert r["shadow"] == {"hidden_page_faults": 5, "pt_write_exits": 1, "cr3_write_exits": 1,
                                     "reflected_page_faults": 1, "shadow_pages": 8, "write_protected_pages": 8}
    assert r["totals"]["exits"] == sum(a["exits"] for a in r["accesses"]) == 7


def test_paravirt_cr3_cache_removes_cr3_exits_for_up_to_4_address_spaces():
    """The 2007 paravirtual patch: a 4-entry guest_cr3 -> host_cr3 cache. Cycling through
    4 address spaces exits only on first use; cycling through 5 exits every time (LRU)."""
    base = {"name": "pv", "mode": "shadow",
            "guest": {"paging": "4level", "mappings": [{"gva": "0x400000", "gpa": "0x200000"}]},
            "shadow": {"mappings": [{"gpa": "0x0", "hpa": "0x80000000", "pages": 1024}], "paravirt_cr3_cache": True}}
    for spaces, expected_exits in ((4, 4), (5, 5 * 4)):
        s = json.loads(json.dumps(base))
        s["guest"]["address_spaces"] = spaces
        s["accesses"] = [{"mov_cr3": (i + 1) % spaces} for i in range(spaces * 4)]
        r = run_scenario(s)
        assert sum(a["exits"] for a in r["accesses"]) == expected_exits, spaces
