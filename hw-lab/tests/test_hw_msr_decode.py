"""VMX capability MSR decoders on values recorded from real Intel CPUs. The expected
fields are worked out by hand from the bit definitions in the Intel SDM vol. 3D,
appendix A (A.1 basic info, A.3.2/A.3.3 processor-based controls, A.10 EPT/VPID
capabilities, A.11 VM functions), not by running the decoder."""
import json
import os

import pytest

import hwlab_helpers  # noqa: F401  (puts hw-lab/lib on sys.path)
from hwlab import msr

FIX = os.path.join(os.path.dirname(__file__), "fixtures", "msr")


def load(name):
    with open(os.path.join(FIX, name)) as f:
        d = json.load(f)
    return {int(k, 16): (int(v, 16) if v else None) for k, v in d["msrs"].items()}


BROADWELL = "intel-core-i7-5600u-broadwell.json"
SANDY = "intel-core-i7-3960x-sandybridge-e.json"


def test_vmx_basic_broadwell():
    # 0x00da0400_00000012: revision 0x12; bits 44:32 = 0x400 -> 1024-byte VMCS region;
    # bits 55:48 = 0xda = 1101 1010b: 48=0, 49=1 (dual-monitor SMM), 53:50=0110b=6 (WB),
    # 54=1 (INS/OUTS info), 55=1 (TRUE controls)
    b = msr.decode_vmx_basic(load(BROADWELL)[0x480])
    assert b == {"vmcs_revision_id": 0x12, "vmcs_region_bytes": 1024,
                 "physaddr_width_32bit": False, "dual_monitor_smm": True,
                 "vmcs_memory_type": "WB", "ins_outs_exit_info": True, "true_controls": True}


def test_secondary_controls_broadwell():
    # allowed-1 half 0x00057cff = 0101 0111 1100 1111 1111b:
    # bits 0-7 set, 8-9 clear, 10-14 set, 15 clear, 16 set, 17 clear, 18 set
    sec = msr.decode_procbased_ctls2(load(BROADWELL)[0x48B])["available"]
    for name in ("virtualize_apic_accesses", "enable_ept", "descriptor_table_exiting",
                 "enable_rdtscp", "virtualize_x2apic_mode", "enable_vpid", "wbinvd_exiting",
                 "unrestricted_guest", "pause_loop_exiting", "rdrand_exiting",
                 "enable_invpcid", "enable_vm_functions", "vmcs_shadowing",
                 "rdseed_exiting", "ept_violation_ve"):
        assert sec[name] is True, name
    for name in ("apic_register_virtualization", "virtual_interrupt_delivery",
                 "enable_encls_exiting", "enable_pml", "enable_xsaves_xrstors",
                 "mode_based_execute_control_for_ept", "use_tsc_scaling"):
        assert sec[name] is False, name


def test_ept_vpid_cap_broadwell():
    # 0x00000f01_06334141: low bits 0,6,8,14,16,17,20,21,25,26; high bits 32,40,41,42,43
    cap = msr.decode_ept_vpid_cap(load(BROADWELL)[0x48C])
    yes = {"ept_execute_only", "page_walk_length_4", "memory_type_uc", "memory_type_wb",
           "pde_2mb_pages", "pdpte_1gb_pages", "invept", "ept_accessed_dirty",
           "invept_single_context", "invept_all_context", "invvpid",
           "invvpid_individual_address", "invvpid_single_context", "invvpid_all_context",
           "invvpid_single_context_retaining_globals"}
    assert {k for k, v in cap.items() if v} == yes


def test_vmfunc_eptp_switching_broadwell():
    assert msr.decode_vmfunc(load(BROADWELL)[0x491]) == {"eptp_switching": True, "functions": [0]}
    s = msr.decode_all(load(BROADWELL))["summary"]
    assert s == {"ept": True, "vpid": True, "unrestricted_guest": True, "vmfunc": True,
                 "eptp_switching": True, "ept_ad": True, "ept_5_level": False}


def test_sandy_bridge_has_ept_but_no_ad_and_no_vmfunc():
    # secondary allowed-1 0x04ff: bits 0-7 and 10 -> EPT, VPID, unrestricted guest; no
    # bit 13 (VM functions). EPT cap low 0x06134141: byte 2 = 0x13 = 0001 0011b -> bits
    # 16, 17, 20 (2 MiB and 1 GiB pages, INVEPT) but not 21 (no EPT A/D flags).
    d = msr.decode_all(load(SANDY))
    assert d["summary"] == {"ept": True, "vpid": True, "unrestricted_guest": True,
                            "vmfunc": False, "eptp_switching": False, "ept_ad": False,
                            "ept_5_level": False}
    assert d["ept_vpid_cap"]["pdpte_1gb_pages"] is True
    assert d["ept_vpid_cap"]["pde_2mb_pages"] is True
    assert d["ept_vpid_cap"]["ept_accessed_dirty"] is False
    assert "vmfunc" not in d
    assert d["basic"]["vmcs_revision_id"] == 0x10


def test_true_controls_are_preferred():
    # Both CPUs set IA32_VMX_BASIC bit 55, so the primary controls come from the TRUE MSR
    # (0x48e), whose allowed-0 half 0x04006172 no longer forces CR3-load/store exiting
    # (bits 15, 16) the way 0x482's 0x0401e172 does.
    d = msr.decode_all(load(BROADWELL))
    assert "cr3_load_exiting" not in d["procbased_ctls"]["required"]
    legacy = msr.decode_procbased_ctls(load(BROADWELL)[0x482])
    assert {"cr3_load_exiting", "cr3_store_exiting"} <= set(legacy["required"])
    assert d["procbased_ctls"]["available"]["activate_secondary_controls"] is True


def test_feature_control_locked_and_enabled():
    assert msr.decode_feature_control(load(SANDY)[0x3A]) == {
        "locked": True, "vmx_inside_smx": False, "vmx_outside_smx": True}


def test_no_vmx_at_all():
    d = msr.decode_all({n: None for n in msr.MSR_NAMES})
    assert d["vmx"] is False and "summary" not in d


def test_vmfunc_msr_ignored_when_secondary_says_no():
    # A VMFUNC value without "enable VM functions" in the secondary controls must not
    # be reported as EPTP switching (SDM A.11: the MSR exists only if that bit is 1).
    raw = load(SANDY)
    raw[0x491] = 1
    assert msr.decode_all(raw)["summary"]["eptp_switching"] is False


def test_read_msrs_without_driver(tmp_path):
    vals, why = msr.read_msrs(cpu=4242)
    assert vals is None and "modprobe msr" in why
