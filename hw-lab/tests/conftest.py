"""Fixtures: the built binary, the schema, and one quick run shared by the tests that
only read its result."""
import json
import os
import subprocess

import pytest

from hwlab_helpers import BIN, HW, run_cmd


@pytest.fixture(scope="session")
def hwlab_bin():
    r = subprocess.run(["make", "-s", "-C", HW, "build/hwlab"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return BIN


@pytest.fixture(scope="session")
def schema():
    with open(os.path.join(HW, "schema", "result.schema.json")) as f:
        return json.load(f)


@pytest.fixture(scope="session")
def quick_result(hwlab_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("quick") / "result.json"
    r = run_cmd(["--quick", "--no-build", "--out", str(out)], timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(out) as f:
        return json.load(f), r.stderr
