"""vmemlab's valgrind tool (trace/vmtrace_tool.c) against valgrind's lackey: over the C
examples, a program of ours with threads, ls and python, the tool's text mode must print
exactly lackey's --trace-mem lines (kind, address, size, in order), and its body must be
byte for byte what tracepack makes of lackey's log. Then hw-lab/run trace itself: the
tool is the default, the header says so (threads, forks, the rule for children), a
forked child is not recorded, an exec ends the trace, and the lackey fallback says so in
one line.

Both tools run with the core options hw-lab/run trace gives valgrind (vg_core_options():
--vex-guest-chase=no, under which valgrind joins no two jumps into one translation and so
reports no fetch of an instruction the program skipped; see
test_no_fetch_of_skipped_instructions), with the same environment and arguments of the
same length: valgrind lays
out the program's first stack from them and from the tool's file name, so a name one
letter longer moves the stack by a few bytes. The lackey runs here go through a link
named lackey7, as long as vmtrace."""
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import zlib

import pytest

from hwlab_helpers import HW, run_cmd

from hwlab.trace import vg_core_options
from hwlab.tracefile import KIND, decode_body, read_trace

B = os.path.join(HW, "build")
pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None,
                                reason="valgrind is not installed (make -C hw-lab setup installs it)")


@pytest.fixture(scope="module")
def vglib(tmp_path_factory):
    r = subprocess.run(["make", "-s", "-C", HW, "vgtool", "build/tracepack", "build/touch-pages",
                        "build/threads", "build/traces/pointer-chase", "build/traces/sequential-scan"],
                       capture_output=True, text=True)
    if r.returncode != 0 and "vgtool" in r.stdout + r.stderr:
        pytest.skip("the valgrind tool cannot be built here: " + (r.stdout + r.stderr).strip()[-300:])
    assert r.returncode == 0, r.stdout + r.stderr
    d = tmp_path_factory.mktemp("vglib")
    tooldir = os.path.join(B, "vgtool")
    for f in os.listdir(tooldir):
        os.symlink(os.path.realpath(os.path.join(tooldir, f)), d / f)
    lackey = [f for f in os.listdir(tooldir) if f.startswith("lackey-")]
    assert lackey, "valgrind's lackey is not beside its support files"
    for f in lackey:
        os.symlink(os.path.realpath(os.path.join(tooldir, f)), d / f.replace("lackey-", "lackey7-"))
    return str(d)


def env_for(vglib):
    return {"PATH": "/usr/bin:/bin", "VALGRIND_LIB": vglib, "PYTHONHASHSEED": "0", "LC_ALL": "C"}


def lines_of(cmd, env, limit, extra_fds=()):
    """The access lines a valgrind run writes to a pipe: all of them, or the first `limit`."""
    r, w = os.pipe()
    p = subprocess.Popen([a.replace("FD", str(w)) for a in cmd], pass_fds=(w,) + tuple(extra_fds), env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    out = []
    with os.fdopen(r, "rb") as f:
        for line in f:
            if line.startswith(b"=="):
                continue
            out.append(line)
            if limit and len(out) == limit:
                break
    if limit:
        p.send_signal(signal.SIGKILL)
    p.wait()
    return out


def lackey_lines(vglib, prog, limit=None):
    return lines_of(["valgrind", "--tool=lackey7"] + vg_core_options() + ["--trace-mem=yes", "--log-fd=FD"] + prog,
                    env_for(vglib), limit)


def vmtrace_lines(vglib, prog, limit=None):
    with open(os.devnull, "wb") as null:
        return lines_of(["valgrind", "--tool=vmtrace"] + vg_core_options() + ["--text=yes", "--body-fd=FD",
                         "--info-fd=%d" % null.fileno()] + (["--limit=%d" % limit] if limit else []) + prog,
                        env_for(vglib), limit, (null.fileno(),))


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return "line %d: vmtrace %r, lackey %r" % (i, x, y)
    return "vmtrace %d lines, lackey %d" % (len(a), len(b))


# The dynamic loader's string scanning reads four aligned bytes at a time, and so a few of
# the random bytes the kernel gives each process (AT_RANDOM) just before a string: the
# table lookups they index and, now and then, the loop's length differ from run to run, in
# lackey itself too. So a dynamically linked program may differ in one short stretch of
# fetches and loads; everything before and after it must be the same. (ls -l is left out:
# its output, and so its accesses, depend on the time.)
RANDOM_STRETCH_MAX = 400


def same_or_random(vt, lk, is_write):
    """The same accesses, but for one short stretch of fetches and loads."""
    if vt == lk:
        return
    n = min(len(vt), len(lk))
    p = next((i for i in range(n) if vt[i] != lk[i]), n)
    s = 0
    while s < n - p and vt[len(vt) - 1 - s] == lk[len(lk) - 1 - s]:
        s += 1
    mid_vt, mid_lk = vt[p:len(vt) - s], lk[p:len(lk) - s]
    msg = first_difference(vt, lk) + "; differing stretch %d / %d long" % (len(mid_vt), len(mid_lk))
    assert len(mid_vt) <= RANDOM_STRETCH_MAX and len(mid_lk) <= RANDOM_STRETCH_MAX, msg
    assert not any(is_write(x) for x in mid_vt + mid_lk), msg


# valgrind runs one thread at a time and hands its lock over at every system call; which
# waiting thread takes it depends on timing, so two runs of lackey itself interleave a
# threaded program's threads differently. The threaded program must be the same up to the
# first thread's start (the clone), and each thread's own work the same: the byte stores
# into its array, as a multiset.
def same_until_a_thread_starts(vt, lk, exe):
    if vt == lk:
        return
    syms = subprocess.run(["nm", exe], capture_output=True, text=True, check=True).stdout.split("\n")
    clone = next(int(x.split()[0], 16) for x in syms if x.endswith(" clone") or x.endswith(" __clone"))
    n = min(len(vt), len(lk))
    p = next((i for i in range(n) if vt[i] != lk[i]), n)
    fetches = [int(x[3:].split(b",")[0], 16) for x in lk[:p] if x.startswith(b"I  ")]
    assert any(clone <= a < clone + 256 for a in fetches), "differs before the first thread: " + first_difference(vt, lk)

    def byte_stores(lines):
        return collections.Counter(x for x in lines if x.startswith(b" S ") and x.endswith(b",1\n"))
    assert byte_stores(vt) == byte_stores(lk)
    assert sum(byte_stores(lk).values()) >= 2 * 1024


def text_is_write(line):
    return line[:3] in (b" S ", b" M ")


def body_is_write(access):
    return access[0] in (KIND["store"], KIND["modify"])


PROGRAMS = [
    ("touch-pages", [os.path.join(B, "touch-pages"), "300"], None),
    ("pointer-chase", [os.path.join(B, "traces", "pointer-chase"), "256", "2000"], None),
    ("sequential-scan", [os.path.join(B, "traces", "sequential-scan"), "64", "1"], None),
    ("threads", [os.path.join(B, "threads")], None),
    ("ls", ["/bin/ls", "/"], None),
    ("python", ["/usr/bin/python3", "-c", "print(sum(range(1000)))"], 1_500_000),
]


@pytest.mark.parametrize("name,prog,limit", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_same_accesses_as_lackey(name, prog, limit, vglib):
    if not os.path.exists(prog[0]):
        pytest.skip("%s is not installed" % prog[0])
    lk = lackey_lines(vglib, prog, limit)
    vt = vmtrace_lines(vglib, prog, limit)
    assert len(lk) > 10_000
    if name in ("ls", "python"):
        same_or_random(vt, lk, text_is_write)
    elif name == "threads":
        same_until_a_thread_starts(vt, lk, prog[0])
    else:
        assert vt == lk, first_difference(vt, lk)
    kinds = {x[:3] for x in lk}
    assert {b"I  ", b" L ", b" S "} <= kinds
    if name in ("ls", "python", "threads"):
        assert b" M " in kinds      # read-modify-writes are merged the same way


@pytest.mark.parametrize("prog", [["/bin/ls", "/"], [os.path.join(B, "touch-pages"), "64"]], ids=["ls", "touch-pages"])
def test_body_is_tracepack_of_lackey(prog, vglib, tmp_path):
    env = env_for(vglib)
    log = tmp_path / "lackey.log"
    with open(log, "wb") as f:
        subprocess.run(["valgrind", "--tool=lackey7"] + vg_core_options() + ["--trace-mem=yes", "--log-fd=%d" % f.fileno()]
                       + prog,
                       pass_fds=(f.fileno(),), env=env, stdout=subprocess.DEVNULL, check=True)
    want = subprocess.run([os.path.join(B, "tracepack"), "--input", str(log)], capture_output=True,
                          check=True).stdout
    body, info = tmp_path / "body", tmp_path / "info"
    with open(body, "wb") as fb, open(info, "wb") as fi:
        subprocess.run(["valgrind", "--tool=vmtrace"] + vg_core_options()
                       + ["--body-fd=%d" % fb.fileno(), "--info-fd=%d" % fi.fileno()] + prog, pass_fds=(fb.fileno(), fi.fileno()), env=env, stdout=subprocess.DEVNULL, check=True)
    got = body.read_bytes()
    if got != want:
        same_or_random(decode_body(got), decode_body(want), body_is_write)
    assert b'"exit_code":0}' in info.read_bytes()


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the test program is x86-64 assembly")
def test_no_fetch_of_skipped_instructions(vglib, tmp_path):
    """A loop whose jne always jumps back over a test and a je to the same place: with its
    defaults, this valgrind joins the two jumps into one translation and lackey reports a
    fetch of the skipped test every time round (999 of 1,000 here). run trace's body holds
    the instructions that ran: none of the skipped ones, every one of the loop's."""
    r = subprocess.run(["make", "-s", "-C", HW, "build/skipped-branch"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    out = tmp_path / "t.vmtrace"
    r = run_cmd(["trace", "--out", str(out), "--", os.path.join(B, "skipped-branch"), "1000"], timeout=120)
    assert r.returncode == 0, r.stderr
    skipped = int(r.stdout.split("skipped ")[1].split()[0], 16)
    header, accesses = read_trace(str(out))
    fetched = collections.Counter(a for k, a in accesses if k == KIND["fetch"])
    assert fetched[skipped] == 0, "%d fetches of an instruction that never ran" % fetched[skipped]
    # the jne (the 2 bytes just before the skipped test) runs on every round but the last,
    # which leaves at the jz before it
    assert fetched[skipped - 2] == 999
    # and the same program under valgrind's defaults, to show what the option is for
    log = tmp_path / "lackey.log"
    subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", "--log-file=%s" % log,
                    os.path.join(B, "skipped-branch"), "1000"], stdout=subprocess.DEVNULL, check=True)
    default = sum(1 for x in log.read_text().splitlines() if x.startswith("I  ") and int(x[3:].split(",")[0], 16) == skipped)
    print("valgrind's defaults: %d fetches of the skipped instruction" % default)


@pytest.mark.parametrize("help_text,want", [
    ("    --vex-guest-chase=no|yes               [yes]\n", ["--vex-guest-chase=no"]),
    ("    --vex-guest-chase-thresh=<0..99>  [10]\n", ["--vex-guest-chase-thresh=0"]),
    ("    --vex-iropt-level=<0..2>  [2]\n", []),
], ids=["3.17-and-later", "before-3.17", "neither"])
def test_core_options_follow_the_valgrind_installed(help_text, want, tmp_path, monkeypatch):
    """The option is asked of the valgrind on PATH: an older one names it otherwise, and one
    that knows neither gets none (an unknown option would stop valgrind before the program)."""
    from hwlab import trace as tracelib
    fake = tmp_path / "valgrind"
    fake.write_text("#!/bin/sh\ncat <<'EOF'\n%sEOF\n" % help_text)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path, os.environ["PATH"]))
    monkeypatch.setattr(tracelib, "_core_options", None)
    assert tracelib.vg_core_options() == want


def test_tool_check_is_kept_until_valgrind_or_the_tool_changes(vglib, monkeypatch):
    """run trace asks valgrind whether it loads the tool (and how its chase option is named,
    and its version for the header) once for each pair of valgrind's files and the tool's,
    and keeps the answer beside the tool: read back while the key matches, asked again when
    it does not, or when the kept answer lacks the version (a stamp from before it was kept)."""
    from hwlab import trace as tracelib
    d, why = tracelib.vgtool_dir()
    assert d and why is None
    stamp = os.path.join(d, ".loads")
    with open(stamp) as f:
        kept = json.load(f)
    assert kept["core_options"] == tracelib.core_options_of(
        subprocess.run(["valgrind", "--help-debug"], capture_output=True, text=True).stdout)
    assert kept["valgrind"] == subprocess.run(["valgrind", "--version"], capture_output=True, text=True).stdout.strip()
    try:
        # a matching key: the kept answer is used as it is, valgrind is not asked
        with open(stamp, "w") as f:
            json.dump({"key": kept["key"], "core_options": ["--kept"], "valgrind": "valgrind-kept"}, f)
        monkeypatch.setattr(tracelib, "_core_options", None)
        monkeypatch.setattr(tracelib, "_known", {})
        assert tracelib.vgtool_dir() == (d, None) and tracelib.vg_core_options() == ["--kept"]
        assert tracelib.valgrind_version() == "valgrind-kept"
        # another key (valgrind or the tool changed), or no version kept: asked again, and kept anew
        for other in ({"key": kept["key"] + " changed", "core_options": ["--kept"], "valgrind": "valgrind-kept"},
                      {"key": kept["key"], "core_options": ["--kept"]}):
            with open(stamp, "w") as f:
                json.dump(other, f)
            monkeypatch.setattr(tracelib, "_core_options", None)
            monkeypatch.setattr(tracelib, "_known", {})
            assert tracelib.vgtool_dir() == (d, None) and tracelib.vg_core_options() == kept["core_options"]
            assert tracelib.valgrind_version() == kept["valgrind"]
            with open(stamp) as f:
                assert json.load(f) == kept
    finally:
        with open(stamp, "w") as f:
            json.dump(kept, f)


def test_run_trace_uses_the_tool(vglib, tmp_path):
    out = tmp_path / "t.vmtrace"
    r = run_cmd(["trace", "--out", str(out), "--", os.path.join(B, "threads")], timeout=120)
    assert r.returncode == 0, r.stderr
    assert "thread 2: sum" in r.stdout
    assert "lackey" not in r.stderr
    header, accesses = read_trace(str(out))
    rec = header["recorder"]
    assert rec["tool"] == "vmemlab-vmtrace"
    assert rec["threads"] == 3 and rec["thread_order"] == "serialized" and rec["forks"] == 0
    assert "fork is not recorded" in rec["children"]
    assert header["accesses"] == len(accesses) and header["partial"] is False
    assert header["program_exit"] == {"code": 0, "signal": None}


def test_body_writer_passes_the_tools_body_whole(vglib, tmp_path):
    """run trace's compressor (igzip in a process of its own, reading the tool's pipe, where
    it is installed; zlib in run trace's process where not) inflates to exactly the bytes
    the tool wrote, written through a pipe in pieces of odd sizes as the tool's are."""
    from hwlab import trace as tracelib
    body = tmp_path / "body"
    with open(body, "wb") as fb, open(tmp_path / "info", "wb") as fi:
        subprocess.run(["valgrind", "--tool=vmtrace", "--body-fd=%d" % fb.fileno(), "--info-fd=%d" % fi.fileno(),
                        os.path.join(B, "touch-pages"), "300"], pass_fds=(fb.fileno(), fi.fileno()),
                       env=env_for(vglib), stdout=subprocess.DEVNULL, check=True)
    raw = body.read_bytes()
    assert len(raw) > 20_000
    for external in (True, False):
        w = tracelib.BodyWriter(str(tmp_path / ("out-%s.vmtrace" % external)))
        r, wr = os.pipe()
        used = w.compress_from(r) if external else False
        if external and not used:
            os.close(r)
            os.close(wr)
            continue        # no igzip here: the zlib path below is what run trace uses
        at, k = 0, 0
        while at < len(raw):
            n = 1 + (k * 7919) % 70_000
            if used:
                os.write(wr, raw[at:at + n])
            else:
                w.write(raw[at:at + n])
            at, k = at + n, k + 1
        os.close(wr)
        if used:
            os.close(r)
        size = w.close()
        with open(w.path, "rb") as f:
            packed = f.read()
        w.discard()
        assert size == len(packed)
        assert zlib.decompress(packed, 31) == raw, "igzip" if used else "zlib"


def test_body_through_a_pipe_is_the_body_written_to_a_file(vglib, tmp_path):
    """Into a pipe, the tool hands its buffers' pages over (vmsplice) and fills a buffer
    again only once the reader has read it; into a file it writes. A 10 MB body (ten times
    the tool's four buffers) read out of the pipe at full speed, and slowly in pieces of odd
    sizes, from pipes of 64 KiB and 1 MiB, must be the file's byte for byte: a buffer filled
    before its bytes were read would show here."""
    import fcntl
    import time
    env = env_for(vglib)
    prog = [os.path.join(B, "traces", "sequential-scan"), "64", "300"]

    def run(body_fd, stderr):
        return subprocess.Popen(["valgrind", "--tool=vmtrace", "--body-fd=%d" % body_fd, "--info-fd=2"] + prog,
                                pass_fds=(body_fd,), env=env, stdout=subprocess.DEVNULL, stderr=stderr)

    def summary(err):
        return json.loads(next(x for x in err.decode().splitlines() if x.startswith("{")))

    with open(tmp_path / "body", "wb") as fb, open(tmp_path / "info", "wb") as fi:
        assert run(fb.fileno(), fi).wait() == 0
    want = (tmp_path / "body").read_bytes()
    assert len(want) > 8 << 20
    assert summary((tmp_path / "info").read_bytes())["body_spliced"] is False
    splices = subprocess.run(["make", "-s", "--no-print-directory", "-C", HW, "vgtool-splices"], capture_output=True,
                             text=True, check=True).stdout.strip() == "yes"
    for pipe_size in (None, 1 << 20):
        for slow in (False, True):
            r, w = os.pipe()
            if pipe_size:
                fcntl.fcntl(r, getattr(fcntl, "F_SETPIPE_SZ", 1031), pipe_size)
            p = run(w, subprocess.PIPE)
            os.close(w)
            got, k = bytearray(), 0
            with os.fdopen(r, "rb", buffering=0) as f:
                while True:
                    chunk = f.read(1 + (k * 7919) % 70_000 if slow else 1 << 20)
                    if not chunk:
                        break
                    got += chunk
                    k += 1
                    if slow and k % 40 == 0:
                        time.sleep(0.002)
            err = p.stderr.read()
            assert p.wait() == 0
            what = "pipe of %s, read %s" % (pipe_size or "64 KiB", "slowly" if slow else "at once")
            assert bytes(got) == want, what
            assert summary(err)["body_spliced"] is splices, what


def test_counts_survive_discarded_translations(vglib, tmp_path):
    """The tool keeps a plan per group of a translated block and sums the counts of each kind
    from the plans' runs; a plan is freed when valgrind discards its block. A program that
    runs code it maps and unmaps 2,000 times (each munmap discards a translation): the
    summary's counts are still those of the body, access for access."""
    src = tmp_path / "jit.c"
    src.write_text(r'''
#include <string.h>
#include <sys/mman.h>
int main(void)
{
    /* mov (%rdi),%eax; add $1,%eax; mov %eax,(%rdi); ret */
    static const unsigned char code[] = {0x8b, 0x07, 0x83, 0xc0, 0x01, 0x89, 0x07, 0xc3};
    int x = 0;
    for (int i = 0; i < 2000; i++) {
        unsigned char *p = mmap(0, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        memcpy(p, code, sizeof code);
        ((void (*)(int *))p)(&x);
        munmap(p, 4096);
    }
    return x == 2000 ? 0 : 1;
}
''')
    exe = tmp_path / "jit"
    subprocess.run(["cc", "-O1", "-static", "-o", str(exe), str(src)], check=True)
    body, info, log = tmp_path / "body", tmp_path / "info", tmp_path / "log"
    with open(body, "wb") as fb, open(info, "wb") as fi:
        subprocess.run(["valgrind", "--stats=yes", "--log-file=%s" % log, "--tool=vmtrace", "--body-fd=%d" % fb.fileno(),
                        "--info-fd=%d" % fi.fileno(), str(exe)], pass_fds=(fb.fileno(), fi.fileno()),
                       env=env_for(vglib), check=True)
    discarded = [x for x in log.read_text().splitlines() if "transtab: discarded" in x]
    assert discarded and int(discarded[0].split("discarded")[1].split("(")[0].replace(",", "")) >= 2000
    summary = json.loads([x for x in info.read_text().splitlines() if x.startswith("{")][-1])
    accesses = decode_body(body.read_bytes())
    kinds = collections.Counter(k for k, _ in accesses)
    assert summary["accesses"] == len(accesses) > 2000 * 5
    assert summary["counts"] == {name: kinds[k] for name, k in KIND.items()}
    assert summary["exit_code"] == 0


def test_fork_child_is_not_recorded_and_exec_ends_the_trace(vglib, tmp_path):
    # the parent forks a child that writes 50 pages, waits, then writes 20 pages itself
    src = tmp_path / "forker.c"
    src.write_text(r'''
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
static char buf[100 * 4096];
int main(int argc, char **argv) {
    printf("base %p\n", (void *)buf); fflush(stdout);
    pid_t p = fork();
    if (p == 0) { for (int i = 50; i < 100; i++) buf[i * 4096] = 1; _exit(0); }
    waitpid(p, NULL, 0);
    for (int i = 0; i < 20; i++) buf[i * 4096] = 2;
    if (argc > 1) execl("/bin/true", "true", (char *)0);
    return 0;
}''')
    exe = tmp_path / "forker"
    subprocess.run(["cc", "-O1", "-static", "-o", str(exe), str(src)], check=True)
    for extra, partial in (([], False), (["exec"], True)):
        out = tmp_path / "f.vmtrace"
        r = run_cmd(["trace", "--out", str(out), "--", str(exe)] + extra, timeout=120)
        assert r.returncode == (1 if partial else 0), r.stderr
        base = int(r.stdout.split()[1], 16)
        header, accesses = read_trace(str(out))
        pages = {(a - base) >> 12 for k, a in accesses if k == KIND["store"] and base <= a < base + 100 * 4096}
        assert pages == set(range(20))      # the parent's pages only
        assert header["recorder"]["forks"] == 1
        assert header["partial"] is partial
        if partial:
            assert "replaced itself with another program (exec)" in header["partial_reason"]


def test_lackey_fallback_says_so_once(vglib, tmp_path):
    # a valgrind without the tool's headers: make cannot build it; VG_INC points nowhere
    out = tmp_path / "t.vmtrace"
    env = dict(os.environ, HWLAB_VGTOOL_MAKEFLAGS="VG_INC=/nonexistent VGTOOL=build/vgtool-missing/x")
    r = subprocess.run([sys.executable, os.path.join(HW, "run"), "trace", "--out", str(out), "--",
                        os.path.join(B, "touch-pages"), "16"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    notices = [x for x in r.stderr.splitlines() if "notice:" in x]
    assert len(notices) == 1 and "recording with valgrind lackey instead" in notices[0], r.stderr
    header, _ = read_trace(str(out))
    assert header["recorder"]["tool"] == "valgrind-lackey"
