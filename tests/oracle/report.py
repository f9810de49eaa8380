"""The fidelity runs' shared steps: the engine's side (vmsim), the scenario as compared,
and the summary both print and write."""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess

from oracle.guest import Unsupported

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VMSIM = os.environ.get("VMSIM", os.path.join(ROOT, "wasm-core", "build", "vmsim"))
ARTIFACTS = os.path.join(ROOT, "tests", "artifacts")


def vmsim(cmd: str, scenario: dict) -> dict:
    p = subprocess.run([VMSIM, cmd, "-"], input=json.dumps(scenario).encode(),
                       capture_output=True)
    if p.returncode != 0:
        raise Unsupported(f"vmsim {cmd} rejected it: {p.stderr.decode().strip()}")
    return json.loads(p.stdout)


def arguments(description: str, web_data: str) -> argparse.ArgumentParser:
    """The options both runs take (tests/*/run --help); each adds its own."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--count", type=int, default=300, help="accesses to compare (examples included)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--examples-only", action="store_true")
    ap.add_argument("--scenario", help="run this one scenario file only")
    ap.add_argument("--report", help="write a JSON report here")
    ap.add_argument("--web-data", help=web_data)
    return ap


def caches_off(sc: dict, maxphyaddr: int) -> dict:
    """A copy of sc without the engine's caches and with the CPU's physical-address width
    (a scenario whose addresses do not fit is rejected by the engine and not run)."""
    sc = copy.deepcopy(sc)
    sc.setdefault("machine", {})["maxphyaddr"] = maxphyaddr
    sc.pop("caches", None)
    return sc


def count_ops(ops: dict, accesses: list) -> None:
    """Adds each access or event to ops by kind (reads, writes, fetches by privilege)."""
    for a in accesses:
        op = a.get("op") or next(k for k in ("vmfunc", "vmcall", "mov_cr3", "invlpg", "pte_write")
                                 if k in a)
        if op in ("read", "write", "fetch"):
            op += "/user" if a.get("user") else "/supervisor"
        ops[op] = ops.get(op, 0) + 1


def save_failure(oracle: str, seed: int, name: str, sc: dict) -> None:
    """A random scenario that disagrees, kept in tests/artifacts for a replay."""
    os.makedirs(ARTIFACTS, exist_ok=True)
    path = os.path.join(ARTIFACTS, f"{oracle}-fail-{seed}-{name.rsplit('#', 1)[1]}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(sc, f, indent=1)
    print(f"saved {path} (replay: tests/{oracle}/run --scenario {os.path.relpath(path, ROOT)})")


def print_findings(disagreements: list, deviations: list, compare, cpu: str, key: str) -> dict:
    """Prints every disagreement and each known deviation of the CPU (cpu: its name in
    the text, key: its side in a deviation record) with its first case; -> the
    deviations by kind."""
    for d in disagreements:
        print(compare.describe(d))
    kinds = {}
    for d in deviations:
        kinds.setdefault(d["deviation"], []).append(d)
    for kd, lst in sorted(kinds.items()):
        print(f"known {cpu} deviation {kd}: {len(lst)} (first: {lst[0]['scenario']} access "
              f"{lst[0]['access']}: engine {lst[0]['engine']}, {key} {lst[0][key]})")
        print(f"  {compare.DEVIATIONS[kd]}")
    return kinds


def write_json(path: str, data: dict, default=None) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, default=default)
        f.write("\n")
