"""Random machines for the SVM run: the reference generators (tests/reference/gen.py,
random mappings and random raw table graphs) narrowed to mode npt on QEMU's CPU, plus
events between the accesses.

    random_machine(rng, k) -> scenario dict

  * mode npt; guest paging 4level, 5level, pae and 32bit; 4- and 5-level nested tables
    (QEMU's TCG has LA57: a 5-level nested walk needs the host in 5-level paging, and
    the runner boots such batches so); maxphyaddr 40 (QEMU's phys-bits);
  * what the reference generators draw: 4K/2M/1G (and 4M) pages in both dimensions,
    permissions, U/S, NX, host EFER.NXE and CR4.SMEP, WP/SMEP/SMAP in the guest,
    not-present and reserved-bit entries, shared subtrees and cycles in raw tables;
  * events: INVLPG, page-table writes (the guest kernel storing to a leaf entry) and,
    with two address spaces, mov cr3.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from oracle import machines  # noqa: E402
from oracle.machines import gen  # noqa: E402  (the reference generators, tests/reference)

QEMU_M = 40


class _Narrow:
    def pick_machine(self) -> None:
        r = self.r
        self.mode = "npt"
        self.paging = r.choice(["4level", "4level", "5level", "pae", "32bit"])
        self.M = QEMU_M
        self.nested = True
        self.levels = r.choice([4, 4, 4, 5])
        self.top = gen.rw.GUEST_TOP_LEVEL[self.paging]
        self.gpa_bits = min(self.M, 48 if self.levels == 4 else self.M)


class Mapped(_Narrow, gen._Builder):
    pass


class Raw(_Narrow, gen._RawBuilder):
    pass


def add_events(rng, sc: dict, raw: bool) -> None:
    spaces = machines.address_spaces(rng, sc, raw)
    maps = sc["guest"].get("mappings") or []
    out = []
    for a in sc["accesses"]:
        if rng.random() < 0.12:
            p = rng.random()
            if p < 0.3 and "gva" in a:
                out.append({"invlpg": a["gva"]})
            elif p < 0.75 and maps:
                out.append(machines.pte_write(rng, maps, [(0x0, 0x2), (0x0, 0x4), (0x20, 0x0),
                                                          (0x40, 0x0), (0x0, 0x1), (0x2, 0x0),
                                                          (0x0, 0x20), (0x0, 0x40)]))
            elif spaces > 1:
                out.append({"mov_cr3": rng.randrange(0, spaces)})
        out.append(a)
    sc["accesses"] = out


def random_machine(rng, k: int) -> dict:
    sc = machines.random_machine(rng, k, (Mapped, Raw), "svm", QEMU_M, add_events)
    if sc["guest"].get("address_spaces"):
        # a second address space needs its tables mapped too: without it if not
        try:
            gen.rw.build(gen.rw.parse_scenario(sc))
        except gen.rw.ScenarioError:
            del sc["guest"]["address_spaces"]
            sc["accesses"] = [a for a in sc["accesses"] if "mov_cr3" not in a]
    return sc
