"""Kernel modules and the shadow-vs-nested experiment in a QEMU guest under software
emulation: Debian's amd64 kernel (from the linux-image package matching the headers the
modules were built against) and a busybox initramfs. One boot runs both parts."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from hwlab_helpers import HW

sys.path.insert(0, os.path.join(HW, "guest"))
import boot  # noqa: E402

NEEDS = ["qemu-system-x86_64"]
pytestmark = pytest.mark.skipif(
    not all(shutil.which(t) for t in NEEDS) or not os.path.exists("/bin/busybox")
    or not os.path.isdir("/usr/src") or not any(
        d.startswith("linux-headers-") and d.endswith("-amd64") for d in os.listdir("/usr/src")),
    reason="needs qemu-system-x86, busybox-static and linux-headers-amd64 (make setup)")


@pytest.fixture(scope="module")
def serial():
    r = subprocess.run(["make", "-s", "-C", HW, "initramfs"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    g = os.path.join(HW, "build", "guest")
    out, timed_out = boot.boot(os.path.join(g, "vmlinuz"), os.path.join(g, "initramfs.cpio"),
                               "modules,npt", timeout=180)
    with open(os.path.join(HW, "build", "guest", "serial.log"), "w") as f:
        f.write(out)   # for a human when something fails
    assert not timed_out, "QEMU guest did not finish in 180 s:\n" + out[-3000:]
    assert "HWLAB-GUEST-DONE" in out, out[-3000:]
    return out


def test_guest_runs_the_packaged_kernel(serial):
    krel = open(os.path.join(HW, "build", "guest", "krel")).read().strip()
    assert "HWLAB-GUEST-UP kernel=%s " % krel in serial


def test_ptwalk_matches_pagemap(serial):
    assert "PTWALK-INSMOD-RC=0" in serial
    found = re.findall(r"PTWALK-CHECK (\w+) va=0x[0-9a-f]+ ptwalk=(\S+) pagemap=(\S+)", serial)
    rows = {name: (walk, pagemap) for name, walk, pagemap in found}
    assert set(rows) == {"stack", "heap", "bss", "thp", "unmapped"}, serial[-3000:]
    for name in ("stack", "heap", "bss", "thp"):
        walk, pagemap = rows[name]
        assert not walk.startswith("none:") and walk == pagemap, (name, walk, pagemap)
        assert int(walk, 16) != 0
    assert rows["unmapped"][0].startswith("none:") and rows["unmapped"][1].startswith("none:")
    assert "not-present at" in serial


def test_ptwalk_shows_every_level(serial):
    block = serial.split("PTWALK-INSMOD-RC=0", 1)[1].split("PTWALK-CHECK stack", 1)[0]
    levels = re.findall(r"^(pgd|p4d|pud|pmd|pte) index \d+ entry 0x[0-9a-f]{16}", block, re.M)
    # 4-level paging (QEMU's qemu64 CPU has no LA57): the kernel folds p4d at boot, and
    # the module says so from mm_p4d_folded() instead of printing the pgd entry twice
    assert re.search(r"^levels 4\r?$", block, re.M) and re.search(r"^folded p4d\r?$", block, re.M)
    assert levels == ["pgd", "pud", "pmd", "pte"]
    # each index is va's bits for that level: 9 bits each from bit 39 down
    va = int(re.search(r"^pid \d+ va (0x[0-9a-f]+)", block, re.M).group(1), 16)
    idx = [int(i) for i in re.findall(r"^(?:pgd|pud|pmd|pte) index (\d+)", block, re.M)]
    assert idx == [(va >> s) & 511 for s in (39, 30, 21, 12)]
    # the 4 KiB leaf's frame is the physical address's frame
    pte = int(re.search(r"^pte index \d+ entry (0x[0-9a-f]+)", block, re.M).group(1), 16)
    pa = int(re.search(r"^pa (0x[0-9a-f]+) page 4096", block, re.M).group(1), 16)
    assert (pte & 0x000FFFFFFFFFF000) == (pa & ~0xFFF)


def test_ptwalk_stops_at_pmd_for_a_huge_page(serial):
    block = serial.split("PTWALK-CHECK bss", 1)[1].split("PTWALK-CHECK thp", 1)[0]
    if "page 2097152" not in block:
        pytest.skip("the guest kernel gave no transparent huge page")
    pmd = int(re.search(r"^pmd index \d+ entry (0x[0-9a-f]+)", block, re.M).group(1), 16)
    assert pmd & 0x80                          # PS bit: a 2 MiB leaf
    assert "pte index" not in block


def test_vmcall_bench_refuses_cleanly_without_kvm(serial):
    rc = int(re.search(r"VMCALL-INSMOD-RC=(\d+)", serial).group(1))
    assert rc != 0
    assert "VMCALL-PROC-ABSENT" in serial
    assert re.search(r"vmcall_bench: refusing to load: the hypervisor is not KVM", serial)
    # no oops, no #UD: the guest carried on to the end
    assert "invalid opcode" not in serial and "Oops" not in serial
    assert "HWLAB-MODULES-DONE" in serial


def npt_run(serial, npt):
    m = re.search(r"NPT-JSON npt=%d (\{.*\})" % npt, serial)
    assert m, serial[-3000:]
    b = json.loads(m.group(1))["benchmarks"][0]
    assert b["status"] == "ok", b
    return b["cases"][0]


def test_kvm_amd_loads_with_each_npt_setting(serial):
    assert "KVM-AMD-INSMOD npt=1 rc=0" in serial and "NPT-PARAM npt=1 value=Y" in serial
    assert "KVM-AMD-INSMOD npt=0 rc=0" in serial and "NPT-PARAM npt=0 value=N" in serial


def test_mov_cr3_and_invlpg_exit_only_under_shadow_paging(serial):
    nested, shadow = npt_run(serial, 1), npt_run(serial, 0)
    n = shadow["params"]["iterations"]
    assert nested["params"]["iterations"] == n >= 100
    s, p = shadow["kvm_stats"]["vcpu"], nested["kvm_stats"]["vcpu"]
    # npt=0: KVM intercepts the guest's CR3 read, CR3 write and INVLPG (3 exits each round)
    assert s["invlpg"] == n
    assert s["exits"] >= 2 * n
    # npt=1: the guest owns CR3 and its TLB; none of that exits
    assert p.get("invlpg", 0) == 0
    assert p["exits"] < n / 10
