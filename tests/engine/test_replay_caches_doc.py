"""replay.md's "The caches, exactly" is enough to reproduce a replay once the TLB evicts:
a second implementation of the native mode's TLB and page-walk cache, written from that
section alone (the set hash, LRU with the first invalid way first, page sizes looked up
smallest first, the write rule, the fully associative walk cache filled top level first
after a successful walk, the warm-up order), replays the same trace and must give the
engine's TLB misses, references and walk-cache hits exactly, cold and warm.

The trace touches 6,200 pages at random, four times the x86 server's 1,536-entry TLB, so
lines are evicted all the time; the same model with the set picked by the page number's
low bits (the obvious other reading) is checked to give other counts, so the comparison
can tell the two apart."""
import json
import os
import pathlib
import random
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))
sys.path.insert(0, str(ROOT / "hw-lab" / "lib"))
from hwlab.tracefile import write_trace  # noqa: E402

GOLDEN = 0x9E3779B97F4A7C15
MASK64 = (1 << 64) - 1


class Cache:
    """Set-associative LRU, as replay.md says: a use is a lookup that finds the line or a
    fill; a fill replaces the line holding the key, else the first invalid way, else the
    least recently used one."""

    def __init__(self, entries, ways, hashed=True):
        self.ways = ways or entries
        self.sets = entries // self.ways
        self.hashed = hashed
        self.lines = [[None] * self.ways for _ in range(self.sets)]   # (key, value, aux, last use)
        self.tick = 0

    def set_of(self, key):
        if not self.hashed:
            return key % self.sets
        i = ((key * GOLDEN) & MASK64) >> 32
        return i % self.sets

    def find(self, key):
        s = self.lines[self.set_of(key)]
        for w, line in enumerate(s):
            if line and line[0] == key:
                self.tick += 1
                s[w] = (line[0], line[1], line[2], self.tick)
                return s[w]
        return None

    def fill(self, key, value, aux):
        s = self.lines[self.set_of(key)]
        victim = next((w for w, line in enumerate(s) if line and line[0] == key), None)
        if victim is None:
            victim = next((w for w, line in enumerate(s) if line is None), None)
        if victim is None:
            victim = min(range(len(s)), key=lambda w: s[w][3])
        self.tick += 1
        s[victim] = (key, value, aux, self.tick)


def native_replay(accesses, warm, hashed=True):
    """The native mode of the x86-server preset: 4 KiB pages, a 1536-entry 12-way TLB, a
    32-entry fully associative page-walk cache; returns (tlb misses, refs, pwc hits)."""
    tlb, pwc = Cache(1536, 12, hashed), Cache(32, 0, hashed)
    count = [0, 0, 0]

    def access(gva, write, counted):
        page_key = (12 << 58) | (gva >> 12)
        line = tlb.find(page_key)
        if line and (not write or line[2]):
            return
        misses, refs, hits = 1, 0, 0
        top = 4
        for level in range(2, 5):                      # the deepest cached level, looked for first
            if pwc.find((level << 58) | (gva >> (12 + 9 * (level - 1)))):
                top, hits = level - 1, 1
                break
        refs = top
        for level in range(top, 1, -1):                 # top level first, after the walk succeeded
            pwc.fill((level << 58) | (gva >> (12 + 9 * (level - 1))), 0, 0)
        tlb.fill(page_key, 0, write)
        if counted:
            count[0] += misses
            count[1] += refs
            count[2] += hits

    if warm:
        kinds = {}
        for op, gva in accesses:
            kinds.setdefault(gva >> 12, set()).add(op)
        for page in sorted(kinds):                      # gva order; fetch, read, write each once
            for op in (2, 0, 1):
                if op in kinds[page]:
                    access(page << 12, op == 1, False)
    for op, gva in accesses:
        access(gva, op == 1, True)
    return tuple(count)


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    rnd = random.Random(2016)
    pages = [0x400000 + 0x1000 * p for p in rnd.sample(range(1 << 15), 6000)] + \
        [0x7f0000000000 + 0x1000 * p for p in rnd.sample(range(1 << 20), 200)]
    hot = pages[:40]
    acc = []
    for i in range(60000):
        page = rnd.choice(hot) if rnd.random() < 0.3 else rnd.choice(pages)
        acc.append((rnd.choice((0, 0, 0, 1, 2)), page + rnd.randrange(4096)))
    path = tmp_path_factory.mktemp("doc") / "evict.vmtrace"
    write_trace(str(path), acc)
    return path, acc


@pytest.mark.parametrize("start", ["cold", "warm"])
def test_replay_md_reproduces_native_tlb_and_walk_cache(trace, start):
    path, acc = trace
    assert os.path.exists(VMSIM), "build the engine first: make -C wasm-core native"
    p = subprocess.run([VMSIM, "replay", str(path), "--quiet", "--format", "json", "--modes", "native",
                        "--start", start], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    m = json.loads(p.stdout)["modes"][0]
    engine = (m["tlb_misses"], m["refs"], m["pwc_hits"])
    assert native_replay(acc, start == "warm") == engine
    assert m["tlb_misses"] > 20000      # the TLB does evict here
    # the other reading of the set index gives other counts: the test can tell them apart
    assert native_replay(acc, start == "warm", hashed=False) != engine
