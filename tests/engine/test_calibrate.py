"""`vmsim calibrate`: each seed's experiment rerun in the model against its published
figure (wasm-core/docs/model.md 5c). Checked here: the JSON's shape; that every check
lists its parameters with their sources; that no check uses a parameter derived from
the figure it predicts; the issue's targets (25 % for seeds 000, 001 and 003, 35 % for
002) met where the model claims them, and every miss explained in model.md."""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VMSIM = os.environ.get("VMSIM", str(ROOT / "wasm-core" / "build" / "vmsim"))
COST = json.loads((ROOT / "wasm-core" / "data" / "cost-model.json").read_text())
MODEL_MD = (ROOT / "wasm-core" / "docs" / "model.md").read_text()
TARGETS = {"000": 25, "001": 25, "002": 35, "003": 25}


@pytest.fixture(scope="module")
def report():
    p = subprocess.run([VMSIM, "calibrate", "--format", "json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["format"] == "vmsim-calibrate/1"
    return out


def test_shape(report):
    assert set(report) == {"format", "checks", "sources"}
    keys = {"seed", "figure", "what", "published", "model", "unit", "error_pct", "target_pct", "within_target",
            "published_source", "parameters", "counts", "prediction", "comparison", "why"}
    for c in report["checks"]:
        assert set(c) == keys, c["figure"]
        assert c["seed"] in ("000", "001", "002", "003", "004")
        assert c["figure"].startswith(c["seed"] + "/") and c["figure"] in COST["figures"]
        assert isinstance(c["what"], str) and c["what"] and c["unit"] == COST["figures"][c["figure"]]["unit"]
        assert c["published"] == COST["figures"][c["figure"]]["value"]
        assert c["model"] is None or isinstance(c["model"], (int, float, str))
        assert isinstance(c["within_target"], bool) and isinstance(c["counts"], dict)
        assert c["published_source"] == COST["sources"][COST["figures"][c["figure"]]["source"]]
    assert {c["seed"] for c in report["checks"]} == {"000", "001", "002", "003", "004"}
    assert report["sources"] == COST["sources"]


def test_every_check_lists_its_parameters_with_sources(report):
    for c in report["checks"]:
        if c["model"] is None or c["figure"].startswith("004/refs"):
            continue                 # nothing priced: a reference count is the engine's own
        assert c["parameters"], c["figure"]
        for p in c["parameters"]:
            data = COST["parameters"][p["name"]]
            assert p["value"] == pytest.approx(data["value"], rel=1e-9)
            assert p["unit"] == data["unit"] and p["kind"] == data["kind"]
            assert [s["id"] for s in p["sources"]] == data["sources"]
            for s in p["sources"]:
                assert s["text"], (c["figure"], p["name"], s["id"])
            assert "calibrate" in data["used_by"] or c["figure"] == "004/429.mcf-order", p["name"]


def derived_from(name, seen=()):
    """Every figure a parameter comes from."""
    return set(COST["parameters"][name]["sources"]) & set(COST["figures"])


def test_no_figure_is_predicted_from_a_parameter_derived_from_it(report):
    for c in report["checks"]:
        for p in c["parameters"]:
            assert c["figure"] not in {s["id"] for s in p["sources"]}, (c["figure"], p["name"])
            assert c["figure"] not in derived_from(p["name"]), (c["figure"], p["name"])


def test_targets(report):
    checks = {c["figure"]: c for c in report["checks"]}
    for c in report["checks"]:
        if c["seed"] in TARGETS:
            assert c["target_pct"] == TARGETS[c["seed"]], c["figure"]
        if isinstance(c["model"], (int, float)) and c["target_pct"]:
            err = 100 * (c["model"] - c["published"]) / c["published"]
            assert c["error_pct"] == pytest.approx(err, abs=0.01)
            assert c["within_target"] == (abs(err) <= c["target_pct"])
    # the ones the model gets within its target
    for fig in ("000/ept-off-real-s", "001/kvm-min", "002/kvm-paravirt-cr3-us", "003/vmcall-ns"):
        assert checks[fig]["within_target"], (fig, checks[fig]["model"], checks[fig]["published"])
    # exact counts and the published order
    assert checks["004/refs-nested-4x4"]["model"] == 24 and checks["004/refs-flat-4level"]["model"] == 9
    assert checks["004/429.mcf-order"]["model"] == "shadow < ept < flat" == checks["004/429.mcf-order"]["published"]
    # every miss says why, and model.md says it too
    for c in report["checks"]:
        if not c["within_target"]:
            assert c["why"] and "model.md" in c["why"], c["figure"]
    assert "Where the model cannot get there" in MODEL_MD
    assert "**002 without the cr3 cache**" in MODEL_MD and "**003, the VMFUNC gate**" in MODEL_MD


def test_comparisons_are_marked_and_003_is_predicted_from_another_intel_core(report):
    checks = {c["figure"]: c for c in report["checks"]}
    # a model value that is another measurement of the same source is a comparison, said so
    for fig in ("001/kvm-min", "002/kvm-paravirt-cr3-us"):
        assert checks[fig]["prediction"] is False and "same" in checks[fig]["comparison"], fig
    assert checks["003/vmfunc-gate-ns"]["prediction"] is False and checks["003/vmfunc-gate-ns"]["model"] is None
    for fig in ("000/ept-off-real-s", "002/kvm-trunk-us", "003/vmcall-ns"):
        assert checks[fig]["prediction"] is True and checks[fig]["comparison"] is None, fig
    # 003's VMCALL (measured on an Intel core) comes from neither its own source nor seed
    # 001's AMD Ryzen: every source of its parameters is another Intel measurement
    vmcall = checks["003/vmcall-ns"]
    own = COST["figures"]["003/vmcall-ns"]["source"]
    for p in vmcall["parameters"]:
        for s in p["sources"]:
            src = COST["figures"][s["id"]]["source"] if s["id"] in COST["figures"] else s["id"]
            assert src != own and src != "qiita-bitvisor-cpuid-2019", (p["name"], s["id"])
            assert "Intel" in COST["sources"][src], (p["name"], src)
    out = subprocess.run([VMSIM, "calibrate"], capture_output=True, text=True, timeout=120).stdout
    assert out.count("a comparison of measurements, not a prediction") == 2


def test_counts_are_the_engines(report):
    checks = {c["figure"]: c for c in report["checks"]}
    touch = checks["000/ept-off-real-s"]["counts"]
    # a reflected #PF, the PTE write (once the table is write-protected) and the fill
    assert 2.9 < touch["shadow_exits_per_page"] <= 3 and touch["ept_exits_per_page"] == 0
    assert checks["002/kvm-trunk-us"]["counts"]["exits_per_switch"] == 1
    assert checks["002/kvm-paravirt-cr3-us"]["counts"]["exits_per_switch"] == 0


def test_table_and_usage():
    p = subprocess.run([VMSIM, "calibrate"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("seed ")
    for fig in ("000", "001", "002", "003", "004"):
        assert "\n" + fig + " " in p.stdout
    assert "parameters (data/cost-model.json" in p.stdout
    p = subprocess.run([VMSIM, "calibrate", "--format", "xml"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and p.stdout == "" and p.stderr.startswith("vmsim calibrate: ")
