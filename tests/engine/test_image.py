"""`vmsim image FILE`: the built machine as data, what tests/bochs loads into Bochs. Checked
against the engine's own walks: before any access every word a first walk reads must be
in the image with the value the walk saw, and the registers must be the result's."""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))
EXAMPLES = sorted((ROOT / "wasm-core" / "examples").glob("*.json"))


def vmsim(cmd, path):
    assert os.path.exists(VMSIM), "build the engine first: make -C wasm-core native"
    p = subprocess.run([VMSIM, cmd, str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_image_holds_what_the_first_walk_reads(path):
    image, result = vmsim("image", path), vmsim("run", path)
    assert image["format"] == "vmsim-image/1"
    assert image["cr3s"][0] == result["cr3"]
    assert image["eptp"] == result["eptp"]
    words = {int(k, 16): int(v, 16) for k, v in image["words"].items()}
    assert all(v != 0 and k % 8 == 0 for k, v in words.items())
    first = result["accesses"][0]["steps"] if result["accesses"] else []
    checked = 0
    for s in first:
        if s["kind"] != "read" or s["result"] == "written":
            continue
        pa = int(s["entry_hpa"], 16)
        word = words.get(pa & ~7, 0)
        size = 4 if s["dim"] == "guest" and result["guest_paging"] == "32bit" else 8
        value = (word >> (8 * (pa & 7))) & ((1 << (8 * size)) - 1)
        if result["mode"] in ("flat", "shadow") and s["dim"] == "nested":
            continue     # filled while the walk runs (lazy flat entries, shadow fills)
        if result["mode"] == "agile" and s["dim"] == "nested" and s["gpa"] is None:
            continue     # agile's shadow entries, filled while the walk runs
        # a nested entry read later in the same access may carry the A (and D) bits an
        # earlier nested walk of that access set (model.md 6)
        ad = {"npt": 0x60, "ept": 0x300, "agile": 0x300}.get(result["mode"], 0) if s["dim"] == "nested" else 0
        assert value & ~ad == int(s["entry"], 16) & ~ad, f"{path.stem}: {s['entry_hpa']}"
        checked += 1
    if result["mode"] not in ("shadow", "agile") and first:
        assert checked > 0


def test_image_of_a_pae_guest_has_its_pdptes():
    image = vmsim("image", ROOT / "wasm-core" / "examples" / "pae-ept.json")
    assert image["pdptes"][0] == "0x101001" and image["pdptes"][1:] == ["0x0"] * 3


def test_image_of_vmfunc_gate_has_the_eptp_list():
    image = vmsim("image", ROOT / "wasm-core" / "examples" / "vmfunc-gate.json")
    lst = int(image["eptp_list_hpa"], 16)
    words = {int(k, 16): int(v, 16) for k, v in image["words"].items()}
    assert words[lst] == int(image["eptp"], 16)
    assert words[lst + 8] & 0x3f == int(image["eptp"], 16) & 0x3f   # same type and walk length
    assert lst + 16 not in words                                      # entry 2 empty
