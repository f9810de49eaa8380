#!/usr/bin/env python3
"""hw-lab/run trace (vmemlab's valgrind tool, the whole trace file written) next to valgrind's
own floor, its empty tool (--tool=none: what any valgrind tool pays to run the program, with
valgrind's defaults, and with the core options run trace gives the recorder,
vg_core_options(), which speed up --tool=none too), the tool alone (its body to /dev/null:
no pipe, no gzip, no run trace around it), and lackey --trace-mem=yes on the same program,
run in turn on this machine, each a fresh process timed from start to exit. lackey's log
goes to /dev/null, so its figure is lackey alone, without tracepack or gzip: the recorder
has to beat it while writing the file.

Prints each round's wall times (and CPU seconds) and the ratios recorder / none, recorder /
none with the same options, tool alone / none and lackey / recorder, then the median and
range of each paired ratio, the load average, and the trace's accesses (it must be whole,
not partial).

    python3 hw-lab/bench/trace_vs_lackey.py [--rounds N] [-- PROGRAM ARGS]   (make -C hw-lab bench)
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(HERE, "lib"))
from hwlab.trace import vg_core_options  # noqa: E402
VG_CORE_OPTIONS = vg_core_options()
RUN = os.path.join(HERE, "run")
TOOLDIR = os.path.join(HERE, "build", "vgtool")
# Debian's python3 where it is (a python3 earlier on PATH may be a wrapper script that execs
# it, and the trace would end at the exec).
DEFAULT = ["/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3", "-c", "sum(range(10**6))"]


def timed(cmd, **kw):
    """Wall seconds, and CPU seconds of the command and everything it waited for."""
    t = time.monotonic()
    c0 = os.times()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)
    c1 = os.times()
    if r.returncode:
        sys.exit("trace_vs_lackey: %s failed (%d):\n%s" % (cmd[0], r.returncode, r.stderr[-2000:]))
    return time.monotonic() - t, (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)


def header(path):
    with open(path, "rb") as f:
        data = f.read(16)
        return json.loads(f.read(struct.unpack_from("<I", data, 12)[0]))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("program", nargs=argparse.REMAINDER)
    a = p.parse_args()
    prog = (a.program[1:] if a.program[:1] == ["--"] else a.program) or DEFAULT
    prog = [subprocess.run(["sh", "-c", 'command -v "$0"', prog[0]], capture_output=True, text=True)
            .stdout.strip() or prog[0]] + prog[1:]
    r = subprocess.run(["make", "-s", "-C", HERE, "vgtool", "build/tracepack"], capture_output=True, text=True)
    if r.returncode:
        sys.exit("trace_vs_lackey: the valgrind tool does not build here:\n" + r.stdout + r.stderr)
    out = os.path.join(tempfile.mkdtemp(prefix="trace-bench-"), "bench.vmtrace")
    print("recorder: %s trace --out %s -- %s" % (RUN, out, " ".join(prog)))
    # run as a learner types it: its #! line's python3, the first on PATH, whose own start
    # (a wrapper's, such as pyenv's shim, included) is part of what the recorder costs
    py = shutil.which("python3") or "python3"
    starts = sorted(timed([py, "-c", "pass"])[0] for _ in range(5))
    print("  its python3: %s (%s), starting in %.0f ms (median of 5)" % (
        py, os.path.realpath(py) if os.path.realpath(py) != py else "itself", starts[2] * 1e3))
    core = " ".join(VG_CORE_OPTIONS)
    print("none:     valgrind --tool=none %s" % " ".join(prog))
    print("none, the recorder's options: valgrind --tool=none %s %s" % (core, " ".join(prog)))
    print("tool:     VALGRIND_LIB=%s valgrind --tool=vmtrace %s --body-fd=3 --info-fd=4 %s 3>/dev/null 4>/dev/null"
          % (TOOLDIR, core, " ".join(prog)))
    print("lackey:   valgrind --tool=lackey %s --trace-mem=yes --log-file=/dev/null %s" % (core, " ".join(prog)))
    print("load average at the start: %.1f (%d processors)" % (os.getloadavg()[0], os.cpu_count() or 1))
    ratios, floor, cpu_floor, tool_floor, tool_cpu_floor, same_floor = [], [], [], [], [], []
    devnull = os.open(os.devnull, os.O_WRONLY)
    tool_env = dict(os.environ, VALGRIND_LIB=TOOLDIR)
    for i in range(a.rounds):
        t_rec, c_rec = timed([RUN, "trace", "--out", out, "--"] + prog)
        t_none, c_none = timed(["valgrind", "--tool=none", "--log-file=/dev/null"] + prog)
        t_same, _ = timed(["valgrind", "--tool=none"] + VG_CORE_OPTIONS + ["--log-file=/dev/null"] + prog)
        t_tool, c_tool = timed(["valgrind", "--tool=vmtrace"] + VG_CORE_OPTIONS +
                               ["--body-fd=%d" % devnull, "--info-fd=%d" % devnull, "--log-file=/dev/null"] + prog,
                               pass_fds=(devnull,), env=tool_env)
        t_lk, _ = timed(["valgrind", "--tool=lackey"] + VG_CORE_OPTIONS + ["--trace-mem=yes", "--log-file=/dev/null"]
                        + prog)
        ratios.append(t_lk / t_rec)
        floor.append(t_rec / t_none)
        same_floor.append(t_rec / t_same)
        cpu_floor.append(c_rec / c_none)
        tool_floor.append(t_tool / t_none)
        tool_cpu_floor.append(c_tool / c_none)
        print("round %d: recorder %.2f s (%.2f s CPU), none %.2f s (%.2f s CPU), none with the options %.2f s, "
              "tool alone %.2f s (%.2f s CPU), lackey %.2f s; recorder / none %.2fx (CPU %.2fx), recorder / none "
              "with the options %.2fx, tool alone / none %.2fx (CPU %.2fx), lackey / recorder %.1fx"
              % (i + 1, t_rec, c_rec, t_none, c_none, t_same, t_tool, c_tool, t_lk, floor[-1], cpu_floor[-1],
                 same_floor[-1], tool_floor[-1], tool_cpu_floor[-1], ratios[-1]), flush=True)
    os.close(devnull)
    h = header(out)
    print("trace: %s accesses, %s, %d bytes (%.2f bytes per access)" % (
        format(h["accesses"], ","), "PARTIAL: " + h["partial_reason"] if h["partial"] else "whole",
        os.path.getsize(out), os.path.getsize(out) / max(h["accesses"], 1)))
    print("recorder / none (valgrind's floor), paired: median %.2fx (%.2f .. %.2f) wall, %.2fx CPU over %d rounds" % (
        statistics.median(floor), min(floor), max(floor), statistics.median(cpu_floor), len(floor)))
    print("recorder / none with the recorder's options (%s), paired: median %.2fx (%.2f .. %.2f) wall" % (
        core, statistics.median(same_floor), min(same_floor), max(same_floor)))
    print("tool alone / none, paired: median %.2fx (%.2f .. %.2f) wall, %.2fx CPU over %d rounds" % (
        statistics.median(tool_floor), min(tool_floor), max(tool_floor), statistics.median(tool_cpu_floor),
        len(tool_floor)))
    print("lackey / recorder, paired: median %.1fx (%.1f .. %.1f) over %d rounds; load average at the end %.1f" % (
        statistics.median(ratios), min(ratios), max(ratios), len(ratios), os.getloadavg()[0]))
    os.unlink(out)
    os.rmdir(os.path.dirname(out))


if __name__ == "__main__":
    main()
