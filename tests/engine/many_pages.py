#!/usr/bin/env python3
"""A trace touching many distinct pages, for the replay's tests at scale:

    many_pages.py OUT [PAGES]

writes OUT with PAGES (default 2^20) consecutive 4 KiB pages from 0x10000000, each
stored to once and then loaded from once, in gva order. Its counts are known without
the engine: every page's store is a TLB miss and its load a hit; with the Sunway
preset (no page-walk caches, no nested TLB), a warm start and 4 KiB host pages each
miss costs a whole walk (4 references natively and under shadow paging, 24 under EPT
and NPT, 9 in a flat nested table)."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "hw-lab" / "lib"))

from hwlab.tracefile import KIND, write_trace  # noqa: E402

BASE = 0x10000000


def accesses(pages):
    out = []
    for i in range(pages):
        a = BASE + (i << 12) + (i * 64) % 4096
        out.append((KIND["store"], a))
        out.append((KIND["load"], a + 8))
    return out


def write(path, pages=1 << 20):
    return write_trace(str(path), accesses(pages), program="many-pages", args=[str(pages)])


if __name__ == "__main__":
    write(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 20)
