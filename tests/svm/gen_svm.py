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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "reference"))
import gen  # noqa: E402

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


def _leaf_level(m: dict) -> int:
    return {"4K": 1, "2M": 2, "1G": 3, "4M": 2}[m.get("page", "4K")]


def add_events(rng, sc: dict, raw: bool) -> None:
    spaces = 1
    if not raw and rng.random() < 0.25:
        spaces = 2
        sc["guest"]["address_spaces"] = 2
    maps = sc["guest"].get("mappings") or []
    out = []
    for a in sc["accesses"]:
        if rng.random() < 0.12:
            p = rng.random()
            if p < 0.3 and "gva" in a:
                out.append({"invlpg": a["gva"]})
            elif p < 0.75 and maps:
                m = rng.choice(maps)
                bit = rng.choice([(0x0, 0x2), (0x0, 0x4), (0x20, 0x0), (0x40, 0x0),
                                  (0x0, 0x1), (0x2, 0x0), (0x0, 0x20), (0x0, 0x40)])
                out.append({"pte_write": {"gva": m["gva"], "level": _leaf_level(m),
                                          "set": hex(bit[0]), "clear": hex(bit[1])}})
            elif spaces > 1:
                out.append({"mov_cr3": rng.randrange(0, spaces)})
        out.append(a)
    sc["accesses"] = out


def random_machine(rng, k: int) -> dict:
    raw = rng.random() < 0.4
    for _ in range(20):
        try:
            sc = (Raw if raw else Mapped)(rng).scenario()
        except gen.GeneratorError:
            continue
        sc["name"] = f"svm-{k}-" + sc["name"]
        sc.setdefault("machine", {})["maxphyaddr"] = QEMU_M
        add_events(rng, sc, raw)
        if sc["guest"].get("address_spaces"):
            # a second address space needs its tables mapped too: without it if not
            try:
                gen.rw.build(gen.rw.parse_scenario(sc))
            except gen.rw.ScenarioError:
                del sc["guest"]["address_spaces"]
                sc["accesses"] = [a for a in sc["accesses"] if "mov_cr3" not in a]
        return sc
    raise RuntimeError("the generator failed 20 times in a row")
