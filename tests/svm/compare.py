"""The comparator: the engine's result for each access against what the CPU did.

Per access, all of:
  outcome   ok (the access completed: the stub's hlt, or the planted hlt of a fetch,
            was reached), guest #PF (intercepted: exit 0x4e), #NPF (exit 0x400)
  ok        a read returned the byte planted at the engine's hpa; a write stored its
            byte there; a fetch ran the hlt planted there (guest RIP = the gva)
  #PF       error code (EXITINFO1) and CR2 (EXITINFO2)
  #NPF      EXITINFO1 and EXITINFO2
  memory    every paging-structure word the engine's walk read, after the access, with
            the engine's A/D updates applied (the A/D bits written, both dimensions)
and after the last access every word of the built machine.

Known QEMU deviations from the APM (the APM is the contract) are recognised precisely,
counted and printed, and not counted as disagreements: DEVIATIONS below.
"""

from __future__ import annotations

import layout as L
from plan import h

DEVIATIONS = {
    "npf-id-bit-without-nxe": (
        "an allowance, not a deviation: a #NPF on a fetch with the host's EFER.NXE clear and "
        "CR4.SMEP set. The APM (vol. 2, 8.4.2) defines I/D (bit 4) 'only ... if no-execute "
        "feature is enabled (EFER.NXE=1 && CR4.PAE=1)'; the engine sets it for SMEP too (the "
        "SDM's rule), QEMU leaves it clear: either agrees with the APM"),
    "reserved-fault-without-p": (
        "a fault on a reserved bit: QEMU's error code (the guest #PF's, or #NPF's EXITINFO1) "
        "has RSVD (bit 3) without P (bit 0). The APM (vol. 2, 8.4.2, Page-Fault Error Code) "
        "defines P = 0 as 'the page fault was caused by a not-present page'; an entry with a "
        "reserved bit set is present, and the engine keeps P = 1 (as KVM and Bochs do)"),
    "top-level-bit-8-not-reserved": (
        "bit 8 of a PML4E or PML5E (guest or nested): the APM's long-mode PML4E/PML5E format "
        "(vol. 2, 5.3.3, Figures 5-18 and following) has bits 8:7 MBZ, a #PF with RSV (an #NPF "
        "in the nested tables), and KVM checks bit 8 there for AMD guests; QEMU checks bit 7 "
        "only and walks on. The rest of the scenario is not compared (QEMU set bits the "
        "engine does not)"),
    "pae-pdpte-reserved-bits": (
        "a legacy-PAE PDPTE with bits 2:1 or 8:5 set: the APM's PAE PDPE format (vol. 2, "
        "5.3.2) has them reserved (a #PF with RSV when nested paging reads the PDPTE on the "
        "walk); QEMU checks bits 63:MAXPHYADDR only. The rest of the scenario is not compared"),
    "pae-pdpte-accessed-bit": (
        "QEMU sets bit 5 in a legacy-PAE PDPTE that nested paging reads on the walk; in the "
        "APM's PAE PDPE format that bit is reserved (there is no A bit at that level). The "
        "bit is allowed in that word from then on"),
    "accessed-on-1g-leaf-without-access": (
        "a 1 GiB leaf (guest or nested) whose access is refused (a permission fault, or "
        "reserved bits 29:13): QEMU sets its A bit before it checks the rights and those "
        "bits (for 2 MiB and 4 KiB leaves it checks first). The APM (vol. 2, 5.4.1) sets A when 'the ... physical page is either read "
        "from or written to'; the page was not, and the engine leaves A clear. The bit is "
        "allowed in that word from then on"),
    "accessed-before-next-table": (
        "a guest walk whose next guest table cannot be read (its nested translation faults): "
        "QEMU has already set the A bit of the entry that points to that table. The APM "
        "(vol. 2, 5.4.1, Accessed (A) Bit) sets A 'the first time the table ... is either "
        "read from or written to'; that table was not read, and the engine leaves A clear. "
        "The bit is allowed in that word from then on"),
}

RSVD_P = 0x9


def _deviation_fault(sc: dict, a: dict, r: dict, g: dict):
    """A known QEMU deviation that explains a different outcome or fault code, or None.
    -> (name, stop comparing the scenario after it)"""
    f = r["fault"] or {}
    ex = g["exitcode"]
    reads = [s for s in r["steps"] if s["kind"] == "read"]
    last = reads[-1] if reads else None
    if f.get("reason") == "reserved" and last and last["kind"] == "read" and \
            last["result"] == "reserved":
        e = h(last["entry"])
        paging = sc["guest"]["paging"]
        if last["level"] >= 4 and e & 0x100 and (last["dim"] == "nested" or paging in ("4level", "5level")):
            if not _other_reserved(sc, last, e & ~0x100):
                return "top-level-bit-8-not-reserved", True
        if last["dim"] == "guest" and paging == "pae" and last["level"] == 3 and e & 0x1e6:
            if not _other_reserved(sc, last, e & ~0x1e6):
                return "pae-pdpte-reserved-bits", True
    if r["outcome"] == "guest_page_fault" and ex == L.EXIT_PF and \
            h(f["error_code"]) & RSVD_P == RSVD_P and g["exitinfo1"] == h(f["error_code"]) & ~1:
        return "reserved-fault-without-p", False
    if r["outcome"] == "npt_fault" and ex == L.EXIT_NPF and not sc["nested"].get("host_nxe", True) \
            and g["exitinfo1"] ^ h(f["exitinfo1"]) == 0x10 and g["exitinfo2"] == h(f["exitinfo2"]):
        return "npf-id-bit-without-nxe", False
    if r["outcome"] == "npt_fault" and ex == L.EXIT_NPF and \
            h(f["exitinfo1"]) & RSVD_P == RSVD_P and g["exitinfo1"] == h(f["exitinfo1"]) & ~1 \
            and g["exitinfo2"] == h(f["exitinfo2"]):
        return "reserved-fault-without-p", False
    return None


def _other_reserved(sc: dict, step: dict, e: int) -> bool:
    """Does e still have a reserved bit the CPU checks (above MAXPHYADDR, NX without NXE)?"""
    m = sc.get("machine", {}).get("maxphyaddr", 40)
    if e & (((1 << 52) - 1) & ~((1 << m) - 1)):
        return True
    nxe = sc["nested"].get("host_nxe", True) if step["dim"] == "nested" else \
        sc["guest"].get("efer_nxe", True)
    if e >> 63 and not nxe:
        return True
    if sc["guest"]["paging"] == "pae" and step["dim"] == "guest" and e >> 52:
        return True
    return step["level"] >= 4 and bool(e & 0x80)


def compare(sc: dict, result: dict, plan, got) -> tuple:
    """-> (disagreements, deviations, accesses compared)"""
    out, devs = [], []
    if isinstance(got, str):
        return [{"access": None, "what": "harness", "detail": got}], devs, 0
    # word -> bits QEMU may have set that the engine has not: from the start, those the
    # harness's own walks set in a scenario word (bit 5 of a legacy-PAE PDPTE its stubs
    # are reached through), then the deviations' as they show
    allowed = dict(getattr(plan, "harness_allow", {}))
    n = 0
    esize = plan.esize
    for i, (a, r, c) in enumerate(zip(sc["accesses"], result["accesses"], plan.commands)):
        g = got[i]

        def dis(what, engine, cpu):
            out.append({"access": i, "event": a, "what": what, "engine": engine, "cpu": cpu})

        def dev(name, engine, cpu):
            devs.append({"access": i, "event": a, "deviation": name, "engine": engine, "cpu": cpu})

        n += 1
        if "op" in a:
            ex = g["exitcode"]
            eo = r["outcome"]
            known = _deviation_fault(sc, a, r, g) if eo != "ok" else None
            if known:
                name, stop = known
                dev(name, json_fault(r), describe_exit(g))
                if stop:
                    return out, devs, n
            elif eo == "ok":
                if ex not in (L.EXIT_HLT, L.EXIT_GP):
                    dis("outcome", "ok", describe_exit(g))
                else:
                    if a["op"] == "fetch":
                        want_rip = c["rip"]
                    else:
                        want_rip = c["rip"] + 2
                    if g["rip"] != want_rip:
                        dis("outcome", f"ok (guest RIP {want_rip:#x})", describe_exit(g))
                    elif a["op"] == "read" and (g["rax"] & 0xff) != c["expect"]["read"]:
                        dis("hpa (byte read)", f"{c['expect']['read']:#x} at {r['hpa']}",
                            f"{g['rax'] & 0xff:#x}")
            elif eo == "guest_page_fault":
                f = r["fault"]
                if ex != L.EXIT_PF:
                    dis("outcome", f"#PF {f['error_code']}", describe_exit(g))
                else:
                    if g["exitinfo1"] != h(f["error_code"]):
                        dis("error_code", f["error_code"], hex(g["exitinfo1"]))
                    if g["exitinfo2"] != h(f["cr2"]):
                        dis("cr2", f["cr2"], hex(g["exitinfo2"]))
            elif eo == "npt_fault":
                f = r["fault"]
                if ex != L.EXIT_NPF:
                    dis("outcome", f"#NPF {f['exitinfo1']} {f['exitinfo2']}", describe_exit(g))
                else:
                    if g["exitinfo1"] != h(f["exitinfo1"]):
                        dis("exitinfo1", f["exitinfo1"], hex(g["exitinfo1"]))
                    if g["exitinfo2"] != h(f["exitinfo2"]):
                        dis("exitinfo2", f["exitinfo2"], hex(g["exitinfo2"]))
            else:
                dis("outcome", eo, describe_exit(g))
            if c.get("inject"):
                have = g["dumps"].get(c["inject"])
                if have is None or have & 0xffffffff != 1 << 31:
                    dis("EXITINTINFO", "0x80000000 (the injected event's delivery)",
                        f"{have:#x}" if have is not None else None)
            _accessed_deviations(sc, r, plan, g, allowed, dev)
        for pa, want in c["expected_words"].items():
            have = g["dumps"].get(pa)
            if not _word_ok(have, want, allowed.get(pa, 0)):
                dis("memory word", f"{pa:#x}={want:#x}", f"{have:#x}" if have is not None else None)
    fin = got[len(plan.commands)]["dumps"]
    for pa, want in plan.final_words.items():
        if not _word_ok(fin.get(pa), want, allowed.get(pa, 0)):
            out.append({"access": "end", "what": "memory word", "event": None,
                        "engine": f"{pa:#x}={want:#x}", "cpu": hex(fin.get(pa) or 0)})
    return out, devs, n


def _word_ok(have, want, allow: int) -> bool:
    if have is None:
        return False
    return (have & ~allow) == (want & ~allow)


def _accessed_deviations(sc, r, plan, g, allowed: dict, dev) -> None:
    """A bits QEMU sets where the APM sets none (DEVIATIONS), each allowed from then on."""
    esize = plan.esize
    steps = r["steps"]
    guest_reads = [s for s in steps if s["dim"] == "guest" and s["kind"] == "read"]
    # the last guest entry read points to a table whose entry's nested translation faulted
    f = r["fault"] or {}
    if r["outcome"] == "npt_fault" and f.get("stage", 0) > 0 and guest_reads:
        s = guest_reads[-1]
        if s["result"] == "table" and s["level"] == f["stage"] + 1 and \
                not (sc["guest"]["paging"] == "pae" and s["level"] == 3):
            pa = h(s["entry_hpa"])
            bit = 0x20 << (8 * (pa & 7))
            have = g["dumps"].get(pa & ~7)
            if have is not None and have & bit and not h(s["entry"]) & 0x20:
                allowed[pa & ~7] = allowed.get(pa & ~7, 0) | bit
                dev("accessed-before-next-table", f"{s['entry_hpa']}: A clear",
                    f"A set ({have:#x})")
    reads = [s for s in steps if s["kind"] == "read"]
    if reads and reads[-1]["level"] == 3 and h(reads[-1]["entry"]) & 0x80 and (
            (f.get("reason") == "permission" and reads[-1]["result"] == "page") or
            (f.get("reason") == "reserved" and reads[-1]["result"] == "reserved"
             and not (sc["guest"]["paging"] == "pae" and reads[-1]["dim"] == "guest"))):
        s = reads[-1]
        pa = h(s["entry_hpa"])
        have = g["dumps"].get(pa & ~7)
        if have is not None and have & 0x20 and not h(s["entry"]) & 0x20:
            allowed[pa & ~7] = allowed.get(pa & ~7, 0) | 0x20
            dev("accessed-on-1g-leaf-without-access", f"{s['entry_hpa']}: A clear",
                f"A set ({have:#x})")
    for pa in plan.pdpte_words:
        have = g["dumps"].get(pa)
        if have is not None and have & 0x20 and not allowed.get(pa, 0) & 0x20:
            allowed[pa] = allowed.get(pa, 0) | 0x20
            dev("pae-pdpte-accessed-bit", f"{pa:#x}: bit 5 clear", f"set ({have:#x})")


def json_fault(r: dict) -> str:
    f = r["fault"] or {}
    if r["outcome"] == "guest_page_fault":
        return f"#PF {f['error_code']} ({f['reason']} at level {f['level']})"
    if r["outcome"] == "npt_fault":
        return f"#NPF {f['exitinfo1']} {f['exitinfo2']} ({f['reason']} at nested level {f['level']})"
    return r["outcome"]


def describe_exit(g: dict) -> str:
    ex = g["exitcode"]
    name = {L.EXIT_PF: "#PF", L.EXIT_NPF: "#NPF", L.EXIT_HLT: "HLT", L.EXIT_GP: "#GP",
            L.EXIT_SHUTDOWN: "shutdown", L.EXIT_INVALID: "VMRUN failed (VMEXIT_INVALID)"}.get(
        ex, f"exit {ex:#x}")
    return (f"{name} exitinfo1 {g['exitinfo1']:#x} exitinfo2 {g['exitinfo2']:#x} "
            f"rip {g['rip']:#x}")


def describe(d: dict) -> str:
    where = f"access {d['access']}" if d.get("access") is not None else "run"
    ev = d.get("event")
    evs = " (" + ", ".join(f"{k}={v}" for k, v in ev.items()) + ")" if ev else ""
    if d["what"] == "harness":
        return f"DISAGREE {d.get('scenario')}: harness: {d['detail']}"
    return (f"DISAGREE {d.get('scenario')}: {where}{evs}: {d['what']}: "
            f"engine {d['engine']}, cpu {d['cpu']}")
