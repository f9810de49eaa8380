"""Bochs fidelity run: the engine's scenarios on an executing CPU (Bochs with VMX).

    tests/bochs/run [--count N] [--seed S] [--examples-only] [--report FILE] [--verbose]

For each scenario (every example in wasm-core/examples Bochs can run, then random
machines until N accesses have been compared): the engine's result and built machine
(vmsim run / vmsim image, with caches off), the same machine and accesses run on Bochs
(plan.py, machine.py), and a comparison of every access (compare.py). The last line is
exactly `bochs: N accesses compared, M disagreements`; the exit status is 1 when M > 0.
"""

from __future__ import annotations

import datetime
import glob
import json
import os
import random
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))

import plan as planmod  # noqa: E402
import compare  # noqa: E402
import gen_bochs  # noqa: E402
from oracle.report import (arguments, vmsim, caches_off, count_ops, save_failure,  # noqa: E402
                           print_findings, write_json)

BUILD = os.path.join(HERE, "build")


_bins = {}


def nasm(src: str, defines: dict) -> bytes:
    key = (src, tuple(sorted(defines.items())))
    if key not in _bins:
        os.makedirs(BUILD, exist_ok=True)
        out = os.path.join(BUILD, f"{os.path.splitext(src)[0]}-" +
                           "-".join(f"{v:x}" for _, v in sorted(defines.items())) + ".bin")
        if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(os.path.join(HERE, src)):
            args = ["nasm", "-f", "bin", "-w-number-overflow", "-I", HERE + "/"] + \
                   [f"-D{k}={v:#x}" for k, v in defines.items()] + ["-o", out, os.path.join(HERE, src)]
            subprocess.run(args, check=True)
        with open(out, "rb") as f:
            _bins[key] = f.read()
    return _bins[key]


LABELS = ["next", "k_read", "k_write", "k_fetch", "k_mov_cr3", "k_invlpg", "k_vmfunc",
          "k_vmcall", "pte_point", "fault_entry", "back_entry", "u_read", "u_write", "u_fetch"]


def host_bin_for(hb: int):
    b = nasm("host.asm", {"HBASE": hb})
    done = struct.unpack_from("<I", b, len(b) - 4)[0]
    return b, hb + 0x8000 + done


def guest_bin_for(paging: str, gv: int):
    src = "guest64.asm" if paging == "4level" else "guest32.asm"
    b = nasm(src, {"GV": gv})
    offs = struct.unpack_from(f"<{len(LABELS)}I", b, 0xf00)
    return b, dict(zip(LABELS, offs))


def for_bochs(sc: dict) -> dict:
    """The scenario as it is compared: the engine's caches off (Bochs has a TLB only,
    flushed before every access by the harness, and no paging-structure caches), and
    the physical-address width of Bochs' CPU (40 bits; a scenario whose addresses do not
    fit is rejected by the engine and not run)."""
    sc = caches_off(sc, planmod.BOCHS_MAXPHYADDR)
    if "nested" in sc:
        sc["nested"].pop("flush_on_eptp_switch", None)
    return sc


def run_one(sc: dict, verbose: bool = False):
    """-> (accesses compared, disagreements, known Bochs deviations, Bochs' records)"""
    import machine          # needs the patched bochscpu: imported only when running
    sc = for_bochs(sc)
    result = vmsim("run", sc)
    image = vmsim("image", sc)
    p = planmod.make_plan(sc, result, image, host_bin_for, guest_bin_for)
    sc2 = planmod.harness_overrides(sc, image, p)
    if sc2 is not sc:
        sc = sc2
        result = vmsim("run", sc)
        image = vmsim("image", sc)
        p = planmod.make_plan(sc, result, image, host_bin_for, guest_bin_for)
    got = machine.run(p)
    dis, devs, n = compare.compare(sc, result, p, got)
    if verbose:
        for i, rec in enumerate(got["records"]):
            print(f"  [{i}] {json.dumps(rec, default=hex)[:600]}")
        for _, pr in got["problems"]:
            print("  problem:", pr)
    return n, dis, devs, got


def main(argv=None) -> int:
    ap = arguments(__doc__.split("\n\n")[0], "write the page's verified-on-Bochs data here")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)

    started = time.time()
    compared = 0
    disagreements = []
    deviations = []
    examples = {}
    skipped = []
    scenarios = 0
    modes = {}
    ops = {}

    def account(name: str, sc: dict, origin: str):
        nonlocal compared, scenarios
        if os.environ.get("BOCHS_PROGRESS"):
            print(f"running {name}", file=sys.stderr, flush=True)
        try:
            n, dis, devs, got = run_one(sc, args.verbose)
        except planmod.Unsupported as e:
            skipped.append({"scenario": name, "reason": str(e)})
            if origin == "example":
                examples[name] = {"verified": False, "reason": str(e)}
            return 0
        compared += n
        scenarios += 1
        count_ops(ops, sc["accesses"][:n])
        key = f"{sc['mode']}/{sc['guest']['paging']}"
        modes[key] = modes.get(key, 0) + n
        if dis and origin == "random":
            save_failure("bochs", args.seed, name, sc)
        for d in devs:
            d["scenario"] = name
        deviations.extend(devs)
        for d in dis:
            d["scenario"] = name
        disagreements.extend(dis)
        if origin == "example":
            examples[name] = {"verified": not dis and not devs, "accesses": n,
                              "disagreements": len(dis), "known_deviations": len(devs),
                              "bochs_reads": [[hex(pa) for pa, _ in (r or {}).get("reads", [])]
                                              for r in got["records"][:-1]]}
        return n

    if args.scenario:
        with open(args.scenario, encoding="utf-8") as f:
            account(os.path.basename(args.scenario), json.load(f), "file")
    else:
        for path in sorted(glob.glob(os.path.join(ROOT, "wasm-core", "examples", "*.json"))):
            with open(path, encoding="utf-8") as f:
                account(os.path.basename(path)[:-5], json.load(f), "example")
        if not args.examples_only:
            rng = random.Random(args.seed)
            k = 0
            while compared < args.count:
                sc = gen_bochs.random_machine(rng, k)
                account(f"random seed {args.seed} #{k}", sc, "random")
                k += 1

    kinds = print_findings(disagreements, deviations, compare, "Bochs", "bochs")
    seconds = time.time() - started
    verified = sorted(n for n, e in examples.items() if e.get("verified"))
    print(f"scenarios: {scenarios} run ({', '.join(f'{k} {v}' for k, v in sorted(modes.items()))} "
          f"accesses), {len(skipped)} not runnable on Bochs; examples verified: "
          f"{len(verified)} of {len(examples)}; {seconds:.1f} s")
    print("compared: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    for s in skipped:
        if not s["scenario"].startswith("random"):
            print(f"  not run: {s['scenario']}: {s['reason']}")
    if args.report:
        report = {
            "format": "vmemlab-bochs-fidelity/1",
            "date": datetime.date.today().isoformat(),
            "bochs": "bochscpu-python 0.4.0 (Bochs CPU, VMX, corei3_cnl model)",
            "seed": args.seed, "accesses_compared": compared,
            "disagreements": len(disagreements), "scenarios": scenarios,
            "accesses_by_mode": modes, "accesses_by_kind": ops, "seconds": round(seconds, 1),
            "examples": examples, "not_runnable": skipped,
            "disagreement_list": disagreements,
            "known_deviations": {k: {"count": len(v), "reason": compare.DEVIATIONS[k],
                                     "examples": v[:5]} for k, v in kinds.items()},
        }
        write_json(args.report, report, default=hex)
    if args.web_data:
        data = {
            "format": "vmemlab-bochs-verified/1",
            "date": datetime.date.today().isoformat(),
            "accesses_compared": compared, "disagreements": len(disagreements),
            "known_deviations": {k: len(v) for k, v in kinds.items()},
            "compared_as": "the engine's caches off, MAXPHYADDR 40 (Bochs' CPU)",
            "examples": {n: e for n, e in sorted(examples.items()) if e.get("verified")},
        }
        if os.path.exists(args.web_data):
            # the NPT part (make fidelity-npt, tests/svm) stays as it is
            with open(args.web_data, encoding="utf-8") as f:
                old = json.load(f)
            if "npt" in old:
                data["npt"] = old["npt"]
        write_json(args.web_data, data)
    print(f"bochs: {compared} accesses compared, {len(disagreements)} disagreements")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
