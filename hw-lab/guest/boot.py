#!/usr/bin/env python3
"""Boot the test guest in QEMU (software emulation, a hard timeout) and print its serial
output. usage: boot.py KERNEL INITRD TESTS [TIMEOUT_S]   e.g. TESTS=modules,npt"""
import os
import subprocess
import sys


def qemu_cmd(kernel, initrd, tests):
    return ["qemu-system-x86_64", "-accel", "tcg", "-smp", "1", "-m", "1024",
            "-cpu", "qemu64,+svm,+npt", "-nographic", "-no-reboot", "-nodefaults",
            "-serial", "stdio", "-kernel", kernel, "-initrd", initrd,
            "-append", "console=ttyS0 quiet panic=-1 hwlab.tests=%s" % tests]


def boot(kernel, initrd, tests, timeout=150):
    """Returns (serial output, timed_out)."""
    p = subprocess.Popen(qemu_cmd(kernel, initrd, tests), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        out, _ = p.communicate(timeout=timeout)
        return out.decode("utf-8", "replace"), False
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        return out.decode("utf-8", "replace"), True


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out, late = boot(a[0], a[1], a[2], int(a[3]) if len(a) > 3 else 150)
    sys.stdout.write(out)
    if late:
        print("\nboot.py: timed out; QEMU killed", file=sys.stderr)
        sys.exit(124)
