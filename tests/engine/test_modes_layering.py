"""The engine's modes behind one table (model.md 1, "Adding a mode"): calls between the
engine's files go one way, so no file calls back into one that calls it; translate.c
dispatches through the mode's table and asks no mode what it is; every mode has its row.

The call graph is read from the object files themselves (the symbols each defines and
the ones it needs), not from the source text, so a call through a macro or an inline
helper counts too."""
import os
import pathlib
import re
import shutil
import subprocess
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SRC = ROOT / "wasm-core" / "src"
CC = os.environ.get("CC", "cc")


@pytest.fixture(scope="module")
def graph():
    """file -> the engine files whose functions or data it uses."""
    if not shutil.which("nm"):
        pytest.fail("nm (binutils) is needed to read the object files")
    if not (SRC / "cost_params.h").exists():
        subprocess.run(["make", "-s", "-C", str(ROOT / "wasm-core"), "src/cost_params.h"], check=True)
    defs, uses = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for c in sorted(SRC.glob("*.c")):
            obj = pathlib.Path(tmp) / (c.stem + ".o")
            subprocess.run([CC, "-std=c11", "-O1", "-I", str(ROOT / "wasm-core" / "include"), "-I", str(SRC), "-c",
                            str(c), "-o", str(obj)], check=True)
            out = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                f = line.split()
                if len(f) == 3 and f[1] in "TDRB":
                    defs[f[2]] = c.stem
                elif len(f) == 2 and f[0] == "U":
                    uses.setdefault(c.stem, set()).add(f[1])
    return {f: {defs[s] for s in u if s in defs and defs[s] != f} for f, u in uses.items()}


def cycles(g):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_circle():
    # the checker itself: the four-file circle the engine once had is found
    circle = {"translate": {"shadow", "agile"}, "shadow": {"translate", "build"}, "agile": {"translate", "shadow"},
              "build": {"shadow", "agile"}}
    assert cycles(circle) == [["agile", "build", "shadow", "translate"]]
    assert cycles({"a": {"b"}, "b": {"c"}}) == []


def test_no_circle_among_engine_files(graph):
    assert cycles(graph) == [], "engine files that call each other in a circle"


def test_layers(graph):
    # the modes use the shared walk and the VMM's tables; those never call a mode or the dispatcher
    modes = {"native", "tdp", "flat", "shadow", "agile"}
    for low in ("walk", "vmm", "build"):
        assert not graph.get(low, set()) & (modes | {"translate", "mode"}), f"{low}.c calls up into {graph[low]}"
    for m in modes:
        assert "translate" not in graph.get(m, set()), f"{m}.c calls back into translate.c"
        assert not graph.get(m, set()) & (modes - {m}), f"{m}.c calls another mode: {graph[m]}"
    assert "walk" in graph["translate"]


def test_translate_asks_no_mode():
    text = (SRC / "translate.c").read_text()
    code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    assert "ops->translate" in code and "ops->event" in code
    for flag in ("MODE_", "->mode", "shadow", "agile", "flat", "nested_ept", "nested_npt"):
        assert flag not in code, f"translate.c tests {flag}"


def test_every_mode_has_a_row():
    enum = re.search(r"enum vm_mode \{([^}]*)\}", (SRC / "model.h").read_text()).group(1)
    names = [n.strip() for n in enum.split(",") if n.strip()]
    table = (SRC / "mode.c").read_text()
    for n in names:
        assert re.search(rf"\[{n}\]\s*=\s*&mode_\w+", table), f"{n} has no row in mode.c"
