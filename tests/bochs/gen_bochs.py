"""Random machines for the Bochs run: the reference generators (tests/reference/gen.py,
random mappings and random raw table graphs) narrowed to what Bochs' VMX can execute,
plus the events only an executing CPU checks end to end.

    random_machine(rng, k) -> scenario dict

  * modes ept (2 in 3) and native; guest paging 4level, pae and 32bit (Bochs has no
    LA57 and 4-level EPT only); maxphyaddr 40 (the CPU's); execute-only EPT supported;
  * what the reference generators draw: 4K/2M/1G (and 4M) pages, permissions, U/S,
    XD, WP/SMEP/SMAP, not-present and reserved-bit entries, EPT memory types and
    misconfigurations, EPT A/D on and off, shared subtrees and cycles in raw tables;
  * VM functions on in a third of the EPT machines: an EPTP list of one or two more
    EPTs (the main EPT's mappings with some dropped, made read-only or given another
    memory type), VMFUNC switches between them, an out-of-range index, an empty
    entry, a disabled function;
  * events between the accesses: VMCALL, INVLPG, page-table writes (the guest kernel
    storing to a leaf entry) and, with two address spaces, mov cr3.
"""

from __future__ import annotations

import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from oracle import machines  # noqa: E402
from oracle.machines import gen  # noqa: E402  (the reference generators, tests/reference)

BOCHS_M = 40


class _Narrow:
    def pick_machine(self) -> None:
        r = self.r
        self.mode = r.choice(["ept", "ept", "native"])
        self.paging = r.choice(["4level", "4level", "pae", "32bit"])
        self.M = BOCHS_M
        self.nested = self.mode != "native"
        self.levels = 4 if self.nested else 0
        self.top = gen.rw.GUEST_TOP_LEVEL[self.paging]
        self.gpa_bits = self.M

    def nested_config(self) -> dict:
        n = super().nested_config()
        n.pop("execute_only", None)            # Bochs supports execute-only translations
        return n


class Mapped(_Narrow, gen._Builder):
    pass


class Raw(_Narrow, gen._RawBuilder):
    pass


def add_vmfunc(rng, sc: dict) -> int:
    """An EPTP list of one or two EPTs derived from the main one; returns its length."""
    n = sc["nested"]
    count = rng.choice([1, 1, 2])
    lst = []
    for _ in range(count):
        maps = []
        for m in n["mappings"]:
            m2 = copy.deepcopy(m)
            p = rng.random()
            if p < 0.15:
                continue                                   # not mapped in this EPT
            if p < 0.3:
                m2["perm"] = rng.choice(["r", "rx", "rw"])
            elif p < 0.35:
                m2["memtype"] = rng.choice([0, 6, 2])
            maps.append(m2)
        e = {"mappings": maps}
        lst.append(e)
    n["vmfunc"] = True
    n["eptp_list"] = lst
    return count


def add_events(rng, sc: dict, raw: bool) -> None:
    acc = sc["accesses"]
    ept = sc["mode"] == "ept"
    nlist = 0
    if ept and rng.random() < 0.35:
        nlist = add_vmfunc(rng, sc)
    spaces = machines.address_spaces(rng, sc, raw)
    maps = sc["guest"].get("mappings") or []
    out = []
    for a in acc:
        if rng.random() < 0.12:
            p = rng.random()
            if nlist and p < 0.5:
                q = rng.random()
                if q < 0.8:
                    out.append({"vmfunc": rng.randrange(0, nlist + 1)})
                elif q < 0.9:
                    out.append({"vmfunc": rng.choice([512, 4096, nlist + 1, 100])})
                else:
                    out.append({"vmfunc": 0, "function": rng.choice([1, 2])})
            elif p < 0.6:
                if ept:                                   # a hypercall means a VMM
                    out.append({"vmcall": True})
            elif p < 0.7 and "gva" in a:
                out.append({"invlpg": a["gva"]})
            elif p < 0.85 and maps:
                out.append(machines.pte_write(rng, maps, [(0x0, 0x2), (0x0, 0x4), (0x20, 0x0),
                                                          (0x40, 0x0), (0x0, 0x1), (0x2, 0x0)]))
            elif spaces > 1:
                out.append({"mov_cr3": rng.randrange(0, spaces)})
            elif ept and not nlist:
                out.append({"vmfunc": 0})                 # VM functions off: #UD
        out.append(a)
    sc["accesses"] = out


def random_machine(rng, k: int) -> dict:
    return machines.random_machine(rng, k, (Mapped, Raw), "bochs", BOCHS_M, add_events)
