"""SVM fidelity run: the engine's NPT scenarios on an executing CPU (QEMU's TCG with
SVM and nested paging).

    tests/svm/run [--count N] [--seed S] [--examples-only] [--scenario FILE]
                  [--report FILE] [--web-data FILE] [--verbose]

Every example in wasm-core/examples in mode npt, then random machines until N accesses
have been compared: the engine's result and built machine (vmsim run / vmsim image,
caches off), the same machine on QEMU (plan.py, machine.py: many scenarios per boot)
and a comparison of every access (compare.py). The last line is exactly
`N accesses, K disagreements`; the exit status is 1 when K > 0.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import datetime
import glob
import json
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))

import plan as planmod  # noqa: E402
import compare  # noqa: E402
import gen_svm  # noqa: E402
import machine  # noqa: E402
import layout as L  # noqa: E402
from oracle.report import (arguments, vmsim, caches_off, count_ops, save_failure,  # noqa: E402
                           print_findings, write_json)

BATCH = 120                     # scenarios per QEMU boot
AS_FETCHES_WHY = {}             # why scenarios ran as fetches -> how many
with open(os.path.join(HERE, "cases", "index.json"), encoding="utf-8") as _f:
    CASES = json.load(_f)["cases"]


def for_svm(sc: dict) -> dict:
    """The scenario as it is compared: the engine's caches off (the harness flushes the
    TLB on every VMRUN, so every access walks, and QEMU has no paging-structure caches)
    and QEMU's physical-address width (40 bits)."""
    return caches_off(sc, planmod.QEMU_MAXPHYADDR)


def as_fetches(sc: dict) -> dict:
    """Reads and writes made fetches, the last resort when the harness's stubs have no way
    in (plan.RootUnusable: no free guest entry for them): a fetch needs no stub, the
    guest jumps to the gva."""
    sc = copy.deepcopy(sc)
    for a in sc["accesses"]:
        if "op" in a:
            a["op"] = "fetch"
    sc["name"] = sc.get("name", "scenario") + " (accesses as fetches)"
    return sc


def prepare(sc: dict):
    """-> (scenario compared, result, plan) or raises Unsupported. A page-table write
    the host cannot reach is left out of the compared scenario (a few tries)."""
    sc = for_svm(sc)
    for _ in range(8):
        try:
            return _prepare(sc)
        except planmod.UnreachableWrite as e:
            sc = copy.deepcopy(sc)
            del sc["accesses"][e.index]
            if not any("op" in a for a in sc["accesses"]):
                raise planmod.Unsupported(str(e))
    raise planmod.Unsupported("page-table writes the host cannot reach")


def _prepare(sc: dict):
    result = vmsim("run", sc)
    image = vmsim("image", sc)
    try:
        # the harness's nested A bits (its own 2 MiB's path, then a directory its stubs
        # are reached through) may come in two rounds
        for _ in range(3):
            try:
                return sc, result, planmod.make_plan(sc, result, image)
            except planmod.NeedsAccessed as e:
                sc = copy.deepcopy(sc)
                sc["nested"].setdefault("overrides", []).extend(e.overrides)
                result = vmsim("run", sc)
                image = vmsim("image", sc)
        raise planmod.Unsupported("internal: the harness's nested A bits do not settle")
    except planmod.RootUnusable as e:
        if sc.get("name", "").endswith("(accesses as fetches)"):
            raise
        sc = as_fetches(sc)
        AS_FETCHES_WHY[str(e)] = AS_FETCHES_WHY.get(str(e), 0) + 1
        result = vmsim("run", sc)
        image = vmsim("image", sc)
        return sc, result, planmod.make_plan(sc, result, image, stubs=False)


def run_all(items: list, jobs: int = 2) -> list:
    """items: [(name, sc, origin)] -> [(name, origin, sc, result, plan | Unsupported, got)]"""
    with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
        prepared = list(ex.map(lambda it: _prep(it), items))
    groups = {}
    for k, (name, origin, sc, result, p) in enumerate(prepared):
        if isinstance(p, planmod.Plan):
            groups.setdefault(p.levels, []).append(k)
    got = {}
    batches = []
    for levels, ks in sorted(groups.items()):
        cur, size = [], 0
        for k in ks:
            n = len(planmod.encode(prepared[k][4]))
            if cur and (len(cur) >= BATCH or size + n > L.MODULE_MAX - 4096):
                batches.append((levels, cur))
                cur, size = [], 0
            cur.append(k)
            size += n
        if cur:
            batches.append((levels, cur))

    def run_batch(b):
        levels, ks = b
        return ks, machine.run_batch(levels, [prepared[k][4] for k in ks])
    with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
        for ks, res in ex.map(run_batch, batches):
            for k, r in zip(ks, res):
                got[k] = r
    return [pr + (got.get(k),) for k, pr in enumerate(prepared)]


def _prep(it):
    name, sc, origin = it
    try:
        sc2, result, p = prepare(sc)
        return (name, origin, sc2, result, p)
    except planmod.Unsupported as e:
        return (name, origin, sc, None, e)


def main(argv=None) -> int:
    ap = arguments(__doc__.split("\n\n")[0],
                   "add NPT to the page's verified-on-a-CPU data in this file")
    ap.add_argument("--minimize", metavar="FILE",
                    help="shrink this disagreeing scenario to a small case (FILE.min.json)")
    ap.add_argument("--deviation", help="with --minimize: shrink to a case of this known "
                    "QEMU deviation instead of a disagreement")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)
    if args.minimize:
        return minimize(args.minimize, args.deviation)
    started = time.time()

    items = []
    if args.scenario:
        with open(args.scenario, encoding="utf-8") as f:
            items.append((os.path.basename(args.scenario), json.load(f), "file"))
    else:
        for path in sorted(glob.glob(os.path.join(ROOT, "wasm-core", "examples", "*.json"))):
            with open(path, encoding="utf-8") as f:
                sc = json.load(f)
            if sc.get("mode") == "npt":
                items.append((os.path.basename(path)[:-5], sc, "example"))
        # the minimized cases of the known QEMU deviations (each must show its own)
        for name in sorted(CASES):
            with open(os.path.join(HERE, "cases", name), encoding="utf-8") as f:
                items.append((name, json.load(f), "case"))
    compared = disagreements_n = 0
    disagreements, deviations, skipped = [], [], []
    examples, modes, ops, cases_run = {}, {}, {}, {}
    scenarios = as_fetches_n = 0
    injected = {"scenarios": 0, "read": 0, "write": 0}
    below_pdpte = 0
    rng = random.Random(args.seed)
    k = 0
    first = True
    while first or (not args.scenario and not args.examples_only and compared < args.count):
        if not first:
            # enough random machines for what is still missing (about 9 accesses each,
            # some not runnable)
            need = max(4, min(2 * BATCH, (args.count - compared) // 6))
            items = []
            for _ in range(need):
                items.append((f"random seed {args.seed} #{k}", gen_svm.random_machine(rng, k), "random"))
                k += 1
        first = False
        for name, origin, sc, result, p, got in run_all(items):
            if not isinstance(p, planmod.Plan):
                skipped.append({"scenario": name, "reason": str(p)})
                if origin == "example":
                    examples[name] = {"verified": False, "reason": str(p)}
                continue
            dis, devs, n = compare.compare(sc, result, p, got)
            if origin == "case":
                want, seen = CASES[name], sorted({d["deviation"] for d in devs})
                if (want and want not in seen) or (not want and seen):
                    dis.append({"access": None, "what": "harness",
                                "detail": f"case {name}: expected {want or 'no deviation'}, "
                                          f"saw {', '.join(seen) or 'none'}"})
            compared += n
            scenarios += 1
            if sc.get("name", "").endswith("(accesses as fetches)"):
                as_fetches_n += 1
            if any(p.injected.values()):
                injected["scenarios"] += 1
                for op, v in p.injected.items():
                    injected[op] += v
            below_pdpte += bool(p.harness_allow)
            count_ops(ops, sc["accesses"])
            key = f"npt{p.levels}/{sc['guest']['paging']}"
            modes[key] = modes.get(key, 0) + n
            if dis and origin == "random":
                save_failure("svm", args.seed, name, sc)
            for d in dis + devs:
                d["scenario"] = name
            disagreements.extend(dis)
            deviations.extend(devs)
            if origin == "case":
                cases_run[name] = sorted({d["deviation"] for d in devs})
            if origin == "example":
                examples[name] = {"verified": not dis, "accesses": n, "disagreements": len(dis),
                                  "known_deviations": len(devs), "as_fetches": "fetches" in sc.get("name", "")}
            if args.verbose:
                print(f"{name}: {n} accesses, {len(dis)} disagreements")
                for i, (a, r) in enumerate(zip(sc["accesses"], result["accesses"])):
                    g = got[i] if isinstance(got, list) else None
                    print(f"  [{i}] {json.dumps(a)} engine {r['outcome']} {r['hpa']} "
                          f"{json.dumps(r['fault'])} cpu {compare.describe_exit(g) if g else got}")

    kinds = print_findings(disagreements, deviations, compare, "QEMU", "cpu")
    seconds = time.time() - started
    verified = sorted(n for n, e in examples.items() if e.get("verified"))
    if cases_run:
        print(f"cases of the known deviations: {len(cases_run)} run (tests/svm/cases)")
    print(f"scenarios: {scenarios} run ({', '.join(f'{kk} {v}' for kk, v in sorted(modes.items()))} "
          f"accesses), {len(skipped)} not runnable; examples verified: {len(verified)} of "
          f"{len(examples)}; {seconds:.1f} s")
    print("compared: " + ", ".join(f"{kk} {v}" for kk, v in sorted(ops.items())))
    if injected["scenarios"]:
        print(f"  {injected['read']} reads and {injected['write']} writes in {injected['scenarios']} "
              "scenarios ran as an injected event's IDT read at the gva (their space's root "
              "table is refused by the nested tables: no instruction can be fetched there)")
    if below_pdpte:
        print(f"  {below_pdpte} legacy-PAE scenarios reach the stubs below a PDPTE of theirs "
              "(all four PDPTEs in use)")
    print(f"  {as_fetches_n} scenarios ran with their reads and writes as fetches" +
          "".join(f"; {why} ({k})" for why, k in sorted(AS_FETCHES_WHY.items())))
    reasons = {}
    for s in skipped:
        reasons[s["reason"]] = reasons.get(s["reason"], 0) + 1
        if not s["scenario"].startswith("random"):
            print(f"  not run: {s['scenario']}: {s['reason']}")
    for why, cnt in sorted(reasons.items(), key=lambda x: -x[1]):
        print(f"  not runnable ({cnt}): {why}")
    if args.report:
        report = {
            "format": "vmemlab-svm-fidelity/1",
            "date": datetime.date.today().isoformat(),
            "cpu": "QEMU " + machine.qemu_version() + " TCG, -cpu max (SVM, NPT, LA57; phys-bits 40)",
            "seed": args.seed, "accesses_compared": compared,
            "disagreements": len(disagreements), "scenarios": scenarios,
            "accesses_by_mode": modes, "accesses_by_kind": ops, "seconds": round(seconds, 1),
            "scenarios_as_fetches": as_fetches_n,
            "scenarios_as_fetches_why": AS_FETCHES_WHY,
            "reads_writes_by_injected_event": injected,
            "scenarios_stubs_below_pdpte": below_pdpte,
            "examples": examples, "cases": cases_run, "not_runnable": reasons,
            "disagreement_list": disagreements[:200],
            "known_deviations": {kd: {"count": len(v), "reason": compare.DEVIATIONS[kd],
                                      "examples": v[:5]} for kd, v in kinds.items()},
        }
        write_json(args.report, report, default=hex)
    if args.web_data:
        write_web_data(args.web_data, compared, disagreements, kinds, examples)
    print(f"{compared} accesses, {len(disagreements)} disagreements")
    return 1 if disagreements else 0


def disagreements_of(sc: dict, deviations: bool = False) -> list:
    [(name, origin, sc2, result, p, got)] = run_all([("minimize", sc, "file")], jobs=1)
    if not isinstance(p, planmod.Plan):
        return []
    return compare.compare(sc2, result, p, got)[1 if deviations else 0]


def minimize(path: str, deviation=None) -> int:
    """Greedy shrinking: drop accesses after the first disagreement, then each earlier
    access or event, each override and each mapping, as long as a disagreement of the
    same kind remains. Writes FILE.min.json and prints what is left."""
    with open(path, encoding="utf-8") as f:
        sc = json.load(f)
    key = "deviation" if deviation else "what"
    dis = [d for d in disagreements_of(sc, bool(deviation))
           if not deviation or d["deviation"] == deviation]
    if not dis:
        print("nothing to minimize")
        return 0
    what = dis[0][key]
    print("minimizing:", what, "at access", dis[0]["access"])

    def still(c: dict) -> bool:
        try:
            return any(d[key] == what for d in disagreements_of(c, bool(deviation)))
        except planmod.Unsupported:
            return False
    if isinstance(dis[0]["access"], int):
        c = copy.deepcopy(sc)
        c["accesses"] = c["accesses"][:dis[0]["access"] + 1]
        if still(c):
            sc = c
    j = len(sc["accesses"]) - 2
    while j >= 0:
        c = copy.deepcopy(sc)
        del c["accesses"][j]
        if still(c):
            sc = c
        j -= 1
    for dim in ("guest", "nested"):
        for part in ("overrides", "mappings", "tables"):
            lst = (sc.get(dim) or {}).get(part)
            j = len(lst or []) - 1
            while lst and j >= 0:
                c = copy.deepcopy(sc)
                del c[dim][part][j]
                if still(c):
                    sc = c
                    lst = sc[dim][part]
                j -= 1
    out = path[:-5] + ".min.json" if path.endswith(".json") else path + ".min.json"
    with open(out, "w", encoding="utf-8") as f:
        json.dump(sc, f, indent=1)
        f.write("\n")
    for d in disagreements_of(sc, bool(deviation)):
        print(d if deviation else compare.describe(d))
    print(f"wrote {out}: {len(sc['accesses'])} accesses")
    return 0 if deviation else 1


def write_web_data(path: str, compared: int, disagreements: list, kinds: dict, examples: dict):
    """Adds (or replaces) the "npt" part of the page's verified-on-a-CPU data; the Bochs
    part written by `make fidelity` stays as it is."""
    data = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    data["npt"] = {
        "date": datetime.date.today().isoformat(),
        "cpu": "QEMU " + machine.qemu_version() + " (TCG, SVM with nested paging)",
        "accesses_compared": compared, "disagreements": len(disagreements),
        "known_deviations": {kd: len(v) for kd, v in kinds.items()},
        "compared_as": "the engine's caches off, MAXPHYADDR 40 (QEMU's CPU)",
        "examples": {n: {"accesses": e["accesses"]} for n, e in sorted(examples.items())
                     if e.get("verified")},
    }
    write_json(path, data)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except machine.HarnessError as e:
        print(f"tests/svm: {e}", file=sys.stderr)
        sys.exit(2)
