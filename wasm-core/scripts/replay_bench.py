#!/usr/bin/env python3
"""`make bench`: trace replay, native vs WebAssembly, measured in one run.

    replay_bench.py VMSIM NODE_SCRIPT TRACE... [--rounds N]

For each trace: the native CLI (`vmsim replay`, every mode with the x86-server caches) one
mode after another (`--jobs 1`) and on threads (`--jobs` the processors), and the
WebAssembly engine under Node (bench/replay-node.mjs, the same module the page runs, one
mode after another) take turns, N rounds; all must print the same bytes. Reported: the
median seconds of each (the native process from start to exit; the WebAssembly replay's
own seconds after a first replay in the same process has compiled its code), the medians
of the per-round ratios wasm / native (both one mode after another) and threads / one
after another (native), the native process's peak resident memory and the WebAssembly
memory's size.
Speed is measured here and printed, never asserted.
"""
import json
import os
import statistics
import subprocess
import sys
import time


def native(vmsim, trace, jobs=None):
    t0 = time.monotonic()
    p = subprocess.run([vmsim, "replay", trace, "--quiet"] + (["--jobs", str(jobs)] if jobs else []), capture_output=True)
    seconds = time.monotonic() - t0
    if p.returncode:
        sys.exit("replay_bench: vmsim replay %s failed: %s" % (trace, p.stderr.decode()))
    return p.stdout, seconds


def native_peak_kib(vmsim, trace):
    """Peak resident memory of one native replay (the kernel's accounting of the child)."""
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.execv(vmsim, [vmsim, "replay", trace, "--quiet"])
    _, status, usage = os.wait4(pid, 0)
    return usage.ru_maxrss


def wasm(node_script, trace):
    p = subprocess.run(["node", node_script, trace], capture_output=True, env=dict(os.environ, REPEAT="2"))
    if p.returncode:
        sys.exit("replay_bench: %s %s failed: %s" % (node_script, trace, p.stderr.decode()))
    info = json.loads(p.stderr.decode().strip().splitlines()[-1])
    return p.stdout, info["seconds"], info["wasm_memory_bytes"]


def header(trace):
    with open(trace, "rb") as f:
        head = f.read(16 + 65536)
    n = int.from_bytes(head[12:16], "little")
    return json.loads(head[16:16 + n])


def main():
    args = sys.argv[1:]
    rounds = 5
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    vmsim, node_script, traces = args[0], args[1], args[2:]
    print("trace replay: every access through native, EPT, NPT, shadow and flat with the x86-server caches "
          "(TLB, page-walk caches, nested TLB), both passes, gunzip included")
    cores = os.cpu_count() or 1
    print("native threads: --jobs %d (the processors here); load average at the start %.1f" % (cores, os.getloadavg()[0]))
    print("%-34s %11s %6s %9s %9s %9s %12s %10s %9s %9s" % ("trace", "accesses", "pages", "native s", "threads s", "wasm s",
                                                            "wasm/native", "par/serial", "RSS MiB", "wasm MiB"))
    for trace in traces:
        h = header(trace)
        ns, ps, ws, ratios, par, mem = [], [], [], [], [], 0
        for _ in range(rounds):
            nout, n = native(vmsim, trace, 1)
            pout, pt = native(vmsim, trace)
            wout, w, mem = wasm(node_script, trace)
            if nout != wout or pout != nout:
                sys.exit("replay_bench: %s: the reports differ (threads, WebAssembly, one mode after another)" % trace)
            ns.append(n)
            ps.append(pt)
            ws.append(w)
            ratios.append(w / n)
            par.append(pt / n)
        peak = native_peak_kib(vmsim, trace)
        label = h.get("label") or " ".join([h["program"]] + h["args"])
        print("%-34s %11d %6d %9.3f %9.3f %9.3f %11.2fx %9.2fx %9.1f %9.1f" % (
            label[:34], h["accesses"], h["pages"], statistics.median(ns), statistics.median(ps), statistics.median(ws),
            statistics.median(ratios), statistics.median(par), peak / 1024, mem / 2**20))
    print("medians of %d rounds taken in turn; wasm/native and par/serial (threads / --jobs 1) are medians of the "
          "per-round ratios; load average at the end %.1f" % (rounds, os.getloadavg()[0]))


if __name__ == "__main__":
    main()
