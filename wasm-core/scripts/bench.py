#!/usr/bin/env python3
"""Runs the engine benchmark natively and as WebAssembly under Node in one go and prints
translations per second for each mode and the WASM/native ratio (speed is measured here,
never asserted in tests)."""
import json
import subprocess
import sys


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return {(r["mode"], r["trace"]): r for r in map(json.loads, out.splitlines())}


def main():
    native_bin, wasm_js = sys.argv[1], sys.argv[2]
    n = sys.argv[3] if len(sys.argv) > 3 else "1000000"
    native = run([native_bin, n])
    # V8 compiles WebAssembly lazily and starts it in its baseline compiler, so the first
    # mode measured would include compiling the walk; compile it all up front with the
    # optimizing compiler to compare steady-state speed with the native build.
    wasm = run(["node", "--no-wasm-lazy-compilation", "--no-liftoff", wasm_js, n])
    print(f"random reads over 1 GiB of 4 KiB guest pages (4 KiB nested pages), {n} translations each;")
    print("'+caches' runs with the x86-server preset (TLB, page-walk caches, nested TLB)")
    print(f"{'mode':14} {'trace':6} {'refs/walk':>9} {'native M/s':>11} {'wasm M/s':>9} {'native/wasm':>12}")
    for key, nr in native.items():
        wr = wasm[key]
        print(f"{key[0]:14} {str(key[1]).lower():6} {nr['refs_per_walk']:9.2f} {nr['per_second'] / 1e6:11.2f} "
              f"{wr['per_second'] / 1e6:9.2f} {nr['per_second'] / wr['per_second']:11.2f}x")




def experiment_timing(vmsim):
    """The 10-million-access experiment under all modes, timed natively."""
    import time
    t0 = time.monotonic()
    subprocess.run([vmsim, "experiment", "--workload", "mcf", "--accesses", "10000000", "--quiet"], check=True,
                   capture_output=True)
    print(f"vmsim experiment, mcf-like, 10,000,000 accesses under 6 modes: {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
    if len(sys.argv) > 4:
        experiment_timing(sys.argv[4])
