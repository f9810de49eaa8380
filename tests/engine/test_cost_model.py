"""The cost model's parameters and their provenance (wasm-core/data/cost-model.json,
model.md 5c): every parameter names its sources, every figure it cites is the number
published-figures.json carries, the header the engine compiles is the one the data file
gives, model.md lists every parameter, and the CLI uses these values. Also the
experiment workloads' names (model.md 5b)."""
import importlib.util
import json
import os
import pathlib
import statistics
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORE = ROOT / "wasm-core"
VMSIM = os.environ.get("VMSIM", str(CORE / "build" / "vmsim"))
COST = json.loads((CORE / "data" / "cost-model.json").read_text())
PUB = json.loads((CORE / "data" / "published-figures.json").read_text())
KINDS = {"seed", "published", "vendor", "assumption"}


def test_every_parameter_has_a_value_a_unit_and_known_sources():
    for name, p in COST["parameters"].items():
        assert isinstance(p["value"], (int, float)) and p["unit"] and p["why"], name
        assert p["kind"] in KINDS and p["used_by"], name
        assert p["sources"], name
        for s in p["sources"]:
            assert s in COST["figures"] or s in COST["sources"], (name, s)
        cites_figure = any(s in COST["figures"] for s in p["sources"])
        assert (p["kind"] == "seed") == cites_figure, name
        assert (p["kind"] == "assumption") == (p["sources"] == ["model-assumption"]), name


def median_min(runs):
    return statistics.median(r["min"] for r in runs)


def test_figures_are_the_published_numbers():
    cpuid = PUB["cpuid_exit_cycles"]
    touch = PUB["ept_on_off"]["touch_1gib_every_4k_page_seconds"]
    cs = PUB["cr3_target_cache"]["context_switch_2task_us"]
    walk = PUB["flat_nested"]["walk_memory_refs"]
    mcf = next(r for r in PUB["flat_nested"]["spec2006_overhead_pct"]["rows"] if r[0] == "429.mcf")
    expect = {
        "000/ept-on-real-s": touch["ept_on"]["real"], "000/ept-off-real-s": touch["ept_off"]["real"],
        "000/cpu-hz": 2.3e9 if "@ 2.30GHz" in PUB["ept_on_off"]["cpu"] else None,
        "001/native-min": median_min(cpuid["runs"]["native"]),
        "001/bitvisor-min": median_min(cpuid["runs"]["bitvisor"]),
        "001/kvm-min": median_min(cpuid["runs"]["kvm"]),
        "001/kvm-switch-estimate": cpuid["estimated_switch_cycles"]["kvm"],
        "002/native-us": cs["native"], "002/kvm-trunk-us": cs["kvm_trunk"],
        "002/kvm-paravirt-cr3-us": cs["kvm_trunk_paravirt_cr3"],
        "003/vmcall-ns": PUB["vmfunc_vs_vmcall"]["round_trip_ns"]["vmcall"],
        "003/vmfunc-gate-ns": PUB["vmfunc_vs_vmcall"]["round_trip_ns"]["vmfunc_gate"],
        "004/refs-nested-4x4": walk["nested_4x4_no_caches"], "004/refs-flat-4level": walk["flat_nested_4level_guest"],
        "004/429.mcf-order": " < ".join(m for _, m in sorted(zip(mcf[1:], ("shadow", "ept", "flat")))),
        "004/x86-caches": PUB["flat_nested"]["machines"]["x86"]["cache"],
        "004/sunway-caches": PUB["flat_nested"]["machines"]["sunway_1621"]["cache"],
    }
    assert set(expect) == set(COST["figures"])
    for fid, v in expect.items():
        assert COST["figures"][fid]["value"] == v, fid
        assert COST["figures"][fid]["source"] in PUB["sources"], fid


def test_derived_parameters_follow_from_their_figures():
    f = {k: v["value"] for k, v in COST["figures"].items()}
    p = {k: v["value"] for k, v in COST["parameters"].items()}
    assert p["cycles_per_exit"] == f["001/kvm-switch-estimate"]
    assert p["cycles_per_vmfunc"] == p["cycles_per_exit"] * f["003/vmfunc-gate-ns"] / f["003/vmcall-ns"] / 2
    assert p["cpuid_native_cycles"] == f["001/native-min"]
    assert p["exit_round_trip_thin_vmm_cycles"] == f["001/bitvisor-min"] - f["001/native-min"]
    assert p["exit_round_trip_kvm_cycles"] == f["001/kvm-min"] - f["001/native-min"]
    assert p["touch_1gib_ept_on_s"] == f["000/ept-on-real-s"] and p["xeon_e5_2686_v4_hz"] == f["000/cpu-hz"]
    assert p["ctxswitch_native_us"] == f["002/native-us"]
    # the cache sizes the replay's data caches take from the published machine table
    import re
    for prefix, fig in (("x86", "004/x86-caches"), ("sunway", "004/sunway-caches")):
        sizes = {lv: int(n) * (1 << (20 if unit == "MB" else 10))
                 for lv, n, unit in re.findall(r"(L\d)(?: I/D)? (\d+)(KB|MB)", f[fig])}
        assert p[f"{prefix}_l1_bytes"] == sizes["L1"] and p[f"{prefix}_l2_bytes"] == sizes["L2"]
        if "L3" in sizes:
            assert p[f"{prefix}_llc_bytes"] == sizes["L3"]
        else:
            assert f"{prefix}_llc_bytes" not in p


def test_header_is_generated_from_the_data_file(tmp_path):
    spec = importlib.util.spec_from_file_location("gen", CORE / "scripts" / "gen_cost_params.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    out = tmp_path / "cost_params.h"
    gen.main(str(CORE / "data" / "cost-model.json"), str(out))
    assert out.read_text() == (CORE / "src" / "cost_params.h").read_text()
    for name, p in COST["parameters"].items():
        assert f"#define COST_{name.upper()} {float(p['value'])!r}\n" in out.read_text()


def test_an_unknown_source_is_refused(tmp_path):
    bad = json.loads(json.dumps(COST))
    bad["parameters"]["cycles_per_ref"]["sources"] = ["no-such-source"]
    (tmp_path / "c.json").write_text(json.dumps(bad))
    p = subprocess.run(["python3", str(CORE / "scripts" / "gen_cost_params.py"), str(tmp_path / "c.json"),
                        str(tmp_path / "h.h")], capture_output=True, text=True)
    assert p.returncode != 0 and "unknown source no-such-source" in p.stderr


def test_model_md_lists_every_parameter():
    md = (CORE / "docs" / "model.md").read_text()
    section = md[md.index("## 5c."):md.index("## 6.")]
    for name in COST["parameters"]:
        assert f"| `{name}` |" in section, name


def test_the_cli_uses_these_values():
    p = subprocess.run([VMSIM, "experiment", "--workload", "sequential", "--accesses", "2000", "--quiet",
                        "--format", "json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    cm = json.loads(p.stdout)["cost_model"]
    par = COST["parameters"]
    for key, name in (("cycles_per_access", "cycles_per_access"), ("cycles_per_ref", "cycles_per_ref"),
                      ("cycles_per_exit", "cycles_per_exit"), ("cycles_per_vmfunc", "cycles_per_vmfunc"),
                      ("refill_trap_cycles", "refill_trap_cycles")):
        assert abs(cm[key] - par[name]["value"]) <= 1e-5 * par[name]["value"], key


def test_workloads_are_named_for_what_they_are_and_old_names_still_run():
    def run(name):
        p = subprocess.run([VMSIM, "experiment", "--workload", name, "--accesses", "2000", "--footprint", "16",
                            "--quiet", "--format", "json"], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        (w,) = json.loads(p.stdout)["workloads"]
        return w
    for old, new in (("mcf", "random-2g"), ("gcc", "pt-writes"), ("memcached", "cswitch")):
        a, b = run(old), run(new)
        assert a["workload"] == b["workload"] == new and a == b
        assert b["description"]
    for name in ("sequential", "random", "ptrchase"):
        assert run(name)["description"]
    p = subprocess.run([VMSIM, "experiment", "--workload", "nope"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "random-2g" in p.stderr
