"""Probe readers on recorded /proc and /sys snippets."""
import os

import hwlab_helpers  # noqa: F401  (puts hw-lab/lib on sys.path)
from hwlab import probe

INTEL_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov vmx smx est tm2 ssse3 sdbg fma cx16 pcid x2apic tsc_deadline_timer avx512f
vmx flags\t: vnmi preemption_timer posted_intr invvpid ept_x_only ept_ad ept_1gb flexpriority apicv tsc_offset vtpr mtf vapic ept vpid unrestricted_guest vapic_reg vid ple shadow_vmcs pml ept_mode_based_exec tsc_scaling
bugs\t\t: spectre_v1

processor\t: 1
vendor_id\t: GenuineIntel
"""

AARCH64_CPUINFO = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics
CPU implementer\t: 0x41
CPU part\t: 0xd0c
"""


def test_vmx_flags_line():
    f = probe.cpu_features(probe.parse_cpuinfo(INTEL_CPUINFO))
    assert f["vmx"] and not f["svm"]
    assert f["ept"] and f["vpid"] and f["ept_ad"] and f["ept_1gb"] and f["unrestricted_guest"]
    assert not f["npt"] and not f["hypervisor_flag"] and not f["vmfunc"]
    assert "shadow_vmcs" in f["vmx_flags"]


def test_aarch64_cpuinfo_has_no_virt_flags():
    ci = probe.parse_cpuinfo(AARCH64_CPUINFO)
    f = probe.cpu_features(ci)
    assert not any(f[k] for k in ("vmx", "svm", "ept", "npt"))
    assert ci["cpu part"] == "0xd0c"


def test_arch_names():
    assert probe.normalize_arch("x86_64") == "x86_64"
    assert probe.normalize_arch("arm64") == "aarch64"
    assert probe.normalize_arch("sw_64") == "sw_64"


def test_hypervisor_signatures():
    assert probe.hypervisor_name("KVMKVMKVM\0\0\0") == "kvm"
    assert probe.hypervisor_name("Microsoft Hv") == "hyper-v"
    assert probe.hypervisor_name("TCGTCGTCGTCG") == "qemu-tcg"
    assert probe.hypervisor_name("NotAHypervsr").startswith("unknown:")


def write(root, path, text):
    p = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text + "\n")


def test_dmi_reveals_a_vm_that_hides_its_cpuid_bit(tmp_path):
    root = str(tmp_path)
    write(root, "/sys/class/dmi/id/sys_vendor", "QEMU")
    write(root, "/sys/class/dmi/id/product_name", "Standard PC (Q35 + ICH9, 2009)")
    feats = probe.cpu_features(probe.parse_cpuinfo(INTEL_CPUINFO))
    v = probe.virtualization({"available": True, "hypervisor_bit": False}, feats,
                             probe.dmi(root), root)
    assert v["in_vm"] and v["hypervisor"] == "qemu" and not v["hypervisor_bit"]
    bare = probe.virtualization({"available": True, "hypervisor_bit": False}, feats, {}, root)
    assert not bare["in_vm"] and bare["hypervisor"] is None


def test_kvm_module_parameters(tmp_path):
    root = str(tmp_path)
    write(root, "/sys/module/kvm_intel/parameters/ept", "N")
    write(root, "/sys/module/kvm_intel/parameters/nested", "Y")
    write(root, "/sys/module/kvm/parameters/tdp_mmu", "Y")
    k = probe.kvm_info(root)
    assert k["modules"]["kvm_intel"] == {"ept": "N", "nested": "Y"}
    assert k["tdp"] == "N"     # the EPT-off host of the memtouch lesson
    root2 = str(tmp_path / "amd")
    write(root2, "/sys/module/kvm_amd/parameters/npt", "1")
    assert probe.kvm_info(root2)["tdp"] == "1"


def test_thp_mode(tmp_path):
    root = str(tmp_path)
    write(root, "/sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never")
    write(root, "/proc/meminfo", "MemTotal: 1 kB\nHugepagesize:       2048 kB")
    m = probe.memory(root)
    assert m["thp_enabled"] == "madvise" and m["huge_page_bytes"] == 2 << 20


def test_cpuid_helper_agrees_with_cpuinfo(hwlab_bin):
    import json
    import subprocess
    c = json.loads(subprocess.run([hwlab_bin, "cpuid"], capture_output=True, text=True).stdout)
    ci = probe.parse_cpuinfo(open("/proc/cpuinfo").read())
    assert c["available"] is True
    assert c["vendor"] == ci["vendor_id"]
    assert c["brand"].strip() == ci["model name"]
    assert c["family"] == int(ci["cpu family"]) and c["model"] == int(ci["model"])
    assert c["hypervisor_bit"] == ("hypervisor" in ci["flags"].split())


def test_vmcall_module_numbers_are_picked_up(tmp_path, monkeypatch):
    from hwlab import cli
    p = tmp_path / "vmcall_bench"
    p.write_text("insn vmmcall\ncount 10000\nmin 1200\nmedian 1290\nmean 1333\nmax 9000\n"
                 "ret -1000\n")
    monkeypatch.setattr(cli, "PROC_VMCALL", str(p))
    b = cli.vmcall_from_module()
    m = b["cases"][0]["metrics"][0]
    assert b["name"] == "vmcall_bench" and b["cases"][0]["name"] == "vmmcall"
    assert (m["min"], m["median"], m["count"]) == (1200, 1290, 10000)
    p.write_text("garbage\n")
    assert cli.vmcall_from_module() is None
    monkeypatch.setattr(cli, "PROC_VMCALL", str(tmp_path / "absent"))
    assert cli.vmcall_from_module() is None
