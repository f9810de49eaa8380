"""cpuid_exit's cpuid_leaf0 is the published method: its min agrees with the published
own program (bench/published_cpuid.c, a second implementation) on this machine, run side by
side in turn, best of 3 each. The fenced measurement is its own case."""
import os
import platform
import subprocess
import sys

import pytest

from hwlab_helpers import HW, bench, case, metric

sys.path.insert(0, os.path.join(HW, "bench"))
import cpuid_vs_published  # noqa: E402

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 only")


@pytest.fixture(scope="module")
def published_bin(hwlab_bin):
    r = subprocess.run(["make", "-s", "-C", HW, "build/published_cpuid"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    return os.path.join(HW, "build", "published_cpuid")


def test_published_method_min_agrees_with_the_published_program(published_bin, hwlab_bin):
    rows = []

    def agree():
        best_hwlab, best_published = min(r[0] for r in rows), min(r[1] for r in rows)
        assert best_published > 0
        # the same method gives the same minimum within 3 %, or within what either program's
        # own minimum moves between its rounds (a VM's exits move by more: 2,328-2,408 once)
        spread = max(max(r[i] for r in rows) - min(r[i] for r in rows) for i in (0, 1))
        return abs(best_hwlab - best_published) <= max(0.03 * best_published, spread)

    # A B A B A B: both see the same drift; a VM's exit cost can sit high for a while (a
    # busy host: hw-lab 2,597-2,670 against 2,401-2,450 cycles in one CI run, both agreeing
    # a minute later), so up to 5 more pairs before the best of each is compared
    for i in range(8):
        rows.append((cpuid_vs_published.hwlab_once(hwlab_bin)[0], cpuid_vs_published.published_once(published_bin)[0]))
        if i >= 2 and agree():
            break
    assert agree(), rows


def test_cases_say_which_method(quick_result):
    b = bench(quick_result[0], "cpuid_exit")
    names = [c["name"] for c in b["cases"]]
    assert names == ["cpuid_leaf0", "timer_overhead_unfenced", "timer_overhead",
                     "cpuid_leaf0_fenced"]
    pub = case(b, "cpuid_leaf0")
    assert pub["params"]["method"].startswith("published: unfenced")
    assert pub["params"]["samples"] == 65536 and pub["params"]["warmup_samples"] == 0
    assert pub["params"]["leaf"] == 0
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


def test_one_published_subcase(hwlab_bin):
    import json
    r = subprocess.run([hwlab_bin, "bench", "--quick", "--only", "cpuid_exit:cpuid_leaf0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    b = json.loads(r.stdout)["benchmarks"][0]
    assert [c["name"] for c in b["cases"]] == ["cpuid_leaf0"]
