"""`vmsim replay --jobs N`: the modes on threads print the same bytes as the replay that runs
them one after another (`--jobs 1`), in every format and with every setting: on the
example traces (recorded from programs of ours by make build), on a trace that evicts
TLB entries again and again (more pages in turn than the TLB holds; checked here from the
report: more TLB misses than pages), long enough to be cut into tens of chunks that the
threads share (pass 2 in chunks, docs/replay.md), and on a trace with one access (one chunk:
the one-thread pass 2). A refused body stops the threads with the serial
replay's message. The serial replay itself is checked against `vmsim run` access by
access in test_replay.py, so the threaded one is too."""
import json
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))
EXAMPLES = ROOT / "hw-lab" / "build" / "traces"
sys.path.insert(0, str(ROOT / "hw-lab" / "lib"))

from hwlab.tracefile import KIND, encode_body, gzip_bytes, make_header, pack, write_trace  # noqa: E402

SETTINGS = [
    ["--format", "json"],
    ["--format", "table"],
    ["--format", "csv"],
    ["--format", "json", "--start", "warm", "--guest-pages", "2m"],
    ["--format", "json", "--preset", "sunway-1621", "--host-pages", "4k"],
    ["--format", "json", "--tables", "on-demand"],
    ["--format", "table", "--modes", "native,ept,npt,shadow,flat,agile", "--agile-switch-level", "2"],
    ["--format", "json", "--modes", "ept,shadow"],
]


def run(path, *args):
    p = subprocess.run([VMSIM, "replay", str(path), "--quiet", *args], capture_output=True, text=True, timeout=600)
    return p


def evicting(n=400_000, pages=3000, seed=7):
    """Loads and fetches over `pages` pages in a random walk: far more than the TLB holds,
    so entries are evicted and walked again all the time; 400,000 accesses, 1.4 MB of
    body: about 20 chunks of 64 KiB, 13 batches of 32,768 accesses in all."""
    rnd = random.Random(seed)
    base = 0x7F00_0000_0000
    out = []
    page = 0
    for i in range(n):
        if i % 7 == 0:
            page = rnd.randrange(pages)
        kind = (KIND["load"], KIND["store"], KIND["fetch"], KIND["modify"])[i % 4]
        out.append((kind, base + page * 4096 + rnd.randrange(4096)))
    return out


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("jobs")
    found = [EXAMPLES / f"{n}.vmtrace" for n in ("pointer-chase", "sequential-scan", "pointer-chase-256m")]
    found = [p for p in found if p.exists()]
    ev = d / "evicting.vmtrace"
    write_trace(ev, evicting())
    one = d / "one.vmtrace"
    write_trace(one, [(KIND["load"], 0x400123)])
    dense = d / "dense.vmtrace"
    write_trace(dense, dense_loads())
    return {"examples": found, "evicting": ev, "one": one, "dense": dense}


def dense_loads(n=600_000):
    """Loads 8 bytes apart round one page and its neighbour: a byte of body each, so a chunk
    of 64 KiB holds two batches of 32,768 accesses or a little more."""
    return [(KIND["load"], 0x7F00_0000_1000 + (i * 8) % 8192) for i in range(n)]


def test_the_evicting_trace_evicts(traces):
    rep = json.loads(run(traces["evicting"], "--format", "json", "--jobs", "1").stdout)
    assert rep["trace"]["accesses"] == 400_000
    for m in rep["modes"]:
        # more misses than pages: the same pages missed again after their entries were evicted
        assert m["tlb_misses"] > 2 * rep["trace"]["pages"], m


@pytest.mark.parametrize("args", SETTINGS, ids=lambda a: " ".join(a))
def test_threads_print_the_serial_bytes(traces, args):
    paths = traces["examples"] + [traces["evicting"], traces["one"], traces["dense"]]
    assert traces["evicting"] in paths
    if args not in (SETTINGS[0], SETTINGS[6]):
        # the 256 MiB example (seconds a replay) in two settings only: the threads' path
        # depends on a trace's length, which the evicting trace already takes round the ring
        paths = [p for p in paths if p.name != "pointer-chase-256m.vmtrace"]
    for path in paths:
        serial = run(path, *args, "--jobs", "1")
        assert serial.returncode == 0, serial.stderr
        for jobs in ("2", "3", "6"):
            threaded = run(path, *args, "--jobs", jobs)
            assert threaded.returncode == 0, threaded.stderr
            assert threaded.stdout == serial.stdout, f"{path.name} {args} --jobs {jobs}"


@pytest.mark.parametrize("batches", ["1", "3"])
def test_chunks_in_rounds_print_the_serial_bytes(traces, batches):
    # --chunk-batches: a thread decodes that many batches of a chunk before it runs them,
    # and the rest of the chunk in further rounds (with the default, 2, only a chunk a
    # little over 65,536 accesses takes two); the dense trace's chunks hold 2 batches or
    # a little more, the evicting trace's one
    for path in [traces["dense"], traces["evicting"]] + traces["examples"][:1]:
        serial = run(path, "--format", "json", "--jobs", "1")
        assert serial.returncode == 0, serial.stderr
        for jobs in ("2", "3"):
            p = run(path, "--format", "json", "--jobs", jobs, "--chunk-batches", batches)
            assert p.returncode == 0 and p.stdout == serial.stdout, f"{path.name} --jobs {jobs} --chunk-batches {batches}"
    rep = json.loads(run(traces["dense"], "--format", "json", "--jobs", "1").stdout)
    assert rep["trace"]["accesses"] == 600_000 and rep["trace"]["pages"] == 2


def test_default_jobs_is_threaded_and_the_same(traces):
    serial = run(traces["evicting"], "--jobs", "1")
    default = run(traces["evicting"])
    assert default.returncode == 0 and default.stdout == serial.stdout


def refused_when_changed(path, jobs, change):
    """Runs the replay of `path` and, once pass 2 is under way (the process stopped
    meanwhile), changes the file near its end: bytes pass 1 read and pass 2 has not yet.
    The exit status, stdout and the last line on stderr."""
    size = path.stat().st_size
    p = subprocess.Popen([VMSIM, "replay", str(path), "--jobs", jobs], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    seen = False
    try:
        for line in p.stderr:
            if "pass 2:" in line:
                seen = True
                os.kill(p.pid, signal.SIGSTOP)
                with open(path, "r+b") as f:
                    at = size * 85 // 100
                    if change == "truncate":
                        f.truncate(at)
                    else:
                        f.seek(at)
                        b = f.read(64)
                        f.seek(at)
                        f.write(bytes(x ^ 0x5A for x in b))
                os.kill(p.pid, signal.SIGCONT)
                break
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert seen, "pass 2 never said how far it was"
    return p.returncode, out, err.strip().splitlines()[-1] if err.strip() else ""


@pytest.mark.parametrize("change", ["bytes", "truncate"])
def test_a_body_changed_between_the_passes_is_refused_alike(long_trace, change, tmp_path):
    # The replay reads the file twice; a body changed in between must be refused, not
    # replayed into figures, and with the same words on one thread as in chunks on several
    # (the refusal said in the chunks' order: the first chunk that fails, decoding or
    # inflating, whichever thread found it)
    said = {}
    for jobs in ("1", "2", "3"):
        path = tmp_path / jobs / "changing.vmtrace"     # the same name: it is in the words
        path.parent.mkdir()
        shutil.copy(long_trace, path)
        rc, out, last = refused_when_changed(path, jobs, change)
        assert rc == 2 and out == "", (jobs, rc, last)
        said[jobs] = last
    want = {"bytes": r"the trace is corrupt", "truncate": r"the trace is truncated: its compressed body ends"}[change]
    assert re.search(want, said["1"]), said
    said = {j: line.replace(str(tmp_path / j), "DIR") for j, line in said.items()}
    assert said["2"] == said["1"] and said["3"] == said["1"], said


def test_examples_are_there():
    # make build records them; without them the test above only sees the written traces
    assert (EXAMPLES / "pointer-chase.vmtrace").exists() and (EXAMPLES / "sequential-scan.vmtrace").exists()


def varint_len(v):
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


def test_a_corrupt_body_is_refused_with_the_serial_message(tmp_path):
    acc = evicting(n=300_000)
    k = 250_000
    head = encode_body(acc[:k])
    # the first k accesses, then an unknown control record where the next one should be
    body = head[:len(head) - 1 - varint_len(k)] + b"\xf9\x00"
    bad = tmp_path / "bad.vmtrace"
    gz = gzip_bytes(bytes(body))
    bad.write_bytes(pack(make_header(acc, len(gz)), gz))
    serial = run(bad, "--jobs", "1")
    assert serial.returncode == 2 and "unknown record type" in serial.stderr, serial.stderr
    for jobs in ("2", "5"):
        p = run(bad, "--jobs", jobs)
        assert p.returncode == 2 and p.stderr == serial.stderr


@pytest.mark.parametrize("bad", ["0", "65", "x", ""])
def test_bad_jobs_refused(traces, bad):
    p = run(traces["one"], "--jobs", bad)
    assert p.returncode == 2 and "--jobs" in p.stderr
