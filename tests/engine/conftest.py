"""Fixtures the engine's tests share: made once for the whole run."""
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "hw-lab" / "lib"))

from hwlab.tracefile import write_trace  # noqa: E402
from test_replay_jobs import evicting  # noqa: E402


@pytest.fixture(scope="session")
def long_trace(tmp_path_factory):
    """1.5 M accesses of the evicting trace, 4.5 MB: many reads of the file a pass, and a
    progress line at about every tenth of each. Read only: a test that changes it copies it."""
    path = tmp_path_factory.mktemp("long") / "evicting-1.5m.vmtrace"
    write_trace(path, evicting(n=1_500_000))
    return path
