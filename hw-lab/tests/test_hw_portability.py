"""The generic benchmarks build without any x86 assembly and with Debian's aarch64 cross
compiler (the stand-in for sw_64, whose compiler is not packaged for Debian)."""
import json
import os
import shutil
import subprocess

import pytest

from hwlab_helpers import HW


def make(target):
    r = subprocess.run(["make", "-s", "-C", HW, target], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return os.path.join(HW, target)


def elf_machine(path):
    with open(path, "rb") as f:
        head = f.read(20)
    assert head[:4] == b"\x7fELF"
    return int.from_bytes(head[18:20], "little")


def test_generic_build_has_no_x86_instructions():
    b = make("build/hwlab-generic")
    if shutil.which("objdump"):
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", b], capture_output=True,
                             text=True).stdout
        mnemonics = {l.split("\t")[-1].split()[0] for l in dis.splitlines()
                     if l.startswith(" ") and "\t" in l and l.split("\t")[-1].split()}
        assert not mnemonics & {"rdtsc", "rdtscp", "cpuid", "vmcall", "vmmcall"}, mnemonics
    names = subprocess.run([b, "list"], capture_output=True, text=True).stdout.split()
    assert names == ["memtouch", "ptrchase", "ctxswitch"]


def test_generic_build_runs_with_clock_gettime():
    b = make("build/hwlab-generic")
    r = subprocess.run([b, "bench", "--quick", "--only", "ctxswitch:same_cpu"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["timer"]["source"] == "clock_gettime_monotonic"
    assert doc["timer"]["unit"] == "ns" and doc["timer"]["freq_hz"] == 1e9
    m = doc["benchmarks"][0]["cases"][0]["metrics"][0]
    assert m["unit"] == "ns" and 100 < m["median"] < 1e8
    cp = json.loads(subprocess.run([b, "cpuid"], capture_output=True, text=True).stdout)
    assert cp == {"available": False}


@pytest.mark.skipif(not shutil.which("aarch64-linux-gnu-gcc"),
                    reason="gcc-aarch64-linux-gnu not installed (make setup)")
@pytest.mark.parametrize("target", ["build/hwlab-aarch64", "build/hwlab-aarch64-generic"])
def test_aarch64_cross_build(target):
    assert elf_machine(make(target)) == 183   # EM_AARCH64
