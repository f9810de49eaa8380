#!/usr/bin/env python3
"""Two builds of vmsim, the same results: every example (run, explain, image), every
invalid example's refusal, random scenarios of every mode (with and without the caches),
every workload of `vmsim experiment`, `vmsim calibrate`, and trace replays through every
mode and option, byte for byte.

A change that should not change what the engine computes (a restructuring, an
optimisation of the per-access path) is checked against the revision before it:

    python3 wasm-core/scripts/same_results.py --base HEAD~1        # builds HEAD~1's engine
    python3 wasm-core/scripts/same_results.py --base-vmsim OLD --vmsim NEW

Prints "N outputs compared, K differ" (and the first lines of each difference); exit 1
when any differ.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORE = os.path.dirname(HERE)
ROOT = os.path.dirname(CORE)
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
sys.path.insert(0, os.path.join(ROOT, "hw-lab", "lib"))


def build_base(rev, workdir):
    """The engine at `rev`, built natively in workdir; returns its vmsim."""
    src = os.path.join(workdir, "base")
    os.makedirs(src)
    archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "wasm-core"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "x", "-C", src], input=archive, check=True)
    subprocess.run(["make", "-s", "-C", os.path.join(src, "wasm-core"), "build/vmsim"], check=True,
                   stdout=subprocess.DEVNULL)
    return os.path.join(src, "wasm-core", "build", "vmsim")


def call(vmsim, args, stdin=None):
    p = subprocess.run([vmsim] + args, input=stdin, capture_output=True, cwd=CORE)
    return p.returncode, p.stdout, p.stderr


def example_cases():
    ex = os.path.join(CORE, "examples")
    for name in sorted(os.listdir(ex)):
        if name.endswith(".json"):
            for cmd in ("run", "explain", "image"):
                yield f"examples/{name} {cmd}", [cmd, os.path.join(ex, name)], None
    inv = os.path.join(ex, "invalid")
    for name in sorted(os.listdir(inv)):
        if name.endswith(".json"):
            yield f"examples/invalid/{name}", ["run", os.path.join(inv, name)], None


def random_cases(n):
    import gen
    makers = [("mapped", gen.random_scenario), ("raw", gen.random_raw_scenario), ("flat", gen.random_flat_scenario),
              ("shadow", gen.random_shadow_scenario), ("sunway", gen.random_sunway_scenario),
              ("agile", gen.random_agile_scenario)]
    for seed in range(n):
        kind, make = makers[seed % len(makers)]
        sc = make(random.Random(seed))
        # every other one with the caches on (the reference walker has none, so the
        # differential tests never run them)
        if seed % 2:
            sc["caches"] = {"preset": "x86-server" if seed % 4 == 1 else "sunway-1621"}
        text = json.dumps(sc).encode()
        yield f"random {kind} seed {seed}{' caches' if seed % 2 else ''}", ["run", "-"], text


def experiment_cases(accesses):
    a = ["--accesses", str(accesses), "--quiet"]
    yield "experiment json", ["experiment", "--format", "json"] + a, None
    yield "experiment on-demand json", ["experiment", "--format", "json", "--tables", "on-demand"] + a, None
    yield "experiment csv", ["experiment", "--format", "csv"] + a, None
    yield "experiment cswitch 4/4", ["experiment", "--workload", "cswitch", "--spaces", "4", "--cr3-targets", "4",
                                     "--format", "json"] + a, None
    yield "experiment cswitch paravirt", ["experiment", "--workload", "cswitch", "--paravirt-cr3",
                                          "--format", "json"] + a, None
    yield "calibrate json", ["calibrate", "--format", "json"], None
    yield "calibrate table", ["calibrate"], None


def traces(workdir):
    from hwlab.tracefile import write_trace
    rng = random.Random(33)
    out = []
    # random over 3000 pages (the TLB evicts), a hot loop, a strided scan with writes, fetches
    acc = []
    for i in range(120000):
        r = rng.random()
        if r < 0.5:
            acc.append((rng.choice((0, 0, 1, 2)), 0x400000 + 4096 * rng.randrange(3000) + rng.randrange(4096)))
        elif r < 0.8:
            acc.append((0, 0x7f0000000000 + 64 * (i % 2048)))
        else:
            acc.append((3 if i % 7 == 0 else 1, 0x10000000 + 4096 * ((i * 13) % 9000) + (i % 64) * 8))
    p = os.path.join(workdir, "mixed.vmtrace")
    write_trace(p, acc)
    out.append(p)
    # 2 MiB regions apart (huge guest pages, 1 GiB spans)
    acc = [(i % 3, (i % 5) * (1 << 30) + 4096 * ((i * 7919) % 1200) + i % 4096) for i in range(60000)]
    p = os.path.join(workdir, "spread.vmtrace")
    write_trace(p, acc)
    out.append(p)
    chase = os.path.join(ROOT, "hw-lab", "build", "traces", "pointer-chase.vmtrace")
    if os.path.exists(chase):
        out.append(chase)
    return out


def replay_cases(workdir):
    opts = [[], ["--start", "warm", "--guest-pages", "2m"], ["--preset", "sunway-1621", "--host-pages", "4k"],
            ["--tables", "on-demand"], ["--tables", "on-demand", "--start", "warm"],
            ["--cycles-per-ref", "30"], ["--host-pages", "4k", "--huge-min", "1"]]
    opts += [["--modes", "native,ept,npt,shadow,flat,agile", "--agile-switch-level", str(s)] for s in range(5)]
    opts += [["--modes", "shadow,agile", "--tables", "on-demand", "--agile-switch-level", "2"]]
    for t in traces(workdir):
        for o in opts:
            yield f"replay {os.path.basename(t)} {' '.join(o)}", ["replay", t, "--format", "json", "--quiet"] + o, None
        yield f"replay {os.path.basename(t)} table", ["replay", t, "--quiet"], None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--base", help="git revision whose engine is built and compared")
    g.add_argument("--base-vmsim", help="a vmsim binary to compare with")
    ap.add_argument("--vmsim", default=os.path.join(CORE, "build", "vmsim"))
    ap.add_argument("--random", type=int, default=1200, help="random scenarios (default 1200)")
    ap.add_argument("--accesses", type=int, default=200000, help="experiment accesses per workload")
    ap.add_argument("--quick", action="store_true", help="examples, random scenarios and calibrate only")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        base = args.base_vmsim or build_base(args.base, work)
        groups = [example_cases(), random_cases(args.random)]
        if not args.quick:
            groups += [experiment_cases(args.accesses), replay_cases(work)]
        else:
            groups += [iter([("calibrate json", ["calibrate", "--format", "json"], None)])]
        n = differ = 0
        for cases in groups:
            for label, argv, stdin in cases:
                n += 1
                a, b = call(base, argv, stdin), call(args.vmsim, argv, stdin)
                if a != b:
                    differ += 1
                    if differ <= 10:
                        print(f"DIFFERS: {label} (exit {a[0]} vs {b[0]})")
                        la = (a[1] + a[2]).decode(errors="replace").splitlines()
                        lb = (b[1] + b[2]).decode(errors="replace").splitlines()
                        for i, (x, y) in enumerate(zip(la, lb)):
                            if x != y:
                                print(f"  line {i + 1}:\n  - {x[:300]}\n  + {y[:300]}")
                                break
                        else:
                            print(f"  {len(la)} lines vs {len(lb)} lines")
    print(f"{n} outputs compared, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
