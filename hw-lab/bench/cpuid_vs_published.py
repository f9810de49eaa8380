#!/usr/bin/env python3
"""hwlab's cpuid_leaf0 case next to the published cpuid program (bench/published_cpuid.c),
run in turn on this machine: A B A B ..., each run a fresh process of 65,536 samples.

Prints each round's two mins and their ratio, then the median and range of the paired
ratios and the best-of-all mins. The published figures are mins, so the min is what must
agree; averages are printed for reference (they move with whatever else the machine does).

    python3 hw-lab/bench/cpuid_vs_published.py [--rounds N]      (make -C hw-lab bench)
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(HERE, "build", "hwlab")
PUBLISHED = os.path.join(HERE, "build", "published_cpuid")


def build():
    r = subprocess.run(["make", "-s", "-C", HERE, "build/hwlab", "build/published_cpuid"],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit("cpuid_vs_published: build failed:\n" + r.stderr)


def hwlab_cases(binary=BIN, only="cpuid_exit"):
    """{case: metric} of one fresh hwlab process."""
    r = subprocess.run([binary, "bench", "--quick", "--only", only],
                       capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise RuntimeError("hwlab failed: " + r.stderr[-500:])
    return {c["name"]: c["metrics"][0] for c in json.loads(r.stdout)["benchmarks"][0]["cases"]}


def hwlab_once(binary=BIN):
    """min and mean of hwlab's cpuid_leaf0 (the published method) in one fresh process."""
    m = hwlab_cases(binary, "cpuid_exit:cpuid_leaf0")["cpuid_leaf0"]
    return m["min"], m["mean"]


def published_once(binary=PUBLISHED):
    """min and average printed by the published program in one fresh process."""
    r = subprocess.run([binary], capture_output=True, text=True, timeout=120)
    words = r.stdout.split()
    if r.returncode or len(words) != 4 or words[0] != "min" or words[2] != "avg":
        raise RuntimeError("published_cpuid printed %r (exit %d)" % (r.stdout, r.returncode))
    return float(words[1]), float(words[3])


def side_by_side(rounds):
    """[(hwlab_min, pub_min, hwlab_mean, pub_avg, fenced_min, fenced_overhead_min)]
    alternating, hwlab first; hwlab runs all four cpuid_exit cases, the published program first."""
    out = []
    for _ in range(rounds):
        cs = hwlab_cases()
        a, f, o = cs["cpuid_leaf0"], cs["cpuid_leaf0_fenced"], cs["timer_overhead"]
        b_min, b_avg = published_once()
        out.append((a["min"], b_min, a["mean"], b_avg, f["min"], o["min"]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    a = ap.parse_args()
    if platform.machine() not in ("x86_64", "amd64"):
        print("cpuid_vs_published: x86 only (this is %s)" % platform.machine())
        return 0
    build()
    rows = side_by_side(a.rounds)
    print("cpuid leaf 0, TSC cycles per unfenced rdtsc;cpuid;rdtsc sample, 65,536 samples a run")
    print("%5s %10s %10s %7s %11s %10s %11s %9s" % (
        "round", "hwlab min", "pub. min", "ratio", "hwlab mean", "pub. avg", "fenced min",
        "fenced/pub."))
    for i, (am, bm, amean, bavg, fm, _) in enumerate(rows, 1):
        print("%5d %10.0f %10.0f %7.4f %11.0f %10.0f %11.0f %9.4f" % (
            i, am, bm, am / bm, amean, bavg, fm, fm / bm))
    ratios = [r[0] / r[1] for r in rows]
    fenced = [r[4] / r[1] for r in rows]
    print("paired ratio hwlab/published of the mins: median %.4f (range %.4f .. %.4f, %d pairs)"
          % (statistics.median(ratios), min(ratios), max(ratios), len(ratios)))
    print("paired ratio fenced cpuid_leaf0_fenced/published of the mins: median %.4f (range %.4f "
          ".. %.4f); the fenced timer's own min is %.0f cycles"
          % (statistics.median(fenced), min(fenced), max(fenced), min(r[5] for r in rows)))
    best_a, best_b = min(r[0] for r in rows), min(r[1] for r in rows)
    print("best of all runs: hwlab %.0f, published %.0f (%+.2f %%)" % (
        best_a, best_b, 100.0 * (best_a - best_b) / best_b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
