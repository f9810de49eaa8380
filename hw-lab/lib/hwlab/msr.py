"""Decoders for the Intel VMX capability MSRs (Intel SDM vol. 3, appendix A).

Each decoder takes the raw 64-bit MSR value and returns a dict of named fields. They are
pure functions so the tests can feed them values recorded on real machines; `read_msrs`
reads the live values from /dev/cpu/N/msr when the msr driver is loaded and we are root.
"""
import os
import struct

IA32_FEATURE_CONTROL = 0x3A
IA32_VMX_BASIC = 0x480
IA32_VMX_PROCBASED_CTLS = 0x482
IA32_VMX_PROCBASED_CTLS2 = 0x48B
IA32_VMX_EPT_VPID_CAP = 0x48C
IA32_VMX_TRUE_PROCBASED_CTLS = 0x48E
IA32_VMX_VMFUNC = 0x491

MSR_NAMES = {
    IA32_FEATURE_CONTROL: "IA32_FEATURE_CONTROL",
    IA32_VMX_BASIC: "IA32_VMX_BASIC",
    IA32_VMX_PROCBASED_CTLS: "IA32_VMX_PROCBASED_CTLS",
    IA32_VMX_PROCBASED_CTLS2: "IA32_VMX_PROCBASED_CTLS2",
    IA32_VMX_EPT_VPID_CAP: "IA32_VMX_EPT_VPID_CAP",
    IA32_VMX_TRUE_PROCBASED_CTLS: "IA32_VMX_TRUE_PROCBASED_CTLS",
    IA32_VMX_VMFUNC: "IA32_VMX_VMFUNC",
}


def bit(value, n):
    return bool((value >> n) & 1)


def decode_feature_control(v):
    return {
        "locked": bit(v, 0),
        "vmx_inside_smx": bit(v, 1),
        "vmx_outside_smx": bit(v, 2),
    }


def decode_vmx_basic(v):
    mem = (v >> 50) & 0xF
    return {
        "vmcs_revision_id": v & 0x7FFFFFFF,
        "vmcs_region_bytes": (v >> 32) & 0x1FFF,
        "physaddr_width_32bit": bit(v, 48),
        "dual_monitor_smm": bit(v, 49),
        "vmcs_memory_type": {0: "UC", 6: "WB"}.get(mem, "reserved(%d)" % mem),
        "ins_outs_exit_info": bit(v, 54),
        "true_controls": bit(v, 55),
    }


# Primary processor-based VM-execution controls: bits that may be 1 are the MSR's high
# half. Only the ones the lab talks about.
PRIMARY_BITS = {
    2: "interrupt_window_exiting",
    7: "hlt_exiting",
    9: "invlpg_exiting",
    15: "cr3_load_exiting",
    16: "cr3_store_exiting",
    19: "cr8_load_exiting",
    24: "unconditional_io_exiting",
    25: "use_io_bitmaps",
    28: "use_msr_bitmaps",
    31: "activate_secondary_controls",
}

SECONDARY_BITS = {
    0: "virtualize_apic_accesses",
    1: "enable_ept",
    2: "descriptor_table_exiting",
    3: "enable_rdtscp",
    4: "virtualize_x2apic_mode",
    5: "enable_vpid",
    6: "wbinvd_exiting",
    7: "unrestricted_guest",
    8: "apic_register_virtualization",
    9: "virtual_interrupt_delivery",
    10: "pause_loop_exiting",
    11: "rdrand_exiting",
    12: "enable_invpcid",
    13: "enable_vm_functions",
    14: "vmcs_shadowing",
    15: "enable_encls_exiting",
    16: "rdseed_exiting",
    17: "enable_pml",
    18: "ept_violation_ve",
    19: "conceal_vmx_from_pt",
    20: "enable_xsaves_xrstors",
    22: "mode_based_execute_control_for_ept",
    23: "sub_page_write_permissions_for_ept",
    24: "intel_pt_uses_guest_physical_addresses",
    25: "use_tsc_scaling",
    26: "enable_user_wait_and_pause",
    28: "enable_enclv_exiting",
}


def _controls(v, names):
    """A VMX capability MSR for controls: bits 31:0 are the allowed-0 settings (1 = must be
    1), bits 63:32 the allowed-1 settings (1 = may be 1). A control is available when its
    allowed-1 bit is set."""
    allowed1 = (v >> 32) & 0xFFFFFFFF
    must1 = v & 0xFFFFFFFF
    return {
        "available": {name: bit(allowed1, n) for n, name in sorted(names.items())},
        "required": sorted(name for n, name in names.items() if bit(must1, n)),
        "allowed1_raw": "0x%08x" % allowed1,
    }


def decode_procbased_ctls(v):
    return _controls(v, PRIMARY_BITS)


def decode_procbased_ctls2(v):
    return _controls(v, SECONDARY_BITS)


def decode_ept_vpid_cap(v):
    return {
        "ept_execute_only": bit(v, 0),
        "page_walk_length_4": bit(v, 6),
        "page_walk_length_5": bit(v, 7),
        "memory_type_uc": bit(v, 8),
        "memory_type_wb": bit(v, 14),
        "pde_2mb_pages": bit(v, 16),
        "pdpte_1gb_pages": bit(v, 17),
        "invept": bit(v, 20),
        "ept_accessed_dirty": bit(v, 21),
        "advanced_ept_violation_info": bit(v, 22),
        "supervisor_shadow_stack": bit(v, 23),
        "invept_single_context": bit(v, 25),
        "invept_all_context": bit(v, 26),
        "invvpid": bit(v, 32),
        "invvpid_individual_address": bit(v, 40),
        "invvpid_single_context": bit(v, 41),
        "invvpid_all_context": bit(v, 42),
        "invvpid_single_context_retaining_globals": bit(v, 43),
    }


def decode_vmfunc(v):
    # Bit n set: VM function n may be enabled. Function 0 is EPTP switching.
    return {
        "eptp_switching": bit(v, 0),
        "functions": [n for n in range(64) if bit(v, n)],
    }


DECODERS = {
    IA32_FEATURE_CONTROL: decode_feature_control,
    IA32_VMX_BASIC: decode_vmx_basic,
    IA32_VMX_PROCBASED_CTLS: decode_procbased_ctls,
    IA32_VMX_PROCBASED_CTLS2: decode_procbased_ctls2,
    IA32_VMX_EPT_VPID_CAP: decode_ept_vpid_cap,
    IA32_VMX_VMFUNC: decode_vmfunc,
}


def decode_all(raw):
    """raw: {msr_number: value or None}. Returns the "vmx_msrs" object of the result.

    The secondary controls, the EPT/VPID capabilities and the VM functions only exist when
    the CPU says so (SDM A.3.3, A.10, A.11): the decoder reports them as absent otherwise
    instead of decoding a value that the CPU would not have returned."""
    out = {"raw": {MSR_NAMES[n]: "0x%016x" % v for n, v in sorted(raw.items()) if v is not None}}
    get = raw.get
    if get(IA32_FEATURE_CONTROL) is not None:
        out["feature_control"] = decode_feature_control(raw[IA32_FEATURE_CONTROL])
    if get(IA32_VMX_BASIC) is None:
        out["vmx"] = False
        return out
    out["vmx"] = True
    out["basic"] = decode_vmx_basic(raw[IA32_VMX_BASIC])
    prim_msr = IA32_VMX_TRUE_PROCBASED_CTLS if (
        out["basic"]["true_controls"] and get(IA32_VMX_TRUE_PROCBASED_CTLS) is not None
    ) else IA32_VMX_PROCBASED_CTLS
    if get(prim_msr) is not None:
        out["procbased_ctls"] = decode_procbased_ctls(raw[prim_msr])
    secondary = out.get("procbased_ctls", {}).get("available", {}).get(
        "activate_secondary_controls", False)
    summary = {"ept": False, "vpid": False, "unrestricted_guest": False, "vmfunc": False,
               "eptp_switching": False, "ept_ad": False, "ept_5_level": False}
    if secondary and get(IA32_VMX_PROCBASED_CTLS2) is not None:
        sec = decode_procbased_ctls2(raw[IA32_VMX_PROCBASED_CTLS2])
        out["procbased_ctls2"] = sec
        av = sec["available"]
        summary["ept"] = av["enable_ept"]
        summary["vpid"] = av["enable_vpid"]
        summary["unrestricted_guest"] = av["unrestricted_guest"]
        summary["vmfunc"] = av["enable_vm_functions"]
        if (av["enable_ept"] or av["enable_vpid"]) and get(IA32_VMX_EPT_VPID_CAP) is not None:
            cap = decode_ept_vpid_cap(raw[IA32_VMX_EPT_VPID_CAP])
            out["ept_vpid_cap"] = cap
            summary["ept_ad"] = av["enable_ept"] and cap["ept_accessed_dirty"]
            summary["ept_5_level"] = av["enable_ept"] and cap["page_walk_length_5"]
        if av["enable_vm_functions"] and get(IA32_VMX_VMFUNC) is not None:
            vf = decode_vmfunc(raw[IA32_VMX_VMFUNC])
            out["vmfunc"] = vf
            summary["eptp_switching"] = vf["eptp_switching"]
    out["summary"] = summary
    return out


def read_msrs(cpu=0, numbers=tuple(MSR_NAMES)):
    """Read MSRs through the msr driver. Returns (values, None) or (None, why not)."""
    path = "/dev/cpu/%d/msr" % cpu
    if not os.path.exists(path):
        return None, "%s missing (modprobe msr, as root)" % path
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        return None, "%s: %s (reading MSRs needs root)" % (path, e.strerror)
    vals = {}
    try:
        for n in numbers:
            try:
                data = os.pread(fd, 8, n)
                vals[n] = struct.unpack("<Q", data)[0] if len(data) == 8 else None
            except OSError:
                vals[n] = None  # #GP on rdmsr: this CPU has no such MSR (no VMX, say)
    finally:
        os.close(fd)
    return vals, None
