"""The comparator: the engine's result for each access against what Bochs did.

Per access or event, all of:
  outcome     ok, guest #PF, EPT violation, EPT misconfiguration, VMFUNC exit (59),
              VMCALL exit (18), #UD
  hpa         of the data access when ok (Bochs' linear-access report)
  #PF         error code and CR2
  exits       exit reason, qualification, guest-physical address, guest-linear address
              (read from the VMCS by the harness's hypervisor)
  reads       the ordered host-physical addresses (and sizes) of every paging-structure
              read, guest and EPT dimension, EPTP-list reads included
  writes      the ordered host-physical addresses of the A/D writes
and, after the last access, every paging-structure word of the machine (A/D bits,
page-table writes) against the engine's updates applied to the image.

Allowances (wasm-core/docs/model.md, "Checked on Bochs"): ADVANCED_EXIT_INFO_BITS, and
the known Bochs deviations in DEVIATIONS: each is recognised precisely, counted and
printed, not counted as a disagreement; after one that leaves Bochs' memory different
from the engine's (A/D bits), the rest of that scenario is not compared.
"""

from __future__ import annotations

from plan import h

# Bochs' CPU model reports advanced VM-exit information for EPT violations
# (IA32_VMX_EPT_VPID_CAP bit 22): qualification bits 9-11 say whether the guest linear
# address is user-mode (9), writable (10) and execute-disable (11) in the guest's
# translation (SDM vol. 3C, Table 28-7). The engine
# models a CPU without it (model.md 4.3: bits 9-12 are 0). These bits are compared with
# what the engine's own guest walk says instead (expected_advanced below).
ADVANCED_EXIT_INFO_BITS = 0xe00


DEVIATIONS = {
    "ad-paging-structure-read-bit": (
        "EPT violation on a guest paging-structure access with EPT A/D on: the SDM "
        "(vol. 3C, \"EPT Violations\") and kvm-unit-tests on hardware (ept_access_test_paddr_"
        "not_present_ad_enabled: EPT_VLT_RD | EPT_VLT_WR) set qualification bits 0 and 1; "
        "Bochs' translate_guest_physical turns the access into BX_WRITE and sets bit 1 only"),
    "ept-large-leaf-bit-12": (
        "an EPT 2 MiB or 1 GiB leaf with bit 12 set: bits 20:12 (29:12) of such an entry "
        "are reserved (SDM vol. 3C, Tables 28-4 and 28-2: an EPT misconfiguration); Bochs "
        "masks the address with ...fffe000 as for the PAT bit of an IA-32 large page and "
        "ignores bit 12, so the translation succeeds"),
    "ad-rewrite-of-repeated-entry": (
        "a walk that meets the same entry at two levels (a table pointing to itself, or "
        "two levels sharing a frame): Bochs sets A/D from the copy each level read and "
        "writes that entry once per level; the engine decides on memory at update time "
        "(model.md 6) and writes it once. The written hpas in first-seen order and the "
        "final memory agree"),
    "guest-ad-write-without-ept-check": (
        "a guest A/D update to a guest page-table page that EPT maps without write "
        "permission (EPT A/D off): the SDM treats the update as a write to guest memory "
        "(an EPT violation, bits 0|1, bit 8 clear; kvm-unit-tests ept_access_test_paddr_"
        "read_only_ad_disabled expects it on hardware); Bochs writes the entry through the "
        "translation it made for the read and raises nothing"),
}


def expected_io(r: dict, esize: int):
    reads, writes = [], []
    for s in r["steps"]:
        size = esize if s["dim"] == "guest" else 8
        pa = h(s["entry_hpa"])
        if s["kind"] in ("read", "eptp_list"):
            reads.append((pa, size))
            if s["dim"] == "nested" and s["ad_set"]:
                writes.append((pa, 8))
        elif s["kind"] == "ad_write" and s["result"] == "written":
            writes.append((pa, size))
    return reads, writes


def expected_advanced(sc: dict, r: dict) -> int:
    """Bits 9-11 of an EPT violation on the final gpa, from the engine's guest walk:
    U/S, R/W ANDed, XD ORed over the guest entries read (the PAE PDPTE has none)."""
    f = r["fault"]
    q = h(f["qualification"])
    if not (q >> 7) & 1 or not (q >> 8) & 1:
        return 0
    us = rw = 1
    xd = 0
    nxe = sc["guest"].get("efer_nxe", True) and sc["guest"]["paging"] != "32bit"
    for s in r["steps"]:
        if s["dim"] == "guest" and s["kind"] == "read":
            e = h(s["entry"])
            us &= (e >> 2) & 1
            rw &= (e >> 1) & 1
            if nxe:
                xd |= e >> 63
    return (us << 9) | (rw << 10) | (xd << 11)


def compare(sc: dict, result: dict, plan, got: dict):
    """-> (disagreements, deviations, accesses compared)"""
    out, devs = [], []
    esize = 4 if sc["guest"]["paging"] == "32bit" else 8
    recs = got["records"]
    n, stop = _compare_accesses(sc, result, plan, got, out, devs, esize)
    # what went wrong around the harness, up to the command where comparing stopped
    # (after a deviation that changed Bochs' memory, the rest follows from it)
    for cmd, p in got["problems"]:
        if cmd < stop:
            out.insert(0, {"access": None, "what": "harness", "detail": p})
    return out, devs, n


def _compare_accesses(sc, result, plan, got, out, devs, esize):
    """Fills out and devs; returns (accesses compared, index of the first command not
    compared: len + 1 when all were, so that a problem at the end command counts)."""
    recs = got["records"]
    for i, (a, r) in enumerate(zip(sc["accesses"], result["accesses"])):
        b = recs[i] if i < len(recs) else None

        def dis(what, engine, bochs):
            out.append({"access": i, "event": a, "what": what,
                        "engine": engine, "bochs": bochs})

        if b is None:
            dis("record", r["outcome"], "the CPU never completed this command")
            continue
        last = r["steps"][-1] if r["steps"] else None
        if (r["outcome"] == "ept_misconfig" and last and last["kind"] == "read"
                and last["dim"] == "nested" and last["level"] in (2, 3)
                and h(last["entry"]) & 0x80):
            e = h(last["entry"])
            span = (1 << (12 + 9 * (last["level"] - 1))) - 1
            if e & span & ~0xfff == 0x1000 and not e >> 40 & 0xfff and (e >> 3) & 7 in (0, 1, 4, 5, 6) \
                    and e & 3 != 2 and b["outcome"] != "ept_misconfig":
                devs.append({"access": i, "event": a, "deviation": "ept-large-leaf-bit-12",
                             "engine": f"ept_misconfig at entry {last['entry_hpa']} = {last['entry']}",
                             "bochs": b["outcome"]})
                return i + 1, i
        if (r["outcome"] == "ept_violation" and last and last["kind"] == "ad_write"
                and last["result"] == "blocked"
                and any(pa == h(last["entry_hpa"]) for pa, _ in b["writes"])):
            devs.append({"access": i, "event": a, "deviation": "guest-ad-write-without-ept-check",
                         "engine": f"ept_violation {r['fault']['qualification']} at gpa "
                                   f"{r['fault']['guest_physical_address']}",
                         "bochs": f"{b['outcome']}, wrote {last['entry_hpa']}"})
            return i + 1, i
        reads, writes = expected_io(r, esize)
        got_reads = [(pa, n) for pa, n in b["reads"]]
        got_writes = [(pa, n) for pa, n in b["writes"]]
        # the data write of a write access is no paging-structure write
        if "op" in a and a["op"] == "write" and r["outcome"] == "ok":
            got_writes = [(pa, n) for pa, n in got_writes if not (pa == h(r["hpa"]) and n == 1)]
        if "op" in a and r["outcome"] == "ok":
            got_reads = [(pa, n) for pa, n in got_reads if not (pa == h(r["hpa"]) and n == 1)]
        if "mov_cr3" in a and sc["guest"]["paging"] == "pae":
            # A PAE mov cr3 loads the four PDPTEs from memory (SDM vol. 3A 4.4.1); the
            # engine keeps them as registers and lists no steps for the event. Checked
            # here: Bochs read exactly the new PDPT's four entries (their EPT
            # translation, under EPT, is not compared).
            base = plan.commands[i]["arg"] & ~0x1f
            want = [plan.table_hpa(base + 8 * k) for k in range(4)]
            pd_reads = [pa for pa, n in got_reads if pa in want]
            if pd_reads != want:
                dis("PDPTE loads", [hex(x) for x in want], [hex(x) for x, _ in got_reads])
        elif got_reads != reads:
            dis("reads", [hex(x) for x, _ in reads], [hex(x) for x, _ in got_reads])
        if got_writes != writes:
            walked = [h(s["entry_hpa"]) for s in r["steps"] if s["kind"] == "read"]
            repeated = {pa for pa in walked if walked.count(pa) > 1}
            extra = [pa for pa, n in got_writes if got_writes.count((pa, n)) > writes.count((pa, n))]
            if list(dict.fromkeys(got_writes)) == list(dict.fromkeys(writes)) and extra \
                    and all(pa in repeated for pa in extra):
                devs.append({"access": i, "event": a, "deviation": "ad-rewrite-of-repeated-entry",
                             "engine": [hex(x) for x, _ in writes],
                             "bochs": [hex(x) for x, _ in got_writes]})
            else:
                dis("writes", [hex(x) for x, _ in writes], [hex(x) for x, _ in got_writes])
        eo, bo = r["outcome"], b["outcome"]
        if "pte_write" in a or "invlpg" in a or "mov_cr3" in a:
            eo = "ok"
        if eo != bo:
            dis("outcome", eo, bo)
            continue
        f, bf = r["fault"], b["fault"]
        if eo == "ok" and "op" in a and a["op"] in ("read", "write"):
            if b["hpa"] != h(r["hpa"]):
                dis("hpa", r["hpa"], hex(b["hpa"]) if b["hpa"] is not None else None)
        elif eo == "guest_page_fault":
            if bf["error_code"] != h(f["error_code"]):
                dis("error_code", f["error_code"], hex(bf["error_code"]))
            if bf["cr2"] != h(f["cr2"]):
                dis("cr2", f["cr2"], hex(bf["cr2"]))
        elif eo in ("ept_violation", "ept_misconfig", "vmfunc_exit", "vmcall_exit"):
            log = bf.get("log")
            if log is None:
                dis("exit", eo, "no exit logged by the hypervisor")
                continue
            if log["reason"] & 0xffff != f["exit_reason"]:
                dis("exit_reason", f["exit_reason"], log["reason"])
            if eo == "ept_violation":
                q = log["qualification"]
                want = h(f["qualification"])
                if (q & ~ADVANCED_EXIT_INFO_BITS) == want & ~1 and want & 3 == 3 \
                        and f["stage"] != 0 and sc["nested"].get("ad"):
                    devs.append({"access": i, "event": a,
                                 "deviation": "ad-paging-structure-read-bit",
                                 "engine": hex(want), "bochs": hex(q)})
                elif q & ~ADVANCED_EXIT_INFO_BITS != want:
                    dis("qualification", hex(want), hex(q))
                elif q & ADVANCED_EXIT_INFO_BITS != expected_advanced(sc, r):
                    dis("qualification bits 9-11", hex(expected_advanced(sc, r)),
                        hex(q & ADVANCED_EXIT_INFO_BITS))
                if log["gla"] != h(f["guest_linear_address"]):
                    dis("guest_linear_address", f["guest_linear_address"], hex(log["gla"]))
            if eo in ("ept_violation", "ept_misconfig"):
                if log["gpa"] != h(f["guest_physical_address"]):
                    dis("guest_physical_address", f["guest_physical_address"], hex(log["gpa"]))
        if "vmfunc" in a and eo == "ok":
            pass
    # the machine's paging-structure words at the end
    exp = plan.expected_words
    for pa in plan.check_words:
        want = exp.get(pa)
        have = got["words"].get(pa)
        if have != want:
            out.append({"access": "end", "what": "memory word", "hpa": hex(pa),
                        "engine": hex(want), "bochs": hex(have) if have is not None else None})
    return len(sc["accesses"]), len(sc["accesses"]) + 1


def describe(d: dict) -> str:
    where = f"access {d['access']}" if d.get("access") is not None else "run"
    ev = d.get("event")
    evs = ""
    if ev:
        evs = " (" + ", ".join(f"{k}={v}" for k, v in ev.items()) + ")"
    if d["what"] == "memory word":
        return f"DISAGREE {d.get('scenario')}: end: memory word {d['hpa']}: engine {d['engine']}, bochs {d['bochs']}"
    if d["what"] == "harness":
        return f"DISAGREE {d.get('scenario')}: harness: {d['detail']}"
    return (f"DISAGREE {d.get('scenario')}: {where}{evs}: {d['what']}: "
            f"engine {d['engine']}, bochs {d['bochs']}")
