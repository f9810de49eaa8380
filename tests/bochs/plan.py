"""The translator: one engine scenario (with the engine's built machine, `vmsim image`,
and its result, `vmsim run`) -> what machine.py loads into Bochs.

Plain Python, no Bochs import: it decides
  * where the harness lives: a 2 MiB host region (host tables, GDT, TSS, VMXON region,
    VMCS, hypervisor code, exit log; and the guest's own pages) that no scenario frame
    touches;
  * how the guest reaches its pages: one entry added to each EPT (main and EPTP list)
    and to each address space's guest tables, each at an entry no walk of the scenario
    reads, so that the scenario's walks are unchanged;
  * the VMCS: controls (EPT, VM functions with the engine's EPTP list), the guest's
    CR0/CR3/CR4/EFER for the scenario's paging mode, the PAE PDPTE registers;
  * the commands, one per scenario access or event, and the memory the CPU should end
    with (the engine's A/D updates and page-table writes applied to the image).
A scenario this machine cannot express raises Unsupported with the reason.
"""

from __future__ import annotations

import os
import struct
import sys

# tests/oracle, beside both oracles rather than inside one: tests/svm uses it as much
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# (h and Unsupported are imported from here by compare.py and fidelity.py too)
from oracle.guest import (ADDR, Unsupported, Words, h,  # noqa: E402,F401
                          g_levels, g_index, g_esize, g_root, g_entry, nested_walk, walked,
                          guest_ad_bits, harness_gpas, harness_gvas)
from layout import (HOST_OFF, VMCS_OFF, FIELD_OFF, CTRL_OFF, GUEST_BASE, GUEST_OFF,  # noqa: E402
                    GUEST_USER_PAGES, CMD_OFF, CMD_PAGES, GUEST_MAPPED, GTAB_OFF, ETAB_OFF,
                    REGION, END_MAGIC)

BOCHS_MAXPHYADDR = 40          # CPUID 0x80000008 of the wheel's CPU model
MASK40 = (1 << 40) - 1


class Plan:
    pass


def ept_walk(words: Words, root: int, gpa: int):
    """gpa -> hpa through an EPT as built (no checks); None if not mapped."""
    return nested_walk(words, root, gpa, 4, 7)                # R, W or X


def make_plan(sc: dict, result: dict, image: dict, host_bin_for, guest_bin_for) -> Plan:
    mode = sc["mode"]
    g = sc["guest"]
    paging = g["paging"]
    if mode not in ("ept", "native"):
        raise Unsupported(f"mode {mode}: this Bochs has VMX only (no SVM; shadow and flat "
                          "tables are a VMM's software, not the CPU's)")
    if paging not in ("4level", "pae", "32bit"):
        raise Unsupported(f"guest paging {paging}: this Bochs CPU model has no "
                          "CR4.LA57 (5-level) and is no Sunway")
    nested = sc.get("nested") or {}
    if mode == "ept" and nested.get("levels", 4) != 4:
        raise Unsupported("5-level EPT: IA32_VMX_EPT_VPID_CAP of this Bochs model has "
                          "4-level walks only")
    if sc.get("machine", {}).get("maxphyaddr", 46) != BOCHS_MAXPHYADDR:
        raise Unsupported(f"maxphyaddr {sc.get('machine', {}).get('maxphyaddr', 46)}: "
                          f"the Bochs CPU has {BOCHS_MAXPHYADDR}")
    if mode == "ept" and nested.get("execute_only", True) is False:
        raise Unsupported("execute_only false: this Bochs model supports execute-only "
                          "EPT translations")
    if len(sc["accesses"]) + 1 > CMD_PAGES * 4096 // 16:
        raise Unsupported("more commands than the harness's command pages hold")

    ept = mode == "ept"
    if not ept and paging == "pae" and any("vmcall" in a for a in sc["accesses"]):
        # The harness runs a native guest in VMX non-root without EPT: each VM entry after
        # a VMCALL reloads the PDPTEs from memory, which a native CPU never does
        raise Unsupported("VMCALL in a native PAE scenario: the harness's VM entry after "
                          "it would reload the PDPTEs from memory")
    words = Words(image["words"])
    esize = g_esize(paging)
    accs = result["accesses"]

    # every entry a walk of the scenario reads, every frame it uses
    touched, frames = walked(accs, words)
    for c in image["cr3s"]:
        frames.add(h(c) >> 12)

    # --- the host region ---------------------------------------------------------
    cands = [0x7fe00000, 0x3fe00000, 0x5fe00000, 0xbfe00000, 0xdfe00000, 0x1fe00000,
             0x6fe00000, 0x9fe00000, 0x2fe00000, 0x4fe00000, 0xefe00000, 0x0fe00000]
    hb = next((c for c in cands
               if not any((c >> 12) <= f < ((c + REGION) >> 12) for f in frames)), None)
    if hb is None:
        raise Unsupported("no free 2 MiB host region for the harness")

    # --- the EPTs the guest can have active --------------------------------------
    roots = []
    if ept:
        eptp = h(image["eptp"])
        roots.append(eptp & ADDR)
        if image.get("eptp_list_hpa"):
            lst = h(image["eptp_list_hpa"])
            for i in range(1, 512):
                e = words.get(lst + 8 * i)
                if e and (e & 7) in (0, 6) and (e >> 3) & 7 == 3 and not e & 0xf80:
                    roots.append(e & ADDR)
    ad = ept and bool(nested.get("ad", False))

    def free_ept_path(root: int, gp: int):
        table = root
        for level in (4, 3, 2):
            ea = table + ((gp >> (12 + 9 * (level - 1))) & 511) * 8
            e = words.get(ea)
            if e == 0:
                return None if ea in touched else (level, ea)
            # Below a valid scenario entry (with EPT A/D on, the harness's first walk sets
            # its A bit: harness_overrides sets it in the scenario too)
            if e & 7 != 7 or level == 2 or e & 0x80 or e & 0x78 or e >> 40 & 0xfff:
                return None
            table = e & ADDR
        return None

    gp = None
    if ept:
        for c in harness_gpas(paging):
            pts = [free_ept_path(r, c) for r in roots]
            if all(pts):
                gp, attach_ept = c, pts
                break
        if gp is None:
            raise Unsupported("no gpa region free in every EPT for the harness")
    else:
        gp = hb

    def gpa_of(off: int) -> int:      # host region offset -> guest-physical
        return gp + off

    mem = {}                           # host physical -> bytes written at load

    def put(pa: int, data: bytes):
        mem[pa] = data

    harness_words = {}                 # pa -> (value, size): entries the harness adds

    def hw(pa: int, value: int, size: int = 8):
        harness_words[pa] = (value, size)

    if ept:
        a_bits = 0x100 if ad else 0
        leaf = hb | 0x7 | (6 << 3) | 0x80 | 0x300
        i3 = (gp >> 30) & 511
        i2 = (gp >> 21) & 511
        hw(hb + ETAB_OFF["l3"] + i3 * 8, (hb + ETAB_OFF["l2"]) | 7 | a_bits)
        hw(hb + ETAB_OFF["l2"] + i2 * 8, leaf)
        for level, ea in attach_ept:
            if level == 4:
                hw(ea, (hb + ETAB_OFF["l3"]) | 7 | a_bits)
            elif level == 3:
                hw(ea, (hb + ETAB_OFF["l2"]) | 7 | a_bits)
            else:
                hw(ea, leaf)

    # --- the guest's way to its pages --------------------------------------------
    def table_hpa(root: int, gpa: int):
        return ept_walk(words, root, gpa) if ept else gpa

    spaces = [h(c) for c in image["cr3s"]]
    wide = paging != "32bit"

    def free_guest_path(cr3: int, root: int, gv: int):
        """(level, hpa) of the first zero entry on gv's path, None if the path is used."""
        table = g_root(paging, cr3)
        for level in g_levels(paging)[:-1]:
            egpa = table + g_index(paging, gv, level) * esize
            ea = table_hpa(root, egpa)
            if ea is None:
                return None
            e = words.get(ea, esize)
            if e == 0:
                return None if (ea & ~7) in touched else (level, ea)
            if paging == "pae" and level == 3:
                # a PDPTE has no A bit: the harness may go on below it
                if not e & 1 or e & 0x1e6 or e >> 40:
                    return None
            else:
                # the CPU would set A in a scenario entry the harness's walks go through
                return None
            table = e & (ADDR if wide else 0xfffff000)
        return None

    gv = None
    for c in harness_gvas(paging):
        if c <= hb + REGION and hb <= c + REGION:
            continue
        pts = []
        for cr3 in spaces:
            for root in (roots or [None]):
                pts.append(free_guest_path(cr3, root, c))
        # a guest table frame can be an EPT table's host frame too (raw tables point
        # anywhere): the two kinds of harness entries must not meet in one word
        if all(pts) and any((ea & ~7) in {pa & ~7 for pa in harness_words} for _, ea in pts):
            continue
        if all(pts):
            gv, attach_guest = c, pts
            break
    if gv is None:
        raise Unsupported("no free guest-linear region for the harness's pages")
    # guest-table frames (gpa) the harness's own walks read: with EPT A/D on, the CPU
    # sets A in the EPT entries that map them before the first command runs
    harness_table_gpas = sorted({g_root(paging, cr3) for cr3 in spaces})
    for (level, ea), cr3 in zip(attach_guest, [c for c in spaces for _ in (roots or [None])]):
        if paging == "pae" and level == 2:
            idx3 = g_index(paging, gv, 3)
            base = cr3 & ~0x1f
            pd = words.get(table_hpa(roots[0] if roots else None, base + 8 * idx3)) & ADDR
            harness_table_gpas.append(pd)

    # harness guest tables: a full chain below the attach points, 4 KiB leaves
    ptr = 0x27                                       # P RW US A
    nl = gv >> 12
    if paging == "32bit":
        pt = hb + GTAB_OFF["l1"]
        for k in range(GUEST_MAPPED >> 12):
            off = k << 12
            us = 4 if off in GUEST_USER_PAGES else 0
            hw(pt + ((nl + k) & 1023) * 4, gpa_of(GUEST_BASE + off) | 0x63 | us, 4)
        for level, ea in attach_guest:
            hw(ea, gpa_of(GTAB_OFF["l1"]) | ptr, 4)
    else:
        pt = hb + GTAB_OFF["l1"]
        for k in range(GUEST_MAPPED >> 12):
            off = k << 12
            us = 4 if off in GUEST_USER_PAGES else 0
            hw(pt + ((nl + k) & 511) * 8, gpa_of(GUEST_BASE + off) | 0x63 | us)
        hw(hb + GTAB_OFF["l2"] + g_index(paging, gv, 2) * 8, gpa_of(GTAB_OFF["l1"]) | ptr)
        if paging == "4level":
            hw(hb + GTAB_OFF["l3"] + g_index(paging, gv, 3) * 8, gpa_of(GTAB_OFF["l2"]) | ptr)
        for level, ea in attach_guest:
            target = {4: "l3", 3: "l2", 2: "l1"}[level]
            flags = 0x1 if (paging == "pae" and level == 3) else ptr
            hw(ea, gpa_of(GTAB_OFF[target]) | flags)

    for pa, (v, size) in harness_words.items():
        words.set(pa, v, size)
    for pa in harness_words:
        if (pa & ~7) in touched:
            raise Unsupported("internal: a harness entry on a walked entry")

    # --- commands and the memory the CPU should end with ---------------------------
    # every fetch the engine completes finds a ret (0xc3) at its hpa, planted at load
    # time, before any command (so a write to the same byte stores the ret again)
    plants = set()
    for a, r in zip(sc["accesses"], accs):
        if a.get("op") == "fetch" and r["outcome"] == "ok":
            hpa = h(r["hpa"])
            if (hpa & ~7) in touched or words.byte(hpa) not in (0, 0xc3):
                raise Unsupported("a fetch of a byte that is not free for a ret "
                                  "(a page-table entry or data)")
            plants.add(hpa)
    for hpa in plants:
        words.set(hpa, 0xc3, 1)

    commands = []
    space = 0
    eptp_index = 0
    for i, (a, r) in enumerate(zip(sc["accesses"], accs)):
        cmd = {"index": i}
        if "op" in a:
            # the engine's own A/D updates of this access, in its order
            for s in r["steps"]:
                if s["kind"] == "read" and s["dim"] == "nested" and s["ad_set"]:
                    pa = h(s["entry_hpa"])
                    bitsv = (0x100 if "A" in s["ad_set"] else 0) | (0x200 if "D" in s["ad_set"] else 0)
                    words.set(pa, words.get(pa) | bitsv)
                elif s["kind"] == "ad_write" and s["result"] == "written":
                    pa = h(s["entry_hpa"])
                    words.set(pa, words.get(pa, esize) | guest_ad_bits(s["ad_set"]), esize)
            gva = h(a["gva"])
            op = {"read": 1, "write": 2, "fetch": 3}[a["op"]]
            aux = 0x100 if a.get("user") else 0
            if r["outcome"] == "ok":
                hpa = h(r["hpa"])
                if (hpa >> 12) in {pa >> 12 for pa in harness_words} or \
                        hb <= hpa < hb + REGION:
                    raise Unsupported("an access reaches the harness's memory")
                if a["op"] == "write":
                    aux |= words.byte(hpa)
                elif a["op"] == "fetch":
                    cmd["plant"] = hpa
            cmd.update(op=op, aux=aux, arg=gva)
        elif "mov_cr3" in a:
            space = a["mov_cr3"]
            cmd.update(op=4, aux=0, arg=spaces[space])
        elif "invlpg" in a:
            cmd.update(op=5, aux=0, arg=h(a["invlpg"]))
        elif "vmfunc" in a:
            cmd.update(op=6, aux=a.get("function", 0), arg=a["vmfunc"])
        elif "vmcall" in a:
            cmd.update(op=7, aux=0, arg=0)
        elif "pte_write" in a:
            p = a["pte_write"]
            gva = h(p["gva"])
            root = None
            if ept:
                root = roots[eptp_index] if eptp_index < len(roots) else None
                lst = h(image["eptp_list_hpa"]) if image.get("eptp_list_hpa") else None
                if lst is not None:
                    root = words.get(lst + 8 * eptp_index) & ADDR
            ea = g_entry(words, paging, spaces[space], gva, p["level"],
                         lambda gpa: table_hpa(root, gpa))
            if ea is None:
                raise Unsupported("a page-table write whose table is not mapped")
            old = words.get(ea, esize)
            new = (old & ~h(p.get("clear", "0x0"))) | h(p.get("set", "0x0"))
            words.set(ea, new, esize)
            cmd.update(op=8, aux=0, arg=gva, pte_hpa=ea,
                       pte_bytes=new.to_bytes(esize, "little"))
        else:
            raise Unsupported(f"access {i}: an event the harness does not know")
        if r.get("eptp_index") is not None:
            eptp_index = r["eptp_index"]
        commands.append(cmd)
    commands.append({"index": len(commands), "op": 0, "aux": 0, "arg": 0})

    # --- memory at load: the image with the harness's entries, fetch targets --------
    load = Words(image["words"])
    for pa, (v, size) in harness_words.items():
        load.set(pa, v, size)
    for c in commands:
        if "plant" in c:
            load.set(c["plant"], 0xc3, 1)
    for base, data in load.frames().items():
        put(base, bytes(data))

    # host: page tables (identity map of the region with one 2 MiB page), GDT, TSS,
    # VMXON region and VMCS (revision 0x2b), code
    i4, i3, i2 = (hb >> 39) & 511, (hb >> 30) & 511, (hb >> 21) & 511
    put(hb + HOST_OFF["pml4"] + i4 * 8, struct.pack("<Q", (hb + HOST_OFF["pdpt"]) | 3))
    put(hb + HOST_OFF["pdpt"] + i3 * 8, struct.pack("<Q", (hb + HOST_OFF["pd"]) | 3))
    put(hb + HOST_OFF["pd"] + i2 * 8, struct.pack("<Q", hb | 0x83))
    tss = hb + HOST_OFF["tss"]
    put(hb + HOST_OFF["gdt"], struct.pack("<5Q", 0, 0x00209b0000000000, 0x00c0930000000000,
                                          tss_desc_lo(tss, 0x67, 0x89), tss >> 32))
    put(hb + HOST_OFF["vmxon"], struct.pack("<I", 0x2b))
    put(hb + VMCS_OFF, struct.pack("<I", 0x2b))
    host_bin, host_done = host_bin_for(hb)
    put(hb + HOST_OFF["code"], host_bin)

    # guest pages
    gbin, labels = guest_bin_for(paging, gv)
    put(hb + GUEST_BASE + GUEST_OFF["kcode"], gbin)
    put(hb + GUEST_BASE + GUEST_OFF["kdata"], struct.pack("<Q", gv + CMD_OFF))
    sysb = bytearray(4096)
    gtss = gv + GUEST_OFF["sys"] + 0x800
    if wide and paging == "4level":
        gdt = [0, 0x00af9b000000ffff, 0x00cf93000000ffff, 0x00affb000000ffff,
               0x00cff3000000ffff, tss_desc_lo(gtss, 0x67, 0x8b), gtss >> 32]
        struct.pack_into("<Q", sysb, 0x800 + 4, gv + GUEST_OFF["kstack"] + 0x1000)   # RSP0
        struct.pack_into("<H", sysb, 0x800 + 0x66, 0x68)
    else:
        gdt = [0, 0x00cf9b000000ffff, 0x00cf93000000ffff, 0x00cffb000000ffff,
               0x00cff3000000ffff, tss_desc_lo(gtss, 0x67, 0x8b)]
        struct.pack_into("<II", sysb, 0x800 + 4, gv + GUEST_OFF["kstack"] + 0x1000, 0x10)
        struct.pack_into("<H", sysb, 0x800 + 0x66, 0x68)
    struct.pack_into(f"<{len(gdt)}Q", sysb, 0, *gdt)
    put(hb + GUEST_BASE + GUEST_OFF["sys"], bytes(sysb))
    idt = bytearray(4096)
    fault = gv + labels["fault_entry"]
    back = gv + labels["back_entry"]
    for vec in list(range(32)) + [0x81]:
        target, dpl = (back, 3) if vec == 0x81 else (fault, 0)
        typ = 0x8e | (dpl << 5)
        if paging == "4level":
            struct.pack_into("<HHBBHIxxxx", idt, vec * 16, target & 0xffff, 0x08, 0, typ,
                             (target >> 16) & 0xffff, target >> 32)
        else:
            struct.pack_into("<HHBBH", idt, vec * 8, target & 0xffff, 0x08, 0, typ,
                             (target >> 16) & 0xffff)
    put(hb + GUEST_BASE + GUEST_OFF["idt"], bytes(idt))
    cmdb = bytearray()
    for c in commands:
        cmdb += struct.pack("<IIQ", c["op"], c["aux"], c["arg"] & ((1 << 64) - 1))
    put(hb + GUEST_BASE + CMD_OFF, bytes(cmdb))

    # --- the VMCS -------------------------------------------------------------------
    cr0 = 0x80000031 | (0x10000 if g.get("cr0_wp", True) else 0)   # PG NE ET PE (WP)
    cr4 = 0x2000                                                    # VMXE
    efer = 0
    if paging in ("4level", "pae"):
        cr4 |= 0x20
    if paging == "32bit" and g.get("cr4_pse", True):
        cr4 |= 0x10
    if g.get("cr4_smep"):
        cr4 |= 1 << 20
    if g.get("cr4_smap"):
        cr4 |= 1 << 21
    if paging == "4level":
        efer |= 0x500
    if paging != "32bit" and g.get("efer_nxe", True):
        efer |= 0x800
    long_mode = paging == "4level"
    cs_ar = 0xa09b if long_mode else 0xc09b
    vmfunc = ept and bool(image.get("eptp_list_hpa"))
    secondary = (0x2 if ept else 0) | (0x2000 if vmfunc else 0)
    rows = [
        (0x4000, 0, 0x48d),                               # pin-based
        # primary: secondary controls; HLT and unconditional I/O exiting, so that code
        # the CPU should never run (a fetch the engine says faults) exits instead of
        # reaching the wheel's port-I/O stubs
        (0x4002, 0x80000000 | (1 << 7) | (1 << 24), 0x48e),
        (0x401e, secondary, 0x48b),                       # EPT, VM functions
        (0x400c, (1 << 9) | (1 << 20) | (1 << 21), 0x48f),   # exit: 64-bit host, save/load EFER
        (0x4012, ((1 << 9) if long_mode else 0) | (1 << 15), 0x490),  # entry: IA-32e guest, load EFER
        (0x4004, 0, 0), (0x400a, 0, 0),                   # exception bitmap, CR3-target count
        (0x2800, (1 << 64) - 1, 0),                       # VMCS link pointer
        # host state
        (0x0c00, 0x10, 0), (0x0c02, 0x08, 0), (0x0c04, 0x10, 0), (0x0c06, 0x10, 0),
        (0x0c08, 0x10, 0), (0x0c0a, 0x10, 0), (0x0c0c, 0x18, 0),
        (0x6c00, 0x80010031, 0), (0x6c02, hb + HOST_OFF["pml4"], 0), (0x6c04, 0x2020, 0),
        (0x6c06, 0, 0), (0x6c08, 0, 0), (0x6c0a, tss, 0), (0x6c0c, hb + HOST_OFF["gdt"], 0),
        (0x6c0e, 0, 0), (0x2c02, 0xd00, 0),
        # guest state
        (0x6800, cr0, 0), (0x6802, spaces[0], 0), (0x6804, cr4, 0), (0x2806, efer, 0),
        (0x6004, cr0, 0), (0x6006, cr4, 0),
        (0x681a, 0x400, 0), (0x681c, gv + GUEST_OFF["kstack"] + 0x1000, 0),
        # RFLAGS with IOPL 3: code that should never run (a fetch the engine says faults,
        # landing on data) meets I/O exiting instead of the wheel's port-I/O stubs
        (0x681e, gv + labels["next"], 0), (0x6820, 0x3002, 0),
        (0x0802, 0x08, 0), (0x4802, 0xffffffff, 0), (0x4816, cs_ar, 0), (0x6808, 0, 0),
        (0x0804, 0x10, 0), (0x4804, 0xffffffff, 0), (0x4818, 0xc093, 0), (0x680a, 0, 0),
    ]
    for sel_f, lim_f, ar_f, base_f in ((0x0800, 0x4800, 0x4814, 0x6806),
                                       (0x0806, 0x4806, 0x481a, 0x680c),
                                       (0x0808, 0x4808, 0x481c, 0x680e),
                                       (0x080a, 0x480a, 0x481e, 0x6810)):
        rows += [(sel_f, 0x23, 0), (lim_f, 0xffffffff, 0), (ar_f, 0xc0f3, 0), (base_f, 0, 0)]
    rows += [
        (0x080c, 0, 0), (0x480c, 0, 0), (0x4820, 0x10000, 0), (0x6812, 0, 0),     # LDTR unusable
        (0x080e, 0x28, 0), (0x480e, 0x67, 0), (0x4822, 0x8b, 0), (0x6814, gtss, 0),
        (0x6816, gv + GUEST_OFF["sys"], 0), (0x4810, 8 * len(gdt) - 1, 0),
        (0x6818, gv + GUEST_OFF["idt"], 0), (0x4812, 0xfff, 0),
        (0x4824, 0, 0), (0x4826, 0, 0), (0x6822, 0, 0),
    ]
    if ept:
        rows.append((0x201a, h(image["eptp"]), 0))
    if vmfunc:
        rows += [(0x2018, 1, 0), (0x2024, h(image["eptp_list_hpa"]), 0), (0x0004, 0, 0)]
    if paging == "pae" and ept:
        # the PDPTE registers as the engine loaded them, with the harness's own entry
        base = spaces[0] & ~0x1f
        for i in range(4):
            egpa = base + 8 * i
            ea = table_hpa(roots[0], egpa)
            v = words_at_load(load, ea)
            rows.append((0x280a + 2 * i, v, 0))
    table = bytearray()
    for f, v, msr in rows:
        table += struct.pack("<QQQ", f, v & ((1 << 64) - 1), msr)
    table += struct.pack("<QQQ", (1 << 64) - 1, 0, 0)
    put(hb + FIELD_OFF, bytes(table))
    ctrl = struct.pack("<7Q", 0, gv + labels["next"], gv + GUEST_OFF["kstack"] + 0x1000,
                       0x08, cs_ar, 0x10, 0xc093)
    put(hb + CTRL_OFF, ctrl)

    # the harness's walks read the guest's root tables: their EPT paths must allow it
    for gpa in harness_table_gpas:
        for root in roots:
            table = root
            for level in (4, 3, 2, 1):
                e = words.get(table + ((gpa >> (12 + 9 * (level - 1))) & 511) * 8)
                leaf = level == 1 or (level in (2, 3) and e & 0x80)
                span = (1 << (12 + 9 * (level - 1))) - 1
                # readable (and writable with EPT A/D on: its reads are writes then)
                need = 3 if ad else 1
                if e & need != need or e >> 40 & 0xfff or (not leaf and e & 0xf8) or \
                        (leaf and (e >> 3) & 7 not in (0, 1, 4, 5, 6)) or \
                        (leaf and e & span & ~0xfff):
                    raise Unsupported("a guest root table that the EPT does not let the "
                                      "harness's own walks read: they would exit")
                if leaf:
                    break
                table = e & ADDR
    p = Plan()
    p.hbase, p.gp, p.gv = hb, gp, gv
    p.memory = sorted(mem.items())
    p.commands = commands
    p.rips = {k: gv + v for k, v in labels.items()}
    p.host_done = host_done
    p.step_limit = 2000 + 400 * len(commands)
    p.expected_words = words
    p.check_words = sorted({pa & ~7 for pa in Words(image["words"]).w} |
                           {pa & ~7 for pa in harness_words})
    p.paging, p.ept = paging, ept
    p.harness_table_gpas = sorted(set(harness_table_gpas))
    p.table_hpa = lambda gpa: table_hpa(roots[0] if roots else None, gpa)
    p.ept_roots = roots
    return p


def harness_overrides(sc: dict, image: dict, plan) -> dict:
    """With EPT A/D on, the harness's first walk of its own pages sets the A bit in the
    EPT entries that map the guest-table frames it reads (the guest's root tables), as
    a real guest's kernel walks would: the same bits are set in the scenario as nested
    overrides, so that the engine starts from the memory Bochs runs the first command
    with. Returns the scenario to compare, or sc itself when nothing needs setting."""
    n = sc.get("nested")
    if sc["mode"] != "ept" or not n or not n.get("ad"):
        return sc
    words = Words(image["words"])
    import copy
    sc = copy.deepcopy(sc)
    n = sc["nested"]
    lists = [n] + list(n.get("eptp_list") or [])
    for k, root in enumerate(plan.ept_roots):
        target = lists[k] if k < len(lists) else None
        if target is None:
            continue
        # scenario entries above the harness's own EPT tables (gpa region plan.gp)
        table = root
        for level in (4, 3):
            e = words.get(table + ((plan.gp >> (12 + 9 * (level - 1))) & 511) * 8)
            if not e & 7 or e & 0x80:
                break
            if not e & 0x100:
                target.setdefault("overrides", []).append(
                    {"gpa": hex(plan.gp), "level": level, "set": "0x100"})
            table = e & ADDR
        for gpa in plan.harness_table_gpas:
            table = root
            for level in (4, 3, 2, 1):
                e = words.get(table + ((gpa >> (12 + 9 * (level - 1))) & 511) * 8)
                if not e & 7:
                    break
                leaf = level == 1 or bool(e & 0x80)
                # a guest paging-structure access is a write for EPT A/D: A and D at the leaf
                want = 0x300 if leaf else 0x100
                if e & want != want:
                    target.setdefault("overrides", []).append(
                        {"gpa": hex(gpa & ~0xfff), "level": level, "set": hex(want)})
                if leaf:
                    break
                table = e & ADDR
    return sc


def words_at_load(load: Words, pa: int) -> int:
    return load.get(pa) if pa is not None else 0


def tss_desc_lo(base: int, limit: int, typ: int) -> int:
    return ((limit & 0xffff) | (base & 0xffffff) << 16 | typ << 40 |
            ((limit >> 16) & 0xf) << 48 | ((base >> 24) & 0xff) << 56)
