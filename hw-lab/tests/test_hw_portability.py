"""The generic benchmarks build without any x86 assembly and with Debian's aarch64 cross
compiler (the stand-in for sw_64, whose compiler is not packaged for Debian), and the
aarch64 builds run under qemu-user, also with an 8 KiB page size (Sunway's)."""
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


def test_generic_build_lists_the_x86_benchmarks_as_skipped():
    b = make("build/hwlab-generic")
    r = subprocess.run([b, "bench", "--quick", "--mem-mib", "8"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    got = {x["name"]: x for x in json.loads(r.stdout)["benchmarks"]}
    assert list(got) == ["cpuid_exit", "memtouch", "ptrchase", "ctxswitch", "kvm_exits"]
    for n in ("cpuid_exit", "kvm_exits"):
        assert got[n]["status"] == "skipped"
        assert "x86 only" in got[n]["reason"] and "HWLAB_GENERIC_ONLY" in got[n]["reason"]


@pytest.mark.skipif(not shutil.which("aarch64-linux-gnu-gcc"),
                    reason="gcc-aarch64-linux-gnu not installed (make setup)")
@pytest.mark.parametrize("target", ["build/hwlab-aarch64", "build/hwlab-aarch64-generic"])
def test_aarch64_cross_build(target):
    assert elf_machine(make(target)) == 183   # EM_AARCH64


QEMU = shutil.which("qemu-aarch64")
needs_qemu = pytest.mark.skipif(
    not QEMU or not shutil.which("aarch64-linux-gnu-gcc"),
    reason="qemu-user and gcc-aarch64-linux-gnu not installed (make setup)")


def aarch64_run(target, args, page=None):
    b = make(target)
    cmd = [QEMU] + (["-p", str(page)] if page else []) + [b] + args
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    return r


@needs_qemu
@pytest.mark.parametrize("target,timer", [("build/hwlab-aarch64", "cntvct_el0"),
                                          ("build/hwlab-aarch64-generic",
                                           "clock_gettime_monotonic")])
def test_aarch64_build_runs_under_qemu_user(target, timer):
    doc = json.loads(aarch64_run(target, ["bench", "--quick", "--mem-mib", "8"]).stdout)
    assert doc["timer"]["source"] == timer
    if timer == "cntvct_el0":
        assert doc["timer"]["freq_method"] == "cntfrq_el0" and doc["timer"]["freq_hz"] > 0
    got = {b["name"]: b for b in doc["benchmarks"]}
    assert [got[n]["status"] for n in ("memtouch", "ptrchase", "ctxswitch")] == ["ok"] * 3
    assert got["cpuid_exit"]["status"] == got["kvm_exits"]["status"] == "skipped"
    mt = {c["name"]: c for c in got["memtouch"]["cases"]}
    assert mt["4k"]["params"]["page_bytes"] == 4096
    r = aarch64_run(target, ["cpuid"])
    assert json.loads(r.stdout) == {"available": False}


@needs_qemu
def test_aarch64_build_with_8k_pages_under_qemu_user():
    """qemu-user -p 8192: the program's sysconf(_SC_PAGESIZE) says 8192, as on Sunway."""
    doc = json.loads(aarch64_run("build/hwlab-aarch64", ["bench", "--quick", "--mem-mib",
                                                         "8"], page=8192).stdout)
    got = {b["name"]: b for b in doc["benchmarks"]}
    mt = {c["name"]: c for c in got["memtouch"]["cases"]}
    assert set(mt) == {"8k", "thp"}
    p = mt["8k"]["params"]
    assert p["page_bytes"] == 8192 and p["page_bytes_from"] == "sysconf(_SC_PAGESIZE)"
    assert p["pages"] == p["bytes"] // 8192
    m = {x["name"]: x for x in mt["8k"]["metrics"]}
    assert m["first_touch"]["count"] == p["runs"] * p["pages"]
    pc = [c["name"] for c in got["ptrchase"]["cases"]]
    assert pc == ["8k_4MiB", "thp_4MiB"]
