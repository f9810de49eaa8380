"""Helpers shared by the hw-lab tests (paths, running hw-lab/run, finding results)."""
import os
import subprocess
import sys

HW = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(HW, "run")
BIN = os.path.join(HW, "build", "hwlab")
if os.path.join(HW, "lib") not in sys.path:
    sys.path.insert(0, os.path.join(HW, "lib"))


def run_cmd(args, timeout=120, **kw):
    """hw-lab/run with this interpreter (the one that has jsonschema)."""
    return subprocess.run([sys.executable, RUN] + args, capture_output=True, text=True,
                          timeout=timeout, **kw)


def kvm_usable():
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
        os.close(fd)
        return True
    except OSError:
        return False


def bench(result, name):
    return next(b for b in result["benchmarks"] if b["name"] == name)


def case(b, name):
    return next(c for c in b["cases"] if c["name"] == name)


def metric(c, name):
    return next(m for m in c["metrics"] if m["name"] == name)
