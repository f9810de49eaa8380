"""The probe: what machine is this, is it a VM, what can it virtualize.

Everything here reads files (/proc, /sys) or runs `hwlab cpuid`; each reader takes its
root directory so the tests can point it at a recorded tree.
"""
import json
import os
import platform
import subprocess

from . import msr as msrlib

# CPUID leaf 0x40000000 signatures (EBX ECX EDX) and who uses them.
HYPERVISOR_SIGNATURES = {
    "KVMKVMKVM": "kvm",
    "Microsoft Hv": "hyper-v",
    "VMwareVMware": "vmware",
    "XenVMMXenVMM": "xen",
    "TCGTCGTCGTCG": "qemu-tcg",
    "VBoxVBoxVBox": "virtualbox",
    "bhyve bhyve": "bhyve",
    "ACRNACRNACRN": "acrn",
    "QNXQVMBSQG": "qnx",
    " lrpepyh vr": "parallels",
    "Linux KVM Hv": "kvm-hyperv-enlightened",
}

# DMI strings that give a VM away when CPUID does not (a hypervisor may hide its bit).
# Only hypervisors: a cloud's name (Amazon EC2, Google) is also on its bare-metal servers
# and a laptop maker's (Microsoft Corporation) on its laptops; platform_of names clouds.
DMI_HINTS = {
    "qemu": "qemu", "kvm": "kvm", "vmware": "vmware", "virtualbox": "virtualbox",
    "innotek": "virtualbox", "xen": "xen", "microsoft corporation virtual machine": "hyper-v",
    "bochs": "bochs", "parallels": "parallels", "bhyve": "bhyve",
}

# The ACPI tables' OEM ID (bytes 10-15 of each table header, readable by root) names the
# virtual machine monitor that wrote them.
ACPI_OEM_IDS = {
    "FIRECK": "firecracker", "BOCHS": "qemu", "CLOUDH": "cloud-hypervisor",
    "AMAZON": "aws-ec2", "GOOGLE": "gce", "VRTUAL": "hyper-v", "VBOX": "virtualbox",
    "XEN": "xen", "PRLS": "parallels", "BHYVE": "bhyve",
}
# ACPI device ids (/sys/bus/acpi/devices/*/hid, readable by anyone) that only a VMM adds.
ACPI_HIDS = {
    "QEMU0002": "qemu",         # fw_cfg
    "QEMUVGID": "qemu",         # QEMU's VM generation id
    "AMZNC10C": "aws",          # vmclock: EC2 Nitro and Firecracker
    "CLOUDH01": "cloud-hypervisor",
}
# DMI vendors of clouds (the hypervisor underneath is named separately).
DMI_CLOUDS = {
    "amazon ec2": "aws-ec2", "google compute engine": "gce",
    "alibaba cloud": "alibaba-cloud", "tencent cloud": "tencent-cloud",
    "openstack": "openstack", "digitalocean": "digitalocean", "hetzner": "hetzner",
    "oraclecloud": "oracle-cloud",
}

KVM_BACKENDS = ("kvm_intel", "kvm_amd", "kvm_pvm")

KVM_PARAMS = {
    "kvm_intel": ["ept", "eptad", "vpid", "nested", "unrestricted_guest",
                  "enable_shadow_vmcs", "pml", "flexpriority"],
    "kvm_amd": ["npt", "nested", "avic", "vls", "vgif", "nrips"],
    "kvm_pvm": [],
    "kvm": ["tdp_mmu", "nx_huge_pages", "halt_poll_ns"],
}


def normalize_arch(machine):
    m = machine.lower()
    if m in ("x86_64", "amd64"):
        return "x86_64"
    if m in ("aarch64", "arm64"):
        return "aarch64"
    if m.startswith("sw_64") or m.startswith("sw64"):
        return "sw_64"
    return m


def _read(root, path, default=None):
    try:
        with open(os.path.join(root, path.lstrip("/")), "r", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return default


def parse_cpuinfo(text):
    """First processor block of /proc/cpuinfo as a dict (keys lower-cased)."""
    info = {}
    for line in text.splitlines():
        if not line.strip():
            if info:
                break
            continue
        if ":" in line:
            k, v = line.split(":", 1)
            info.setdefault(k.strip().lower(), v.strip())
    return info


def cpu_features(cpuinfo):
    flags = set(cpuinfo.get("flags", cpuinfo.get("features", "")).split())
    # Since Linux 5.8 the VMX features have their own line; older kernels mix a few in flags.
    vmx_flags = cpuinfo.get("vmx flags", "").split()
    allf = flags | set(vmx_flags)
    return {
        "vmx": "vmx" in flags,
        "svm": "svm" in flags,
        "ept": "ept" in allf,
        "npt": "npt" in allf,
        "vpid": "vpid" in allf,
        "ept_ad": "ept_ad" in allf,
        "ept_1gb": "ept_1gb" in allf,
        "ept_5level": "ept_5level" in allf,
        "unrestricted_guest": "unrestricted_guest" in allf,
        "vmfunc": "vmfunc" in allf or "ept_switching" in allf,
        "hypervisor_flag": "hypervisor" in flags,
        "vmx_flags": vmx_flags,
    }


def hypervisor_name(signature):
    if signature is None:
        return None
    return HYPERVISOR_SIGNATURES.get(signature.rstrip(" \0"), "unknown:" + signature.strip())


def dmi(root="/"):
    out = {}
    for k in ("sys_vendor", "product_name", "bios_vendor", "board_vendor", "chassis_vendor"):
        v = _read(root, "/sys/class/dmi/id/" + k)
        if v:
            out[k] = v
    return out


def virtualization(cpuid, features, dmi_info, root="/"):
    evidence = []
    sig = cpuid.get("hypervisor_signature") if cpuid.get("available") else None
    hv_bit = cpuid.get("hypervisor_bit") if cpuid.get("available") else features["hypervisor_flag"]
    hv = None
    if hv_bit:
        evidence.append("cpuid.1:ecx[31] hypervisor bit")
    if sig:
        sig = sig.rstrip(" \0")
        hv = hypervisor_name(sig)
        evidence.append("cpuid 0x40000000 signature '%s'" % sig)
    dmi_text = " ".join(dmi_info.values()).lower()
    dmi_hv = None
    for needle, name in DMI_HINTS.items():
        if needle in dmi_text:
            dmi_hv = name
            evidence.append("DMI mentions '%s'" % needle)
            break
    xen = _read(root, "/sys/hypervisor/type")
    if xen:
        evidence.append("/sys/hypervisor/type = %s" % xen)
    in_vm = bool(hv_bit or sig or dmi_hv or xen)
    plat, plat_evidence = platform_of(dmi_info, root, in_vm)
    evidence += plat_evidence
    return {
        "in_vm": in_vm or plat is not None,
        "hypervisor": hv or dmi_hv or xen,
        "platform": plat,
        "hypervisor_bit": bool(hv_bit),
        "hypervisor_signature": sig,
        "dmi": dmi_info,
        "evidence": evidence,
    }


def acpi_oem_ids(root="/"):
    """OEM IDs of the ACPI tables this process can read (root only on most systems)."""
    out = []
    d = os.path.join(root, "sys/firmware/acpi/tables")
    for name in ("FACP", "DSDT", "APIC"):
        try:
            with open(os.path.join(d, name), "rb") as f:
                head = f.read(16)
        except OSError:
            continue
        if len(head) == 16:
            oem = head[10:16].decode("ascii", "replace").strip(" \0")
            if oem and oem not in out:
                out.append(oem)
    return out


def acpi_hids(root="/"):
    d = os.path.join(root, "sys/bus/acpi/devices")
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return []
    out = []
    for n in names:
        hid = _read(root, "/sys/bus/acpi/devices/%s/hid" % n)
        if hid and hid not in out:
            out.append(hid)
    return out


def platform_of(dmi_info, root="/", in_vm=True):
    """The virtual machine monitor or cloud when something visible names it:
    (name or None, evidence). KVM underneath says nothing about who runs it. Clouds are
    named from DMI only inside a VM (bare-metal cloud servers carry the same strings)."""
    evidence = []
    name = None
    for oem in acpi_oem_ids(root):
        hit = ACPI_OEM_IDS.get(oem.upper())
        if hit:
            evidence.append("ACPI table OEM ID '%s'" % oem)
            name = name or hit
    hids = [h for h in acpi_hids(root) if h in ACPI_HIDS]
    for h in hids:
        evidence.append("ACPI device %s" % h)
    if not name and "AMZNC10C" in hids and not dmi_info:
        # EC2 instances carry DMI strings ("Amazon EC2"); a Firecracker microVM has none.
        name = "firecracker"
        evidence.append("no DMI/SMBIOS tables beside an AWS vmclock device: a Firecracker "
                        "microVM")
    elif not name and hids:
        name = ACPI_HIDS[hids[0]]
    dmi_text = " ".join(dmi_info.values()).lower()
    for needle, cloud in DMI_CLOUDS.items():
        if in_vm and needle in dmi_text:
            evidence.append("DMI mentions '%s'" % needle)
            if not name or name == "aws":
                name = cloud
            break
    if not name and in_vm and "qemu" in dmi_text:
        name = "qemu"
        evidence.append("DMI mentions 'qemu'")
    return name, evidence


def backend_note(backend, tdp):
    """What the KVM backend means for the figures hw-lab measures through /dev/kvm."""
    on = tdp is not None and str(tdp).strip().lower() in ("y", "1", "on", "true")
    if backend == "kvm_pvm":
        return ("kvm_pvm: a software backend (PVM: KVM guests without VT-x or SVM). "
                "Guest memory always goes through shadow page tables, so there is no EPT/NPT "
                "setting to show (tdp: not applicable). Guest CPL3 code runs natively; guest "
                "CPL0 code is emulated instruction by instruction inside KVM, so a guest "
                "invlpg or mov cr3 costs an emulation step, not a VM exit: the exits counter "
                "stays far below the invlpg counter.")
    if backend in ("kvm_intel", "kvm_amd"):
        hw, knob = ("VT-x", "ept") if backend == "kvm_intel" else ("SVM", "npt")
        if tdp is None:
            return "%s: hardware virtualization (%s); the %s setting is not visible." % (
                backend, hw, knob)
        return ("%s: hardware virtualization (%s) with %s=%s: %s" % (
            backend, hw, knob, tdp,
            "guest page tables are walked by hardware in two dimensions; guest mov cr3 and "
            "invlpg do not exit." if on else
            "shadow paging: KVM intercepts guest CR3 reads and writes and INVLPG (3 exits "
            "per cr3_invlpg round)."))
    if backend == "unknown":
        return "/dev/kvm exists but no kvm_intel, kvm_amd or kvm_pvm module is visible."
    return "no KVM here (/dev/kvm is absent): kvm_exits cannot run."


def kvm_info(root="/"):
    mods = {}
    sysmod = os.path.join(root, "sys/module")
    try:
        loaded = sorted(m for m in os.listdir(sysmod) if m == "kvm" or m.startswith("kvm_"))
    except OSError:
        loaded = []
    for m in loaded:
        params = {}
        for p in KVM_PARAMS.get(m, []):
            v = _read(root, "/sys/module/%s/parameters/%s" % (m, p))
            if v is not None:
                params[p] = v
        mods[m] = params
    dev = os.path.join(root, "dev/kvm")
    backend = next((b for b in KVM_BACKENDS if b in mods), None)
    if backend is None:
        backend = "unknown" if os.path.exists(dev) else "none"
    # What memtouch's EPT on/off lesson needs: the host's setting, when this is the host.
    tdp = mods.get("kvm_intel", {}).get("ept") or mods.get("kvm_amd", {}).get("npt")
    return {
        "dev_kvm": os.path.exists(dev),
        "dev_kvm_accessible": os.access(dev, os.R_OK | os.W_OK),
        "modules": mods,
        "tdp": tdp,
        "backend": backend,
        "backend_note": backend_note(backend, tdp),
    }


def modules_info(root="/", release=None, os_release=None, apt_has=None):
    """Can this kernel load hw-lab's modules, and where would they be built from?
    apt_has(package) -> bool|None answers whether apt knows a package (None: no apt)."""
    release = release or platform.release()
    loadable, reason = True, None
    if not os.path.exists(os.path.join(root, "proc/modules")):
        loadable, reason = False, ("this kernel has no loadable-module support (no "
                                   "/proc/modules: built without CONFIG_MODULES)")
    elif _read(root, "/proc/sys/kernel/modules_disabled") == "1":
        loadable, reason = False, "module loading is switched off (kernel.modules_disabled=1)"
    build = "/lib/modules/%s/build" % release
    headers = os.path.isdir(os.path.join(root, build.lstrip("/")))
    ids = set()
    for line in (os_release if os_release is not None
                 else _read(root, "/etc/os-release", "")).splitlines():
        if line.startswith(("ID=", "ID_LIKE=")):
            ids.update(line.split("=", 1)[1].strip('"').lower().split())
    package, install = None, None
    tree = ("build against this kernel's own configured source tree: make -C hw-lab "
            "modules KDIR=/path/to/linux-%s (its .config as in /proc/config.gz or "
            "/boot/config-%s)" % (release, release))
    if ids & {"debian", "ubuntu"}:
        want = "linux-headers-%s" % release
        known = apt_has(want) if apt_has else None
        if known is False:
            install = ("no Debian/Ubuntu package has headers for %s (not a distribution "
                       "kernel): %s" % (release, tree))
        else:
            package, install = want, "sudo apt-get install %s" % want
    elif ids & {"fedora", "rhel", "centos", "rocky", "almalinux", "openeuler", "anolis"}:
        package = "kernel-devel-%s" % release
        install = "sudo dnf install %s" % package
    elif ids & {"suse", "opensuse"}:
        package, install = "kernel-default-devel", "sudo zypper install kernel-default-devel"
    elif "arch" in ids:
        package, install = "linux-headers", "sudo pacman -S linux-headers"
    else:
        install = tree
    return {
        "loadable": loadable,
        "reason": reason,
        "kernel_build_dir": build,
        "headers_present": headers,
        "headers_package": package,
        "headers_install": None if headers else install,
    }


def apt_knows(package):
    """True/False when apt-cache can say whether a package exists here; None without apt."""
    try:
        r = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True,
                           timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode:
        return None
    return "Candidate:" in r.stdout and "Candidate: (none)" not in r.stdout


def memory(root="/"):
    def bracketed(s):
        if not s:
            return None
        for w in s.split():
            if w.startswith("[") and w.endswith("]"):
                return w[1:-1]
        return s
    meminfo = _read(root, "/proc/meminfo", "")
    hp = None
    for line in meminfo.splitlines():
        if line.startswith("Hugepagesize:"):
            hp = int(line.split()[1]) * 1024
    return {
        "base_page_bytes": os.sysconf("SC_PAGE_SIZE"),
        "huge_page_bytes": hp,
        "thp_enabled": bracketed(_read(root, "/sys/kernel/mm/transparent_hugepage/enabled")),
        "thp_defrag": bracketed(_read(root, "/sys/kernel/mm/transparent_hugepage/defrag")),
    }


def kernel(root="/"):
    u = platform.uname()
    osname = None
    rel = _read(root, "/etc/os-release", "")
    for line in rel.splitlines():
        if line.startswith("PRETTY_NAME="):
            osname = line.split("=", 1)[1].strip('"')
    return {"release": u.release, "version": u.version, "os": osname}


def cpuid_json(hwlab_bin):
    try:
        out = subprocess.run([hwlab_bin, "cpuid"], capture_output=True, text=True, timeout=10)
        return json.loads(out.stdout)
    except (OSError, ValueError, subprocess.SubprocessError):
        return {"available": False}


def probe(hwlab_bin, root="/"):
    arch = normalize_arch(platform.machine())
    ci = parse_cpuinfo(_read(root, "/proc/cpuinfo", ""))
    cpuid = cpuid_json(hwlab_bin) if arch == "x86_64" else {"available": False}
    feats = cpu_features(ci)
    if cpuid.get("available"):
        # CPUID is the ground truth for these; cpuinfo hides them when KVM is not loaded.
        feats["vmx"] = feats["vmx"] or cpuid.get("vmx", False)
        feats["svm"] = feats["svm"] or cpuid.get("svm", False)
        if cpuid.get("svm_features", {}).get("npt"):
            feats["npt"] = True
    cpu = {
        "vendor": cpuid.get("vendor") or ci.get("vendor_id") or ci.get("cpu implementer"),
        "model_name": (cpuid.get("brand") or ci.get("model name") or ci.get("cpu model")
                       or ci.get("cpu part") or "unknown").strip(),
        "family": cpuid.get("family"),
        "model": cpuid.get("model"),
        "stepping": cpuid.get("stepping"),
        "logical_cpus": os.cpu_count(),
    }
    if cpuid.get("svm_features"):
        cpu["svm_features"] = cpuid["svm_features"]
    raw, why = (msrlib.read_msrs() if arch == "x86_64" and cpu["vendor"] == "GenuineIntel"
                else (None, "VMX capability MSRs exist only on Intel CPUs"))
    msr = {"readable": raw is not None}
    if raw is None:
        msr["reason"] = why
    else:
        msr.update(msrlib.decode_all(raw))
        s = msr.get("summary", {})
        feats["vmfunc"] = feats["vmfunc"] or s.get("vmfunc", False)
        feats["eptp_switching"] = s.get("eptp_switching", False)
    return {
        "arch": arch,
        "cpu": cpu,
        "virtualization": virtualization(cpuid, feats, dmi(root), root),
        "cpu_features": feats,
        "kvm": kvm_info(root),
        "memory": memory(root),
        "kernel": kernel(root),
        "modules": modules_info(root, apt_has=apt_knows),
        "vmx_msrs": msr,
    }
