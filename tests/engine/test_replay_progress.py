"""`vmsim replay`'s progress lines say the time left as the page does (web/src/trace/eta.ts):
the time so far times what is left of the bar over what is done, the bar's first fifth
being pass 1 (PASS1_SHARE in wasm-core/js/replay.ts); nothing before a twentieth of the bar
or 2 s; under 10 s to the second (never 0), under a minute to 5 s, under an hour to the
minute, above to 10 minutes.

The replay runs with a clock of its own (fakeclock.c, preloaded): 0 at its first reading,
STEP seconds more at each one after, so the nth line is read n * STEP s after the start
whatever this machine's speed. The time each line says is checked against the rule,
written again here, for every bar position its rounded percentage allows."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))

LINE = re.compile(r"^vmsim replay: pass ([12]): (\d+)%(?: \(about (\d+) (s|min) left\))?$")


def rule(fraction, elapsed):
    """eta.ts's timeLeft, in (n, unit), or None."""
    if not (0.05 <= fraction < 1) or elapsed < 2:
        return None
    s = elapsed * (1 - fraction) / fraction
    if s < 10:
        return (max(1, -int(-s // 1)), "s")
    if s < 60:
        return (int(s / 5 + 0.5) * 5, "s")
    if s < 3600:
        return (int(s / 60 + 0.5), "min")
    return (int(s / 600 + 0.5) * 10, "min")


def bar(pass_, f):
    return 0.2 * f if pass_ == 1 else 0.2 + 0.8 * f


@pytest.fixture(scope="module")
def fakeclock(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.fail("no C compiler: the tests need one (make test installs gcc)")
    so = tmp_path_factory.mktemp("clock") / "fakeclock.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(so), str(ROOT / "tests" / "engine" / "fakeclock.c")],
                   check=True)
    return so


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize("step", [1, 100])
def test_time_left_follows_the_pages_rule(fakeclock, long_trace, jobs, step):
    env = dict(os.environ, LD_PRELOAD=str(fakeclock), FAKECLOCK_STEP=str(step))
    p = subprocess.run([VMSIM, "replay", str(long_trace), "--jobs", jobs, "--format", "json"], capture_output=True,
                       text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert len(lines) >= 12, lines         # most tenths of both passes
    said = 0
    for n, line in enumerate(lines, 1):
        m = LINE.match(line)
        assert m, line
        pass_, pct, left = int(m[1]), int(m[2]), (int(m[3]), m[4]) if m[3] else None
        elapsed = n * step
        # every answer the rule gives for a bar position this percentage rounds from
        allowed = {rule(bar(pass_, (pct + d / 100) / 100), elapsed) for d in range(-50, 51)}
        assert left in allowed, f"{line!r} at {elapsed} s: the rule says one of {allowed}"
        said += left is not None
    assert said >= len(lines) - 3, lines    # from the third line on (the bar past a twentieth, 2 s gone)
    if step == 100:
        assert any(line.endswith("min left)") for line in lines), lines


def test_quiet_says_nothing(long_trace):
    p = subprocess.run([VMSIM, "replay", str(long_trace), "--quiet", "--format", "json"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0 and p.stderr == ""
