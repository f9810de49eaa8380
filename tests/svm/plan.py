"""The translator: one engine scenario in mode npt (the built machine from `vmsim
image`, the result from `vmsim run`) -> a scenario of the batch host.asm runs.

Plain Python, no QEMU: it decides
  * where the harness's pages are (layout.HREGION) and how the guest reaches them: one
    entry added to the nested tables (a 2 MiB nested page at a guest-physical address
    no scenario walk reads) and one to each address space's guest tables (at an entry
    no walk reads), so that the scenario's walks are unchanged;
  * the VMCB: intercepts (every exception, HLT, shutdown, VMRUN, VMMCALL), ASID 1, a
    TLB flush on every VMRUN (each access walks), nested paging with the engine's
    nCR3, and per command the guest's CR0/CR3/CR4/EFER, CPL, CS/SS and RIP;
  * the commands: a read runs `mov al,[rbx]; hlt`, a write `mov [rbx],dl; hlt` on the
    supervisor or user stub page, a fetch jumps the guest to the gva, where a `hlt` is
    planted; page-table writes are the host's stores to the entry; mov cr3 changes the
    CR3 of the commands after it; invlpg needs nothing (every VMRUN flushes the TLB);
  * in an address space whose root table the nested tables refuse (every walk there
    faults on the nested translation of its first guest entry, so no instruction can
    be fetched), a read or write runs as an injected event instead (EVENTINJ, APM vol.
    2, 15.20) whose IDT is at the gva: the CPU's first access is the gate's read at the
    gva, with no instruction fetched;
  * what each command should leave: the bytes a read returns (a distinct value is
    planted at each byte a read reaches, where the byte belongs to no paging
    structure) or a write stores, and every paging-structure word the engine's walk
    read, with the engine's A/D updates applied, dumped after the command.
A scenario this machine cannot express raises Unsupported with the reason.
"""

from __future__ import annotations

import os
import struct
import sys

# tests/oracle, beside both oracles rather than inside one: tests/bochs uses it as much
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# (h and Unsupported are imported from here by compare.py and fidelity.py too)
from oracle.guest import (ADDR, Unsupported, Words, h,  # noqa: E402,F401
                          g_levels, g_index, g_esize, g_root, g_entry, nested_walk, walked,
                          guest_ad_bits, harness_gpas, harness_gvas)
import layout as L  # noqa: E402

QEMU_MAXPHYADDR = 40           # CPUID 0x80000008 of QEMU's TCG CPU (phys-bits 40)


def usable_frame(pa: int) -> bool:
    """Backed by QEMU's RAM and none of the harness's."""
    return (L.RESERVED_LOW <= pa < L.PCI_HOLE[0]) or (L.PCI_HOLE[1] <= pa < L.RAM_TOP)


def npt_walk(words: Words, root: int, gpa: int, levels: int):
    """gpa -> hpa through nested tables as built (no checks); None if not mapped."""
    return nested_walk(words, root, gpa, levels, 1)            # P


def npt_path_ok(words: Words, root: int, gpa: int, levels: int, nxe: bool) -> bool:
    """The harness's own walks read guest tables at gpa: a user write through every
    nested entry (NPT treats guest table accesses so), no reserved bit."""
    table = root
    rsvd = ((1 << 52) - 1) & ~((1 << QEMU_MAXPHYADDR) - 1)
    if not nxe:
        rsvd |= 1 << 63
    for level in range(levels, 0, -1):
        e = words.get(table + ((gpa >> (12 + 9 * (level - 1))) & 511) * 8)
        if e & 7 != 7 or e & rsvd:
            return False
        if level >= 4 and e & 0x180:
            return False
        leaf = level == 1 or (level in (2, 3) and e & 0x80)
        if leaf:
            span = (1 << (12 + 9 * (level - 1))) - 1
            return not (e & span & ~0x1fff & ADDR) if level > 1 else True
        table = e & ADDR
    return False


def nested_path_bits(words: Words, root: int, gpa: int, levels: int) -> list:
    """Nested overrides setting the A bits (and D on the leaf) a walk of a guest table at
    gpa sets on its nested path (APM vol. 2, 15.25.5: a guest table access is a user
    write), where they are clear."""
    out, table = [], root
    for level in range(levels, 0, -1):
        e = words.get(table + ((gpa >> (12 + 9 * (level - 1))) & 511) * 8)
        leaf = level == 1 or (level in (2, 3) and e & 0x80)
        missing = (0x60 if leaf else 0x20) & ~e
        if missing:
            out.append({"gpa": hex(gpa), "level": level, "set": hex(missing)})
        if leaf:
            return out
        table = e & ADDR
    return out


# legacy PAE: more directory entries to try below a used PDPTE (harness_gvas has four)
PAE_MORE_GVAS = {"pae": [i3 << 30 | i2 << 21 for i3 in (3, 2, 1, 0) for i2 in range(510, 7, -1)
                         if i2 not in (400, 300)]}


class RootUnusable(Unsupported):
    """The harness's stubs have no way in: no free guest entry for them at the top level
    (nor, for legacy PAE, below a usable PDPTE), or a read or write in a space whose root
    the nested tables refuse that does not fault there. Fetches need no stub."""


class UnreachableWrite(Unsupported):
    """A page-table write event whose entry the host cannot reach (its table is not
    mapped, or lies outside QEMU's memory): the scenario is compared without it."""

    def __init__(self, index: int, why: str):
        super().__init__(why)
        self.index = index


class NeedsAccessed(Exception):
    """The harness's walks go through scenario nested entries without their A bit (the
    nested entries above the harness's own 2 MiB; for a stub entry below a legacy-PAE
    PDPTE, the nested path of that PDPTE's directory, A and on the leaf D: guest table
    accesses are user writes, APM vol. 2, 15.25.5): its walks would set them. The
    compared scenario gets these bits as nested overrides, so that the engine starts
    from the memory QEMU runs the first command with."""

    def __init__(self, overrides: list):
        super().__init__("nested A bits the harness's walks set")
        self.overrides = overrides


class Plan:
    pass


def make_plan(sc: dict, result: dict, image: dict, stubs: bool = True) -> Plan:
    if sc["mode"] != "npt":
        raise Unsupported(f"mode {sc['mode']}: the SVM harness runs mode npt (native and "
                          "ept run on Bochs, tests/bochs)")
    g = sc["guest"]
    paging = g["paging"]
    if paging not in ("4level", "5level", "pae", "32bit"):
        raise Unsupported(f"guest paging {paging}")
    nested = sc.get("nested") or {}
    levels = nested.get("levels", 4)
    nxe = nested.get("host_nxe", True)
    smep = nested.get("host_smep", False)
    if sc.get("machine", {}).get("maxphyaddr", 46) != QEMU_MAXPHYADDR:
        raise Unsupported("maxphyaddr is not QEMU's 40")
    words = Words(image["words"])
    esize = g_esize(paging)
    accs = result["accesses"]
    ncr3 = h(result["ncr3"])
    spaces = [h(c) for c in image["cr3s"]]

    touched, frames = walked(accs, words)
    frames.add(ncr3 >> 12)
    for f in frames:
        if not usable_frame(f << 12):
            raise Unsupported("memory in the harness's first 64 MiB, in QEMU's PCI hole "
                              "below 4 GiB or above its RAM")

    hb = L.HREGION
    hw = {}                                    # pa -> (value, size): the harness's entries
    harness_allow = {}                         # word -> bits the harness's own walks set
    walked_through = set()                     # scenario entries the stubs are reached by

    # the address space of each access; a space whose root table the nested tables refuse
    # (no user-writable page there) faults on every walk's first guest-entry read, the
    # stub's own code fetch included: its reads and writes run as an injected event
    root_ok = [npt_path_ok(words, ncr3, g_root(paging, cr3), levels, nxe) for cr3 in spaces]
    space_of, sp = [], 0
    for a in sc["accesses"]:
        sp = a.get("mov_cr3", sp)
        space_of.append(sp)
    inject = set()
    for i, (a, r) in enumerate(zip(sc["accesses"], accs)):
        if a.get("op") in ("read", "write") and not root_ok[space_of[i]]:
            # the engine must agree that nothing of the access's own kind was reached:
            # a #NPF on the nested translation of the root entry, no guest entry read
            if r["outcome"] != "npt_fault" or any(s["dim"] == "guest" for s in r["steps"]) \
                    or not h(r["fault"]["exitinfo1"]) >> 33 & 1:
                raise RootUnusable("a read or write in a space whose root table the nested "
                                   "tables refuse that does not fault there")
            inject.add(i)
    stub_spaces = sorted({space_of[i] for i, a in enumerate(sc["accesses"])
                          if a.get("op") in ("read", "write") and i not in inject})
    need_stub = bool(stub_spaces)
    if need_stub and not stubs:
        raise Unsupported("internal: reads or writes without the stubs")
    gv = gp = None
    table_hpa = lambda gpa: npt_walk(words, ncr3, gpa, levels)  # noqa: E731
    if need_stub:
        # --- the nested entry for the harness region (gpa gp -> hb, one 2 MiB page) ----
        def free_npt_path(gp: int):
            table = ncr3
            for level in range(levels, 1, -1):
                ea = table + ((gp >> (12 + 9 * (level - 1))) & 511) * 8
                e = words.get(ea)
                if e == 0:
                    return None if ea in touched else (level, ea)
                # below a valid scenario table entry; the harness's walk sets its A bit,
                # which the compared scenario then has from the start (NeedsAccessed)
                if e & 7 != 7 or level == 2 or e & 0x80 or (level >= 4 and e & 0x100) \
                        or e >> 40 & 0xfff or e >> 63:    # (the stubs are fetched)
                    return None
                if not e & 0x20:
                    need_a.append({"gpa": hex(gp), "level": level, "set": "0x20"})
                table = e & ADDR
            return None

        gp = None
        need_a = []
        for c in harness_gpas(paging):
            need_a.clear()
            at = free_npt_path(c)
            if at:
                gp, (alevel, aea) = c, at
                break
        if gp is None:
            raise Unsupported("no guest-physical 2 MiB free in the nested tables for the harness")
        if need_a:
            raise NeedsAccessed(need_a)
        leaf2m = hb | 0xe7                         # P RW US A D PS
        ntab = {lv: hb + off for lv, off in L.NTAB.items()}
        # the chain below the attach point: tables ntab[alevel-1] .. ntab[3], leaf in ntab[2]
        chain = list(range(alevel - 1, 1, -1))       # levels of harness tables
        for lv in chain:
            idx = (gp >> (12 + 9 * (lv - 1))) & 511
            if lv == 2:
                hw[ntab[2] + idx * 8] = (leaf2m, 8)
            else:
                hw[ntab[lv] + idx * 8] = (ntab[lv - 1] | 0x27, 8)
        if alevel == 2:
            hw[aea] = (leaf2m, 8)
        else:
            hw[aea] = (ntab[alevel - 1] | 0x27, 8)

        # --- the guest entries for the stubs (gva gv -> gp + STUB_K / STUB_U) ---------
        def table_hpa(gpa: int):
            return npt_walk(words, ncr3, gpa, levels)

        def free_guest_path(cr3: int, gv: int):
            """-> (level, entry hpa, the PDPTE walked through or None), or None"""
            table = g_root(paging, cr3)
            level = g_levels(paging)[0]
            egpa = table + g_index(paging, gv, level) * esize
            ea = table_hpa(egpa)
            if ea is None or not npt_path_ok(words, ncr3, egpa, levels, nxe):
                return None
            e = words.get(ea, esize)
            if e == 0:
                return None if (ea & ~7) in touched else (level, ea, None)
            # legacy PAE has four top entries, often all in use: below a present PDPTE
            # without reserved bits (APM vol. 2, 5.3.2: 2:1, 8:5, 63:MAXPHYADDR), an entry
            # of its directory no walk reads. The PDPTE word stays the scenario's (QEMU
            # sets bit 5 there on the stub's walk: allowed in that word, harness_allow)
            if paging != "pae" or not e & 1 or e & 0x1e6 or e >> QEMU_MAXPHYADDR:
                return None
            egpa2 = (e & ADDR) + g_index(paging, gv, 2) * esize
            ea2 = table_hpa(egpa2)
            if ea2 is None or not npt_path_ok(words, ncr3, egpa2, levels, nxe) or \
                    words.get(ea2) != 0 or (ea2 & ~7) in touched:
                return None
            return (2, ea2, ea)

        gv = attach = None
        for c in harness_gvas(paging) + PAE_MORE_GVAS.get(paging, []):
            pts = [free_guest_path(spaces[k], c) for k in stub_spaces]
            if all(pts) and not any((ea & ~7) in {pa & ~7 for pa in hw} for _, ea, _ in pts):
                gv, attach = c, pts
                break
        if gv is None:
            raise RootUnusable("no free guest-linear region for the harness's stubs")
        # the nested path of each directory the stubs are reached through: its A bits
        # (D on the leaf) set before the first command, as the stub's first walk sets them
        for _, ea2, pdpte in attach:
            if pdpte is not None:
                pd = words.get(pdpte) & ADDR
                need_a = nested_path_bits(words, ncr3, pd, levels)
                if need_a:
                    raise NeedsAccessed(need_a)

        gtab = {lv: hb + off for lv, off in L.GTAB.items()}
        gpa_of = lambda off: gp + off              # noqa: E731
        # the harness's tables below the attach levels (the top level, or level 2 below a
        # legacy-PAE PDPTE: one set of tables serves both)
        alev = max(lv for lv, _, _ in attach)
        for lv in range(alev - 1, 0, -1):
            idx = g_index(paging, gv, lv)
            if lv == 1:
                for k, off in ((0, L.STUB_K), (1, L.STUB_U)):
                    v = gpa_of(off) | 0x63 | (4 if off == L.STUB_U else 0)
                    hw[gtab[1] + ((idx + k) % (1024 if paging == "32bit" else 512)) * esize] = (v, esize)
            else:
                hw[gtab[lv] + idx * esize] = (gpa_of(gtab[lv - 1] - hb) | 0x27, esize)
        for (lv, ea, pdpte) in attach:
            flags = 0x21 if (paging == "pae" and lv == 3) else 0x27   # QEMU sets bit 5 there
            hw[ea] = (gpa_of(gtab[lv - 1] - hb) | flags, esize)
            if pdpte is not None:
                harness_allow[pdpte & ~7] = 0x20
                walked_through.add(pdpte & ~7)

    for pa in hw:
        if (pa & ~7) in touched:
            raise Unsupported("internal: a harness entry on a walked entry")

    # --- memory: the image with the harness's entries; plants ----------------------
    load = Words(image["words"])
    for pa, (v, size) in hw.items():
        load.set(pa, v, size)
    exp = Words(load.w)                        # expected memory, command by command
    protected = set(load.w) | touched          # words of paging structures
    nonce = [0x11]

    def next_nonce() -> int:
        v = nonce[0]
        nonce[0] = v % 251 + 1
        if nonce[0] == 0xf4:
            nonce[0] += 1
        return v

    planted = {}
    # fetches first: a byte both fetched and read holds the hlt, which the read returns
    order = sorted(zip(sc["accesses"], accs), key=lambda ar: ar[0].get("op") != "fetch")
    for a, r in order:
        if a.get("op") in ("read", "fetch") and r["outcome"] == "ok":
            hpa = h(r["hpa"])
            if hpa >> 12 in {pa >> 12 for pa in hw} or hb <= hpa < hb + (1 << 21):
                raise Unsupported("an access reaches the harness's memory")
            if (hpa & ~7) in protected:
                if a["op"] == "fetch" and exp.byte(hpa) != 0xf4:
                    raise Unsupported("a fetch of a byte of a paging structure (no room "
                                      "for the planted hlt)")
                continue
            want = 0xf4 if a["op"] == "fetch" else next_nonce()
            if hpa in planted:
                continue
            planted[hpa] = want
            exp.set(hpa, want, 1)
            load.set(hpa, want, 1)

    # --- the VMCB --------------------------------------------------------------------
    wide = paging in ("4level", "5level")
    cr0 = 0x80000031 | (0x10000 if g.get("cr0_wp", True) else 0)
    cr4 = 0
    if paging != "32bit":
        cr4 |= 0x20
    if paging == "32bit" and g.get("cr4_pse", True):
        cr4 |= 0x10
    if paging == "5level":
        cr4 |= 1 << 12
    if g.get("cr4_smep"):
        cr4 |= 1 << 20
    if g.get("cr4_smap"):
        cr4 |= 1 << 21
    efer = 1 << 12                             # SVME (a VMRUN consistency check)
    if wide:
        efer |= 0x500
    if paging != "32bit" and g.get("efer_nxe", True):
        efer |= 0x800
    vmcb = bytearray(4096)

    def put(off: int, fmt: str, *v):
        struct.pack_into(fmt, vmcb, off, *v)
    put(L.V_EXC_INTERCEPTS, "<II", 0xffffffff, (1 << 24) | (1 << 31))
    put(L.V_INTERCEPTS4, "<I", 0x3)
    put(L.V_ASID, "<IB", 1, 1)
    put(L.V_NP_ENABLE, "<Q", 1)
    put(L.V_NCR3, "<Q", ncr3)
    put(L.V_GPAT, "<Q", 0x0007040600070406)
    put(L.V_DR7, "<Q", 0x400)
    put(L.V_DR6, "<Q", 0xffff0ff0)
    for off in (L.V_DS, L.V_ES, L.V_FS, L.V_GS):
        put(off, "<HHIQ", 0x23, 0xcf3, 0xffffffff, 0)
    put(L.V_GDTR, "<HHIQ", 0, 0, 0xffff, 0)
    put(L.V_IDTR, "<HHIQ", 0, 0, 0xfff, 0)
    put(L.V_TR, "<HHIQ", 0x28, 0x8b, 0x67, 0)
    put(L.V_LDTR, "<HHIQ", 0, 0x82, 0, 0)

    def seg_fields(user: bool):
        cs_attr = (0xa9b if wide else 0xc9b) | (0x60 if user else 0)
        ss_attr = 0xc93 | (0x60 if user else 0)
        cs = (0x1b if user else 0x08) | cs_attr << 16 | 0xffffffff << 32
        ss = (0x23 if user else 0x10) | ss_attr << 16 | 0xffffffff << 32
        # CPL (a byte at 0x4cb): written as a word before EFER, which follows it
        return [(L.V_CS, cs), (L.V_SS, ss), (L.V_CPL & ~7, (3 if user else 0) << 24)]

    stub = bytes([0x8a, 0x03, 0xf4, 0x90, 0x88, 0x13, 0xf4, 0x90])
    stub_pages = {L.STUB_K: stub, L.STUB_U: stub}

    # --- commands --------------------------------------------------------------------
    commands = []
    space = 0
    for i, (a, r) in enumerate(zip(sc["accesses"], accs)):
        c = {"index": i, "op": 3, "arg0": 0, "arg1": 0, "rbx": 0, "rdx": 0,
             "fields": [], "dumps": []}
        if "op" in a:
            # the engine's A/D updates of this access, in its order
            for s in r["steps"]:
                pa = h(s["entry_hpa"])
                if s["kind"] == "read" and s["dim"] == "nested" and s["ad_set"]:
                    bits = (0x20 if "A" in s["ad_set"] else 0) | (0x40 if "D" in s["ad_set"] else 0)
                    exp.set(pa, exp.get(pa) | bits)
                elif s["kind"] == "ad_write" and s["result"] == "written":
                    exp.set(pa, exp.get(pa, esize) | guest_ad_bits(s["ad_set"]), esize)
            gva = h(a["gva"])
            user = bool(a.get("user"))
            base = (gv or 0) + (L.STUB_U if user else L.STUB_K)
            if not wide:
                gva &= 0xffffffff
            if a["op"] == "fetch" or i in inject:
                rip = gva
            else:
                rip = base + (L.READ_OFF if a["op"] == "read" else L.WRITE_OFF)
            c["rbx"] = gva
            c["expect"] = {}
            if r["outcome"] == "ok":
                hpa = h(r["hpa"])
                if a["op"] == "write":
                    if (hpa & ~7) in protected or hpa in planted:
                        val = exp.byte(hpa)      # keeps a table byte, or a planted hlt
                    else:
                        val = next_nonce()
                        exp.set(hpa, val, 1)
                    c["rdx"] = val
                    c["dumps"].append(hpa & ~7)
                    c["expect"]["byte"] = (hpa, val)
                elif a["op"] == "read":
                    c["expect"]["read"] = exp.byte(hpa)
            c["op"] = 1
            c["rip"] = rip
            c["fields"] = seg_fields(user) + [
                (L.V_EFER, efer), (L.V_CR0, cr0), (L.V_CR3, spaces[space]), (L.V_CR4, cr4),
                (L.V_RFLAGS, 2), (L.V_RIP, rip), (L.V_RSP, 0), (L.V_RAX, 0),
                (L.V_CR2, 0)]
            if inject:
                # an external interrupt, vector 0, its IDT at the gva (every command of the
                # scenario sets these: the VMCB keeps what the last one wrote)
                on = i in inject
                c["fields"] += [(L.V_EVENTINJ, 1 << 31 if on else 0),
                                (L.V_IDTR, 0xffff << 32 if on else 0xfff << 32),
                                (L.V_IDTR + 8, gva if on else 0)]
                if on:
                    # the #VMEXIT must say it came in that event's delivery (EXITINTINFO
                    # = the event: valid, type 0, vector 0; APM vol. 2, 15.7.2), not in a
                    # fetch at RIP (which would fault on the same root entry)
                    c["inject"] = L.VMCB + L.V_EXITINTINFO
                    c["dumps"].append(L.VMCB + L.V_EXITINTINFO)
            for s in r["steps"]:
                if s["kind"] in ("read", "ad_write"):
                    pa = h(s["entry_hpa"]) & ~7
                    if pa not in c["dumps"]:
                        c["dumps"].append(pa)
        elif "mov_cr3" in a:
            space = a["mov_cr3"]
        elif "invlpg" in a:
            pass
        elif "pte_write" in a:
            p = a["pte_write"]
            gva = h(p["gva"])
            ea = g_entry(exp, paging, spaces[space], gva, p["level"], table_hpa)
            if ea is None:
                raise UnreachableWrite(i, "a page-table write whose table is not mapped")
            if not usable_frame(ea):
                raise UnreachableWrite(i, "a page-table write to memory QEMU does not "
                                          "have (or the harness's)")
            if (ea & ~7) in walked_through or (ea & ~7) in {pa & ~7 for pa in hw}:
                raise UnreachableWrite(i, "a page-table write to an entry the harness's "
                                          "stubs are reached through")
            old = exp.get(ea, esize)
            new = (old & ~h(p.get("clear", "0x0"))) | h(p.get("set", "0x0"))
            exp.set(ea, new, esize)
            c["op"] = 2
            c["arg0"] = ea & ~7
            c["arg1"] = exp.get(ea & ~7)
            c["dumps"].append(ea & ~7)
        else:
            raise Unsupported(f"access {i}: an event the SVM harness does not run")
        c["expected_words"] = {pa: exp.get(pa) for pa in c["dumps"] if pa != c.get("inject")}
        commands.append(c)

    # --- chunks ----------------------------------------------------------------------
    pages = load.frames()
    for off, b in (stub_pages.items() if need_stub else ()):
        pg = pages.setdefault(hb + off, bytearray(4096))
        pg[0:len(b)] = b
    pages[L.VMCB] = vmcb
    clears = sorted(set(pages) | {h(r["hpa"]) & ~0xfff for r in accs if r["hpa"]})
    clears = [p for p in clears if p != L.VMCB]

    p = Plan()
    p.paging, p.levels, p.esize = paging, levels, esize
    p.flags = (1 if nxe else 0) | (2 if smep else 0)
    p.chunks = sorted(pages.items())
    p.clears = clears
    p.commands = commands
    p.gv, p.gp = gv, gp
    p.harness_allow = harness_allow
    p.injected = {op: sum(1 for i in inject if sc["accesses"][i]["op"] == op)
                  for op in ("read", "write")}
    p.final_words = {pa: exp.get(pa) for pa in sorted(set(load.w))}
    p.pdpte_words = set()
    if paging == "pae":
        for a in accs:
            for s in a["steps"]:
                if s["dim"] == "guest" and s["level"] == 3:
                    p.pdpte_words.add(h(s["entry_hpa"]) & ~7)
    return p


def encode(plan) -> bytes:
    """The plan as one scenario of the batch host.asm reads."""
    out = bytearray(struct.pack("<5Q", L.SCN_MAGIC, plan.flags, len(plan.chunks),
                                len(plan.commands) + 1, len(plan.clears)))
    for pa, data in plan.chunks:
        out += struct.pack("<QQ", pa, len(data)) + bytes(data)
    for pa in plan.clears:
        out += struct.pack("<Q", pa)
    final = sorted(plan.final_words)
    cmds = list(plan.commands) + [{"op": 3, "arg0": 0, "arg1": 0, "rbx": 0, "rdx": 0,
                                   "fields": [], "dumps": final}]
    for c in cmds:
        out += struct.pack("<7Q", c["op"], c["arg0"], c["arg1"], c["rbx"] & ((1 << 64) - 1),
                           c["rdx"], len(c["fields"]), len(c["dumps"]))
        for off, v in c["fields"]:
            out += struct.pack("<QQ", off, v & ((1 << 64) - 1))
        for pa in c["dumps"]:
            out += struct.pack("<Q", pa)
    return bytes(out)
