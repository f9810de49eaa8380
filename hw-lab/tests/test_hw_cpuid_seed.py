"""cpuid_exit's cpuid_leaf0 is the seed document's method: its min agrees with the seed's
own program (bench/seed_cpuid.c, a second implementation) on this machine, run side by
side in turn, best of 3 each. The fenced measurement is its own case."""
import os
import platform
import subprocess
import sys

import pytest

from hwlab_helpers import HW, bench, case, metric

sys.path.insert(0, os.path.join(HW, "bench"))
import cpuid_vs_seed  # noqa: E402

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 only")


@pytest.fixture(scope="module")
def seed_bin(hwlab_bin):
    r = subprocess.run(["make", "-s", "-C", HW, "build/seed_cpuid"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return os.path.join(HW, "build", "seed_cpuid")


def test_seed_method_min_agrees_with_the_seed_program(seed_bin, hwlab_bin):
    rows = []
    for _ in range(3):                      # A B A B A B: both see the same drift
        rows.append((cpuid_vs_seed.hwlab_once(hwlab_bin)[0], cpuid_vs_seed.seed_once(seed_bin)[0]))
    best_hwlab, best_seed = min(r[0] for r in rows), min(r[1] for r in rows)
    assert best_seed > 0
    assert abs(best_hwlab - best_seed) / best_seed < 0.03, rows


def test_cases_say_which_method(quick_result):
    b = bench(quick_result[0], "cpuid_exit")
    names = [c["name"] for c in b["cases"]]
    assert names == ["cpuid_leaf0", "timer_overhead_unfenced", "timer_overhead",
                     "cpuid_leaf0_fenced"]
    seed = case(b, "cpuid_leaf0")
    assert seed["params"]["method"].startswith("seed: unfenced")
    assert seed["params"]["samples"] == 65536 and seed["params"]["warmup_samples"] == 0
    assert seed["params"]["leaf"] == 0
    fenced = case(b, "cpuid_leaf0_fenced")
    assert fenced["params"]["method"].startswith("fenced:")
    for c in b["cases"]:
        m = metric(c, "cycles")
        assert m["count"] == 65536 and m["unit"] == "tsc_cycles"
        assert m["min"] <= m["median"] <= m["max"] and m["min"] <= m["mean"] <= m["max"]
    # the fences cost something of their own: an empty fenced pair reads more than an
    # empty unfenced pair
    assert metric(case(b, "timer_overhead"), "cycles")["min"] > \
        metric(case(b, "timer_overhead_unfenced"), "cycles")["min"]


def test_one_seed_subcase(hwlab_bin):
    import json
    r = subprocess.run([hwlab_bin, "bench", "--quick", "--only", "cpuid_exit:cpuid_leaf0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    b = json.loads(r.stdout)["benchmarks"][0]
    assert [c["name"] for c in b["cases"]] == ["cpuid_leaf0"]
