"""The page-walk cache is filled after a successful walk only, in every mode (model.md 1,
"Caches"; the reason from the SDM is quoted there). A walk that faults, a hidden page
fault in shadow or agile paging included, leaves no page-walk-cache entry behind, so the
walk retried after the VMM's fill reads every level again.

The counts below are derived by hand from that rule: with the other reading (entries
cached as the faulting walk reads them) each check here gives fewer references."""
import json
import os
import pathlib
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))

PAGE = "0x400000"


def run(sc):
    assert os.path.exists(VMSIM), "build the engine first: make -C wasm-core native"
    p = subprocess.run([VMSIM, "run", "-"], input=json.dumps(sc), capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["accesses"]


def vmm_scenario(mode):
    sc = {"name": f"pwc-after-fault-{mode}", "mode": mode,
          "guest": {"paging": "4level", "mappings": [{"gva": PAGE, "gpa": "0x200000", "pages": 2}]},
          "caches": {"preset": "x86-server"},
          "accesses": [
              {"gva": PAGE, "op": "read"},                              # hidden page fault, fill, retried walk
              {"gva": "0x401000", "op": "read"},                        # the next page: walk cache serves L4-L2
              {"pte_write": {"gva": PAGE, "level": 1, "set": "0x0"}},   # pt_write exit: the shadow entry zapped
              {"gva": PAGE, "op": "read"},                              # faults again in the shadow table
          ]}
    if mode == "shadow":
        sc["shadow"] = {"mappings": [{"gpa": "0x0", "hpa": "0x80000000", "pages": 1024}]}
    else:
        sc["nested"] = {"mappings": [{"gpa": "0x0", "hpa": "0x80000000", "pages": 1024}]}
        sc["agile"] = {"switch_level": 0}
    return sc


def test_shadow_retried_walk_reads_every_level():
    a = run(vmm_scenario("shadow"))
    # first access: the walk stops at the missing PML4E (1 reference), the retry reads 4
    assert (a[0]["memory_refs"], a[0]["exits"], a[0]["cache"]["pwc_hits"]) == (1 + 4, 1, 0)
    # the retried walk succeeded, so its upper levels are cached: the next page's walk
    # starts below the cached PDE, reads the missing PTE (1), exits, and the retry
    # starts there again (1): a successful walk does fill the cache
    assert (a[1]["memory_refs"], a[1]["exits"], a[1]["cache"]["pwc_hits"]) == (2, 1, 2)
    assert a[2]["exits"] == 1
    # after the zap (which flushes the walk cache) the walk reads 4 levels down to the
    # missing PTE, exits, and the retry reads 4 again: 8, not 4 + 1 = 5
    assert (a[3]["memory_refs"], a[3]["exits"], a[3]["cache"]["pwc_hits"]) == (8, 1, 0)


def test_agile_retried_walk_reads_every_level():
    a = run(vmm_scenario("agile"))
    assert a[2]["exits"] == 1
    assert (a[3]["memory_refs"], a[3]["exits"], a[3]["cache"]["pwc_hits"]) == (8, 1, 0)


def test_ept_guest_fault_leaves_no_walk_cache_entry():
    # a guest #PF at the PTE (not present), then the next page under the same tables: the
    # faulting walk cached nothing, so the second walk reads all four guest levels too
    sc = {"name": "pwc-after-fault-ept", "mode": "ept",
          "guest": {"paging": "4level", "mappings": [{"gva": PAGE, "gpa": "0x200000", "pages": 2}],
                    "overrides": [{"gva": PAGE, "level": 1, "clear": "0x1"}]},
          "nested": {"mappings": [{"gpa": "0x0", "hpa": "0x80000000", "pages": 1024}]},
          "caches": {"preset": "x86-server"},
          "accesses": [{"gva": PAGE, "op": "read"}, {"gva": "0x401000", "op": "read"}]}
    a = run(sc)
    assert a[0]["outcome"] == "guest_page_fault"
    assert a[1]["outcome"] == "ok"
    # (a guest walk-cache hit at the PDE would leave 1 guest reference)
    assert a[1]["guest_refs"] == 4
