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
HEAVY = ("emcc", "vite build", "make-state.mjs", "build-guest.sh", "compress.mjs", "npm ci", "gen-validator",
         "run trace", "-C hw-lab build/traces", "which-wins-table.mjs")


def make(*args, check=True):
    r = subprocess.run(["make", *args], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0 or not check, r.stderr
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


@pytest.mark.skipif(not built, reason="needs make build first")
def test_a_changed_example_program_records_only_its_trace():
    program = ROOT / "hw-lab" / "trace" / "examples" / "pointer-chase.c"
    trace = ROOT / "hw-lab" / "build" / "traces" / "pointer-chase.vmtrace"
    st = program.stat()
    try:
        os.utime(program, (st.st_atime, trace.stat().st_mtime + 10))
        hw = lambda t: make("-n", "-C", "hw-lab", "build/traces/%s.vmtrace" % t)
        assert "run trace --out build/traces/pointer-chase.vmtrace" in hw("pointer-chase")
        assert "run trace" not in hw("sequential-scan")
        # the app is built with the example traces (web/dist/traces/): they are its inputs
        db = make("-p", "-q", "web/dist/.built", check=False)
        line = next(l for l in db.splitlines() if l.startswith("web/dist/.built:"))
        assert "hw-lab/build/traces/pointer-chase.vmtrace" in line and "hw-lab/build/traces/sequential-scan.vmtrace" in line
        line = next(l for l in db.splitlines() if l.startswith("hw-lab/build/traces/%.vmtrace:"))
        assert "hw-lab/trace/examples/%.c" in line and "hw-lab/lib/hwlab/trace.py" in line
    finally:
        os.utime(program, (st.st_atime, st.st_mtime))


@pytest.mark.skipif(not (ROOT / "web" / "server" / "gen" / "which-wins.json").exists(), reason="needs make build first")
def test_the_which_wins_table_follows_the_bundle_and_the_engine():
    table = ROOT / "web" / "server" / "gen" / "which-wins.json"
    for changed, also in ((ROOT / "web" / "src" / "lessons" / "kinds" / "which-wins.ts", "vite build --config web/server/grade.vite.config.mjs"),
                          (ROOT / "wasm-core" / "build" / "wasm" / "vmsim.wasm", None)):
        st = changed.stat()
        try:
            os.utime(changed, (st.st_atime, table.stat().st_mtime + 10))
            out = make("-n", "web/server/gen/which-wins.json")
            assert "node web/server/which-wins-table.mjs" in out
            if also:
                assert also in out
        finally:
            os.utime(changed, (st.st_atime, st.st_mtime))
    # and make build makes it
    db = make("-n", "-p", "build", check=False)
    assert "web/server/gen/which-wins.json" in next(l for l in db.splitlines() if "$(MAKE) web/server/gen/grade.mjs" in l)
