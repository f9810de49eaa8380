"""The random machines' shared steps: both oracles narrow the reference generators
(tests/reference/gen.py) to what their CPU runs and add events between the accesses."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "reference"))
import gen  # noqa: E402


def leaf_level(m: dict) -> int:
    return {"4K": 1, "2M": 2, "1G": 3, "4M": 2}[m.get("page", "4K")]


def address_spaces(rng, sc: dict, raw: bool) -> int:
    """A second address space in a quarter of the mapped machines; -> how many."""
    if not raw and rng.random() < 0.25:
        sc["guest"]["address_spaces"] = 2
        return 2
    return 1


def pte_write(rng, maps: list, bits: list) -> dict:
    """The guest kernel storing to the leaf entry of one of maps: one (set, clear) of bits."""
    m = rng.choice(maps)
    bit = rng.choice(bits)
    return {"pte_write": {"gva": m["gva"], "level": leaf_level(m),
                          "set": hex(bit[0]), "clear": hex(bit[1])}}


def random_machine(rng, k: int, builders, prefix: str, maxphyaddr: int, add_events) -> dict:
    """A random machine from builders (mapped, raw): raw table graphs in 2 of 5, named
    prefix-k-..., with the CPU's physical-address width and add_events(rng, sc, raw)."""
    mapped, raw_builder = builders
    raw = rng.random() < 0.4
    for _ in range(20):
        try:
            sc = (raw_builder if raw else mapped)(rng).scenario()
        except gen.GeneratorError:
            continue
        sc["name"] = f"{prefix}-{k}-" + sc["name"]
        sc.setdefault("machine", {})["maxphyaddr"] = maxphyaddr
        add_events(rng, sc, raw)
        return sc
    raise RuntimeError("the generator failed 20 times in a row")
