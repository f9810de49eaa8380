"""hw-lab/run trace: record a program's memory accesses into a vmemlab trace.

    hw-lab/run trace --out ls.vmtrace [--limit N] -- ls /

vmemlab's own valgrind tool (trace/vmtrace_tool.c, built as build/vgtool) reports every
instruction fetch, load, store and modify of the program and writes the trace body
(page-number deltas and page offsets as varints, wasm-core/docs/replay.md) itself; this
module compresses it with gzip as it streams by, prints the progress each second and
writes the file: prefix, JSON header (schema/trace.schema.json), body. Where the tool
cannot be built, valgrind's lackey tool reports the same accesses as text and
build/tracepack turns its log into the body (about 40 times slower). Memory does not grow with the trace's length: the body goes to a temporary file
next to --out and is copied behind the header at the end.
"""
import argparse
import datetime
import fcntl
import json
import os
import platform
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

MAGIC = b"\x89VMTRC\r\n"
VERSION = 1
HEADER_MAX = 65536
LIMIT_DEFAULT = 2_000_000_000
LIMIT_MAX = 4_000_000_000
# Disk space kept free for a trace: its gzip body (0.30-0.39 bytes per access measured,
# 0.5 assumed) twice, as a body that outgrew the room left for its header is copied behind
# the header at the end (write_trace).
DISK_BYTES_PER_ACCESS = 1.0
CHILDREN_RULE = ("the program valgrind started and all its threads; a child made by fork is not "
                 "recorded; an exec ends the trace")
HERE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = os.path.join(HERE, "schema", "trace.schema.json")
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_OUTPUT = 0, 1, 2, 4


def say(msg):
    print("hw-lab: " + msg, file=sys.stderr, flush=True)


class Refused(Exception):
    """A bad flag, program or input: exit 2 with this message."""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        print("hw-lab/run trace: error: %s (see hw-lab/run trace --help)" % message, file=sys.stderr)
        sys.exit(EXIT_USAGE)


def header_words(words):
    """The command line as the header's text: bytes of an argument that are not UTF-8 (which
    Python keeps as lone surrogates) become U+FFFD, so that the header can be written."""
    return [os.fsencode(w).decode("utf-8", "replace") for w in words]


# What the header's other fields take at most (the recorder, the machine, the counts, the
# label, why a trace is partial): the command line gets the rest of HEADER_MAX.
HEADER_RESERVE = 4096
WORD_MAX = 4096     # the schema's bounds on the program, each argument and their number


def command_too_long(words):
    """Why a command line cannot be recorded in a trace header, or None: checked before the
    program runs, so that a recording is never lost to its header afterwards."""
    if len(words[0]) > WORD_MAX:
        return "the program's name is %s characters long; a trace header holds at most %s" % (
            format(len(words[0]), ","), format(WORD_MAX, ","))
    if len(words) - 1 > WORD_MAX:
        return "%s arguments; a trace header holds at most %s" % (
            format(len(words) - 1, ","), format(WORD_MAX, ","))
    for i, w in enumerate(words[1:], 1):
        if len(w) > WORD_MAX:
            return "argument %d is %s characters long; a trace header holds at most %s" % (
                i, format(len(w), ","), format(WORD_MAX, ","))
    n = len(json.dumps(words, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    if n > HEADER_MAX - HEADER_RESERVE:
        return "the command line takes %s bytes in a trace header, which holds at most %s of it" % (
            format(n, ","), format(HEADER_MAX - HEADER_RESERVE, ","))
    return None


def limit_arg(s):
    try:
        v = int(s.replace("_", ""), 10)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a whole number" % s)
    if not 1 <= v <= LIMIT_MAX:
        raise argparse.ArgumentTypeError("%d is out of range 1..%d" % (v, LIMIT_MAX))
    return v


def parse_args(argv):
    p = Parser(prog="hw-lab/run trace", description=(
        "Record every memory access of a program (valgrind) into a vmemlab trace, "
        "which the page's 'Your program' panel and `vmsim replay` run through native, EPT, "
        "NPT, shadow paging and a flat nested table."),
        epilog="Example: hw-lab/run trace --out ls.vmtrace -- ls /")
    p.add_argument("--out", metavar="FILE", required=True, help="where to write the trace (.vmtrace)")
    p.add_argument("--limit", type=limit_arg, default=LIMIT_DEFAULT, metavar="N",
                   help="stop the program after N accesses (default 2,000,000,000, lowered to what "
                        "the free disk space holds); the trace is then marked partial")
    p.add_argument("--label", metavar="TEXT", help="a short name for the trace (at most 80 characters)")
    p.add_argument("--from-lackey", metavar="LOG",
                   help="convert an existing `valgrind --tool=lackey --trace-mem=yes` log instead "
                        "of running a program")
    p.add_argument("--recorder", choices=("auto", "vmtrace", "lackey"), default="auto",
                   help="auto (default): vmemlab's valgrind tool, lackey where it cannot be built; "
                        "vmtrace or lackey: that one")
    p.add_argument("--tracepack", metavar="PATH", help=argparse.SUPPRESS)
    p.add_argument("command", nargs=argparse.REMAINDER,
                   help="-- PROGRAM ARGS...: the program to record and its arguments")
    a = p.parse_args(argv)
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if a.from_lackey and cmd:
        p.error("--from-lackey converts a log; leave out the program (%s)" % " ".join(cmd))
    if not a.from_lackey and not cmd:
        p.error("name the program to record after --, for example: hw-lab/run trace --out ls.vmtrace -- ls /")
    if a.label is not None and not 1 <= len(a.label) <= 80:
        p.error("--label must be 1 to 80 characters")
    if cmd:
        why = command_too_long(header_words(cmd))
        if why:
            p.error(why)
    a.command = cmd
    return a


def light_probe():
    """The recording machine, in a few fields (no benchmark binary needed)."""
    from . import probe as probelib
    ci = probelib.parse_cpuinfo(probelib._read("/", "/proc/cpuinfo", ""))
    k = probelib.kernel()
    flags = set(ci.get("flags", "").split())
    return {
        "arch": probelib.normalize_arch(platform.machine()),
        "cpu_model": (ci.get("model name") or ci.get("cpu model") or ci.get("cpu part") or "unknown").strip(),
        "kernel": k.get("release"),
        "os": k.get("os"),
        "base_page_bytes": os.sysconf("SC_PAGE_SIZE"),
        "in_vm": ("hypervisor" in flags) if flags else None,
    }


def tracepack_path(args):
    if args.tracepack:
        return args.tracepack
    binary = os.path.join(HERE, "build", "tracepack")
    if os.path.exists(os.path.join(HERE, "Makefile")):
        r = subprocess.run(["make", "-s", "-C", HERE, "build/tracepack"], stdout=sys.stderr, stderr=sys.stderr)
        if r.returncode != 0 and not os.path.exists(binary):
            raise Refused("cannot build %s: is a C compiler installed? (Debian: apt-get install gcc make)" % binary)
    return binary


def vgtool_fresh(d):
    """The tool is newer than its source and the Makefile, and no make variables are asked for:
    make (which reads the whole Makefile, a few tenths of a second) has nothing to do. A tool
    that valgrind does not load is rebuilt anyway (vgtool_dir)."""
    if os.environ.get("HWLAB_VGTOOL_MAKEFLAGS"):
        return False
    try:
        tools = [os.path.join(d, f) for f in os.listdir(d) if f.startswith("vmtrace-")]
        newest_input = max(os.path.getmtime(os.path.join(HERE, f)) for f in ("trace/vmtrace_tool.c", "Makefile"))
        return bool(tools) and all(os.path.getmtime(t) >= newest_input for t in tools)
    except (OSError, ValueError):
        return False


def vgtool_dir(fresh_ok=True):
    """build/vgtool with the tool, built by make; (None, why) where it cannot be built."""
    d = os.path.join(HERE, "build", "vgtool")
    if os.path.exists(os.path.join(HERE, "Makefile")) and not (fresh_ok and vgtool_fresh(d)):
        # HWLAB_VGTOOL_MAKEFLAGS: extra make variables (the tests point VG_INC nowhere to see
        # the fallback)
        extra = os.environ.get("HWLAB_VGTOOL_MAKEFLAGS", "").split()
        r = subprocess.run(["make", "-s", "-C", HERE, "vgtool"] + extra, capture_output=True, text=True)
        if r.returncode != 0:
            lines = [x for x in (r.stdout + r.stderr).splitlines() if x.strip() and not x.startswith("make")]
            return None, (lines[0] if lines else "make vgtool failed")
    tools = [f for f in os.listdir(d) if f.startswith("vmtrace-")] if os.path.isdir(d) else []
    if not tools:
        return None, "no %s/vmtrace-*" % d
    # The tool must match the installed valgrind (a newer valgrind refuses an old tool): asked
    # once for each pair of valgrind's files and the tool's, and kept beside the tool (make
    # removes it with the tool), with the name of the chase option this valgrind has and its
    # --version (which the header carries: asked at each recording's end, it took 3 ms).
    stamp = os.path.join(d, ".loads")
    key = valgrind_key(os.path.join(d, sorted(tools)[0]))
    try:
        with open(stamp) as f:
            kept = json.load(f)
        if kept["key"] == key and isinstance(kept["valgrind"], str):
            set_core_options(kept["core_options"])
            _known["valgrind"] = kept["valgrind"]
            return d, None
    except (OSError, ValueError, KeyError, TypeError):
        pass
    env = dict(os.environ, VALGRIND_LIB=d)
    try:
        r = subprocess.run(["valgrind", "--tool=vmtrace", "--help-debug"], capture_output=True, text=True,
                           env=env, timeout=30)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)
    if r.returncode != 0 or "--body-fd" not in r.stdout:
        if fresh_ok and vgtool_fresh(d):
            return vgtool_dir(fresh_ok=False)     # a new valgrind: make rebuilds the tool
        why = [x for x in (r.stdout + r.stderr).splitlines() if x.strip()]
        return None, "valgrind does not load it: " + (why[-1] if why else "exit %d" % r.returncode)
    set_core_options(core_options_of(r.stdout))
    version = valgrind_version()
    if version:
        _known["valgrind"] = version
    try:
        with open(stamp + ".tmp", "w") as f:
            json.dump({"key": key, "core_options": vg_core_options(), "valgrind": version}, f)
        os.replace(stamp + ".tmp", stamp)
    except OSError:
        pass        # a read-only build folder: asked again next time
    return d, None


def valgrind_key(tool):
    """What a valgrind run's answers depend on: valgrind's own files and the tool's."""
    vg = shutil.which("valgrind")
    paths = [vg, os.path.join(os.path.dirname(os.path.realpath(vg)), "valgrind.bin"), tool] if vg else [tool]
    parts = []
    for p in paths:
        try:
            st = os.stat(p)
            parts.append("%s %d %d" % (p, st.st_mtime_ns, st.st_size))
        except OSError:
            parts.append("%s -" % p)
    return "; ".join(parts)


def free_disk_limit(out, limit):
    """The limit lowered to what the free space next to --out holds, and a line saying so."""
    st = os.statvfs(os.path.dirname(os.path.abspath(out)))
    free = st.f_bavail * st.f_frsize
    fits = int(free * 0.9 / DISK_BYTES_PER_ACCESS)
    if fits >= limit:
        return limit, None
    return fits, ("%.1f GB free next to %s: at most %d accesses this time (the limit was %d; "
                  "about %.1f bytes of disk each while recording)"
                  % (free / 1e9, os.path.abspath(out), fits, limit, DISK_BYTES_PER_ACCESS))


def is_script(path):
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def resolve_program(name):
    """The program as valgrind will run it; Refused when it cannot be."""
    if os.sep in name:
        if not os.path.exists(name):
            raise Refused("%s: no such file" % name)
        if os.path.isdir(name):
            raise Refused("%s is a directory, not a program" % name)
        if not os.access(name, os.X_OK):
            raise Refused("%s is not executable (chmod +x it, or name the interpreter: -- python3 %s)" % (name, name))
        return name
    found = shutil.which(name)
    if not found:
        raise Refused("%s: no such program on PATH" % name)
    return found


_known = {}     # valgrind's --version, where the tool's stamp had it (vgtool_dir)


def valgrind_version():
    if "valgrind" in _known:
        return _known["valgrind"]
    try:
        r = subprocess.run(["valgrind", "--version"], capture_output=True, text=True, timeout=30)
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


# ISA-L's gzip (Debian: isal), when the body comes from vmemlab's tool: in a process of its own,
# so on the other core, reading the tool's pipe itself. Its level 3 takes 0.67 s of CPU for
# the 447 MB body of python3 -c "sum(range(10**6))" and writes 23.3 MB; zlib's level 1 in
# this process took 2.1 s for 26.5 MB, as much as the tool's own work (hw-lab/README.md).
IGZIP_LEVEL = 3

# valgrind's own options for the recording. --vex-guest-chase=no: each translation stops at a
# jump instead of following it into code that other translations hold too. Most of valgrind's
# time on a short program is translating (python3 -c "sum(range(10**6))": about nine tenths of
# --tool=none's 2 s), and the recorder's translations are larger still (its groups' calls), so
# translating less gains more than longer straight runs of translated code would: the tool
# takes 0.81x of its CPU time there, and 0.94x on the five times longer python run
# (hw-lab/README.md, "valgrind's own options").
# It also keeps valgrind from joining two conditional jumps to one place into a translation
# with one exit, after which it reported the second jump's instructions as fetched whenever
# the first one jumped over them (glibc's string loops do this; trace/skipped_branch.c shows
# it: 999 fetches of an instruction that never ran). Both recorders, the tool and the lackey
# fallback, run with the same options, so they record the same accesses.
# valgrind 3.17 and later name it --vex-guest-chase; before, chasing stopped with
# --vex-guest-chase-thresh=0 (and joined no conditional jumps). Asked of valgrind once (with the
# tool's check in vgtool_dir, and kept with it).
_core_options = None


def core_options_of(help_debug):
    """The options for valgrind's --help-debug text."""
    if "--vex-guest-chase=" in help_debug:
        return ["--vex-guest-chase=no"]
    if "--vex-guest-chase-thresh" in help_debug:
        return ["--vex-guest-chase-thresh=0"]
    return []


def set_core_options(options):
    global _core_options
    _core_options = list(options)


def vg_core_options():
    if _core_options is None:
        try:
            r = subprocess.run(["valgrind", "--help-debug"], capture_output=True, text=True, timeout=30)
            text = r.stdout
        except (OSError, subprocess.SubprocessError):
            text = ""
        set_core_options(core_options_of(text))
    return list(_core_options)


PREFIX_BYTES = 16
# A body this large is not copied behind its header: the header is written into the room left
# before the body (BodyWriter's room), its text padded with spaces to fill it (JSON allows
# them; the prefix's length covers them). The copy took 24 ms of the 23 MB body of
# python3 -c "sum(range(10**6))", 2 % of the whole recording. A smaller body is copied, so
# that a small trace carries no padding.
IN_PLACE_MIN = 1 << 20


def header_room(words):
    """Bytes the header's text can take for this command line: it, and what the other fields
    take at most (HEADER_RESERVE)."""
    n = len(json.dumps(header_words(words), ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    return min(HEADER_MAX, n + HEADER_RESERVE)


class BodyWriter:
    """Compresses the body as it streams by into a temporary file next to the output: with
    zlib here (write), or with igzip reading a descriptor (compress_from). With room, the
    body starts that many bytes (plus the prefix) into the file, and write_trace puts the
    prefix and the header there: the file becomes the trace without a copy."""

    def __init__(self, out_path, room=0):
        d = os.path.dirname(os.path.abspath(out_path))
        fd, self.path = tempfile.mkstemp(prefix=".vmtrace-body-", dir=d)
        self.f = os.fdopen(fd, "wb")
        self.start = PREFIX_BYTES + room if room else 0
        self.f.seek(self.start)        # igzip writes from here too: it shares the offset
        # level 1: 3x faster than 6 on trace bodies (375 MB/s), 0.11 instead of 0.09 bytes an
        # access on the python run.
        # wbits 31: a gzip member, mtime 0
        self.z = zlib.compressobj(1, zlib.DEFLATED, 31)
        self.raw = 0
        self._compressed = 0
        self.proc = None

    def compress_from(self, fd):
        """igzip compresses what fd brings straight into the file; False where there is none."""
        exe = shutil.which("igzip")
        if not exe:
            return False
        self.f.flush()
        # -n: no name, mtime 0. It ignores Ctrl-C: on an interrupt the tool still ends the body.
        self.proc = subprocess.Popen([exe, "-%d" % IGZIP_LEVEL, "-n", "-c"], stdin=fd, stdout=self.f.fileno(),
                                     stderr=subprocess.PIPE,
                                     preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        return True

    @property
    def compressed(self):
        return max(0, os.fstat(self.f.fileno()).st_size - self.start) if self.proc else self._compressed

    def write(self, chunk):
        self.raw += len(chunk)
        z = self.z.compress(chunk)
        self._compressed += len(z)
        self.f.write(z)

    def close(self):
        if self.proc:
            err = self.proc.stderr.read().decode("utf-8", "replace").strip()
            if self.proc.wait():
                raise RuntimeError("igzip failed (exit %d)%s" % (self.proc.returncode, ": " + err if err else ""))
        else:
            self.f.write(self.z.flush())
        self.f.close()
        return os.path.getsize(self.path) - self.start

    def discard(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        try:
            self.f.close()
        except OSError:
            pass
        if os.path.exists(self.path):
            os.unlink(self.path)


def pump(src, body):
    while True:
        chunk = src.read(1 << 16)
        if not chunk:
            return
        body.write(chunk)


def run_valgrind(args, program, pack_cmd, body, started=lambda: None):
    """valgrind | tracepack | gzip; returns (tracepack summary, valgrind status, interrupted).
    started() is called once valgrind is."""
    r, w = os.pipe()
    # tracepack ignores Ctrl-C: on an interrupt it still ends the body properly.
    pack = subprocess.Popen(pack_cmd, stdin=r, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    os.close(r)
    try:
        vg = subprocess.Popen(["valgrind", "--tool=lackey"] + vg_core_options() +
                              ["--trace-mem=yes", "--log-fd=%d" % w, program] + args.command[1:], pass_fds=(w,))
    except OSError as e:
        os.close(w)
        pack.kill()
        pack.wait()
        raise Refused("cannot start valgrind: %s" % e)
    os.close(w)
    started()
    interrupted = False
    try:
        pump(pack.stdout, body)
    except KeyboardInterrupt:
        interrupted = True
        say("interrupted: ending the trace where the program was (it will be marked partial)")
        vg.send_signal(signal.SIGKILL)
        pump(pack.stdout, body)
    err = pack.stderr.read().decode("utf-8", "replace")
    pack.wait()
    summary = None
    for line in err.splitlines():
        if line.startswith("{"):
            summary = json.loads(line)
        else:
            print(line, file=sys.stderr)
    if summary is None:
        vg.kill()
        vg.wait()
        raise RuntimeError("tracepack ended without its summary (exit %d)" % pack.returncode)
    if summary["limit_reached"]:
        vg.kill()           # the program stops at the limit (valgrind runs it in its own process)
    status = vg.wait()
    return summary, status, interrupted


class Progress:
    """One line a second on stderr: accesses so far, accesses a second, the file's size."""

    def __init__(self):
        self.t0 = self.last = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.shown = False

    def show(self, accesses, file_bytes, force=False):
        now = time.monotonic()
        if not force and now - self.last < 1.0:
            return
        self.last = now
        rate = accesses / max(now - self.t0, 1e-9)
        line = "hw-lab: %s accesses, %.1f M/s, %.1f MB so far (%.0f s)" % (
            format(accesses, ","), rate / 1e6, file_bytes / 1e6, now - self.t0)
        print(("\r" + line + "   ") if self.tty else line, end="" if self.tty else "\n",
              file=sys.stderr, flush=True)
        self.shown = True

    def done(self):
        if self.shown and self.tty:
            print(file=sys.stderr, flush=True)


def read_vg_log(path):
    """(fatal signal, last message) from valgrind's own log."""
    sig, last = None, ""
    try:
        with open(path, errors="replace") as f:
            for line in f:
                msg = line.split("== ", 1)[1].strip() if line.startswith("==") and "== " in line else line.strip()
                term = "Process terminating with default action of signal "
                if term in msg:
                    try:
                        sig = int(msg.split(term, 1)[1].split()[0])
                    except ValueError:
                        pass
                if msg:
                    last = msg
    except OSError:
        pass
    return sig, last


def run_vmtrace(args, program, tooldir, limit, body, started=lambda: None):
    """valgrind --tool=vmtrace | igzip (or zlib here), with progress; returns (summary, status, interrupted).
    started() is called once valgrind and igzip are."""
    rb, wb = os.pipe()
    ri, wi = os.pipe()
    fd, log = tempfile.mkstemp(prefix=".vmtrace-log-", dir=os.path.dirname(os.path.abspath(args.out)))
    os.close(fd)
    env = dict(os.environ, VALGRIND_LIB=tooldir)
    try:
        vg = subprocess.Popen(["valgrind", "--tool=vmtrace"] + vg_core_options() +
                              ["--body-fd=%d" % wb, "--info-fd=%d" % wi, "--limit=%d" % limit,
                               "--log-file=" + log, program] + args.command[1:],
                              pass_fds=(wb, wi), env=env)
    except OSError as e:
        for x in (rb, wb, ri, wi):
            os.close(x)
        os.unlink(log)
        raise Refused("cannot start valgrind: %s" % e)
    os.close(wb)
    os.close(wi)
    try:    # a larger pipe: fewer switches between the recorder and its reader
        fcntl.fcntl(rb, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except OSError:
        pass
    open_fds = {rb, ri}
    if body.compress_from(rb):
        os.close(rb)
        open_fds = {ri}
    started()
    progress = Progress()
    accesses, info, interrupted = 0, b"", False
    try:
        while open_fds:
            try:
                ready, _, _ = select.select(list(open_fds), [], [], 1.0)
                for fd in ready:
                    chunk = os.read(fd, 1 << 20)
                    if not chunk:
                        open_fds.discard(fd)
                        os.close(fd)
                    elif fd == rb:
                        body.write(chunk)
                    else:
                        info += chunk
                        for line in info.split(b"\n")[:-1]:
                            if line.startswith(b"progress "):
                                accesses = int(line.split()[1])
                progress.show(accesses, body.compressed)
            except KeyboardInterrupt:
                # The program got the Ctrl-C too: when it ends on it, valgrind still runs the
                # tool's end, which closes the body. A second Ctrl-C kills valgrind.
                if interrupted:
                    say("killing valgrind: no trace is written")
                    vg.send_signal(signal.SIGKILL)
                    continue
                interrupted = True
                say("interrupted: ending the trace where the program was (it will be marked partial; "
                    "Ctrl-C again to give up)")
        status = vg.wait()
    finally:
        for fd in open_fds:
            os.close(fd)
        if vg.poll() is None:
            vg.kill()
            vg.wait()
        sig, last = read_vg_log(log)
        os.unlink(log)
    summary = None
    for line in info.decode("utf-8", "replace").splitlines():
        if line.startswith("{"):
            summary = json.loads(line)
    if summary is None:
        if interrupted:
            raise Refused("interrupted before the recorder ended the trace: nothing written")
        raise Refused("valgrind could not run %s (exit status %s)%s" % (
            args.command[0], status, ": " + last if last else ""))
    progress.show(summary["accesses"], body.compressed, force=True)
    progress.done()
    summary["fatal_signal"] = sig if sig is not None else (-status if status < 0 and not interrupted else None)
    if summary["fatal_signal"] is not None:
        summary["exit_code"] = None
    summary["last_message"] = last
    if interrupted and not summary.get("write_failed"):
        summary["interrupted"] = True
    return summary, status, interrupted


def decide_partial(summary, status, interrupted, limit, source):
    if summary["limit_reached"]:
        return "stopped at the --limit of %d accesses; the program was ended there" % limit
    if interrupted:
        return "interrupted (Ctrl-C) after %d accesses" % summary["accesses"]
    if summary.get("ended_at_exec"):
        return ("the program replaced itself with another program (exec) after %d accesses; "
                "the trace ends there%s" % (summary["accesses"], summary.get("exec_hint", "")))
    if summary["exit_code"] is None and summary["fatal_signal"] is None:
        if source == "lackey-log":
            return "the log ends before valgrind reported how the program ended"
        return "valgrind stopped before the program ended (exit status %s)" % status
    return None


def load_validator(box):
    """The header's validator, into box[0] (None without jsonschema). Its import takes about
    0.3 s of CPU: record() runs this in a thread while the program records."""
    try:
        import jsonschema
    except ImportError:
        box.append(None)
        return
    with open(SCHEMA) as f:
        box.append(jsonschema.Draft202012Validator(json.load(f)))


class ValidatorLoader(threading.Thread):
    """load_validator in a thread, and the probe's module that light_probe needs at the end."""

    def __init__(self):
        super().__init__(daemon=True)
        self.box = []

    def run(self):
        load_validator(self.box)
        from . import probe  # noqa: F401

    def get(self):
        if self.ident is None:
            self.start()
        self.join()
        if not self.box:
            raise RuntimeError("the trace header's schema could not be loaded")
        return self.box[0]


def validate(header, loader=None):
    validator = (loader or ValidatorLoader()).get()
    if validator is None:
        return
    errors = sorted(validator.iter_errors(header), key=str)
    if errors:
        e = errors[0]
        raise RuntimeError("BUG: the trace header does not match %s at %s: %s" % (
            os.path.relpath(SCHEMA), "/".join(map(str, e.absolute_path)) or "(top)", e.message))


def write_trace(out, header, body):
    """The trace file: the prefix and header written into the room before a large body (the
    body file is renamed to out), or the body copied behind them into a new file."""
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if len(text) > HEADER_MAX:
        raise Refused("the command line is too long for a trace header (%d bytes of at most %d)"
                      % (len(text), HEADER_MAX))
    room = body.start - PREFIX_BYTES
    if body.start and len(text) <= room and header["body"]["bytes"] >= IN_PLACE_MIN:
        text += b" " * (room - len(text))
        with open(body.path, "r+b") as f:
            f.write(MAGIC + struct.pack("<HHI", VERSION, 0, len(text)) + text)
        os.chmod(body.path, 0o644)
        os.replace(body.path, out)
        return
    d = os.path.dirname(os.path.abspath(out))
    fd, tmp = tempfile.mkstemp(prefix=".vmtrace-", dir=d)
    try:
        with os.fdopen(fd, "wb") as f, open(body.path, "rb") as b:
            f.write(MAGIC + struct.pack("<HHI", VERSION, 0, len(text)) + text)
            b.seek(body.start)
            shutil.copyfileobj(b, f, 1 << 20)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def record(args, version):
    from .out import check_writable
    why = check_writable(args.out)
    if why:
        print("hw-lab/run trace: error: " + why, file=sys.stderr)
        return EXIT_OUTPUT
    source = "lackey-log" if args.from_lackey else "valgrind"
    # started once valgrind is (run_vmtrace, run_valgrind): its imports would hold the
    # interpreter's lock while this thread gets valgrind going
    loader = ValidatorLoader()
    if args.from_lackey:
        if not os.path.isfile(args.from_lackey):
            raise Refused("--from-lackey %s: no such file" % args.from_lackey)
        program = None
    else:
        if shutil.which("valgrind") is None:
            raise Refused("valgrind is not installed; it records the accesses (Debian/Ubuntu: sudo apt-get "
                          "install valgrind, or make -C hw-lab setup)")
        program = resolve_program(args.command[0])
    tooldir, tool = None, "valgrind-lackey"
    if not args.from_lackey and args.recorder != "lackey":
        tooldir, why = vgtool_dir()
        if tooldir:
            tool = "vmemlab-vmtrace"
        elif args.recorder == "vmtrace":
            raise Refused("vmemlab's valgrind tool cannot be built or loaded here: %s" % why)
        else:
            say("notice: vmemlab's valgrind tool cannot be built or loaded here (%s); recording with "
                "valgrind lackey instead, about 40x slower" % why)
    limit = args.limit
    if not args.from_lackey:
        limit, why = free_disk_limit(args.out, args.limit)
        if why:
            if limit < 1_000_000:
                print("hw-lab/run trace: error: not enough disk space: " + why, file=sys.stderr)
                return EXIT_OUTPUT
            say(why)
    args.limit = limit
    if tooldir is None:
        pack = tracepack_path(args)
        if not os.path.exists(pack):
            raise Refused("no %s: run make -C hw-lab build/tracepack" % pack)
        pack_cmd = [pack, "--limit", str(args.limit)]
    # the header's room before the body, for a program's run (a converted log's command line
    # is known only at its end)
    body = BodyWriter(args.out, room=0 if args.from_lackey else header_room(args.command))
    try:
        if args.from_lackey:
            say("converting %s" % args.from_lackey)
            p = subprocess.run(pack_cmd + ["--input", args.from_lackey], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
            body.write(p.stdout)
            lines = p.stderr.decode("utf-8", "replace").splitlines()
            summary = next((json.loads(x) for x in lines if x.startswith("{")), None)
            if p.returncode or summary is None:
                raise Refused("cannot convert %s: %s" % (args.from_lackey, "; ".join(lines) or "tracepack failed"))
            if not summary["lackey_banner"] and not summary["accesses"]:
                raise Refused("%s is not a valgrind lackey log (no lackey banner and no access lines)"
                              % args.from_lackey)
            status, interrupted = None, False
            words = header_words(summary["command"].split() or [os.path.basename(args.from_lackey)])
            why = command_too_long(words)
            if why:
                raise Refused("cannot convert %s: the command line in its banner: %s" % (args.from_lackey, why))
            program_name, prog_args = words[0], words[1:]
        elif tooldir:
            say("recording %s with vmemlab's valgrind tool (at most %s accesses)"
                % (" ".join(args.command), format(args.limit, ",")))
            summary, status, interrupted = run_vmtrace(args, program, tooldir, args.limit, body, loader.start)
            program_name, *prog_args = header_words(args.command)
            if summary.get("ended_at_exec") and is_script(program):
                summary["exec_hint"] = (" (%s is a script that starts another program: record that "
                                        "program itself)" % program)
        else:
            say("recording %s with valgrind lackey (about 50x slower than the program alone; at most %d accesses)"
                % (" ".join(args.command), args.limit))
            summary, status, interrupted = run_valgrind(args, program, pack_cmd, body, loader.start)
            program_name, *prog_args = header_words(args.command)
            if summary["accesses"] == 0:
                raise Refused("valgrind could not run %s (exit status %s)%s" % (
                    args.command[0], status,
                    ": " + summary["last_message"] if summary["last_message"] else ""))
        body_bytes = body.close()
        reason = decide_partial(summary, status, interrupted, args.limit, source)
        header = {
            "format": "vmemlab-trace",
            "version": VERSION,
            "program": program_name,
            "args": prog_args,
            "created_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "recorder": {"tool": tool, "valgrind": valgrind_version(), "hw_lab": version,
                         "limit": args.limit, "source": source},
            "probe": light_probe(),
            "page_size": 4096,
            "accesses": summary["accesses"],
            "pages": summary["pages"],
            "counts": summary["counts"],
            "partial": reason is not None,
            "program_exit": {"code": summary["exit_code"], "signal": summary["fatal_signal"]},
            "body": {"compression": "gzip", "bytes": body_bytes},
        }
        if tooldir:
            header["recorder"]["threads"] = summary["threads"]
            header["recorder"]["thread_order"] = "serialized"
            header["recorder"]["forks"] = summary["forks"]
            header["recorder"]["children"] = CHILDREN_RULE
        if args.label:
            header["label"] = args.label
        if reason:
            header["partial_reason"] = reason
        validate(header, loader)
        write_trace(args.out, header, body)
    finally:
        body.discard()
    n = summary["accesses"]
    c = summary["counts"]
    size = os.path.getsize(args.out)
    say("wrote %s: %d accesses (%d fetches, %d loads, %d stores, %d modifies) on %d pages of 4 KiB; "
        "%d bytes, %.2f bytes per access" % (os.path.abspath(args.out), n, c["fetch"], c["load"], c["store"],
                                              c["modify"], summary["pages"], size, size / n if n else 0))
    if reason:
        say("PARTIAL trace: " + reason)
    if summary["fatal_signal"] is not None:
        say("note: the program itself ended on signal %d; the trace covers its run up to there"
            % summary["fatal_signal"])
    say("replay it: drop it on the Compare view's 'Your program' panel, or "
        "wasm-core/build/vmsim replay %s" % args.out)
    return EXIT_FAILED if reason and not summary["limit_reached"] else EXIT_OK


def main(argv, version):
    args = parse_args(argv)
    try:
        return record(args, version)
    except Refused as e:
        print("hw-lab/run trace: error: %s" % e, file=sys.stderr)
        return EXIT_USAGE
