"""`make start` on a built tree serves at once: every build step is a file target with its
real inputs, so after a build, `make build` runs no emcc, no vite build, no guest image
build and no guest boot (make echoes every command it runs, in the sub-makes too); and
touching one input would redo just what depends on it (make -n)."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
built = (ROOT / "web" / "dist" / ".built").exists() and (ROOT / "public" / "guest" / ".compressed").exists()
HEAVY = ("emcc", "vite build", "make-state.mjs", "build-guest.sh", "compress.mjs", "npm ci", "gen-validator")


def make(*args):
    r = subprocess.run(["make", *args], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.skipif(not built, reason="needs make build first")
def test_a_built_tree_rebuilds_nothing():
    out = make("build")
    assert [h for h in HEAVY if h in out] == []


@pytest.mark.skipif(not built, reason="needs make build first")
def test_a_changed_lesson_rebuilds_the_app_only(tmp_path):
    lesson = ROOT / "lessons" / "en" / "01-four-address-spaces.md"
    st = lesson.stat()
    try:
        os.utime(lesson, (st.st_atime, (ROOT / "web" / "dist" / ".built").stat().st_mtime + 10))
        out = make("-n", "build")
        assert "vite build" in out and "compress.mjs web/dist" in out
        assert not [l for l in out.splitlines() if l.startswith("emcc ")]
    finally:
        os.utime(lesson, (st.st_atime, st.st_mtime))
