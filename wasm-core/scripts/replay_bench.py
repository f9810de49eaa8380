#!/usr/bin/env python3
"""`make bench`: trace replay, native vs WebAssembly, measured in one run.

    replay_bench.py VMSIM NODE_SCRIPT TRACE... [--rounds N]

For each trace: the native CLI (`vmsim replay`, every mode with the x86-server caches) and
the WebAssembly engine under Node (bench/replay-node.mjs, the same module the page runs)
take turns, N rounds; both must print the same bytes. Reported: the median seconds of
each (the native process from start to exit; the WebAssembly replay's own seconds after
a first replay in the same process has compiled its code), the median of the per-round
ratios, the native process's peak resident memory and the WebAssembly memory's size.
Speed is measured here and printed, never asserted.
"""
import json
import os
import statistics
import subprocess
import sys
import time


def native(vmsim, trace):
    t0 = time.monotonic()
    p = subprocess.run([vmsim, "replay", trace, "--quiet"], capture_output=True)
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
    print("%-34s %11s %6s %9s %9s %12s %9s %9s" % ("trace", "accesses", "pages", "native s", "wasm s", "wasm/native",
                                                   "RSS MiB", "wasm MiB"))
    for trace in traces:
        h = header(trace)
        ns, ws, ratios, mem = [], [], [], 0
        for _ in range(rounds):
            nout, n = native(vmsim, trace)
            wout, w, mem = wasm(node_script, trace)
            if nout != wout:
                sys.exit("replay_bench: %s: the WebAssembly report differs from the native one" % trace)
            ns.append(n)
            ws.append(w)
            ratios.append(w / n)
        peak = native_peak_kib(vmsim, trace)
        label = h.get("label") or " ".join([h["program"]] + h["args"])
        print("%-34s %11d %6d %9.3f %9.3f %11.2fx %9.1f %9.1f" % (
            label[:34], h["accesses"], h["pages"], statistics.median(ns), statistics.median(ws),
            statistics.median(ratios), peak / 1024, mem / 2**20))
    print("medians of %d rounds taken in turn; wasm/native is the median of the per-round ratios" % rounds)


if __name__ == "__main__":
    main()
