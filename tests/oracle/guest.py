"""Scenario memory and the guest paging formats, as both oracles' translators (plan.py)
read them: the engine's built machine (`vmsim image`) and result (`vmsim run`)."""

from __future__ import annotations

import struct

ADDR = ((1 << 52) - 1) & ~0xfff


class Unsupported(Exception):
    """A scenario the executing CPU cannot run, and why."""


def h(v) -> int:
    return int(v, 16) if isinstance(v, str) else v


class Words:
    """Sparse memory of 8-byte words (the image, then what the accesses change)."""

    def __init__(self, words: dict):
        self.w = {h(k): h(v) for k, v in words.items()}

    def get(self, pa: int, size: int = 8) -> int:
        base, sh = pa & ~7, (pa & 7) * 8
        v = self.w.get(base, 0) >> sh
        return v & ((1 << (8 * size)) - 1)

    def set(self, pa: int, value: int, size: int = 8) -> None:
        base, sh = pa & ~7, (pa & 7) * 8
        mask = ((1 << (8 * size)) - 1) << sh
        self.w[base] = (self.w.get(base, 0) & ~mask) | ((value << sh) & mask)

    def byte(self, pa: int) -> int:
        return self.get(pa, 1)

    def frames(self) -> dict:
        """4 KiB frame base -> its bytes (what a loader writes into the CPU's memory)."""
        out = {}
        for pa, v in self.w.items():
            out.setdefault(pa & ~0xfff, bytearray(4096))[pa & 0xfff:(pa & 0xfff) + 8] = \
                struct.pack("<Q", v)
        return out


# guest paging formats: levels from the top, index of gva at a level, entry size
def g_levels(paging: str):
    return {"5level": [5, 4, 3, 2, 1], "4level": [4, 3, 2, 1], "pae": [3, 2, 1],
            "32bit": [2, 1]}[paging]


def g_index(paging: str, gva: int, level: int) -> int:
    if paging == "32bit":
        return (gva >> (12 + 10 * (level - 1))) & 1023
    if paging == "pae" and level == 3:
        return (gva >> 30) & 3
    return (gva >> (12 + 9 * (level - 1))) & 511


def g_esize(paging: str) -> int:
    return 4 if paging == "32bit" else 8


def g_root(paging: str, cr3: int) -> int:
    """The root table's address in CR3 (a PAE CR3 points to a 32-byte PDPT)."""
    return cr3 & (~0x1f if paging == "pae" else ~0xfff)


def g_entry(words: Words, paging: str, cr3: int, gva: int, level: int, table_hpa):
    """The hpa of gva's guest entry at level (walking the tables as they are now, with
    table_hpa: gpa -> hpa or None), None where a table on the way is not mapped."""
    esize = g_esize(paging)
    table = g_root(paging, cr3)
    ea = None
    for lv in g_levels(paging):
        ea = table_hpa(table + g_index(paging, gva, lv) * esize)
        if ea is None:
            return None
        if lv == level:
            break
        table = words.get(ea, esize) & (ADDR if paging != "32bit" else 0xfffff000)
    return ea


def nested_walk(words: Words, root: int, gpa: int, levels: int, present: int):
    """gpa -> hpa through nested tables (EPT, NPT) as built, no checks; None where an
    entry on the way has none of the bits in present."""
    table = root
    for level in range(levels, 0, -1):
        e = words.get(table + ((gpa >> (12 + 9 * (level - 1))) & 511) * 8)
        if not e & present:
            return None
        if level == 1 or (level in (2, 3) and e & 0x80):
            size = 1 << (12 + 9 * (level - 1))
            return (e & ADDR & ~(size - 1)) | (gpa & (size - 1))
        table = e & ADDR
    return None


def walked(accs: list, words: Words):
    """(every entry word a walk of the result reads, every frame it or the image uses)"""
    touched, frames = set(), set()
    for a in accs:
        for s in a["steps"]:
            pa = h(s["entry_hpa"])
            touched.add(pa & ~7)
            frames.add(pa >> 12)
        if a["hpa"]:
            frames.add(h(a["hpa"]) >> 12)
    frames |= {k >> 12 for k in words.w}
    return touched, frames


def guest_ad_bits(ad_set: str) -> int:
    """A and D of a guest paging entry (bits 5 and 6) from a step's "ad_set"."""
    return (0x20 if "A" in ad_set else 0) | (0x40 if "D" in ad_set else 0)


def harness_gpas(paging: str) -> list:
    """Guest-physical 2 MiB regions to try for the harness's pages, in order (above 4 GiB
    first where the guest can reach it)."""
    c = [0xffe00000, 0xfee00000, 0xefe00000, 0xcfe00000, 0x8fe00000, 0x6fe00000,
         0x4fe00000, 0x2fe00000]
    if paging != "32bit":
        c = [0xffffe00000, 0xfe3fe00000, 0x8000000000, 0x7fffe00000] + c
    return c


def harness_gvas(paging: str) -> list:
    """Guest-linear regions to try for the harness's pages, in order: high in each half
    of the address space first, each at a different top-level entry."""
    return {
        "5level": [s | i5 << 48 | i4 << 39 | 511 << 30 | 511 << 21
                   for i5 in (511, 256, 300, 1, 0) for i4 in (511, 7)
                   for s in [0xfe00000000000000 if i5 >= 256 else 0]],
        "4level": [s | i4 << 39 | i3 << 30 | i2 << 21
                   for i4 in (511, 256, 383, 128, 1, 0)
                   for i3, i2 in ((511, 511), (300, 300), (7, 7))
                   for s in [0xffff000000000000 if i4 >= 256 else 0]],
        "pae": [i3 << 30 | i2 << 21 for i3 in (3, 2, 1, 0) for i2 in (511, 400, 300, 7)],
        "32bit": [i << 22 for i in (1023, 1000, 900, 768, 640, 512, 300, 100, 3)],
    }[paging]
