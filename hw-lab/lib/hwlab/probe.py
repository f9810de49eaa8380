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
DMI_HINTS = {
    "qemu": "qemu", "kvm": "kvm", "vmware": "vmware", "virtualbox": "virtualbox",
    "innotek": "virtualbox", "xen": "xen", "microsoft corporation": "hyper-v",
    "amazon ec2": "aws-nitro", "google compute engine": "gce", "bochs": "bochs",
    "parallels": "parallels", "bhyve": "bhyve", "openstack": "openstack",
}

KVM_PARAMS = {
    "kvm_intel": ["ept", "eptad", "vpid", "nested", "unrestricted_guest",
                  "enable_shadow_vmcs", "pml", "flexpriority"],
    "kvm_amd": ["npt", "nested", "avic", "vls", "vgif", "nrips"],
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
    return {
        "in_vm": bool(hv_bit or sig or dmi_hv or xen),
        "hypervisor": hv or dmi_hv or xen,
        "hypervisor_bit": bool(hv_bit),
        "hypervisor_signature": sig,
        "dmi": dmi_info,
        "evidence": evidence,
    }


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
    return {
        "dev_kvm": os.path.exists(dev),
        "dev_kvm_accessible": os.access(dev, os.R_OK | os.W_OK),
        "modules": mods,
        # What memtouch's EPT on/off lesson needs: the host's setting, when this is the host.
        "tdp": (mods.get("kvm_intel", {}).get("ept") or mods.get("kvm_amd", {}).get("npt")),
    }


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
        "vmx_msrs": msr,
    }
