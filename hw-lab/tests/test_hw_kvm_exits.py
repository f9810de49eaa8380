"""kvm_exits against this machine's /dev/kvm: a check of function, never of speed (the
backend here, kvm-pvm, is software shadow paging without VT-x)."""
import json
import subprocess

import pytest

from hwlab_helpers import bench, case, kvm_usable, metric

pytestmark = pytest.mark.skipif(not kvm_usable(), reason="no usable /dev/kvm")


def kvm(quick_result):
    b = bench(quick_result[0], "kvm_exits")
    assert b["status"] == "ok", b
    return b


def test_port_io_exits_to_userspace_once_per_out(quick_result):
    c = case(kvm(quick_result), "pio_user")
    n = c["params"]["iterations"]
    # every OUT comes back to the process, plus the final OUT to the done port
    assert c["params"]["exits_to_userspace"] == n + 1
    assert metric(c, "exit_round_trip")["count"] == n
    assert c["kvm_stats"]["vcpu"]["exits"] >= n


def test_ioeventfd_stays_in_the_kernel(quick_result):
    b = kvm(quick_result)
    c = case(b, "pio_ioeventfd")
    n = c["params"]["iterations"]
    assert c["params"]["ioeventfd"] is True
    assert c["params"]["exits_to_userspace"] == 1      # only the done port
    assert c["kvm_stats"]["vcpu"]["exits"] >= n       # yet the guest did exit n times
    user = metric(case(b, "pio_user"), "exit_round_trip")["min"]
    assert metric(c, "exit_round_trip")["min"] < user  # a userspace round trip costs more


def test_first_touch_faults_second_does_not(quick_result):
    b = kvm(quick_result)
    for name in ("touch_g4k_h4k", "touch_g4k_hthp", "touch_g2m_h4k", "touch_g2m_hthp"):
        c = case(b, name)
        pages = c["params"]["touch_bytes"] // 4096
        first, second = metric(c, "first_touch"), metric(c, "second_touch")
        assert first["count"] == second["count"] == pages
        assert second["median"] < 2000, name
        assert first["mean"] > 5 * second["mean"], name
    c = case(b, "touch_g4k_h4k")
    pages = c["params"]["touch_bytes"] // 4096
    assert c["kvm_stats"]["vcpu"]["pf_fixed"] >= pages   # one KVM fault fix per page
    assert c["params"]["host_anon_huge_kib"] == 0


def test_large_pages_in_both_dimensions_fault_less(quick_result):
    b = kvm(quick_result)
    big = case(b, "touch_g2m_hthp")
    if not big["params"]["host_anon_huge_kib"]:
        pytest.skip("host THP gave no huge pages")
    small = case(b, "touch_g4k_h4k")
    assert big["kvm_stats"]["vcpu"].get("pf_fixed", 0) * 8 < small["kvm_stats"]["vcpu"]["pf_fixed"]


def test_cr3_and_invlpg_are_intercepted_under_shadow_paging(quick_result):
    doc = quick_result[0]
    c = case(kvm(quick_result), "cr3_invlpg")
    n = c["params"]["iterations"]
    assert c["params"]["guest_cpl"] == 0
    if "kvm_pvm" in doc["probe"]["kvm"]["modules"]:
        # kvm-pvm is shadow paging only: every guest invlpg reaches KVM's MMU
        assert c["kvm_stats"]["vcpu"]["invlpg"] == n


def test_one_subcase_and_a_bad_subcase(hwlab_bin):
    r = subprocess.run([hwlab_bin, "bench", "--quick", "--only", "kvm_exits:pio_ioeventfd",
                        "--kvm-iters", "50"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    b = json.loads(r.stdout)["benchmarks"][0]
    assert [c["name"] for c in b["cases"]] == ["pio_ioeventfd"]
    assert b["cases"][0]["params"]["iterations"] == 50
    r = subprocess.run([hwlab_bin, "bench", "--only", "kvm_exits:nope"], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1
    b = json.loads(r.stdout)["benchmarks"][0]
    assert b["status"] == "error" and "no sub-case named 'nope'" in b["reason"]
