"""Page sizes come from the running system, never a 4 KiB constant: the parser on recorded
/sys and /proc text, and memtouch/ptrchase with Sunway's 8 KiB base page injected
(tests/unit/pages_test.c)."""
import json
import os
import subprocess

import pytest

from hwlab_helpers import HW

TEST = os.path.join(HW, "build", "pages-test")


@pytest.fixture(scope="module")
def pages_test():
    r = subprocess.run(["make", "-s", "-C", HW, "build/pages-test"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return TEST


def test_parser_and_alignment(pages_test):
    r = subprocess.run([pages_test, "parse"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.strip() == "parse ok", r.stdout


def by_name(items):
    return {x["name"]: x for x in items}


def test_8k_pages_injected(pages_test):
    r = subprocess.run([pages_test, "run", "8192", str(8 << 20)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = by_name(json.loads(r.stdout))
    mt = by_name(out["memtouch"]["cases"])
    assert set(mt) == {"8k", "thp"}         # named by the page size, not "4k"
    for name, c in mt.items():
        p = c["params"]
        assert p["page_bytes"] == 8192 and p["region_bytes"] == 8 << 20
        assert p["bytes"] == 16 << 20 and p["pages"] == (16 << 20) // 8192 == 2048
        assert p["regions"] == 2 and "pages_4k" not in p
        m = by_name(c["metrics"])
        assert m["first_touch"]["count"] == m["second_touch"]["count"] == p["runs"] * 2048
        assert m["first_touch"]["per"].startswith("8 KiB page")
        assert m["region_first_touch"]["count"] == p["runs"] * 2
        assert "8 MiB region" in m["region_first_touch"]["per"]
        assert "1024 writes of a 8 KiB page" in m["region_first_pass"]["per"]
        assert m["first_pass"]["count"] == p["runs"] == len(p["first_pass_s_runs"])
    pc = by_name(out["ptrchase"]["cases"])
    assert set(pc) == {"8k_4MiB", "8k_16MiB", "thp_4MiB", "thp_16MiB"}
    assert pc["8k_16MiB"]["params"]["pages"] == 2048
    assert pc["8k_16MiB"]["metrics"][0]["per"] == "dependent load, one 8 KiB page per node"
