"""Differential test: the C engine (`vmsim run FILE`) against refwalk.py.

For seeds 0..N-1 (N = $DIFF_SCENARIOS, default 400) gen.py makes a random valid
scenario; both implementations run it and the result objects must be equal field by
field, key order included (model.md section 5 fixes the order).  A mismatch fails with
the seed, the JSON path of the first difference and both values, and the scenario is
saved to tests/artifacts/diff-fail-SEED.json (re-run it with
`wasm-core/build/vmsim run FILE` and `python3 tests/reference/refwalk.py run FILE`).

The same comparison runs on seeds 0..F-1 (F = $DIFF_FLAT_SCENARIOS, default 200) of
gen.random_flat_scenario (mode flat; artifact diff-fail-flat-SEED.json), on seeds 0..S-1
(S = $DIFF_SHADOW_SCENARIOS, default 200) of gen.random_shadow_scenario (mode shadow,
every x86 guest, with page-table writes, mov cr3 and invlpg; diff-fail-shadow-SEED.json),
on seeds 0..W-1 (W = $DIFF_SUNWAY_SCENARIOS, default 150) of gen.random_sunway_scenario
(Sunway guests, native and flat; diff-fail-sunway-SEED.json), on seeds 0..A-1
(A = $DIFF_AGILE_SCENARIOS, default 120) of gen.random_agile_scenario (mode agile, the
switching level seed % 6: every level from all shadow to all nested, 5level guests up
to their root; page-table writes, the VMM policy, mov cr3 and invlpg;
diff-fail-agile-SEED.json),
and on seeds 0..R-1 (R = $DIFF_RAW_SCENARIOS, default 500) of
gen.random_raw_scenario: guests whose page tables are given as they are (guest.tables
with guest.cr3), random table graphs with shared subtrees, cycles, large pages,
reserved bits and pointers to frames that hold no table (artifact
tests/artifacts/diff-fail-raw-SEED.json; `python3 tests/reference/gen.py --raw SEED`).

Both must also reject the hand-made invalid scenarios in gen.INVALID_SCENARIOS:
vmsim with exit status 2 and one line on stderr, refwalk with ScenarioError.

The binary is wasm-core/build/vmsim ($VMSIM overrides); when it is missing the tests
fail (they do not skip): build it with `make -C wasm-core`.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen  # noqa: E402
import refwalk  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
VMSIM = os.environ.get("VMSIM", os.path.join(REPO, "wasm-core", "build", "vmsim"))
ARTIFACTS = os.path.join(REPO, "tests", "artifacts")
N_SCENARIOS = int(os.environ.get("DIFF_SCENARIOS", "400"))
N_RAW_SCENARIOS = int(os.environ.get("DIFF_RAW_SCENARIOS", "500"))
N_FLAT_SCENARIOS = int(os.environ.get("DIFF_FLAT_SCENARIOS", "200"))
N_SHADOW_SCENARIOS = int(os.environ.get("DIFF_SHADOW_SCENARIOS", "200"))
N_SUNWAY_SCENARIOS = int(os.environ.get("DIFF_SUNWAY_SCENARIOS", "150"))
N_AGILE_SCENARIOS = int(os.environ.get("DIFF_AGILE_SCENARIOS", "120"))
CHUNK = 25
TIMEOUT_S = 60


def require_vmsim() -> str:
    if not (os.path.isfile(VMSIM) and os.access(VMSIM, os.X_OK)):
        pytest.fail(f"C engine not found at {VMSIM}: run `make -C wasm-core` first "
                    f"(or point $VMSIM at a built vmsim)", pytrace=False)
    return VMSIM


def run_vmsim(scenario: dict, tmpdir: str, tag: str) -> subprocess.CompletedProcess:
    path = os.path.join(tmpdir, f"{tag}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(scenario, f)
    return subprocess.run([require_vmsim(), "run", path], capture_output=True,
                          text=True, timeout=TIMEOUT_S)


# --- recursive comparison ------------------------------------------------------------

def first_difference(c, ref, path: str = "$"):
    """(path, C value, ref value, what) of the first difference, or None.  Types are
    compared strictly (JSON true is not 1), dict key order counts."""
    if type(c) is not type(ref):
        return path, c, ref, "type"
    if isinstance(c, dict):
        for key in ref:
            if key not in c:
                return f"{path}.{key}", "<missing>", ref[key], "key missing in C"
        for key in c:
            if key not in ref:
                return f"{path}.{key}", c[key], "<missing>", "key missing in ref"
        for key in ref:
            d = first_difference(c[key], ref[key], f"{path}.{key}")
            if d:
                return d
        if list(c) != list(ref):
            return path, list(c), list(ref), "key order"
        return None
    if isinstance(c, list):
        for i, (a, b) in enumerate(zip(c, ref)):
            d = first_difference(a, b, f"{path}[{i}]")
            if d:
                return d
        if len(c) != len(ref):
            return f"{path}.length", len(c), len(ref), "list length"
        return None
    if c != ref:
        return path, c, ref, "value"
    return None


def context_of(result: dict, path: str) -> str:
    """For a difference inside accesses[i], the access's gva/op and outcome in short."""
    if not path.startswith("$.accesses["):
        return ""
    try:
        i = int(path[len("$.accesses["):].split("]", 1)[0])
        a = result["accesses"][i]
    except (ValueError, IndexError, KeyError, TypeError):
        return ""
    return (f" (ref access {i}: {a['op']} {a['gva']} user={a['user']} -> {a['outcome']}"
            f", fault={json.dumps(a['fault'])})")


def save_artifact(seed, scenario: dict) -> str:
    os.makedirs(ARTIFACTS, exist_ok=True)
    path = os.path.join(ARTIFACTS, f"diff-fail-{seed}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(scenario, f, indent=1)
        f.write("\n")
    return path


def check_seed(seed: int, tmpdir: str, raw=False):
    """None when vmsim and refwalk agree on this seed, else a failure message.  raw:
    True for gen.random_raw_scenario (given guest tables), or the name of another
    generator ("flat": gen.random_flat_scenario)."""
    make = {False: gen.random_scenario, True: gen.random_raw_scenario,
            "flat": gen.random_flat_scenario, "shadow": gen.random_shadow_scenario,
            "sunway": gen.random_sunway_scenario,
            "agile": lambda rng: gen.random_agile_scenario(rng, switch_level=seed % 6)}[raw]
    scenario = make(random.Random(seed))
    if raw:
        seed = f"{'raw' if raw is True else raw}-{seed}"
    try:
        ref = refwalk.run(scenario)
    except refwalk.ScenarioError as e:
        return f"seed {seed}: generator bug, refwalk rejects the scenario: {e}"
    proc = run_vmsim(scenario, tmpdir, f"seed-{seed}")
    if proc.returncode != 0:
        where = save_artifact(seed, scenario)
        return (f"seed {seed}: vmsim exited {proc.returncode} on a valid scenario: "
                f"{proc.stderr.strip()[:500]} (scenario saved to {where})")
    try:
        c = json.loads(proc.stdout)
    except ValueError as e:
        where = save_artifact(seed, scenario)
        return f"seed {seed}: vmsim printed invalid JSON ({e}); scenario saved to {where}"
    diff = first_difference(c, ref)
    if diff is None:
        return None
    path, cv, rv, what = diff
    where = save_artifact(seed, scenario)
    return (f"seed {seed}: first difference at {path} ({what}):\n"
            f"    vmsim:   {json.dumps(cv)[:600]}\n"
            f"    refwalk: {json.dumps(rv)[:600]}\n"
            f"    {context_of(ref, path)}\n"
            f"    scenario saved to {where}")


def chunks(n: int) -> list:
    return [range(lo, min(lo + CHUNK, n)) for lo in range(0, n, CHUNK)]


CHUNKS = chunks(N_SCENARIOS)
RAW_CHUNKS = chunks(N_RAW_SCENARIOS)
FLAT_CHUNKS = chunks(N_FLAT_SCENARIOS)
SHADOW_CHUNKS = chunks(N_SHADOW_SCENARIOS)
SUNWAY_CHUNKS = chunks(N_SUNWAY_SCENARIOS)
AGILE_CHUNKS = chunks(N_AGILE_SCENARIOS)


@pytest.mark.parametrize("seeds", CHUNKS, ids=[f"seeds-{c[0]}-{c[-1]}" for c in CHUNKS])
def test_differential(seeds, tmp_path):
    run_chunk(seeds, tmp_path, raw=False)


@pytest.mark.parametrize("seeds", RAW_CHUNKS, ids=[f"raw-{c[0]}-{c[-1]}" for c in RAW_CHUNKS])
def test_differential_raw_tables(seeds, tmp_path):
    run_chunk(seeds, tmp_path, raw=True)


@pytest.mark.parametrize("seeds", FLAT_CHUNKS, ids=[f"flat-{c[0]}-{c[-1]}" for c in FLAT_CHUNKS])
def test_differential_flat(seeds, tmp_path):
    run_chunk(seeds, tmp_path, raw="flat")


@pytest.mark.parametrize("seeds", SHADOW_CHUNKS, ids=[f"shadow-{c[0]}-{c[-1]}" for c in SHADOW_CHUNKS])
def test_differential_shadow(seeds, tmp_path):
    run_chunk(seeds, tmp_path, raw="shadow")


@pytest.mark.parametrize("seeds", AGILE_CHUNKS, ids=[f"agile-{c[0]}-{c[-1]}" for c in AGILE_CHUNKS])
def test_differential_agile(seeds, tmp_path):
    run_chunk(seeds, tmp_path, raw="agile")


def test_agile_seeds_cover_every_switching_level():
    """The agile seeds reach every switching level of both guests, walks that cross the
    switch, and the policy moving subtrees both ways (else the comparison above proves
    little)."""
    seen, moved, back, crossed = set(), 0, 0, 0
    for seed in range(min(N_AGILE_SCENARIOS, 60)):
        sc = gen.random_agile_scenario(random.Random(seed), switch_level=seed % 6)
        r = refwalk.run(sc)
        seen.add((sc["guest"]["paging"], sc["agile"].get("switch_level", 0)))
        moved += r["shadow"]["to_nested"]
        back += r["shadow"]["to_shadow"]
        crossed += sum(1 for a in r["accesses"] for st in a["steps"] if "SW" in st["flags"])
    for paging, top in (("4level", 4), ("5level", 5)):
        assert {lv for p, lv in seen if p == paging} == set(range(top + 1)), (paging, seen)
    assert moved > 0 and back > 0 and crossed > 0, (moved, back, crossed)


@pytest.mark.parametrize("seeds", SUNWAY_CHUNKS, ids=[f"sunway-{c[0]}-{c[-1]}" for c in SUNWAY_CHUNKS])
def test_differential_sunway(seeds, tmp_path):
    run_chunk(seeds, tmp_path, raw="sunway")


def run_chunk(seeds, tmp_path, raw) -> None:
    require_vmsim()
    # vmsim runs in a subprocess, so two threads overlap it with refwalk's Python work.
    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(lambda s: check_seed(s, str(tmp_path), raw), seeds)
                    if f]
    if failures:
        others = "" if len(failures) == 1 else \
            f"\n({len(failures) - 1} more failing seeds in this chunk: " + \
            ", ".join(f.split(":", 1)[0] for f in failures[1:]) + ")"
        pytest.fail(failures[0] + others, pytrace=False)


@pytest.mark.parametrize("case", gen.INVALID_SCENARIOS, ids=[c[0] for c in gen.INVALID_SCENARIOS])
def test_both_reject_invalid(case, tmp_path):
    name, scenario, field_path = case
    with pytest.raises(refwalk.ScenarioError) as err:
        refwalk.run(scenario)
    assert str(err.value).startswith(field_path), str(err.value)
    proc = run_vmsim(scenario, str(tmp_path), name)
    assert proc.returncode == 2, (f"{name}: vmsim exit status {proc.returncode}, want 2; "
                                  f"stderr: {proc.stderr.strip()[:300]}")
    lines = proc.stderr.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].strip(), \
        f"{name}: want one line on stderr, got {proc.stderr!r}"


# Entry indices are plain decimal (the schema's ^(0|[1-9][0-9]{0,3})$): ' 1', '01', ' -0' are errors.
@pytest.mark.parametrize("case", gen.LENIENT_INDEX_SCENARIOS,
                         ids=[c[0] for c in gen.LENIENT_INDEX_SCENARIOS])
def test_both_reject_lenient_index(case, tmp_path):
    test_both_reject_invalid(case, tmp_path)
