"""Bad flags and unwritable outputs fail fast, say what is wrong, exit non-zero."""
import os
import subprocess
import time

import pytest

from hwlab_helpers import run_cmd


@pytest.mark.parametrize("args,needle", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--mem-mib", "lots"], "'lots' is not a whole number"),
    (["--mem-mib", "0"], "0 is out of range"),
    (["--kvm-iters", "-3"], "out of range"),
    (["--timeout"], "expected one argument"),
    (["--only", "nosuch"], "--only nosuch: no such benchmark on this machine"),
    (["--upload", "http://127.0.0.1:9/x"], "--upload needs --class CODE"),
    (["--class", "CS101"], "--class only makes sense with --upload"),
    (["--upload", "ftp://example.org/", "--class", "CS101"], "http:// or https:// URL"),
    (["--upload", "http://127.0.0.1:9/", "--class", "bad code!"], "--class needs the class code"),
])
def test_bad_flags(args, needle, hwlab_bin):
    r = run_cmd(["--no-build"] + args)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr
    assert "running" not in r.stderr   # nothing was measured


@pytest.mark.parametrize("out,needle", [
    ("/nonexistent-dir/r.json", "directory /nonexistent-dir does not exist"),
    ("/proc/r.json", "cannot create files in /proc"),
    ("/", "is a directory"),
])
def test_unwritable_output_fails_before_measuring(out, needle, hwlab_bin):
    t0 = time.monotonic()
    r = run_cmd(["--no-build", "--out", out])
    assert r.returncode == 4, r.stderr
    assert needle in r.stderr
    assert "running" not in r.stderr
    assert time.monotonic() - t0 < 10


def test_read_only_existing_file(tmp_path, hwlab_bin):
    if os.geteuid() == 0:
        pytest.skip("root may write a 0444 file")
    p = tmp_path / "r.json"
    p.write_text("{}")
    p.chmod(0o444)
    r = run_cmd(["--no-build", "--out", str(p)])
    assert r.returncode == 4 and "not writable" in r.stderr


@pytest.mark.parametrize("args,needle", [
    (["bench", "--frobnicate"], "unknown option '--frobnicate'"),
    (["bench", "--mem-mib", "x"], "--mem-mib needs a whole number"),
    (["bench", "--mem-mib", "-1"], "--mem-mib needs a whole number"),
    (["bench", "--only"], "--only needs a benchmark name"),
    (["bench", "--only", "nosuch"], "no benchmark named 'nosuch'"),
    (["explode"], "unknown command 'explode'"),
    ([], "usage: hwlab bench"),
])
def test_binary_rejects_bad_arguments(args, needle, hwlab_bin):
    r = subprocess.run([hwlab_bin] + args, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert needle in r.stderr
    assert r.stdout == ""


def test_only_runs_only_that(tmp_path, hwlab_bin):
    import json
    out = tmp_path / "r.json"
    r = run_cmd(["--no-build", "--quick", "--only", "cpuid_exit", "--only", "ctxswitch:same_cpu",
                 "--out", str(out)])
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    assert [b["name"] for b in doc["benchmarks"]] == ["cpuid_exit", "ctxswitch"]
    assert [c["name"] for c in doc["benchmarks"][1]["cases"]] == ["same_cpu"]
