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


def test_vmcall_module_numbers_are_picked_up(tmp_path):
    from hwlab import modules
    p = tmp_path / "vmcall_bench"
    p.write_text("insn vmmcall\ncount 10000\nmin 1200\nmedian 1290\nmean 1333\nmax 9000\n"
                 "ret -1000\n")
    b = modules.vmcall_from_module(str(p))
    m = b["cases"][0]["metrics"][0]
    assert b["name"] == "vmcall_bench" and b["cases"][0]["name"] == "vmmcall"
    assert (m["min"], m["median"], m["count"]) == (1200, 1290, 10000)
    p.write_text("garbage\n")
    assert modules.vmcall_from_module(str(p)) is None
    assert modules.vmcall_from_module(str(tmp_path / "absent")) is None


# ---- the KVM backend, the platform, module support

def test_kvm_backends(tmp_path):
    root = str(tmp_path / "pvm")
    write(root, "/sys/module/kvm/parameters/tdp_mmu", "N")
    os.makedirs(os.path.join(root, "sys/module/kvm_pvm/parameters"))
    write(root, "/dev/kvm", "")
    k = probe.kvm_info(root)
    assert k["backend"] == "kvm_pvm" and k["tdp"] is None
    assert "software backend" in k["backend_note"] and "shadow page tables" in k["backend_note"]
    root = str(tmp_path / "amd0")
    write(root, "/sys/module/kvm_amd/parameters/npt", "0")
    k = probe.kvm_info(root)
    assert k["backend"] == "kvm_amd" and k["tdp"] == "0"
    assert "npt=0: shadow paging" in k["backend_note"] and "3 exits" in k["backend_note"]
    root = str(tmp_path / "intel1")
    write(root, "/sys/module/kvm_intel/parameters/ept", "Y")
    assert "walked by hardware in two dimensions" in probe.kvm_info(root)["backend_note"]
    k = probe.kvm_info(str(tmp_path / "nothing"))
    assert k["backend"] == "none" and "no KVM here" in k["backend_note"]


def acpi_table(root, name, oem):
    p = os.path.join(root, "sys/firmware/acpi/tables", name)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(name.encode() + b"\x14\x01\x00\x00\x06\x66" + oem.encode().ljust(6, b" ")
                + b"FCVMFADT" + b"\0" * 20)


def kvm_guest_cpuid():
    return {"available": True, "hypervisor_bit": True, "hypervisor_signature": "KVMKVMKVM"}


def test_platform_firecracker_from_the_acpi_oem_id(tmp_path):
    root = str(tmp_path)
    acpi_table(root, "FACP", "FIRECK")
    feats = probe.cpu_features(probe.parse_cpuinfo(INTEL_CPUINFO))
    v = probe.virtualization(kvm_guest_cpuid(), feats, {}, root)
    assert v["hypervisor"] == "kvm" and v["platform"] == "firecracker"
    assert "ACPI table OEM ID 'FIRECK'" in v["evidence"]


def test_platform_without_root(tmp_path):
    # no readable ACPI tables: the vmclock device and no DMI still say Firecracker
    root = str(tmp_path / "fc")
    write(root, "/sys/bus/acpi/devices/AMZNC10C:00/hid", "AMZNC10C")
    feats = probe.cpu_features(probe.parse_cpuinfo(INTEL_CPUINFO))
    assert probe.virtualization(kvm_guest_cpuid(), feats, {}, root)["platform"] == "firecracker"
    # the same device with EC2's DMI strings is an EC2 instance
    dmi = {"sys_vendor": "Amazon EC2", "product_name": "m7i.large"}
    assert probe.virtualization(kvm_guest_cpuid(), feats, dmi, root)["platform"] == "aws-ec2"
    root = str(tmp_path / "qemu")
    write(root, "/sys/bus/acpi/devices/QEMU0002:00/hid", "QEMU0002")
    assert probe.virtualization(kvm_guest_cpuid(), feats, {}, root)["platform"] == "qemu"


def test_bare_metal_cloud_strings_do_not_make_a_vm(tmp_path):
    feats = probe.cpu_features(probe.parse_cpuinfo(INTEL_CPUINFO))
    hyperv = probe.virtualization({"available": True, "hypervisor_bit": False}, feats,
                                  {"sys_vendor": "Microsoft Corporation",
                                   "product_name": "Virtual Machine"}, str(tmp_path))
    assert hyperv["in_vm"] and hyperv["hypervisor"] == "hyper-v"
    for dmi in ({"sys_vendor": "Microsoft Corporation", "product_name": "Surface Laptop 5"},
                {"sys_vendor": "Amazon EC2", "product_name": "c5.metal"}):
        v = probe.virtualization({"available": True, "hypervisor_bit": False}, feats, dmi,
                                 str(tmp_path))
        assert not v["in_vm"] and v["platform"] is None, dmi


def test_module_support(tmp_path):
    debian = 'ID=debian\nPRETTY_NAME="Debian GNU/Linux 12"\n'
    no = probe.modules_info(str(tmp_path / "a"), "6.18.44-fc", debian, lambda p: False)
    assert not no["loadable"] and "no loadable-module support" in no["reason"]
    root = str(tmp_path / "b")
    write(root, "/proc/modules", "")
    write(root, "/proc/sys/kernel/modules_disabled", "1")
    m = probe.modules_info(root, "6.1.0-9-amd64", debian, lambda p: True)
    assert not m["loadable"] and "kernel.modules_disabled=1" in m["reason"]
    write(root, "/proc/sys/kernel/modules_disabled", "0")
    m = probe.modules_info(root, "6.1.0-9-amd64", debian, lambda p: True)
    assert m["loadable"] and not m["headers_present"]
    assert m["headers_package"] == "linux-headers-6.1.0-9-amd64"
    assert m["headers_install"] == "sudo apt-get install linux-headers-6.1.0-9-amd64"
    # a kernel no package has headers for: build against its own tree
    m = probe.modules_info(root, "6.18.44-fc-v669", debian, lambda p: False)
    assert m["headers_package"] is None
    assert "no Debian/Ubuntu package has headers for 6.18.44-fc-v669" in m["headers_install"]
    assert "make -C hw-lab modules KDIR=" in m["headers_install"]
    m = probe.modules_info(root, "5.14.0-70.el9.x86_64", 'ID="rocky"\nID_LIKE="rhel centos fedora"\n')
    assert m["headers_install"] == "sudo dnf install kernel-devel-5.14.0-70.el9.x86_64"
    os.makedirs(os.path.join(root, "lib/modules/6.1.0-9-amd64/build"))
    m = probe.modules_info(root, "6.1.0-9-amd64", debian, lambda p: True)
    assert m["headers_present"] and m["headers_install"] is None


def fake_probe(**kw):
    p = {"arch": "x86_64", "kernel": {"release": "6.1.0-9-amd64"},
         "virtualization": {"hypervisor": "kvm", "in_vm": True},
         "kvm": {"backend": "none"},
         "modules": {"loadable": True, "reason": None, "headers_present": False,
                     "kernel_build_dir": "/lib/modules/6.1.0-9-amd64/build",
                     "headers_install": "sudo apt-get install linux-headers-6.1.0-9-amd64"}}
    for k, v in kw.items():
        p[k] = v
    return p


def test_every_module_appears_with_a_reason(tmp_path):
    from hwlab import modules
    absent = str(tmp_path / "absent")
    got = {b["name"]: b for b in modules.entries(fake_probe(), None, absent, absent)}
    assert set(got) == {"ptwalk", "vmcall_bench"}
    for b in got.values():
        assert b["status"] == "skipped"
        assert "sudo apt-get install linux-headers-6.1.0-9-amd64" in b["reason"]
        assert "sudo insmod hw-lab/modules/%s.ko" % b["name"] in b["reason"]
    bare = fake_probe(virtualization={"hypervisor": None, "in_vm": False})
    r = modules.entries(bare, {"vmcall_bench"}, absent, absent)[0]["reason"]
    assert r.startswith("not in a KVM guest (bare metal") and "#UD" in r
    hv = fake_probe(virtualization={"hypervisor": "hyper-v", "in_vm": True})
    assert "the hypervisor is hyper-v" in modules.entries(hv, {"vmcall_bench"}, absent, absent)[0]["reason"]
    arm = fake_probe(arch="aarch64")
    got = {b["name"]: b for b in modules.entries(arm, None, absent, absent)}
    assert got["vmcall_bench"]["reason"].startswith("x86 only")
    assert "insmod hw-lab/modules/ptwalk.ko" in got["ptwalk"]["reason"]   # ptwalk is not x86 only
    nomod = fake_probe(modules={"loadable": False, "reason": "this kernel has no loadable-module support (no /proc/modules: built without CONFIG_MODULES)"})
    for b in modules.entries(nomod, None, absent, absent):
        assert b["reason"] == nomod["modules"]["reason"]


WALK = """pid 88 va 0x7ffd1b4f814c
levels 4
folded p4d
pgd index 255 entry 0x000000003ff09067
pud index 500 entry 0x000000003feb1067
pmd index 218 entry 0x000000003ff07067
pte index 248 entry 0x800000000c9e5867
pa 0x000000000c9e514c page 4096
"""


def test_ptwalk_answer_is_parsed():
    from hwlab import modules
    f = modules.parse_ptwalk(WALK)
    assert f["table_levels"] == 4 and f["folded"] == ["p4d"]
    assert [l["level"] for l in f["levels"]] == ["pgd", "pud", "pmd", "pte"]
    assert f["levels"][1] == {"level": "pud", "index": 500, "entry": "0x000000003feb1067"}
    assert f["pa"] == "0x000000000c9e514c" and f["page_bytes"] == 4096
    stop = modules.parse_ptwalk("pid 1 va 0x0\nlevels 4\npgd index 0 entry 0x0000000000000000\n"
                                "not-present at pgd\n")
    assert stop["not_present_at"] == "pgd" and "pa" not in stop


def test_ptwalk_result_validates(schema):
    import jsonschema
    from hwlab import modules
    facts = modules.parse_ptwalk(WALK)
    facts.update(va="0x7ffd1b4f814c", pagemap_pa="0xc9e514c", agrees_with_pagemap=True)
    b = {"name": "ptwalk", "status": "ok", "teaches": "t", "notes": [],
         "cases": [{"name": "self", "status": "ok", "facts": facts}]}
    one = {"$defs": schema["$defs"], "$ref": "#/$defs/benchmark"}
    jsonschema.Draft202012Validator(one).validate(b)
    del b["cases"][0]["facts"]     # ok needs metrics or facts
    assert not jsonschema.Draft202012Validator(one).is_valid(b)


def test_pvm_notes_explain_cr3_invlpg():
    from hwlab import modules
    doc = {"probe": {"kvm": {"backend": "kvm_pvm", "tdp": None}}, "benchmarks": [
        {"name": "kvm_exits", "status": "ok", "notes": [], "cases": [
            {"name": "cr3_invlpg", "params": {"iterations": 10000},
             "kvm_stats": {"vcpu": {"exits": 217, "invlpg": 10000}}}]}]}
    notes = modules.annotate(doc)["benchmarks"][0]["notes"]
    assert any("software backend" in n for n in notes)
    n = next(n for n in notes if n.startswith("cr3_invlpg on kvm_pvm"))
    assert "217 exits for 10000 invlpg in 10000 rounds (0.022 per round)" in n
    assert "3 exits per round" in n
    doc["probe"]["kvm"] = {"backend": "kvm_amd", "tdp": "0"}
    doc["benchmarks"][0]["notes"] = []
    doc["benchmarks"][0]["cases"][0]["kvm_stats"]["vcpu"]["exits"] = 30012
    notes = modules.annotate(doc)["benchmarks"][0]["notes"]
    assert notes == ["cr3_invlpg on kvm_amd with tdp=0: 30012 exits in 10000 rounds (3.00 per "
                     "round; shadow paging takes 3: CR3 read, CR3 write, INVLPG)"]


def test_ptwalk_round_trip_through_a_stand_in(tmp_path):
    """hw-lab/run's side of /proc/ptwalk (write "<pid> <va>", read the walk, compare with
    pagemap) against a FIFO answered by a thread playing the module."""
    import threading
    from hwlab import modules
    fifo = str(tmp_path / "ptwalk")
    os.mkfifo(fifo)
    page = os.sysconf("SC_PAGE_SIZE")

    def module(wrong):
        with open(fifo) as f:                       # the request
            pid, va = f.read().split()
        va = int(va, 16)
        pa = modules.pagemap_pa(va, page)
        pa = (pa if pa is not None else 0x1234000 + va % page) + (page if wrong else 0)
        with open(fifo, "w") as f:                  # the answer
            f.write("pid %s va 0x%x\nlevels 4\nfolded p4d\npgd index 1 entry 0x0000000000001067\n"
                    "pud index 2 entry 0x0000000000002067\npmd index 3 entry 0x0000000000003067\n"
                    "pte index 4 entry 0x8000000000004867\npa 0x%016x page %d\n" % (pid, va, pa, page))

    for wrong in (False, True):
        t = threading.Thread(target=module, args=(wrong,), daemon=True)
        t.start()
        b = modules.ptwalk_from_module(fifo)
        t.join(10)
        c = b["cases"][0]
        assert c["facts"]["table_levels"] == 4 and c["facts"]["va"].startswith("0x")
        if c["facts"]["pagemap_pa"] is None:        # pagemap hides frames from this user
            assert b["status"] == "ok" and c["facts"]["agrees_with_pagemap"] is None
            assert "not cross-checked" in b["notes"][0]
            break
        assert b["status"] == c["status"] == ("error" if wrong else "ok"), b
        assert c["facts"]["agrees_with_pagemap"] is (not wrong)
        if wrong:
            assert c["reason"].startswith("the walk gave 0x")
