#!/usr/bin/env python3
"""Reference walker for vmemlab: an independent Python model of x86 address translation.

This file is written from wasm-core/docs/model.md (the contract), the Intel SDM vol. 3
(ch. 4 "Paging", ch. 29 "VMX Support for Address Translation") and the AMD APM vol. 2
(15.25 "Nested Paging"), without looking at the C engine.  The differential test
(test_differential.py) runs both on random scenarios and compares the results field by
field, so a bug in either shows up as a difference.

Modes: native, ept, npt, flat (x86 and Sunway guests) and shadow (x86 guests, 32bit and
pae under a PAE-format shadow; address spaces, mov cr3, invlpg and guest page-table
writes). Not modelled here: caches, VMFUNC and VMCALL (scenarios with them are rejected
by unknown keys).

    run(scenario_dict) -> result_dict           (model.md section 5)
    python3 refwalk.py run FILE                 prints the result JSON

Invalid scenarios raise ScenarioError("field.path: reason") (CLI: one line on stderr,
exit status 2).

Layout of this file, in the order of the model:
    1. small helpers (bit masks, hex formatting, sparse memory)
    2. scenario parsing and validation       (model.md section 2)
    3. building the tables                   (model.md section 3)
    4. the nested walk (EPT / NPT)           (model.md 4.1)
    5. the guest walk, A/D bits, faults      (model.md 4.2, 4.3)
    6. result assembly and the CLI           (model.md section 5)
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Optional

# ---------------------------------------------------------------------------------------
# 1. Helpers
# ---------------------------------------------------------------------------------------

FRAME_SIZE = 4096
PAGE_SIZES = {"4K": 1 << 12, "2M": 1 << 21, "1G": 1 << 30, "4M": 1 << 22, "8K": 1 << 13}
# Sunway entries (model.md 1, "Sunway guest paging"): valid, fault-on read/write/execute,
# address-space match, kernel/user read and write enables; the frame number at 63:28.
SW_V, SW_FOR, SW_FOW, SW_FOE, SW_ASM = 1, 2, 4, 8, 16
SW_KRE, SW_URE, SW_KWE, SW_UWE = 1 << 8, 1 << 9, 1 << 12, 1 << 13
SW_FLAGS = [(0, "V"), (1, "FOR"), (2, "FOW"), (3, "FOE"), (4, "ASM"), (8, "KRE"),
            (9, "URE"), (12, "KWE"), (13, "UWE")]

# Bit positions shared by x86 paging entries (guest tables and NPT, SDM 4.5, APM 15.25.5).
P, RW, US, PWT, PCD, ACC, DIRTY, PS, GLB = (1 << i for i in range(9))
XD = 1 << 63
# EPT entries (SDM 29.3.2): R/W/X in bits 2:0, memory type 5:3, ignore-PAT 6, page size 7,
# accessed 8, dirty 9, user-execute 10, suppress-#VE 63.
EPT_R, EPT_W, EPT_X = 1, 2, 4
EPT_RWX = 7
EPT_A, EPT_D = 1 << 8, 1 << 9


def bits(hi: int, lo: int) -> int:
    """Mask with bits hi..lo (inclusive) set; 0 when hi < lo (an empty range)."""
    if hi < lo:
        return 0
    return ((1 << (hi + 1)) - 1) ^ ((1 << lo) - 1)


def hx(value: int) -> str:
    """Hex as the result format wants it: lower case, '0x', no leading zeros."""
    return hex(value)


class ScenarioError(Exception):
    """An invalid scenario; the message names the field path ("guest.mappings[0].gva: ...")."""


class Memory:
    """Sparse physical memory of 4 KiB frames, zero until written (model.md section 3)."""

    def __init__(self) -> None:
        self.frames: dict[int, bytearray] = {}

    def read(self, addr: int, size: int) -> int:
        frame = self.frames.get(addr >> 12)
        if frame is None:
            return 0
        off = addr & 0xFFF
        return int.from_bytes(frame[off:off + size], "little")

    def write(self, addr: int, size: int, value: int) -> None:
        frame = self.frames.setdefault(addr >> 12, bytearray(FRAME_SIZE))
        off = addr & 0xFFF
        frame[off:off + size] = value.to_bytes(size, "little")


# ---------------------------------------------------------------------------------------
# 2. Scenario parsing and validation (model.md section 2)
# ---------------------------------------------------------------------------------------

@dataclass
class GuestMapping:
    gva: int
    gpa: int
    size: int
    pages: int
    writable: bool
    user: bool
    nx: bool
    global_: bool
    path: str


@dataclass
class GuestOverride:
    gva: int
    level: int
    set: int
    clear: int
    path: str


@dataclass
class NestedMapping:
    gpa: int
    hpa: int
    size: int
    pages: int
    perm: str
    memtype: int
    ipat: bool
    user: bool
    path: str


@dataclass
class NestedOverride:
    gpa: Optional[int]                # the "gpa" form ...
    table_gva: Optional[int]          # ... or the "guest_table" form
    table_level: Optional[int]
    level: int
    set: int
    clear: int
    path: str


@dataclass
class Access:
    gva: int
    op: str
    user: bool


@dataclass
class GivenTable:
    """One table of guest.tables: a frame at gpa holding `entries` (index -> value),
    zero elsewhere."""
    gpa: int
    entries: dict
    path: str


@dataclass
class GuestConfig:
    paging: str
    table_base: int
    cr0_wp: bool
    efer_nxe: bool
    cr4_pse: bool
    cr4_smep: bool
    cr4_smap: bool
    mappings: list
    overrides: list
    tables: Optional[list] = None     # guest.tables (then cr3 is given, no mappings)
    cr3: Optional[int] = None         # guest.cr3, with guest.tables
    address_spaces: int = 1           # copies of the tables built from mappings


@dataclass
class NestedConfig:
    levels: int
    table_base: int
    ad: bool
    memory_type: int
    execute_only: bool
    host_nxe: bool
    host_smep: bool
    mappings: list
    overrides: list


@dataclass
class SlotMapping:
    """A memory slot of the VMM (mode flat or shadow): pages frames of gpa -> hpa."""
    gpa: int
    hpa: int
    pages: int
    path: str


@dataclass
class FlatConfig:
    """Mode flat (model.md 1, "Flat nested tables"): one table indexed by gfn."""
    table_base: int
    guest_ram: int
    prefill: bool
    mappings: list
    frame: int                        # 8 KiB for a sunway guest, 4 KiB for x86


@dataclass
class ShadowConfig:
    """Mode shadow (model.md 1, "Shadow paging"): the VMM's memory slots, where its
    shadow tables go, and the CR3-exit savers."""
    table_base: int
    mappings: list
    cr3_targets: int
    pv_cache: bool


@dataclass
class AgileConfig:
    """Mode agile (model.md 1, "Agile paging"): where the VMM's shadow tables go, the
    switching level for every gva, the subtrees (gva, level) nested from the start, and
    the policy's two parameters (0 = off)."""
    table_base: int
    switch_level: int
    subtrees: list
    nested_after_writes: int
    shadow_after_quiet: int


@dataclass
class Event:
    """An access-list entry that is no memory access: mov_cr3 (arg: address space),
    invlpg (gva), pte_write (gva, level, set, clear)."""
    op: str
    gva: Optional[int] = None
    space: int = 0
    level: int = 0
    set: int = 0
    clear: int = 0
    user: bool = False


@dataclass
class Scenario:
    name: str
    mode: str
    maxphyaddr: int
    guest: GuestConfig
    nested: Optional[NestedConfig]
    accesses: list
    flat: Optional[FlatConfig] = None
    shadow: Optional[ShadowConfig] = None
    address_spaces: int = 1
    agile: Optional[AgileConfig] = None


_REQUIRED = object()


def _join(path: str, key) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


class _Fields:
    """One JSON object, read field by field; unknown keys are errors (model.md 2)."""

    def __init__(self, value, path: str, allowed: set):
        if not isinstance(value, dict):
            raise ScenarioError(f"{path or 'scenario'}: must be an object")
        for key in value:
            if key not in allowed:
                raise ScenarioError(f"{_join(path, key)}: unknown key")
        self.value = value
        self.path = path

    def has(self, key: str) -> bool:
        return key in self.value

    def at(self, key: str) -> str:
        return _join(self.path, key)

    def raw(self, key: str, default=_REQUIRED):
        if key not in self.value:
            if default is _REQUIRED:
                raise ScenarioError(f"{self.at(key)}: required")
            return default
        return self.value[key]

    def string(self, key: str, default=_REQUIRED, choices=None) -> str:
        v = self.raw(key, default)
        if not isinstance(v, str):
            raise ScenarioError(f"{self.at(key)}: must be a string")
        if choices is not None and v not in choices:
            raise ScenarioError(f"{self.at(key)}: must be one of {', '.join(choices)}")
        return v

    def boolean(self, key: str, default=_REQUIRED) -> bool:
        v = self.raw(key, default)
        if not isinstance(v, bool):
            raise ScenarioError(f"{self.at(key)}: must be true or false")
        return v

    def integer(self, key: str, lo: int, hi: int, default=_REQUIRED) -> int:
        v = self.raw(key, default)
        # bool is a subclass of int in Python; JSON true is not a number.
        if isinstance(v, bool) or not isinstance(v, int):
            raise ScenarioError(f"{self.at(key)}: must be an integer")
        if not lo <= v <= hi:
            raise ScenarioError(f"{self.at(key)}: must be in {lo}..{hi}")
        return v

    def hex(self, key: str, default=_REQUIRED) -> int:
        return parse_hex(self.raw(key, default), self.at(key))

    def array(self, key: str, default=_REQUIRED) -> list:
        v = self.raw(key, default)
        if not isinstance(v, list):
            raise ScenarioError(f"{self.at(key)}: must be an array")
        return v


_HEX_DIGITS = set("0123456789abcdefABCDEF")


def parse_hex(v, path: str) -> int:
    """64-bit quantities are strings "0x" (or "0X", model.md 6) + 1..16 hex digits,
    either case (model.md 2)."""
    if not isinstance(v, str):
        raise ScenarioError(f"{path}: must be a hex string \"0x...\"")
    digits = v[2:]
    if v[:2] not in ("0x", "0X") or not 1 <= len(digits) <= 16 or not set(digits) <= _HEX_DIGITS:
        raise ScenarioError(f"{path}: bad hex string {v!r}")
    return int(digits, 16)


# --- guest paging formats -------------------------------------------------------------

GUEST_TOP_LEVEL = {"4level": 4, "5level": 5, "pae": 3, "32bit": 2, "sunway": 4}
GUEST_PAGES = {                      # page size name -> leaf level, per format (model.md 3.2)
    "4level": {"4K": 1, "2M": 2, "1G": 3},
    "5level": {"4K": 1, "2M": 2, "1G": 3},
    "pae": {"4K": 1, "2M": 2},
    "32bit": {"4K": 1, "4M": 2},
    "sunway": {"8K": 1},
}
NESTED_PAGES = {"4K": 1, "2M": 2, "1G": 3}


def gva_is_canonical(gva: int, paging: str) -> bool:
    """SDM 4.1.1: 48-bit (57-bit) linear addresses are sign-extended to 64 bits;
    32-bit paging and PAE translate 32-bit linear addresses."""
    if paging in ("pae", "32bit"):
        return gva < (1 << 32)
    if paging == "sunway":
        return gva < (1 << 53)
    width = 48 if paging == "4level" else 57
    upper = gva >> (width - 1)
    return upper == 0 or upper == (1 << (65 - width)) - 1


def gva_range_ok(gva: int, length: int, paging: str) -> bool:
    """The range [gva, gva+length) must not wrap or leave the canonical half it starts in."""
    end = gva + length
    if paging in ("pae", "32bit"):
        return end <= 1 << 32
    if paging == "sunway":
        return end <= 1 << 53
    width = 48 if paging == "4level" else 57
    if gva < (1 << (width - 1)):
        return end <= 1 << (width - 1)
    return end <= 1 << 64


def parse_scenario(data) -> Scenario:
    """Validate a scenario dict and return it with defaults filled in (model.md 2).
    Errors that need the built tables (overlaps, unreachable overrides, unbacked guest
    tables, bad PAE PDPTEs) are raised while building (section 3 below)."""
    top = _Fields(data, "", {"name", "description", "mode", "machine", "guest", "nested",
                             "flat", "shadow", "agile", "accesses"})
    name = top.string("name")
    if top.has("description"):
        top.string("description")
    mode = top.string("mode", choices=("native", "ept", "npt", "flat", "shadow", "agile"))

    maxphyaddr = 46
    if top.has("machine"):
        machine = _Fields(top.raw("machine"), "machine", {"maxphyaddr"})
        maxphyaddr = machine.integer("maxphyaddr", 36, 52, 46)

    guest = _parse_guest(_Fields(top.raw("guest"), "guest",
                                 {"paging", "table_base", "cr0_wp", "efer_nxe", "cr4_pse",
                                  "cr4_smep", "cr4_smap", "mappings", "overrides", "tables",
                                  "cr3", "address_spaces"}),
                         maxphyaddr)

    nested = flat = shadow = None
    if mode in ("native", "flat", "shadow"):
        if top.has("nested"):
            raise ScenarioError(f"nested: not allowed in {mode} mode")
    else:
        if guest.paging == "sunway":
            raise ScenarioError("guest.paging: Sunway guests run in native or flat mode")
        # agile paging runs over an EPT: the nested table is EPT's, field for field
        nested = _parse_nested(top.raw("nested"), "ept" if mode == "agile" else mode,
                               maxphyaddr, guest)
    if mode == "flat":
        flat = _parse_flat(top.raw("flat"), maxphyaddr, guest)
    elif top.has("flat"):
        raise ScenarioError("flat: only in flat mode")
    if mode == "shadow":
        shadow = _parse_shadow(top.raw("shadow"), maxphyaddr)
        if guest.paging == "sunway":
            raise ScenarioError("guest.paging: Sunway guests run in native or flat mode")
    elif top.has("shadow"):
        raise ScenarioError("shadow: only in shadow mode")
    agile = None
    if mode == "agile":
        agile = _parse_agile(top.raw("agile", {}), maxphyaddr, guest)
    elif top.has("agile"):
        raise ScenarioError("agile: only in agile mode")

    accesses_raw = top.array("accesses")
    if len(accesses_raw) > 4096:
        raise ScenarioError("accesses: at most 4096 entries")
    accesses = []
    for i, a in enumerate(accesses_raw):
        if isinstance(a, dict) and a.keys() & {"mov_cr3", "invlpg", "pte_write"}:
            accesses.append(_parse_event(a, f"accesses[{i}]", guest))
            continue
        f = _Fields(a, f"accesses[{i}]", {"gva", "op", "user"})
        gva = f.hex("gva")
        if not gva_is_canonical(gva, guest.paging):
            raise ScenarioError(f"{f.at('gva')}: not a canonical {guest.paging} address")
        accesses.append(Access(gva, f.string("op", choices=("read", "write", "fetch")),
                               f.boolean("user", False)))
    return Scenario(name, mode, maxphyaddr, guest, nested, accesses, flat, shadow,
                    guest.address_spaces, agile)


def _parse_event(a, path: str, guest: GuestConfig) -> Event:
    key = next(k for k in ("mov_cr3", "invlpg", "pte_write") if k in a)
    f = _Fields(a, path, {key})
    if key == "mov_cr3":
        n = f.integer("mov_cr3", 0, 63)
        if n >= guest.address_spaces:
            raise ScenarioError(f"{f.at('mov_cr3')}: no address space {n}")
        return Event("mov_cr3", space=n)
    if key == "invlpg":
        gva = f.hex("invlpg")
        if not gva_is_canonical(gva, guest.paging):
            raise ScenarioError(f"{f.at('invlpg')}: not a canonical {guest.paging} address")
        return Event("invlpg", gva=gva)
    pf = _Fields(f.raw("pte_write"), f.at("pte_write"), {"gva", "level", "set", "clear"})
    gva = pf.hex("gva")
    if not gva_is_canonical(gva, guest.paging):
        raise ScenarioError(f"{pf.at('gva')}: not a canonical {guest.paging} address")
    level = pf.integer("level", 1, GUEST_TOP_LEVEL[guest.paging])
    set_, clear = pf.hex("set", "0x0"), pf.hex("clear", "0x0")
    if set_ & clear:
        raise ScenarioError(f"{pf.at('set')}: set and clear share bits")
    return Event("pte_write", gva=gva, level=level, set=set_, clear=clear)


def _parse_agile(value, maxphyaddr: int, guest: GuestConfig) -> AgileConfig:
    if guest.paging not in ("4level", "5level"):
        raise ScenarioError("guest.paging: agile paging models 4level and 5level guests")
    top = GUEST_TOP_LEVEL[guest.paging]
    f = _Fields(value, "agile", {"table_base", "switch_level", "subtrees",
                                 "nested_after_writes", "shadow_after_quiet"})
    table_base = f.hex("table_base", "0x20000000")
    if table_base % FRAME_SIZE:
        raise ScenarioError("agile.table_base: must be 4 KiB aligned")
    _check_phys(table_base, "agile.table_base", maxphyaddr)
    switch_level = f.integer("switch_level", 0, top, 0)
    writes = f.integer("nested_after_writes", 0, 1000000, 0)
    quiet = f.integer("shadow_after_quiet", 0, 100000000, 0)
    subs = []
    raw = f.array("subtrees", [])
    if len(raw) > 64:
        raise ScenarioError("agile.subtrees: at most 64 entries")
    for i, e in enumerate(raw):
        sf = _Fields(e, f"agile.subtrees[{i}]", {"gva", "level"})
        subs.append((sf.hex("gva"), sf.integer("level", 1, top)))
    return AgileConfig(table_base, switch_level, subs, writes, quiet)


def _parse_shadow(value, maxphyaddr: int) -> ShadowConfig:
    f = _Fields(value, "shadow", {"table_base", "mappings", "cr3_targets",
                                  "paravirt_cr3_cache"})
    table_base = f.hex("table_base", "0x20000000")
    if table_base % FRAME_SIZE:
        raise ScenarioError("shadow.table_base: must be 4 KiB aligned")
    _check_phys(table_base, "shadow.table_base", maxphyaddr)
    return ShadowConfig(table_base, _parse_slots(f, "mappings", FRAME_SIZE, maxphyaddr, "shadow"),
                        f.integer("cr3_targets", 0, 4, 0), f.boolean("paravirt_cr3_cache", False))


def _parse_slots(f: "_Fields", key: str, frame: int, maxphyaddr: int, path: str) -> list:
    """Memory slots: gpa -> hpa in frames of `frame` bytes, both aligned, below
    2^maxphyaddr."""
    out = []
    for i, m in enumerate(f.array(key)):
        mf = _Fields(m, f"{path}.{key}[{i}]", {"gpa", "hpa", "pages"})
        gpa, hpa = mf.hex("gpa"), mf.hex("hpa")
        pages = mf.integer("pages", 1, 1048576, 1)
        for k, addr in (("gpa", gpa), ("hpa", hpa)):
            if addr % frame:
                raise ScenarioError(f"{mf.at(k)}: not aligned to a {frame // 1024} KiB frame")
            _check_phys(addr, mf.at(k), maxphyaddr)
            _check_phys(addr + frame * pages - 1, mf.at("pages"), maxphyaddr)
        out.append(SlotMapping(gpa, hpa, pages, mf.path))
    return out


def _parse_flat(value, maxphyaddr: int, guest: GuestConfig) -> FlatConfig:
    f = _Fields(value, "flat", {"table_base", "guest_ram", "prefill", "mappings"})
    frame = 8192 if guest.paging == "sunway" else FRAME_SIZE
    table_base = f.hex("table_base", "0x10000000")
    if table_base % FRAME_SIZE:
        raise ScenarioError("flat.table_base: must be 4 KiB aligned")
    _check_phys(table_base, "flat.table_base", maxphyaddr)
    guest_ram = f.hex("guest_ram")
    if guest_ram == 0 or guest_ram % frame:
        raise ScenarioError(f"flat.guest_ram: a non-zero multiple of {frame // 1024} KiB")
    _check_phys(guest_ram - 1, "flat.guest_ram", maxphyaddr)
    _check_phys(table_base + guest_ram // frame * 8 - 1, "flat.guest_ram", maxphyaddr)
    slots = _parse_slots(f, "mappings", frame, maxphyaddr, "flat")
    for sl in slots:
        if sl.gpa + sl.pages * frame > guest_ram:
            raise ScenarioError(f"{sl.path}.gpa: the slot runs past flat.guest_ram")
    return FlatConfig(table_base, guest_ram, f.boolean("prefill", False), slots, frame)


def _check_phys(value: int, path: str, maxphyaddr: int, limit_bits: Optional[int] = None):
    bound = maxphyaddr if limit_bits is None else min(maxphyaddr, limit_bits)
    if value >= 1 << bound:
        raise ScenarioError(f"{path}: {hx(value)} is not below 2^{bound}")


def _parse_guest(f: _Fields, maxphyaddr: int) -> GuestConfig:
    paging = f.string("paging", choices=("4level", "5level", "pae", "32bit", "sunway"))
    if f.has("tables"):
        return _parse_given_tables(f, paging, maxphyaddr)
    if f.has("cr3"):
        raise ScenarioError(f"{f.at('cr3')}: only with guest.tables (otherwise the tables "
                            f"are built from mappings)")
    table_base = f.hex("table_base", "0x100000")
    tsize = table_bytes(paging)
    if table_base % tsize:
        raise ScenarioError(f"{f.at('table_base')}: must be {tsize // 1024} KiB aligned")
    # 32-bit paging and PAE load CR3 as a 32-bit value (SDM 4.3, 4.4.1): the root table
    # must lie below 4 GiB.  (32-bit non-root tables are checked as they are allocated.)
    _check_phys(table_base, f.at("table_base"), maxphyaddr,
                32 if paging in ("pae", "32bit") else None)
    g = GuestConfig(
        paging=paging, table_base=table_base,
        cr0_wp=f.boolean("cr0_wp", True), efer_nxe=f.boolean("efer_nxe", True),
        cr4_pse=f.boolean("cr4_pse", True), cr4_smep=f.boolean("cr4_smep", False),
        cr4_smap=f.boolean("cr4_smap", False), mappings=[], overrides=[],
        address_spaces=f.integer("address_spaces", 1, 64, 1))

    for i, m in enumerate(f.array("mappings")):
        mf = _Fields(m, f"guest.mappings[{i}]",
                     {"gva", "gpa", "page", "pages", "writable", "user", "nx", "global"})
        gva, gpa = mf.hex("gva"), mf.hex("gpa")
        page = mf.string("page", "4K", choices=tuple(PAGE_SIZES))
        pages = mf.integer("pages", 1, 1048576, 1)
        if page not in GUEST_PAGES[paging]:
            raise ScenarioError(f"{mf.at('page')}: {page} pages do not exist in {paging} paging")
        if page == "4M" and not g.cr4_pse:
            raise ScenarioError(f"{mf.at('page')}: 4M pages need cr4_pse")
        size = PAGE_SIZES[page]
        if not gva_is_canonical(gva, paging):
            raise ScenarioError(f"{mf.at('gva')}: not a canonical {paging} address")
        if gva % size:
            raise ScenarioError(f"{mf.at('gva')}: not aligned to the {page} page size")
        if not gva_range_ok(gva, size * pages, paging):
            raise ScenarioError(f"{mf.at('pages')}: range wraps or leaves its canonical half")
        if gpa % size:
            raise ScenarioError(f"{mf.at('gpa')}: not aligned to the {page} page size")
        # What the entry format can encode: a 32-bit PTE holds address bits 31:12, a 4 MiB
        # PDE bits 39:13 (PSE-36, SDM 4.3); 64-bit formats hold up to maxphyaddr.
        limit = {"4K": 32, "4M": 40}.get(page) if paging == "32bit" else None
        _check_phys(gpa, mf.at("gpa"), maxphyaddr, limit)
        _check_phys(gpa + size * pages - 1, mf.at("pages"), maxphyaddr, limit)
        nx = mf.boolean("nx", False)
        if nx and paging != "sunway" and (paging == "32bit" or not g.efer_nxe):
            raise ScenarioError(f"{mf.at('nx')}: needs efer_nxe and a 64-bit entry format")
        g.mappings.append(GuestMapping(gva, gpa, size, pages, mf.boolean("writable", True),
                                       mf.boolean("user", True), nx,
                                       mf.boolean("global", False), mf.path))

    for i, o in enumerate(f.array("overrides", [])):
        of = _Fields(o, f"guest.overrides[{i}]", {"gva", "level", "set", "clear"})
        gva = of.hex("gva")
        if not gva_is_canonical(gva, paging):
            raise ScenarioError(f"{of.at('gva')}: not a canonical {paging} address")
        level = of.integer("level", 1, GUEST_TOP_LEVEL[paging])
        set_, clear = of.hex("set", "0x0"), of.hex("clear", "0x0")
        if set_ & clear:
            raise ScenarioError(f"{of.at('set')}: set and clear share bits")
        if paging == "32bit" and (set_ | clear) >> 32:
            raise ScenarioError(f"{of.at('set')}: 32bit entries have no bits above 31")
        g.overrides.append(GuestOverride(gva, level, set_, clear, of.path))
    return g


def table_bytes(paging: str) -> int:
    """A guest table's frame: 8 KiB of 1024 entries for Sunway, 4 KiB for x86."""
    return 8192 if paging == "sunway" else FRAME_SIZE


# Given tables (model.md 2, "Given tables"): 4 KiB frames in every x86 format, with
# 1024 4-byte entries (32-bit paging, SDM 4.3) or 512 8-byte entries (PAE, 4/5-level).
MAX_GIVEN_TABLES = 4096               # the schema's maxItems
MAX_GIVEN_ENTRIES = 1 << 20


def _parse_given_tables(f: _Fields, paging: str, maxphyaddr: int) -> GuestConfig:
    for key in ("mappings", "overrides", "table_base", "address_spaces"):
        if f.has(key):
            raise ScenarioError(f"{f.at(key)}: cannot be combined with guest.tables")
    g = GuestConfig(
        paging=paging, table_base=0,
        cr0_wp=f.boolean("cr0_wp", True), efer_nxe=f.boolean("efer_nxe", True),
        cr4_pse=f.boolean("cr4_pse", True), cr4_smep=f.boolean("cr4_smep", False),
        cr4_smap=f.boolean("cr4_smap", False), mappings=[], overrides=[], tables=[])
    entry_bytes = 4 if paging == "32bit" else 8
    tsize = table_bytes(paging)
    per_table = tsize // entry_bytes
    raw_tables = f.array("tables")
    if len(raw_tables) > MAX_GIVEN_TABLES:
        raise ScenarioError(f"{f.at('tables')}: at most {MAX_GIVEN_TABLES} tables")
    seen: dict = {}
    total = 0
    for i, t in enumerate(raw_tables):
        tf = _Fields(t, f"guest.tables[{i}]", {"gpa", "entries"})
        gpa = tf.hex("gpa")
        if gpa % tsize:
            raise ScenarioError(f"{tf.at('gpa')}: not aligned to a {tsize // 1024} KiB table frame")
        _check_phys(gpa + tsize - 1, tf.at("gpa"), maxphyaddr)
        if gpa in seen:
            raise ScenarioError(f"{tf.at('gpa')}: {hx(gpa)} is also guest.tables[{seen[gpa]}]")
        seen[gpa] = i
        raw = tf.raw("entries")
        if not isinstance(raw, dict):
            raise ScenarioError(f"{tf.at('entries')}: must be an object")
        entries: dict = {}
        for key, value in raw.items():
            path = f"{tf.at('entries')}.{key}"
            # A decimal index without leading zeros (schema: ^(0|[1-9][0-9]{0,3})$).
            decimal = key != "" and all(c in "0123456789" for c in key)
            if not decimal or (key[0] == "0" and key != "0") or int(key) >= per_table:
                raise ScenarioError(f"{path}: not an entry index 0..{per_table - 1}")
            v = parse_hex(value, path)
            if v >> (8 * entry_bytes):
                raise ScenarioError(f"{path}: {hx(v)} does not fit in a "
                                    f"{8 * entry_bytes}-bit entry")
            entries[int(key)] = v
        total += len(entries)
        g.tables.append(GivenTable(gpa, entries, tf.path))
    if total > MAX_GIVEN_ENTRIES:
        raise ScenarioError(f"{f.at('tables')}: more than {MAX_GIVEN_ENTRIES} entries in all")

    cr3 = f.hex("cr3")
    # CR3 holds the root table's address: a whole frame, except PAE, where CR3 bits
    # 31:5 locate the 32-byte PDPT (SDM 4.4.1); 32-bit and PAE CR3 is 32 bits.
    align = 32 if paging == "pae" else tsize
    if cr3 % align:
        raise ScenarioError(f"{f.at('cr3')}: not aligned to {align} bytes")
    if paging in ("pae", "32bit") and cr3 >> 32:
        raise ScenarioError(f"{f.at('cr3')}: {hx(cr3)} is above 4 GiB")
    if cr3 & ~(tsize - 1) not in seen:
        raise ScenarioError(f"{f.at('cr3')}: {hx(cr3)} is in none of guest.tables")
    g.cr3 = cr3
    return g


def _parse_nested(value, mode: str, maxphyaddr: int, guest: GuestConfig) -> NestedConfig:
    # Keys of the other nested format are rejected rather than ignored.
    common = {"levels", "table_base", "mappings", "overrides"}
    own = {"ad", "memory_type", "execute_only"} if mode == "ept" else {"host_nxe", "host_smep"}
    f = _Fields(value, "nested", common | own)
    levels = f.raw("levels", 4)
    if isinstance(levels, bool) or levels not in (4, 5):
        raise ScenarioError("nested.levels: must be 4 or 5")
    table_base = f.hex("table_base", "0x10000000")
    if table_base & 0xFFF:
        raise ScenarioError("nested.table_base: must be 4 KiB aligned")
    _check_phys(table_base, "nested.table_base", maxphyaddr)
    n = NestedConfig(levels=levels, table_base=table_base, ad=False, memory_type=6,
                     execute_only=True, host_nxe=True, host_smep=False, mappings=[],
                     overrides=[])
    if mode == "ept":
        n.ad = f.boolean("ad", False)
        mt = f.raw("memory_type", 6)
        if isinstance(mt, bool) or mt not in (0, 6):
            raise ScenarioError("nested.memory_type: must be 0 or 6")
        n.memory_type = mt
        n.execute_only = f.boolean("execute_only", True)
    else:
        n.host_nxe = f.boolean("host_nxe", True)
        n.host_smep = f.boolean("host_smep", False)
    # A 4-level nested walk translates gpa bits 47:0 only (SDM 29.3.2; 5-level EPT was
    # added for wider guest-physical addresses), so nested gpas stay below 2^48 there.
    gpa_bits = 48 if levels == 4 else 57

    keys = {"gpa", "hpa", "page", "pages", "perm"}
    keys |= {"memtype", "ipat"} if mode == "ept" else {"user"}
    for i, m in enumerate(f.array("mappings")):
        mf = _Fields(m, f"nested.mappings[{i}]", keys)
        gpa, hpa = mf.hex("gpa"), mf.hex("hpa")
        page = mf.string("page", "4K", choices=tuple(NESTED_PAGES))
        pages = mf.integer("pages", 1, 1048576, 1)
        size = PAGE_SIZES[page]
        for key, addr in (("gpa", gpa), ("hpa", hpa)):
            if addr % size:
                raise ScenarioError(f"{mf.at(key)}: not aligned to the {page} page size")
            limit = gpa_bits if key == "gpa" else None
            _check_phys(addr, mf.at(key), maxphyaddr, limit)
            _check_phys(addr + size * pages - 1, mf.at("pages"), maxphyaddr, limit)
        perm = mf.string("perm", "rwx")
        if not perm or any(c not in "rwx" for c in perm) or len(set(perm)) != len(perm):
            raise ScenarioError(f"{mf.at('perm')}: letters from r, w, x, each at most once")
        memtype, ipat, user = 6, False, True
        if mode == "ept":
            # 2, 3 and 7 are allowed: they build a misconfigured leaf on purpose (model.md 2)
            memtype = mf.integer("memtype", 0, 7, 6)
            ipat = mf.boolean("ipat", False)
        else:
            user = mf.boolean("user", True)
            if "r" not in perm:
                raise ScenarioError(f"{mf.at('perm')}: an NPT entry is always readable; need r")
            if "x" not in perm and not n.host_nxe:
                raise ScenarioError(f"{mf.at('perm')}: no-execute needs host_nxe")
        n.mappings.append(NestedMapping(gpa, hpa, size, pages, perm, memtype, ipat, user,
                                        mf.path))

    for i, o in enumerate(f.array("overrides", [])):
        of = _Fields(o, f"nested.overrides[{i}]", {"gpa", "guest_table", "level", "set",
                                                    "clear"})
        if of.has("gpa") == of.has("guest_table"):
            raise ScenarioError(f"{of.path}: exactly one of gpa and guest_table")
        gpa = table_gva = table_level = None
        if of.has("gpa"):
            gpa = of.hex("gpa")
            _check_phys(gpa, of.at("gpa"), maxphyaddr, gpa_bits)
        else:
            gt = _Fields(of.raw("guest_table"), of.at("guest_table"), {"gva", "level"})
            table_gva = gt.hex("gva")
            if not gva_is_canonical(table_gva, guest.paging):
                raise ScenarioError(f"{gt.at('gva')}: not a canonical {guest.paging} address")
            table_level = gt.integer("level", 1, GUEST_TOP_LEVEL[guest.paging])
        level = of.integer("level", 1, levels)
        set_, clear = of.hex("set", "0x0"), of.hex("clear", "0x0")
        if set_ & clear:
            raise ScenarioError(f"{of.at('set')}: set and clear share bits")
        n.overrides.append(NestedOverride(gpa, table_gva, table_level, level, set_, clear,
                                          of.path))
    return n


# ---------------------------------------------------------------------------------------
# 3. Building (model.md section 3)
# ---------------------------------------------------------------------------------------

class GuestFormat:
    """Geometry of one guest paging format: levels, entry size, index bits, leaves."""

    def __init__(self, paging: str, maxphyaddr: int, cr4_pse: bool):
        self.paging = paging
        self.top = GUEST_TOP_LEVEL[paging]
        self.entry_size = 4 if paging == "32bit" else 8
        self.maxphyaddr = maxphyaddr
        self.cr4_pse = cr4_pse
        self.wide = paging not in ("32bit", "sunway")   # 64-bit x86 entries: XD exists
        self.sunway = paging == "sunway"

    def index(self, gva: int, level: int) -> int:
        if self.sunway:                     # 13 + 10 + 10 + 10 + 10
            return (gva >> (13 + 10 * (level - 1))) & 0x3FF
        if self.paging == "32bit":          # 10 + 10 + 12 (SDM 4.3)
            return (gva >> (12 + 10 * (level - 1))) & 0x3FF
        if self.paging == "pae" and level == 3:
            return (gva >> 30) & 3          # PDPTE: bits 31:30 (SDM 4.4.1)
        return (gva >> (12 + 9 * (level - 1))) & 0x1FF

    def page_size(self, level: int) -> int:
        if self.sunway:
            return 8192
        if self.paging == "32bit":
            return 1 << (12 + 10 * (level - 1))
        return 1 << (12 + 9 * (level - 1))

    def is_leaf(self, entry: int, level: int) -> bool:
        """PS (bit 7) maps a page at level 2 (all formats; 32-bit only with CR4.PSE)
        or 3 (4/5-level).  Level 1 is always a leaf.  Bit 7 at 4/5 is reserved."""
        if level == 1:
            return True
        if self.sunway or not entry & PS:
            return False
        if self.paging == "32bit":
            return level == 2 and self.cr4_pse
        if self.paging == "pae":
            return level == 2
        return level in (2, 3)

    def next_table(self, entry: int) -> int:
        if self.sunway:
            return (entry >> 28) << 13
        if self.paging == "32bit":
            return entry & 0xFFFFF000
        return entry & bits(self.maxphyaddr - 1, 12)

    def page_frame(self, entry: int, level: int) -> int:
        if self.sunway:
            return (entry >> 28) << 13
        size = self.page_size(level)
        if self.paging == "32bit" and level == 2:
            # PSE-36: bits 31:22 in place, bits 39:32 in entry bits 20:13 (SDM 4.3).
            return (entry & 0xFFC00000) | (((entry >> 13) & 0xFF) << 32)
        if self.paging == "32bit":
            return entry & 0xFFFFF000
        return entry & bits(self.maxphyaddr - 1, 12) & ~(size - 1)

    def leaf_entry(self, m: GuestMapping, gpa: int, level: int) -> int:
        if self.sunway:
            e = SW_V | SW_KRE | (SW_URE if m.user else 0)
            e |= (SW_KWE | (SW_UWE if m.user else 0)) if m.writable else 0
            e |= (SW_ASM if m.global_ else 0) | (SW_FOE if m.nx else 0)
            return e | ((gpa >> 13) << 28)
        e = P | (RW if m.writable else 0) | (US if m.user else 0)
        e |= (PS if level > 1 else 0) | (GLB if m.global_ else 0) | (XD if m.nx else 0)
        if self.paging == "32bit" and level == 2:
            return e | (gpa & 0xFFC00000) | (((gpa >> 32) & 0xFF) << 13)
        return e | gpa


class Allocator:
    """A bump allocator of table frames: base + k*4096 (model.md 3)."""

    def __init__(self, base: int, limit_bits: int, path: str, step: int = FRAME_SIZE):
        self.base, self.count, self.limit_bits, self.path = base, 0, limit_bits, path
        self.step = step

    def next(self) -> int:
        frame = self.base + self.count * self.step
        if frame >= 1 << self.limit_bits:
            raise ScenarioError(f"{self.path}: table frames run past 2^{self.limit_bits}")
        self.count += 1
        return frame


@dataclass
class Machine:
    """The built system: memory plus the registers the walks start from."""
    sc: Scenario
    mem: Memory = field(default_factory=Memory)
    fmt: GuestFormat = None
    cr3: int = 0                      # guest root (PAE: the PDPT address)
    nested_root: int = 0
    nested_frames: set = field(default_factory=set)     # hpas of nested tables
    guest_table_hpas: set = field(default_factory=set)
    guest_tables: list = field(default_factory=list)    # gpas of guest tables, in order
    pdptes: list = field(default_factory=list)          # PAE PDPTE registers
    pdpte_hpas: list = field(default_factory=list)      # where they were loaded from
    guest_alloc: Allocator = None
    nested_alloc: Allocator = None
    cr3s: list = field(default_factory=list)            # one CR3 per address space
    asid: int = 0                                       # the active address space
    # shadow paging: roots per address space, the shadow frame allocator, the guest
    # page-table frames (gfns) the VMM write-protected, and the counters of model.md 5
    sroots: list = field(default_factory=list)
    shadow_alloc: Allocator = None
    wp: set = field(default_factory=set)
    pv_cache: list = field(default_factory=list)
    counters: dict = field(default_factory=dict)
    # agile paging: the VMM's subtrees (nested or on their way) and its policy clock
    subtrees: list = field(default_factory=list)
    clock: int = 0
    to_nested: int = 0
    to_shadow: int = 0

    @property
    def nested(self) -> Optional[NestedConfig]:
        return self.sc.nested

    @property
    def ept(self) -> bool:
        return self.sc.mode in ("ept", "agile")

    @property
    def flat(self) -> Optional[FlatConfig]:
        return self.sc.flat

    @property
    def two_d(self) -> bool:
        """Guest tables in guest-physical memory, translated per access (ept, npt, flat)."""
        return self.sc.nested is not None or self.sc.flat is not None


def nested_index(gpa: int, level: int) -> int:
    return (gpa >> (12 + 9 * (level - 1))) & 0x1FF


def nested_present(m: Machine, entry: int) -> bool:
    # EPT: present if any of R/W/X is set (SDM 29.3.2); NPT: the P bit (APM 15.25.5).
    return bool(entry & EPT_RWX) if m.ept else bool(entry & P)


def nested_is_leaf(entry: int, level: int) -> bool:
    return level == 1 or (level in (2, 3) and bool(entry & PS))


def build(sc: Scenario) -> Machine:
    """Steps 1-5 of model.md section 3, in that order."""
    m = Machine(sc)
    m.fmt = GuestFormat(sc.guest.paging, sc.maxphyaddr, sc.guest.cr4_pse)
    if sc.nested:
        build_nested_tables(m)
    if sc.flat:
        build_flat_table(m)
    if sc.guest.tables is not None:
        place_given_tables(m)           # replaces steps 2 and 3
    else:
        build_guest_tables(m)
        apply_guest_overrides(m)
    if not m.cr3s:
        m.cr3s = [m.cr3]
    if sc.guest.paging == "pae":
        load_pdptes(m)
    if sc.nested:
        apply_nested_overrides(m)
    if sc.shadow:
        # one shadow root per address space, allocated first (model.md 1)
        m.shadow_alloc = Allocator(sc.shadow.table_base, sc.maxphyaddr, "shadow.table_base")
        m.counters = {"hidden_page_faults": 0, "pt_write_exits": 0, "cr3_write_exits": 0,
                      "reflected_page_faults": 0, "shadow_pages": 0,
                      "write_protected_pages": 0}
        m.sroots = [new_shadow_table(m) for _ in m.cr3s]
    if sc.agile:
        # as shadow mode: a shadow root per address space, after everything else
        m.shadow_alloc = Allocator(sc.agile.table_base, sc.maxphyaddr, "agile.table_base")
        m.counters = {"hidden_page_faults": 0, "pt_write_exits": 0, "cr3_write_exits": 0,
                      "reflected_page_faults": 0, "shadow_pages": 0,
                      "write_protected_pages": 0}
        m.sroots = [new_shadow_table(m) for _ in m.cr3s]
        m.subtrees = [Subtree(subtree_base(m, gva, level), level, nested=True)
                      for gva, level in sc.agile.subtrees]
    return m


def new_shadow_table(m: Machine) -> int:
    frame = m.shadow_alloc.next()
    m.mem.frames.setdefault(frame >> 12, bytearray(FRAME_SIZE))
    m.counters["shadow_pages"] += 1
    return frame


def build_nested_tables(m: Machine) -> None:
    """Step 1: nested root, then each mapping page by page."""
    n = m.nested
    m.nested_alloc = Allocator(n.table_base, m.sc.maxphyaddr, "nested.table_base")
    m.nested_root = new_nested_table(m)
    for mp in n.mappings:
        leaf_level = {1 << 12: 1, 1 << 21: 2, 1 << 30: 3}[mp.size]
        for k in range(mp.pages):
            gpa, hpa = mp.gpa + k * mp.size, mp.hpa + k * mp.size
            table = m.nested_root
            for level in range(n.levels, leaf_level, -1):
                addr = table + nested_index(gpa, level) * 8
                entry = m.mem.read(addr, 8)
                if entry == 0:
                    table = new_nested_table(m)
                    # Non-leaf entries grant everything; the leaf decides (EPT: R|W|X,
                    # NPT: P|RW|US).
                    m.mem.write(addr, 8, 0x7 | table)
                elif nested_is_leaf(entry, level):
                    raise ScenarioError(f"{mp.path}: overlaps an earlier nested mapping")
                else:
                    table = entry & bits(m.sc.maxphyaddr - 1, 12)
            addr = table + nested_index(gpa, leaf_level) * 8
            if m.mem.read(addr, 8) != 0:
                raise ScenarioError(f"{mp.path}: overlaps an earlier nested mapping")
            m.mem.write(addr, 8, nested_leaf_entry(m, mp, hpa, leaf_level))


def slot_lookup(slots: list, gpa: int, frame: int) -> Optional[int]:
    """The VMM's memory slots: gpa -> hpa, None outside every slot."""
    for sl in slots:
        if sl.gpa <= gpa < sl.gpa + sl.pages * frame:
            return sl.hpa + (gpa - sl.gpa)
    return None


def build_flat_table(m: Machine) -> None:
    """Mode flat: the table starts empty (zero: every entry invalid); with prefill every
    slot frame inside guest_ram is entered now (model.md 1)."""
    fl = m.flat
    m.mem.frames.setdefault(fl.table_base >> 12, bytearray(FRAME_SIZE))
    if not fl.prefill:
        return
    for sl in fl.mappings:
        for k in range(sl.pages):
            gpa = sl.gpa + k * fl.frame
            if gpa < fl.guest_ram:
                m.mem.write(fl.table_base + 8 * (gpa // fl.frame), 8,
                            (sl.hpa + k * fl.frame) | 1)


def new_nested_table(m: Machine) -> int:
    frame = m.nested_alloc.next()
    m.nested_frames.add(frame)
    return frame


def nested_leaf_entry(m: Machine, mp: NestedMapping, hpa: int, level: int) -> int:
    large = PS if level > 1 else 0
    if m.ept:
        e = (EPT_R if "r" in mp.perm else 0) | (EPT_W if "w" in mp.perm else 0)
        e |= (EPT_X if "x" in mp.perm else 0)
        return e | (mp.memtype << 3) | (0x40 if mp.ipat else 0) | large | hpa
    e = P | (RW if "w" in mp.perm else 0) | (US if mp.user else 0) | large
    return e | (0 if "x" in mp.perm else XD) | hpa


# Build-time descents (building, override targets, placing guest tables) take entry
# bits 51:12 as the next table whatever MAXPHYADDR is (model.md 6, "Building"); only
# the walks of section 4 check reserved bits.
BUILD_TABLE_BITS = bits(51, 12)


def nested_lookup(m: Machine, gpa: int) -> Optional[int]:
    """gpa -> hpa through the nested tables with no permission checks and no A/D
    (used while building); None when no present leaf maps it."""
    table = m.nested_root
    for level in range(m.nested.levels, 0, -1):
        entry = m.mem.read(table + nested_index(gpa, level) * 8, 8)
        if not nested_present(m, entry):
            return None
        if nested_is_leaf(entry, level):
            size = 1 << (12 + 9 * (level - 1))
            frame = entry & bits(m.sc.maxphyaddr - 1, 12) & ~(size - 1)
            return frame | (gpa & (size - 1))
        table = entry & BUILD_TABLE_BITS
    return None  # not reached: level 1 is always a leaf


def guest_phys(m: Machine, gpa: int, path: str) -> int:
    """Where a guest table byte lives in host memory (identity in native)."""
    if m.sc.shadow:
        hpa = slot_lookup(m.sc.shadow.mappings, gpa, FRAME_SIZE)
        if hpa is None:
            raise ScenarioError(f"{path}: guest table gpa {hx(gpa)} is in no memory slot")
        return hpa
    if m.flat:
        hpa = slot_lookup(m.flat.mappings, gpa, m.flat.frame)
        if hpa is None:
            raise ScenarioError(f"{path}: guest table gpa {hx(gpa)} is in no memory slot")
        return hpa
    if not m.nested:
        return gpa
    hpa = nested_lookup(m, gpa)
    if hpa is None:
        raise ScenarioError(f"{path}: guest table gpa {hx(gpa)} is not mapped by a nested leaf")
    return hpa


def guest_read(m: Machine, gpa: int, path: str) -> int:
    return m.mem.read(guest_phys(m, gpa, path), m.fmt.entry_size)


def guest_write(m: Machine, gpa: int, value: int, path: str) -> None:
    m.mem.write(guest_phys(m, gpa, path), m.fmt.entry_size, value)


def claim_guest_table_frame(m: Machine, gpa: int, path: str) -> int:
    """A guest table frame at gpa; in ept/npt it must be backed by its own host frame.
    Returns its hpa."""
    hpa = guest_phys(m, gpa, path)
    if m.sc.shadow:
        if hpa in m.guest_table_hpas:
            raise ScenarioError(f"{path}: guest table {hx(gpa)} shares host frame {hx(hpa)}")
        m.guest_table_hpas.add(hpa)
    if m.flat:
        fl = m.flat
        if fl.table_base <= hpa < fl.table_base + fl.guest_ram // fl.frame * 8:
            raise ScenarioError(f"{path}: guest table {hx(gpa)} sits on the flat table")
        if hpa in m.guest_table_hpas:
            raise ScenarioError(f"{path}: guest table {hx(gpa)} shares host frame {hx(hpa)}")
        m.guest_table_hpas.add(hpa)
    if m.nested:
        if hpa in m.nested_frames:
            raise ScenarioError(f"{path}: guest table {hx(gpa)} sits on nested table {hx(hpa)}")
        if hpa in m.guest_table_hpas:
            raise ScenarioError(f"{path}: guest table {hx(gpa)} shares host frame {hx(hpa)}")
        m.guest_table_hpas.add(hpa)
    m.guest_tables.append(gpa)
    return hpa


def new_guest_table(m: Machine, path: str) -> int:
    """Allocate a guest table frame from the guest allocator."""
    gpa = m.guest_alloc.next()
    claim_guest_table_frame(m, gpa, path)
    return gpa


def place_given_tables(m: Machine) -> None:
    """guest.tables: each table, in order, at its own frame (through the nested tables in
    ept/npt, with the same errors as an allocated table), holding its entries and zero
    elsewhere; CR3 = guest.cr3.  Nothing is checked about what the entries say."""
    size = m.fmt.entry_size
    for t in m.sc.guest.tables:
        hpa = claim_guest_table_frame(m, t.gpa, t.path)
        m.mem.frames.setdefault(hpa >> 12, bytearray(FRAME_SIZE))
        for index, value in t.entries.items():
            m.mem.write(hpa + index * size, size, value)
    m.cr3 = m.sc.guest.cr3


def build_guest_tables(m: Machine) -> None:
    """Step 2: guest root = CR3, then each mapping page by page."""
    g, fmt = m.sc.guest, m.fmt
    # 32-bit non-leaf PDEs hold only address bits 31:12 (SDM 4.3).
    limit = 32 if g.paging == "32bit" else m.sc.maxphyaddr
    m.guest_alloc = Allocator(g.table_base, limit, "guest.table_base",
                              table_bytes(g.paging))
    for space in range(g.address_spaces):
        m.cr3 = new_guest_table(m, "guest.table_base")
        m.cr3s.append(m.cr3)
        build_mappings(m)
    m.cr3 = m.cr3s[0]


def build_mappings(m: Machine) -> None:
    """The mappings into the address space whose root is m.cr3 (model.md 3 step 2)."""
    g, fmt = m.sc.guest, m.fmt
    for mp in g.mappings:
        leaf_level = GUEST_PAGES[g.paging][_size_name(mp.size)]
        for k in range(mp.pages):
            gva, gpa = mp.gva + k * mp.size, mp.gpa + k * mp.size
            table = m.cr3
            for level in range(fmt.top, leaf_level, -1):
                addr = table + fmt.index(gva, level) * fmt.entry_size
                entry = guest_read(m, addr, mp.path)
                if entry == 0:
                    table = new_guest_table(m, mp.path)
                    # A PAE PDPTE has only P (bits 2:1 are reserved there, SDM 4.4.1);
                    # a Sunway pointer is V and the frame number at 63:28.
                    if fmt.sunway:
                        guest_write(m, addr, SW_V | ((table >> 13) << 28), mp.path)
                    else:
                        flags = P if (g.paging == "pae" and level == 3) else (P | RW | US)
                        guest_write(m, addr, flags | table, mp.path)
                elif fmt.is_leaf(entry, level):
                    raise ScenarioError(f"{mp.path}: overlaps an earlier guest mapping")
                else:
                    table = fmt.next_table(entry)
            addr = table + fmt.index(gva, leaf_level) * fmt.entry_size
            if guest_read(m, addr, mp.path) != 0:
                raise ScenarioError(f"{mp.path}: overlaps an earlier guest mapping")
            guest_write(m, addr, fmt.leaf_entry(mp, gpa, leaf_level), mp.path)


def _size_name(size: int) -> str:
    return next(k for k, v in PAGE_SIZES.items() if v == size)


def guest_entry_gpa(m: Machine, gva: int, level: int, path: str) -> tuple[int, int]:
    """Descend the guest tables from CR3 along gva to `level` (build-time, from memory).
    Returns (entry gpa, table gpa).  The path above must be present and not end in a
    larger page (model.md 2, "an override must reach its level")."""
    fmt = m.fmt
    table = m.cr3
    for lvl in range(fmt.top, level, -1):
        entry = guest_read(m, table + fmt.index(gva, lvl) * fmt.entry_size, path)
        if not entry & P:
            raise ScenarioError(f"{path}: level {lvl} entry on the way is not present")
        if fmt.is_leaf(entry, lvl):
            raise ScenarioError(f"{path}: level {lvl} entry on the way maps a page")
        # a 32-bit entry: bits 31:12; Sunway: the frame number at 63:28
        table = fmt.next_table(entry) if fmt.sunway else entry & BUILD_TABLE_BITS
    return table + fmt.index(gva, level) * fmt.entry_size, table


def apply_guest_overrides(m: Machine) -> None:
    """Step 3: entry = (entry & ~clear) | set, in order."""
    for o in m.sc.guest.overrides:
        addr, _ = guest_entry_gpa(m, o.gva, o.level, o.path)
        entry = guest_read(m, addr, o.path)
        guest_write(m, addr, (entry & ~o.clear) | o.set, o.path)


def load_pdptes(m: Machine) -> None:
    """Step 4: PAE `mov cr3` loads the four PDPTEs into registers (SDM 4.4.1); a present
    one with reserved bits set would #GP, so it is a scenario error here."""
    reserved = bits(2, 1) | bits(8, 5) | bits(63, m.sc.maxphyaddr)
    given = m.sc.guest.tables is not None
    for i in range(4):
        gpa = m.cr3 + 8 * i
        hpa = guest_phys(m, gpa, "guest.cr3" if given else "guest.table_base")
        entry = m.mem.read(hpa, 8)
        # AMD nested paging (mode npt) has no PDPTE registers: the walk reads the PDPTE
        # and a reserved bit is a #PF then (APM vol. 2, 15.25.10), not a #GP here.
        if entry & P and entry & reserved and m.sc.mode != "npt":
            raise ScenarioError(f"{'guest.tables' if given else 'guest.overrides'}: PDPTE {i} "
                                f"at {hx(gpa)} has reserved bits set "
                                f"({hx(entry)}); mov cr3 would raise #GP")
        m.pdptes.append(entry)
        m.pdpte_hpas.append(hpa)


def nested_entry_hpa(m: Machine, gpa: int, level: int, path: str) -> int:
    """Descend the nested tables along gpa to `level`; the path above must be present
    and not end in a larger page."""
    table = m.nested_root
    for lvl in range(m.nested.levels, level, -1):
        entry = m.mem.read(table + nested_index(gpa, lvl) * 8, 8)
        if not nested_present(m, entry):
            raise ScenarioError(f"{path}: nested level {lvl} entry on the way is not present")
        if nested_is_leaf(entry, lvl):
            raise ScenarioError(f"{path}: nested level {lvl} entry on the way maps a page")
        table = entry & BUILD_TABLE_BITS
    return table + nested_index(gpa, level) * 8


def nested_override_target(m: Machine, o: NestedOverride) -> int:
    """The gpa whose nested translation an override edits."""
    if o.gpa is not None:
        return o.gpa
    if o.table_level == m.fmt.top:
        table = m.cr3 & ~0xFFF      # CR3's frame
    else:
        # The table holding the level-L entry is what the level-(L+1) entry points to.
        _, table = guest_entry_gpa(m, o.table_gva, o.table_level, o.path)
    # model.md 6: every table down to the target, the target included, must be mapped
    # by the nested tables (those above were read by the descent).
    guest_phys(m, table, o.path)
    return table


def apply_nested_overrides(m: Machine) -> None:
    """Step 5."""
    for o in m.nested.overrides:
        addr = nested_entry_hpa(m, nested_override_target(m, o), o.level, o.path)
        entry = m.mem.read(addr, 8)
        m.mem.write(addr, 8, (entry & ~o.clear) | o.set)


def eptp(m: Machine) -> int:
    """EPTP (SDM 24.6.11): memory type 2:0, page-walk length - 1 in 5:3, A/D enable 6."""
    n = m.nested
    return m.nested_root | ((n.levels - 1) << 3) | (int(n.ad) << 6) | n.memory_type


# ---------------------------------------------------------------------------------------
# 4./5. Translating one access (model.md section 4)
# ---------------------------------------------------------------------------------------

class Fault(Exception):
    """Ends an access: outcome is the result's "outcome", info the "fault" object."""

    def __init__(self, outcome: str, info: dict):
        super().__init__(outcome)
        self.outcome, self.info = outcome, info


@dataclass
class NestedTranslation:
    """A successful nested walk: where the gpa lives and what the walk allows."""
    hpa: int
    leaf_level: int
    page_size: int
    rwx: int          # EPT: AND of R/W/X over the entries walked (0 under NPT)
    writable: bool    # would a write through this translation be allowed?


class Trace:
    """The steps of one access and their counters."""

    def __init__(self) -> None:
        self.steps: list[dict] = []
        self.guest_refs = self.nested_refs = self.ad_writes = 0
        self.exits = 0                    # VM exits besides the one a fault ends with

    def step(self, kind, dim, level, stage, gpa, table, index, entry_hpa, entry, flags,
             result="") -> dict:
        ref = None
        if kind == "read":
            if dim == "guest":
                self.guest_refs += 1
            else:
                self.nested_refs += 1
            ref = self.guest_refs + self.nested_refs
        elif kind == "ad_write":
            self.ad_writes += 1
        s = {"n": len(self.steps) + 1, "ref": ref, "kind": kind, "dim": dim,
             "level": level, "stage": stage, "gpa": None if gpa is None else hx(gpa),
             "table": hx(table), "index": index, "entry_hpa": hx(entry_hpa),
             "entry": hx(entry), "flags": flags, "ad_set": "", "result": result,
             "cache": None}                        # no caches in this reference
        self.steps.append(s)
        return s


# --- flags --------------------------------------------------------------------------

def x86_flags(entry: int, level: int, wide: bool) -> list:
    """Names of the set bits of a guest or NPT entry (model.md 5, "Flags")."""
    names = [(0, "P"), (1, "RW"), (2, "US"), (3, "PWT"), (4, "PCD"), (5, "A"), (6, "D"),
             (7, "PAT" if level == 1 else "PS"), (8, "G")]
    if wide:
        names.append((63, "XD"))
    return [n for b, n in names if entry >> b & 1]


def ept_flags(entry: int, level: int) -> list:
    out = [n for b, n in ((0, "R"), (1, "W"), (2, "X")) if entry >> b & 1]
    if level == 1 or entry & PS:
        out.append(f"MT={(entry >> 3) & 7}")
        if entry & 0x40:
            out.append("IPAT")
    if level >= 2 and entry & PS:
        out.append("PS")
    out += [n for b, n in ((8, "A"), (9, "D"), (10, "UX"), (63, "SVE")) if entry >> b & 1]
    return out


def pdpte_flags(entry: int) -> list:
    return [n for b, n in ((0, "P"), (3, "PWT"), (4, "PCD")) if entry >> b & 1]


# --- 4.1 the nested walk ------------------------------------------------------------

def ept_misconfig(m: Machine, entry: int, level: int) -> Optional[str]:
    """EPT misconfiguration checks, in the model's order (SDM 29.3.3.1)."""
    n = m.nested
    if entry & EPT_W and not entry & EPT_R:
        return "write_without_read"
    if entry & EPT_RWX == EPT_X and not n.execute_only:
        return "execute_only_unsupported"
    leaf = nested_is_leaf(entry, level)
    reserved = bits(51, m.sc.maxphyaddr)
    if level >= 4:
        reserved |= bits(7, 3)
    elif not leaf:
        reserved |= bits(6, 3)            # non-leaf levels 3 and 2
    elif level == 3:
        reserved |= bits(29, 12)          # 1 GiB leaf
    elif level == 2:
        reserved |= bits(20, 12)          # 2 MiB leaf
    if entry & reserved:
        return "reserved_bits"
    if leaf and (entry >> 3) & 7 in (2, 3, 7):
        return "memory_type"
    return None


def npt_reserved(m: Machine, entry: int, level: int) -> bool:
    """NPT entries are long-mode entries; reserved bits per APM 5.3.3 / 15.25.5."""
    reserved = bits(51, m.sc.maxphyaddr)
    if not m.nested.host_nxe:
        reserved |= XD
    if level >= 4:
        reserved |= bits(8, 7)            # APM 5.3.3: PML4E/PML5E bits 8:7 must be zero
    elif nested_is_leaf(entry, level) and level == 3:
        reserved |= bits(29, 13)
    elif nested_is_leaf(entry, level) and level == 2:
        reserved |= bits(20, 13)
    return bool(entry & reserved)


def nested_walk(m: Machine, t: Trace, gpa: int, kind: str, stage: int, gva: int,
                final_op: Optional[str]) -> NestedTranslation:
    """Walk the nested tables for one gpa (model.md 4.1).  kind is read/write/fetch;
    final_op is the access's op for the final gpa (stage 0) and None for a guest
    paging-structure access."""
    n = m.nested
    table = m.nested_root
    walked = []                  # (step, entry_hpa, entry)
    for level in range(n.levels, 0, -1):
        index = nested_index(gpa, level)
        addr = table + index * 8
        entry = m.mem.read(addr, 8)
        flags = ept_flags(entry, level) if m.ept else x86_flags(entry, level, True)
        s = t.step("read", "nested", level, stage, gpa, table, index, addr, entry, flags)
        walked.append((s, addr, entry))
        if not nested_present(m, entry):
            s["result"] = "not_present"
            raise nested_fault(m, walked, "not_present", level, stage, gpa, gva, kind,
                               final_op)
        if m.ept:
            detail = ept_misconfig(m, entry, level)
            if detail:
                s["result"] = "misconfig"
                raise Fault("ept_misconfig", {
                    "dim": "nested", "level": level, "stage": stage, "reason": "misconfig",
                    "detail": detail, "exit_reason": 49,
                    "guest_physical_address": hx(gpa)})
        elif npt_reserved(m, entry, level):
            s["result"] = "reserved"
            raise nested_fault(m, walked, "reserved", level, stage, gpa, gva, kind, final_op)
        if not nested_is_leaf(entry, level):
            s["result"] = "table"
            table = entry & bits(m.sc.maxphyaddr - 1, 12)
            continue
        s["result"] = "page"
        if not nested_permits(m, [e for _, _, e in walked], kind):
            raise nested_fault(m, walked, "permission", level, stage, gpa, gva, kind,
                               final_op)
        set_nested_ad(m, walked, kind)
        size = 1 << (12 + 9 * (level - 1))
        frame = entry & bits(m.sc.maxphyaddr - 1, 12) & ~(size - 1)
        entries = [e for _, _, e in walked]
        return NestedTranslation(frame | (gpa & (size - 1)), level, size,
                                 ept_rwx(entries) if m.ept else 0,
                                 nested_permits(m, entries, "write"))
    raise AssertionError("level 1 is always a leaf")


def flat_walk(m: Machine, t: "Trace", gpa: int, stage: int) -> NestedTranslation:
    """Mode flat (model.md 1): one reference per gpa, entry = host frame | 1 (valid). An
    invalid entry is a miss: one exit to the VMM, which finds the frame in its memory
    slots, writes the entry (a vmm_fill step) and re-enters; the read is repeated. A gpa
    in no slot is a flat_fault after that exit; a gpa at or beyond guest_ram has no entry
    in the table at all: the miss exits without a read (the table ends there)."""
    fl = m.flat
    gfn = gpa // fl.frame
    addr = fl.table_base + 8 * gfn

    def unmapped() -> Fault:
        return Fault("flat_fault", {"dim": "nested", "level": 1, "stage": stage,
                                    "reason": "unmapped", "guest_physical_address": hx(gpa)})

    if gpa >= fl.guest_ram:
        t.exits += 1
        raise unmapped()
    for attempt in (0, 1):
        entry = m.mem.read(addr, 8)
        s = t.step("read", "nested", 1, stage, gpa, fl.table_base, gfn, addr, entry,
                   ["V"] if entry & 1 else [])
        if entry & 1:
            s["result"] = "page"
            frame = entry & bits(51, 12) & ~(fl.frame - 1)
            return NestedTranslation(frame | (gpa % fl.frame), 1, fl.frame, EPT_RWX, True)
        s["result"] = "not_present"
        t.exits += 1
        hpa = slot_lookup(fl.mappings, gpa, fl.frame)
        if hpa is None or attempt:
            raise unmapped()
        fill = t.step("vmm_fill", "nested", 1, stage, gpa, fl.table_base, gfn, addr, entry,
                      ["V"] if entry & 1 else [])
        fill["result"] = "written"
        m.mem.write(addr, 8, (hpa & ~(fl.frame - 1)) | 1)
    raise AssertionError("the second read finds the entry just written")


def ept_rwx(entries: list) -> int:
    """AND of the R/W/X bits over EPT entries: the access rights of the translation."""
    acc = EPT_RWX
    for e in entries:
        acc &= e
    return acc & EPT_RWX


def nested_permits(m: Machine, entries: list, kind: str) -> bool:
    """Permission check at the leaf, combined over every entry walked."""
    if m.ept:
        need = {"read": EPT_R, "write": EPT_W, "fetch": EPT_X}[kind]
        return bool(ept_rwx(entries) & need)
    # NPT: every access is a user access (APM 15.25.5), so US is needed everywhere;
    # RW is ANDed for writes; NX is ORed for fetches when the host has EFER.NXE.
    if not all(e & US for e in entries):
        return False
    if kind == "write":
        return all(e & RW for e in entries)
    if kind == "fetch":
        return not (m.nested.host_nxe and any(e & XD for e in entries))
    return True


def set_nested_ad(m: Machine, walked: list, kind: str) -> None:
    """After a successful walk: A in every entry lacking it, D in the leaf for a write
    (EPT only with EPTP A/D enabled, SDM 29.3.5; NPT always, APM 15.25.5)."""
    if m.ept and not m.nested.ad:
        return
    a_bit, d_bit = (EPT_A, EPT_D) if m.ept else (ACC, DIRTY)
    for i, (s, addr, _) in enumerate(walked):
        current = m.mem.read(addr, 8)
        new = current | a_bit
        if i == len(walked) - 1 and kind == "write":
            new |= d_bit
        if new != current:
            m.mem.write(addr, 8, new)
            s["ad_set"] = ("A" if (new ^ current) & a_bit else "") + \
                          ("D" if (new ^ current) & d_bit else "")


def npt_table_accessed(m: Machine, walked: list) -> None:
    """NPT walk that faults (model.md 4.1): A in each entry above the last one read, for
    the table it points to was read (APM vol. 2, 5.4.1: A is set "the first time the
    table or physical page is either read from or written to")."""
    for s, addr, _ in walked:
        current = m.mem.read(addr, 8)
        if not current & ACC:
            m.mem.write(addr, 8, current | ACC)
            s["ad_set"] = "A"


def nested_fault(m: Machine, walked: list, reason: str, level: int, stage: int, gpa: int,
                 gva: int, kind: str, final_op: Optional[str]) -> Fault:
    """An EPT violation or an NPT #NPF (model.md 4.3)."""
    if not m.ept:
        npt_table_accessed(m, walked[:-1])
    entries = [e for _, _, e in walked]
    if m.ept:
        # Bits 5:3: AND of R/W/X over every entry walked, the failing one included
        # (SDM 28.2.1, Table 28-7); a not-present entry contributes 0.
        return ept_violation(reason, level, stage, gpa, gva, kind, final_op,
                             ept_rwx(entries))
    info1 = 0
    if reason != "not_present":
        info1 |= 1 << 0                   # P: the entry was present
    if kind == "write":
        info1 |= 1 << 1                   # W: final write or any guest-table access
    info1 |= 1 << 2                       # U: nested accesses are user accesses
    if reason == "reserved":
        info1 |= 1 << 3
    if final_op == "fetch" and (m.nested.host_nxe or m.nested.host_smep):
        info1 |= 1 << 4                   # I/D
    info1 |= 1 << 32 if final_op is not None else 1 << 33
    return npt_fault(reason, level, stage, info1, gpa)


def ept_violation(reason: str, level: int, stage: int, gpa: int, gva: int, kind: str,
                  final_op: Optional[str], combined: int) -> Fault:
    """Exit qualification of an EPT violation (SDM 28.2.1, Table 28-7)."""
    q = 0
    if final_op is None:
        q |= 1                            # guest paging-structure access: a read ...
        if kind == "write":
            q |= 2                        # ... treated as a write with EPT A/D (29.3.3.2)
    else:
        q |= {"read": 1, "write": 2, "fetch": 4}[final_op]
    q |= combined << 3
    q |= 1 << 7                           # guest linear address valid
    if final_op is not None:
        q |= 1 << 8                       # translation of the final linear address
    return Fault("ept_violation", {
        "dim": "nested", "level": level, "stage": stage, "reason": reason,
        "exit_reason": 48, "qualification": hx(q), "guest_physical_address": hx(gpa),
        "guest_linear_address": hx(gva)})


def npt_fault(reason: str, level: int, stage: int, info1: int, gpa: int) -> Fault:
    return Fault("npt_fault", {
        "dim": "nested", "level": level, "stage": stage, "reason": reason,
        "exit_code": "0x400", "exitinfo1": hx(info1), "exitinfo2": hx(gpa)})


# --- 4.2 the guest walk -------------------------------------------------------------

def guest_reserved(m: Machine, entry: int, level: int, leaf: bool) -> bool:
    """Reserved bits of a present guest entry (SDM 4.3 Fig. 4-4, 4.4.2 Table 4-8..,
    4.5 Tables 4-15..4-19), as the model lists them."""
    g, M = m.sc.guest, m.sc.maxphyaddr
    if g.paging == "sunway":
        # bits 7:5, 11:10, 27:14 and a frame number beyond MAXPHYADDR (model.md 1)
        if entry & (bits(7, 5) | bits(11, 10) | bits(27, 14)):
            return True
        return ((entry >> 28) << 13) >= 1 << M
    if g.paging == "32bit":
        if leaf and level == 2:
            # PSE-36: bits 20:13 carry address bits 39:32; those above MAXPHYADDR
            # (capped at 40) and bit 21 are reserved.
            return bool(entry & ((1 << 21) | bits(20, 13 + min(M, 40) - 32)))
        return False
    if g.paging == "pae":
        reserved = bits(62, M)
    else:
        reserved = bits(51, M)
        if level >= 4:
            reserved |= PS
            if m.sc.mode == "npt":
                # AMD: PML4E/PML5E bits 8:7 are MBZ (APM vol. 2, 5.3.3; KVM's
                # nonleaf_bit8_rsvd for AMD guests); Intel ignores bit 8
                reserved |= GLB
    if not g.efer_nxe:
        reserved |= XD
    if leaf and level == 3:
        reserved |= bits(29, 13)
    elif leaf and level == 2:
        reserved |= bits(20, 13)
    return bool(entry & reserved)


def guest_entry_problem(m: Machine, fmt: GuestFormat, entry: int, level: int) -> tuple[Optional[str], bool]:
    """What stops a walk at this guest entry ("not_present" or "reserved", else None), and
    whether it maps a page; the same for the CPU's walk and the VMM's software walk."""
    if not entry & P:
        return "not_present", False
    leaf = fmt.is_leaf(entry, level)
    return ("reserved" if guest_reserved(m, entry, level, leaf) else None), leaf


def guest_flags(fmt: GuestFormat, entry: int, level: int) -> list:
    if fmt.sunway:
        return [n for b, n in SW_FLAGS if entry >> b & 1]
    return x86_flags(entry, level, fmt.wide)


def sunway_rights(acc: Access, entry: int) -> Optional[str]:
    """Sunway rights, leaf only (model.md 1): read and fetch need KRE (URE for a user
    access), write KWE (UWE); then the fault-on bit of the access faults."""
    need = {"write": SW_UWE if acc.user else SW_KWE}.get(acc.op, SW_URE if acc.user else SW_KRE)
    if not entry & need:
        return "permission"
    if entry & {"read": SW_FOR, "write": SW_FOW, "fetch": SW_FOE}[acc.op]:
        return "fault_on"
    return None


def guest_page_fault(m: Machine, reason: str, level: int, acc: Access) -> Fault:
    """Guest #PF error code (SDM 4.7); for a Sunway guest the memory-management code:
    0 not valid, 1 access violation (rights or reserved bits), 2/3/4 fault on read,
    write, execute (model.md 1)."""
    g = m.sc.guest
    if m.fmt.sunway:
        code = {"not_present": 0, "reserved": 1, "permission": 1}.get(reason)
        if code is None:
            code = {"read": 2, "write": 3, "fetch": 4}[acc.op]
        return Fault("guest_page_fault", {
            "dim": "guest", "level": level, "stage": level, "reason": reason, "vector": 14,
            "error_code": hx(code), "cr2": hx(acc.gva)})
    code = 0 if reason == "not_present" else 1
    code |= 2 if acc.op == "write" else 0
    code |= 4 if acc.user else 0
    code |= 8 if reason == "reserved" else 0
    if acc.op == "fetch" and (g.cr4_smep or (m.fmt.wide and g.efer_nxe)):
        code |= 16
    return Fault("guest_page_fault", {
        "dim": "guest", "level": level, "stage": level, "reason": reason, "vector": 14,
        "error_code": hx(code), "cr2": hx(acc.gva)})


def guest_permits(m: Machine, acc: Access, rw: bool, us: bool, xd: bool) -> bool:
    """Access rights (SDM 4.6), with the combined RW/US (AND) and XD (OR)."""
    g = m.sc.guest
    if acc.user:
        if not us:
            return False
        if acc.op == "write" and not rw:
            return False
        return not (acc.op == "fetch" and xd)
    if acc.op == "write" and not rw and g.cr0_wp:
        return False
    if acc.op == "fetch":
        return not xd and not (us and g.cr4_smep)
    return not (us and g.cr4_smap)      # EFLAGS.AC taken as 0


@dataclass
class WalkedEntry:
    """A guest entry read during the walk, kept for the A/D updates."""
    level: int
    gpa: Optional[int]
    table: int
    index: int
    hpa: int
    nested: Optional[NestedTranslation]


def translate(m: Machine, acc: Access) -> dict:
    """One access, start to finish; returns its result object (model.md 5)."""
    t = Trace()
    out = {"gva": hx(acc.gva), "op": acc.op, "user": acc.user,
           # EPTP switching (VMFUNC) is outside this reference: index 0 stays active
           "eptp_index": 0 if m.ept else None, "outcome": "ok",
           "exit": False, "gpa": None, "hpa": None, "guest_page_size": None,
           "nested_page_size": None}
    fault = None
    try:
        gpa, size = guest_walk(m, t, acc)
        out["gpa"], out["guest_page_size"] = hx(gpa), size
        if m.nested:
            final = nested_walk(m, t, gpa, acc.op, 0, acc.gva, acc.op)
            out["hpa"], out["nested_page_size"] = hx(final.hpa), final.page_size
        elif m.flat:
            final = flat_walk(m, t, gpa, 0)
            out["hpa"], out["nested_page_size"] = hx(final.hpa), final.page_size
        else:
            out["hpa"] = hx(gpa)
    except Fault as f:
        out["outcome"], fault = f.outcome, f.info
        # a nested fault is one VM exit (a flat miss counted its own, in the walk)
        if f.outcome not in ("guest_page_fault", "flat_fault"):
            t.exits += 1
    out["exit"] = t.exits > 0
    out.update({"memory_refs": t.guest_refs + t.nested_refs, "guest_refs": t.guest_refs,
                "nested_refs": t.nested_refs, "ad_writes": t.ad_writes,
                "exits": t.exits, "cache": None,   # no TLB or walk caches here
                "fault": fault,
                "steps": t.steps})
    return out


def guest_walk(m: Machine, t: Trace, acc: Access, start=None) -> tuple[int, int]:
    """The guest dimension (model.md 4.2): returns (final gpa, guest page size).  start:
    agile paging's switch, (level, table gpa, rw, us, xd) to go on from."""
    fmt, g = m.fmt, m.sc.guest
    native = not m.two_d
    # Guest paging-structure accesses: reads, but writes for EPT A/D (SDM 29.3.5) and
    # user writes under NPT (APM 15.25.5).
    table_kind = "write" if (m.nested and (not m.ept or m.nested.ad)) else "read"
    table = m.cr3
    rw = us = True
    xd = False
    first = fmt.top
    if start is not None:
        first, table, rw, us, xd = start
    walked: list[WalkedEntry] = []
    for level in range(first, 0, -1):
        index = fmt.index(acc.gva, level)
        if g.paging == "pae" and level == 3 and m.sc.mode != "npt":
            table = pae_pdpte_step(m, t, acc, index)
            continue
        if g.paging == "pae" and level == 3:
            table = npt_pdpte_read(m, t, acc, index)
            continue
        entry_gpa = table + index * fmt.entry_size
        ntr = None
        if native:
            entry_hpa = entry_gpa
        else:
            try:
                ntr = (flat_walk(m, t, entry_gpa, level) if m.flat else
                       nested_walk(m, t, entry_gpa, table_kind, level, acc.gva, None))
            except Fault:
                npt_guest_accessed(m, t, walked[:-1])
                raise
            entry_hpa = ntr.hpa
        entry = m.mem.read(entry_hpa, fmt.entry_size)
        s = t.step("read", "guest", level, level, None if native else entry_gpa, table,
                   index, entry_hpa, entry, guest_flags(fmt, entry, level))
        walked.append(WalkedEntry(level, None if native else entry_gpa, table, index,
                                  entry_hpa, ntr))
        why, leaf = guest_entry_problem(m, fmt, entry, level)
        if why:
            s["result"] = why
            npt_guest_accessed(m, t, walked[:-1])
            raise guest_page_fault(m, why, level, acc)
        rw, us = rw and bool(entry & RW), us and bool(entry & US)
        xd = xd or (fmt.wide and g.efer_nxe and bool(entry & XD))
        if not leaf:
            s["result"] = "table"
            table = fmt.next_table(entry)
            continue
        s["result"] = "page"
        if fmt.sunway:
            why = sunway_rights(acc, entry)
            if why:
                raise guest_page_fault(m, why, level, acc)
        elif not guest_permits(m, acc, rw, us, xd):
            npt_guest_accessed(m, t, walked[:-1])
            raise guest_page_fault(m, "permission", level, acc)
        else:
            update_guest_ad(m, t, acc, walked)      # Sunway has no hardware A/D
        size = fmt.page_size(level)
        return fmt.page_frame(entry, level) | (acc.gva & (size - 1)), size
    raise AssertionError("level 1 is always a leaf")


def npt_pdpte_read(m: Machine, t: Trace, acc: Access, index: int) -> int:
    """PAE guest under AMD NPT: no PDPTE registers (APM vol. 2, 15.25.10 legacy PAE with
    nested paging); the PDPTE is read on every walk, through the nested walk of its gpa,
    and checked there: not present or reserved bits (2:1, 8:5, 63:MAXPHYADDR) are a #PF.
    It has no access rights and no A bit."""
    gpa = m.cr3 + 8 * index
    ntr = nested_walk(m, t, gpa, "write", 3, acc.gva, None)
    entry = m.mem.read(ntr.hpa, 8)
    s = t.step("read", "guest", 3, 3, gpa, m.cr3, index, ntr.hpa, entry,
               x86_flags(entry, 3, True))
    if not entry & P:
        s["result"] = "not_present"
        raise guest_page_fault(m, "not_present", 3, acc)
    if entry & (bits(2, 1) | bits(8, 5) | bits(63, m.sc.maxphyaddr)):
        s["result"] = "reserved"
        raise guest_page_fault(m, "reserved", 3, acc)
    s["result"] = "table"
    return entry & bits(m.sc.maxphyaddr - 1, 12)


def pae_pdpte_step(m: Machine, t: Trace, acc: Access, index: int) -> int:
    """PAE: the PDPTE comes from the register loaded at mov cr3 (SDM 4.4.1): no memory
    reference, no nested walk, no access rights, no A bit."""
    entry = m.pdptes[index]
    native = not m.two_d
    s = t.step("pdpte", "guest", 3, 3, None if native else m.cr3 + index * 8, m.cr3, index,
               m.pdpte_hpas[index], entry, pdpte_flags(entry))
    if not entry & P:
        s["result"] = "not_present"
        raise guest_page_fault(m, "not_present", 3, acc)
    s["result"] = "table"
    return entry & bits(m.sc.maxphyaddr - 1, 12)


def npt_guest_accessed(m: Machine, t: Trace, walked: list) -> None:
    """Mode npt, a guest walk that faults: A in each entry whose table was read (walked
    is those entries), as npt_table_accessed does for the nested tables. NPT made every
    guest table read a write, so no update is blocked."""
    if m.sc.mode != "npt" or m.fmt.sunway:
        return
    fmt = m.fmt
    for w in walked:
        current = m.mem.read(w.hpa, fmt.entry_size)
        if current & ACC:
            continue
        s = t.step("ad_write", "guest", w.level, w.level, w.gpa, w.table, w.index, w.hpa,
                   current, x86_flags(current, w.level, fmt.wide))
        s["ad_set"] = "A"
        m.mem.write(w.hpa, fmt.entry_size, current | ACC)
        s["result"] = "written"


def update_guest_ad(m: Machine, t: Trace, acc: Access, walked: list) -> None:
    """Guest A/D updates, top level first (SDM 4.8): A in every entry walked, D in the
    leaf for a write.  In ept/npt each is a write to guest memory and needs write
    permission in that entry's nested translation (SDM 29.3.3.2)."""
    fmt = m.fmt
    for i, w in enumerate(walked):
        current = m.mem.read(w.hpa, fmt.entry_size)
        add = 0 if current & ACC else ACC
        if i == len(walked) - 1 and acc.op == "write" and not current & DIRTY:
            add |= DIRTY
        if not add:
            continue
        s = t.step("ad_write", "guest", w.level, w.level, w.gpa, w.table, w.index, w.hpa,
                   current, x86_flags(current, w.level, fmt.wide))
        # model.md 5: a blocked step still shows the bits it was about to set
        s["ad_set"] = ("A" if add & ACC else "") + ("D" if add & DIRTY else "")
        if w.nested is not None and not w.nested.writable:
            s["result"] = "blocked"
            raise blocked_ad_fault(m, w, acc)
        m.mem.write(w.hpa, fmt.entry_size, current | add)
        s["result"] = "written"


def blocked_ad_fault(m: Machine, w: WalkedEntry, acc: Access) -> Fault:
    """A guest A/D write the nested tables do not allow: an EPT violation for a
    paging-structure write (bits 0 and 1, bit 8 clear), or #NPF P|W|U + bit 33."""
    if m.ept:
        return ept_violation("permission", w.nested.leaf_level, w.level, w.gpa, acc.gva,
                             "write", None, w.nested.rwx)
    return npt_fault("permission", w.nested.leaf_level, w.level,
                     0x7 | (1 << 33), w.gpa)


# --- shadow paging (model.md 1, "Shadow paging") -------------------------------------

def shadow_translate(m: Machine, acc: Access) -> dict:
    """One access under shadow paging: the MMU walks the VMM's gva -> hpa table; a
    missing entry, or a leaf without the rights the access needs, is a hidden page fault
    (one exit): the VMM walks the guest's tables in software, reflects a guest #PF, or
    sets the guest's A/D bits, write-protects the guest table frames it walked, fills
    the 4 KiB shadow leaf and the walk is retried."""
    t = Trace()
    out = {"gva": hx(acc.gva), "op": acc.op, "user": acc.user, "eptp_index": None,
           "outcome": "ok", "exit": False, "gpa": None, "hpa": None, "guest_page_size": None,
           "nested_page_size": None}
    fault = None
    root = m.sroots[m.asid]
    try:
        hpa = shadow_walk(m, t, acc, root)
        if hpa is None:
            t.exits += 1
            m.counters["hidden_page_faults"] += 1
            t.step("vmexit", "nested", 1, 0, None, 0, 0, 0, 0, [], "hidden_page_fault")
            gpa, size, rights = vmm_walk(m, t, acc)
            shadow_fill(m, t, acc, root, gpa, rights)
            out["gpa"], out["guest_page_size"] = hx(gpa), size
            hpa = shadow_walk(m, t, acc, root)
            if hpa is None:
                raise AssertionError("the walk after the fill fails again")
        out["hpa"] = hx(hpa)
    except Fault as f:
        out["outcome"], fault = f.outcome, f.info
    out["exit"] = t.exits > 0
    out.update({"memory_refs": t.guest_refs + t.nested_refs, "guest_refs": t.guest_refs,
                "nested_refs": t.nested_refs, "ad_writes": t.ad_writes, "exits": t.exits,
                "cache": None, "fault": fault, "steps": t.steps})
    return out


def pae_shadow(m: Machine) -> bool:
    """32-bit and PAE guests get a PAE-format shadow (KVM keeps CR4.PAE set)."""
    return m.fmt.paging in ("32bit", "pae")


def shadow_top(m: Machine) -> int:
    return 3 if pae_shadow(m) else m.fmt.top


def shadow_index(m: Machine, gva: int, level: int) -> int:
    if pae_shadow(m):
        return (gva >> 30) & 3 if level == 3 else (gva >> (12 + 9 * (level - 1))) & 0x1FF
    return m.fmt.index(gva, level)


def shadow_shift(m: Machine, level: int) -> int:
    return 12 + 9 * (level - 1)


def shadow_walk(m: Machine, t: Trace, acc: Access, root: int) -> Optional[int]:
    """The MMU's walk of the shadow table (steps in dim nested, stage 0): the hpa, or
    None for a hidden page fault (a not-present entry, or rights the access lacks).
    Under a PAE-format shadow the PDPTE comes from a register (a pdpte step)."""
    fmt, table = m.fmt, root
    rw = us = True
    xd = False
    for level in range(shadow_top(m), 0, -1):
        index = shadow_index(m, acc.gva, level)
        addr = table + index * 8
        entry = m.mem.read(addr, 8)
        if pae_shadow(m) and level == 3:
            s = t.step("pdpte", "nested", 3, 0, None, table, index, addr, entry,
                       pdpte_flags(entry))
            if not entry & P:
                s["result"] = "not_present"
                return None
            s["result"] = "table"
            table = entry & bits(m.sc.maxphyaddr - 1, 12)
            continue
        s = t.step("read", "nested", level, 0, None, table, index, addr, entry,
                   x86_flags(entry, level, True))
        if not entry & P:
            s["result"] = "not_present"
            return None
        rw, us = rw and bool(entry & RW), us and bool(entry & US)
        xd = xd or (fmt.wide and m.sc.guest.efer_nxe and bool(entry & XD))
        if level > 1:
            s["result"] = "table"
            table = entry & bits(m.sc.maxphyaddr - 1, 12)
            continue
        s["result"] = "page"
        if not guest_permits(m, acc, rw, us, xd):
            return None
        return (entry & bits(m.sc.maxphyaddr - 1, 12)) | (acc.gva & 0xFFF)
    raise AssertionError("level 1 is the shadow leaf")


def vmm_walk(m: Machine, t: Trace, acc: Access):
    """The VMM's software walk of the guest tables (vmm_read steps, no memory references
    of the walk). A guest fault is reflected into the guest (same exit); otherwise the
    guest's A (and D) bits are set, counted in ad_writes (model.md 4.2 order, decided
    on memory), and every guest table frame walked is write-protected.
    Returns (gpa, guest page size, (rw, us, xd) combined)."""
    fmt, g = m.fmt, m.sc.guest
    table = m.cr3
    rw = us = True
    xd = False
    walked = []
    es = fmt.entry_size
    for level in range(fmt.top, 0, -1):
        index = fmt.index(acc.gva, level)
        if g.paging == "pae" and level == 3:
            # the guest's PDPTE registers, as its last mov cr3 loaded them
            entry = m.pdptes[index]
            s = t.step("pdpte", "guest", 3, 3, m.cr3 + 8 * index, m.cr3, index,
                       m.pdpte_hpas[index], entry, pdpte_flags(entry))
            if not entry & P:
                s["result"] = "not_present"
                raise reflect(m, t, "not_present", 3, acc)
            s["result"] = "table"
            table = entry & bits(m.sc.maxphyaddr - 1, 12)
            continue
        egpa = table + index * es
        ehpa = slot_lookup(m.sc.shadow.mappings, egpa, FRAME_SIZE)
        if ehpa is None:
            # a guest table outside every memory slot: the VMM cannot walk on
            raise Fault("shadow_unmapped", {"dim": "guest", "level": level, "stage": level,
                                            "reason": "unmapped",
                                            "guest_physical_address": hx(egpa)})
        entry = m.mem.read(ehpa, es)
        s = t.step("vmm_read", "guest", level, level, egpa, table, index, ehpa, entry,
                   guest_flags(fmt, entry, level))
        walked.append((egpa, ehpa))
        why, leaf = guest_entry_problem(m, fmt, entry, level)
        if why:
            s["result"] = why
            raise reflect(m, t, why, level, acc)
        rw, us = rw and bool(entry & RW), us and bool(entry & US)
        xd = xd or (fmt.wide and g.efer_nxe and bool(entry & XD))
        if not leaf:
            s["result"] = "table"
            table = fmt.next_table(entry)
            continue
        s["result"] = "page"
        if not guest_permits(m, acc, rw, us, xd):
            raise reflect(m, t, "permission", level, acc)
        for i, (_, ehpa2) in enumerate(walked):
            cur = m.mem.read(ehpa2, es)
            new = cur | ACC | (DIRTY if i == len(walked) - 1 and acc.op == "write" else 0)
            if new != cur:
                m.mem.write(ehpa2, es, new)
                t.ad_writes += 1
        for egpa2, _ in walked:
            m.wp.add(egpa2 >> 12)
        m.counters["write_protected_pages"] = len(m.wp)
        size = fmt.page_size(level)
        dirty = bool(m.mem.read(walked[-1][1], es) & DIRTY)
        gpa = fmt.page_frame(entry, level) | (acc.gva & (size - 1))
        return gpa, size, (rw and dirty, us, xd)
    raise AssertionError("level 1 is always a leaf")


def reflect(m: Machine, t: Trace, reason: str, level: int, acc: Access) -> Fault:
    m.counters["reflected_page_faults"] += 1
    t.step("vmexit", "nested", 1, 0, None, 0, 0, 0, 0, [], "reflected_page_fault")
    return guest_page_fault(m, reason, level, acc)


def shadow_fill(m: Machine, t: Trace, acc: Access, root: int, gpa: int, rights) -> None:
    """The shadow path for the access's 4 KiB page: tables allocated as needed (P, RW,
    US), the leaf (a vmm_fill step): the data frame's hpa, P, US and XD from the guest,
    RW only for a dirty guest page that is no write-protected guest table frame."""
    fmt = m.fmt
    rw, us, xd = rights
    data = slot_lookup(m.sc.shadow.mappings, gpa & ~0xFFF, FRAME_SIZE)
    if data is None:
        raise Fault("shadow_unmapped", {"dim": "nested", "level": 1, "stage": 0,
                                        "reason": "unmapped",
                                        "guest_physical_address": hx(gpa)})
    table = root
    for level in range(shadow_top(m), 1, -1):
        addr = table + shadow_index(m, acc.gva, level) * 8
        entry = m.mem.read(addr, 8)
        if not entry & P:
            new = new_shadow_table(m)
            # a shadow PDPTE has only P (bits 2:1 are reserved there)
            m.mem.write(addr, 8, new | (P if pae_shadow(m) and level == 3 else P | RW | US))
            table = new
        else:
            table = entry & bits(m.sc.maxphyaddr - 1, 12)
    index = shadow_index(m, acc.gva, 1)
    value = data | P | (US if us else 0) | (XD if xd else 0)
    if rw and (gpa >> 12) not in m.wp:
        value |= RW
    m.mem.write(table + index * 8, 8, value)
    t.step("vmm_fill", "nested", 1, 0, None, table, index, table + index * 8, value,
           x86_flags(value, 1, True), "written")


# --- agile paging (model.md 1, "Agile paging") ---------------------------------------

SWITCH = 1 << 11          # the switch bit of a shadow entry


@dataclass
class Subtree:
    """A guest table (the level-`level` table mapping gvas from base) and what the VMM
    knows of it: nested or not, pt_write exits since it was last shadowed, the clock at
    its last write while nested."""
    base: int
    level: int
    nested: bool = False
    writes: int = 0
    last_write: int = 0


def subtree_base(m: Machine, gva: int, level: int) -> int:
    if level >= m.fmt.top:
        return 0
    span = 1 << (12 + 9 * level)          # what one level-`level` table maps
    return gva - gva % span


def subtree_covers(m: Machine, st: Subtree, gva: int) -> bool:
    return st.level >= m.fmt.top or subtree_base(m, gva, st.level) == st.base


def agile_switch(m: Machine, gva: int) -> int:
    """The level from which the VMM has gva's walk nested: the scenario's switch_level or
    a nested subtree's level, whichever is higher; 0 = all shadow."""
    levels = [m.sc.agile.switch_level]
    levels += [st.level for st in m.subtrees if st.nested and subtree_covers(m, st, gva)]
    return max(levels)


def agile_counters(m: Machine) -> dict:
    out = dict(m.counters)
    out.update({"switch_level": m.sc.agile.switch_level,
                "nested_subtrees": sum(1 for st in m.subtrees if st.nested),
                "to_nested": m.to_nested, "to_shadow": m.to_shadow})
    return out


def agile_flags(entry: int, level: int) -> list:
    """A shadow entry's flags: x86 ones, with SW (the switch bit) before XD."""
    names = x86_flags(entry, level, True)
    if entry & SWITCH:
        names.insert(len(names) - (1 if entry & XD else 0), "SW")
    return names


def agile_unshadow(m: Machine, st: Subtree) -> None:
    """The shadow entry standing for the subtree's table goes in every address space
    (the entry one level up; for the root table, every root entry)."""
    if st.level >= m.fmt.top:
        for root in m.sroots:
            for i in range(512):
                m.mem.write(root + 8 * i, 8, 0)
        return
    for root in m.sroots:
        shadow_zap(m, root, st.base, st.level + 1)


def agile_tick(m: Machine) -> None:
    """One entry of the access list: the clock advances first, then nested subtrees
    unwritten for shadow_after_quiet ticks go back to shadow."""
    m.clock += 1
    quiet = m.sc.agile.shadow_after_quiet
    if not quiet:
        return
    for st in m.subtrees:
        if st.nested and m.clock - st.last_write >= quiet:
            st.nested, st.writes = False, 0
            m.to_shadow += 1
            agile_unshadow(m, st)


def agile_hw_walk(m: Machine, t: Trace, acc: Access):
    """The MMU on the shadow table: ("page", hpa) at a shadow leaf that allows the
    access, ("switch", level, table gpa, rw, us, xd) at an entry with the switch bit,
    None for a hidden page fault."""
    table = m.sroots[m.asid]
    for level in range(m.fmt.top, 0, -1):
        index = m.fmt.index(acc.gva, level)
        addr = table + 8 * index
        entry = m.mem.read(addr, 8)
        s = t.step("read", "nested", level, 0, None, table, index, addr, entry,
                   agile_flags(entry, level))
        if not entry & P:
            s["result"] = "not_present"
            return None
        if level == 1:
            s["result"] = "page"
            xd = m.sc.guest.efer_nxe and bool(entry & XD)
            if not guest_permits(m, acc, bool(entry & RW), bool(entry & US), xd):
                return None
            return ("page", (entry & bits(51, 12)) | (acc.gva & 0xFFF))
        s["result"] = "table"
        if entry & SWITCH:
            return ("switch", level - 1, entry & bits(51, 12), bool(entry & RW),
                    bool(entry & US), bool(entry & XD))
        table = entry & bits(51, 12)
    raise AssertionError("level 1 is the shadow leaf")


def agile_fill(m: Machine, t: Trace, acc: Access, out: dict) -> None:
    """The VMM's hidden page fault: it walks the guest's tables in software from CR3
    down to the switching level (or a leaf above it), reflects a guest fault, sets the
    A bits of what it walked (and D of a leaf it shadows, on a write), write-protects
    those tables, then writes the shadow path: a switch entry holding the next guest
    table's gpa and the rights so far, or a 4 KiB shadow leaf."""
    fmt, g = m.fmt, m.sc.guest
    sw = agile_switch(m, acc.gva)
    table = m.cr3
    rw = us = True
    xd = False
    walked = []            # (gpa of the entry, its hpa)
    leaf_entry = None
    level = fmt.top
    while level > sw:
        index = fmt.index(acc.gva, level)
        egpa = table + 8 * index
        ehpa = nested_lookup(m, egpa)
        if ehpa is None:
            raise Fault("shadow_unmapped", {"dim": "guest", "level": level, "stage": level,
                                            "reason": "unmapped",
                                            "guest_physical_address": hx(egpa)})
        entry = m.mem.read(ehpa, 8)
        s = t.step("vmm_read", "guest", level, level, egpa, table, index, ehpa, entry,
                   guest_flags(fmt, entry, level))
        walked.append((egpa, ehpa))
        why, leaf = guest_entry_problem(m, fmt, entry, level)
        if why:
            s["result"] = why
            raise reflect(m, t, why, level, acc)
        rw, us = rw and bool(entry & RW), us and bool(entry & US)
        xd = xd or (g.efer_nxe and bool(entry & XD))
        if leaf:
            s["result"] = "page"
            leaf_entry = entry
            break
        s["result"] = "table"
        table = fmt.next_table(entry)
        level -= 1
    if leaf_entry is not None and not guest_permits(m, acc, rw, us, xd):
        raise reflect(m, t, "permission", level, acc)
    for i, (_, ehpa) in enumerate(walked):
        cur = m.mem.read(ehpa, 8)
        new = cur | ACC
        if leaf_entry is not None and i == len(walked) - 1 and acc.op == "write":
            new |= DIRTY
        if new != cur:
            m.mem.write(ehpa, 8, new)
            t.ad_writes += 1
    for egpa, _ in walked:
        m.wp.add(egpa >> 12)
    m.counters["write_protected_pages"] = len(m.wp)
    if leaf_entry is not None:
        size = fmt.page_size(level)
        gpa = fmt.page_frame(leaf_entry, level) | (acc.gva & (size - 1))
        data = nested_lookup(m, gpa & ~0xFFF)
        if data is None:
            raise Fault("shadow_unmapped", {"dim": "nested", "level": 1, "stage": 0,
                                            "reason": "unmapped",
                                            "guest_physical_address": hx(gpa)})
        dirty = bool(m.mem.read(walked[-1][1], 8) & DIRTY)
        value = data | P | (US if us else 0) | (XD if xd else 0)
        if rw and dirty and (gpa >> 12) not in m.wp:
            value |= RW
        at = 1
        out["gpa"], out["guest_page_size"] = hx(gpa), size
    else:
        # the switch: the entry one level above the switching level
        value = table | P | SWITCH | (RW if rw else 0) | (US if us else 0) | (XD if xd else 0)
        at = sw + 1
    stable = m.sroots[m.asid]
    for lvl in range(fmt.top, at, -1):
        addr = stable + 8 * fmt.index(acc.gva, lvl)
        entry = m.mem.read(addr, 8)
        if entry & P and not entry & SWITCH:
            stable = entry & bits(51, 12)
            continue
        new = new_shadow_table(m)
        m.mem.write(addr, 8, new | P | RW | US)
        stable = new
    index = fmt.index(acc.gva, at)
    m.mem.write(stable + 8 * index, 8, value)
    t.step("vmm_fill", "nested", at, 0, None, stable, index, stable + 8 * index, value,
           agile_flags(value, at), "written")


def agile_translate(m: Machine, acc: Access) -> dict:
    """One access under agile paging: the shadow table from the top, then (past a
    switch entry) the guest's tables in 2-D and the final nested walk."""
    t = Trace()
    out = {"gva": hx(acc.gva), "op": acc.op, "user": acc.user, "eptp_index": 0,
           "outcome": "ok", "exit": False, "gpa": None, "hpa": None, "guest_page_size": None,
           "nested_page_size": None}
    fault = None
    try:
        top = m.fmt.top
        if agile_switch(m, acc.gva) >= top:
            got = ("switch", top, m.cr3, True, True, False)
        else:
            got = agile_hw_walk(m, t, acc)
            if got is None:
                t.exits += 1
                m.counters["hidden_page_faults"] += 1
                t.step("vmexit", "nested", 1, 0, None, 0, 0, 0, 0, [], "hidden_page_fault")
                agile_fill(m, t, acc, out)
                got = agile_hw_walk(m, t, acc)
                if got is None:
                    raise AssertionError("the walk after the fill fails again")
        if got[0] == "page":
            out["hpa"] = hx(got[1])
        else:
            gpa, size = guest_walk(m, t, acc, start=got[1:])
            out["gpa"], out["guest_page_size"] = hx(gpa), size
            final = nested_walk(m, t, gpa, acc.op, 0, acc.gva, acc.op)
            out["hpa"], out["nested_page_size"] = hx(final.hpa), final.page_size
    except Fault as f:
        out["outcome"], fault = f.outcome, f.info
        if f.outcome in ("ept_violation", "ept_misconfig"):
            t.exits += 1
    out["exit"] = t.exits > 0
    out.update({"memory_refs": t.guest_refs + t.nested_refs, "guest_refs": t.guest_refs,
                "nested_refs": t.nested_refs, "ad_writes": t.ad_writes, "exits": t.exits,
                "cache": None, "fault": fault, "steps": t.steps})
    return out


def agile_event(m: Machine, ev: Event) -> dict:
    """mov cr3 (an exit while the top of the walk is shadow), invlpg (nothing to do
    without caches), and guest page-table writes: above the switch a write to a table
    the VMM walked exits, is emulated, zaps the shadow entry and counts toward moving
    that table's subtree nested; at or below the switch it is a store."""
    t = Trace()
    out = {"gva": None if ev.gva is None else hx(ev.gva), "op": ev.op, "user": False,
           "eptp_index": 0, "outcome": "ok", "exit": False, "gpa": None, "hpa": None,
           "guest_page_size": None, "nested_page_size": None}
    if ev.op == "mov_cr3":
        if agile_switch(m, 0) < m.fmt.top:
            t.exits += 1
            m.counters["cr3_write_exits"] += 1
            t.step("vmexit", "nested", 1, 0, None, 0, 0, 0, 0, [], "cr3_write")
        m.asid, m.cr3 = ev.space, m.cr3s[ev.space]
    elif ev.op == "pte_write":
        addr = pte_write_target(m, ev)
        if addr is not None and guest_phys(m, addr, "accesses.pte_write") >> 12 not in m.mem.frames:
            addr = None    # a nested override moved the table's gpa to a frame with no table
        if addr is not None:
            entry = guest_read(m, addr, "accesses.pte_write")
            new = (entry & ~ev.clear) | ev.set
            if ev.level <= agile_switch(m, ev.gva):
                for st in m.subtrees:
                    if st.nested and st.level >= ev.level and subtree_covers(m, st, ev.gva):
                        st.last_write = m.clock
                guest_write(m, addr, new, "accesses.pte_write")
            elif (addr >> 12) in m.wp:
                t.exits += 1
                m.counters["pt_write_exits"] += 1
                t.step("vmexit", "nested", 1, 0, None, 0, 0, 0, 0, [], "pt_write")
                guest_write(m, addr, new, "accesses.pte_write")
                for root in m.sroots:
                    shadow_zap(m, root, ev.gva, ev.level)
                agile_count_write(m, ev.gva, ev.level)
            else:
                guest_write(m, addr, new, "accesses.pte_write")
    out["exit"] = t.exits > 0
    out.update({"memory_refs": 0, "guest_refs": 0, "nested_refs": 0, "ad_writes": 0,
                "exits": t.exits, "cache": None, "fault": None, "steps": t.steps})
    return out


def agile_count_write(m: Machine, gva: int, level: int) -> None:
    n = m.sc.agile.nested_after_writes
    if not n:
        return
    base = subtree_base(m, gva, level)
    st = next((x for x in m.subtrees if x.level == level and x.base == base), None)
    if st is None:
        if len(m.subtrees) >= 64:
            return
        st = Subtree(base, level)
        m.subtrees.append(st)
    st.writes += 1
    if st.writes >= n:
        st.nested, st.last_write = True, m.clock
        m.to_nested += 1
        agile_unshadow(m, st)


# --- events: mov cr3, invlpg, guest page-table writes ---------------------------------

def run_event(m: Machine, ev: Event) -> dict:
    t = Trace()
    out = {"gva": None if ev.gva is None else hx(ev.gva), "op": ev.op, "user": False,
           "eptp_index": 0 if m.ept else None, "outcome": "ok", "exit": False, "gpa": None,
           "hpa": None, "guest_page_size": None, "nested_page_size": None}
    sh = m.sc.shadow
    if ev.op == "mov_cr3":
        if sh:
            if ev.space < sh.cr3_targets:
                exits = False                    # a VMX CR3-target value
            elif sh.pv_cache:
                exits = ev.space not in m.pv_cache
                if not exits:
                    m.pv_cache.remove(ev.space)
                m.pv_cache.insert(0, ev.space)
                del m.pv_cache[4:]
            else:
                exits = True
            if exits:
                t.exits += 1
                m.counters["cr3_write_exits"] += 1
                t.step("vmexit", "nested", 1, 0, None, 0, 0, 0, 0, [], "cr3_write")
        m.asid, m.cr3 = ev.space, m.cr3s[ev.space]
        if m.sc.guest.paging == "pae":
            m.pdptes, m.pdpte_hpas = [], []
            load_pdptes(m)
    elif ev.op == "pte_write":
        addr = pte_write_target(m, ev)
        if addr is not None:
            if sh and (addr >> 12) in m.wp:
                # a write to a write-protected guest table frame exits; the VMM emulates it
                t.exits += 1
                m.counters["pt_write_exits"] += 1
                t.step("vmexit", "nested", 1, 0, None, 0, 0, 0, 0, [], "pt_write")
            entry = guest_read(m, addr, "accesses.pte_write")
            guest_write(m, addr, (entry & ~ev.clear) | ev.set, "accesses.pte_write")
            if sh and (addr >> 12) in m.wp and not (m.sc.guest.paging == "pae" and ev.level == 3):
                # the VMM saw the write: the shadow entries for that gva and level are
                # zapped in every address space's shadow table (model.md 1: it keeps no
                # reverse map); a
                # 32-bit guest's 4 MiB directory entry stood for two 2 MiB shadow ones.
                # (A PAE guest's PDPT write takes effect at its next mov cr3.)
                gshift = 12 + (10 if m.fmt.paging == "32bit" else 9) * (ev.level - 1)
                sl = ev.level
                while sl > 1 and shadow_shift(m, sl) > gshift:
                    sl -= 1
                base = ev.gva & ~((1 << gshift) - 1)
                for va in range(base, base + (1 << gshift), 1 << shadow_shift(m, sl)):
                    for root in m.sroots:
                        shadow_zap(m, root, va, sl)
    out["exit"] = t.exits > 0
    out.update({"memory_refs": 0, "guest_refs": 0, "nested_refs": 0, "ad_writes": 0,
                "exits": t.exits, "cache": None, "fault": None, "steps": t.steps})
    return out


def pte_write_target(m: Machine, ev: Event) -> Optional[int]:
    """The gpa of the guest's level-`level` entry for gva in the active address space,
    found as the guest kernel would: None when an entry above is not present or maps a
    page (then there is no such entry and nothing is written)."""
    fmt, table = m.fmt, m.cr3
    for lvl in range(fmt.top, ev.level, -1):
        entry = guest_read(m, table + fmt.index(ev.gva, lvl) * fmt.entry_size,
                           "accesses.pte_write")
        if not entry & P or fmt.is_leaf(entry, lvl):
            return None
        table = fmt.next_table(entry)
    return table + fmt.index(ev.gva, ev.level) * fmt.entry_size


def shadow_zap(m: Machine, root: int, gva: int, level: int) -> None:
    table = root
    for lvl in range(shadow_top(m), level, -1):
        entry = m.mem.read(table + shadow_index(m, gva, lvl) * 8, 8)
        if not entry & P:
            return
        table = entry & bits(m.sc.maxphyaddr - 1, 12)
    m.mem.write(table + shadow_index(m, gva, level) * 8, 8, 0)


# ---------------------------------------------------------------------------------------
# 6. Result assembly and the CLI (model.md section 5)
# ---------------------------------------------------------------------------------------

OUTCOMES = ("ok", "guest_page_fault", "ept_violation", "ept_misconfig", "npt_fault", "flat_fault",
            "vmfunc_exit", "invalid_opcode", "vmcall_exit", "shadow_unmapped")


def run(scenario: dict) -> dict:
    """Scenario dict in, result dict out (raises ScenarioError when invalid)."""
    sc = parse_scenario(scenario)
    m = build(sc)
    accesses = []
    for a in sc.accesses:
        if sc.agile:
            agile_tick(m)
            accesses.append(agile_event(m, a) if isinstance(a, Event) else agile_translate(m, a))
            continue
        accesses.append(run_event(m, a) if isinstance(a, Event)
                        else shadow_translate(m, a) if sc.shadow else translate(m, a))
    totals = {"accesses": len(accesses)}
    for key in ("memory_refs", "guest_refs", "nested_refs", "ad_writes"):
        totals[key] = sum(a[key] for a in accesses)
    totals["exits"] = sum(a["exits"] for a in accesses)
    for outcome in OUTCOMES:
        totals[outcome] = sum(1 for a in accesses if a["outcome"] == outcome)
    return {
        "format": "vmsim-result/1", "name": sc.name, "mode": sc.mode,
        "guest_paging": sc.guest.paging,
        "nested_levels": sc.nested.levels if sc.nested else 0,
        "cr3": hx(m.cr3s[0]),
        "eptp": hx(eptp(m)) if m.ept else None,
        "ncr3": hx(m.nested_root) if sc.mode == "npt" else None,
        "flat_table_bytes": sc.flat.guest_ram // sc.flat.frame * 8 if sc.flat else None,
        "accesses": accesses, "totals": totals,
        "shadow": agile_counters(m) if sc.agile else dict(m.counters) if sc.shadow else None,
    }


def main(argv: list) -> int:
    if len(argv) != 3 or argv[1] != "run":
        print("usage: refwalk.py run FILE", file=sys.stderr)
        return 2
    try:
        with open(argv[2], encoding="utf-8") as f:
            scenario = json.load(f)
        result = run(scenario)
    except (OSError, ValueError) as e:      # unreadable file or bad JSON
        print(f"scenario: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    except ScenarioError as e:
        print(str(e).replace("\n", " "), file=sys.stderr)
        return 2
    print(json.dumps(result, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
