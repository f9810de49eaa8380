"""The replay's shared L1s (wasm-core/docs/replay.md, "One L1 for the modes"): the modes
take their L1 data and instruction caches' answers from one L1 of each kind that the
replay runs the trace through once, and keep a set themselves only while their walks'
page-table entries make it differ. The figures must be the bytes each mode gives with
its own L1s (`--l1 per-mode`: every mode's L1 kept by the mode, as test_replay.py checks
against `vmsim run` access by access), whatever the trace, the setting and the threads;
and the same when each mode leaves the shared L1s at any access (`--l1-leave-at N`:
what a mode whose access faults does), which copies the shared sets as they stood at that
access into the mode's own L1s.

The traces: the recorded examples; one that evicts TLB entries all the time (a walk, and
its entries read through the L1, every few accesses); one whose loads and stores go
round 16 lines in every L1 set (sets the walks touched are given back to the shared L1
once they hold the same lines in the same order again); one of a single access; and one
over more pages than the shared L1 is kept for (each mode's own L1s, as before)."""
import json
import random

import pytest
from test_replay_jobs import EXAMPLES, evicting, run

from hwlab.tracefile import KIND, write_trace

SETTINGS = [
    ["--format", "json"],
    ["--format", "json", "--start", "warm", "--guest-pages", "2m"],
    ["--format", "json", "--host-pages", "4k", "--tables", "on-demand"],
    ["--format", "json", "--modes", "native,ept,npt,shadow,flat,agile", "--agile-switch-level", "2"],
    ["--format", "json", "--preset", "sunway-1621"],
]


def round_the_sets(n=300_000, pages=40, seed=3):
    """Loads and stores over 40 pages, 16 lines of each set in turn, with a fetch stream
    beside them and a page far away now and then (a TLB miss: a walk whose entries land
    in sets the loads then go round again)."""
    rnd = random.Random(seed)
    base = 0x5555_0000_0000
    out = []
    for i in range(n):
        if i % 3 == 0:
            out.append((KIND["fetch"], 0x40_0000 + (i // 3 % 5000) * 4))
        elif i % 997 == 0:
            out.append((KIND["load"], 0x7FFF_0000_0000 + rnd.randrange(1 << 30)))
        else:
            page = rnd.randrange(pages)
            line = rnd.randrange(64)
            kind = KIND["store"] if i % 5 == 0 else KIND["load"]
            out.append((kind, base + page * 4096 + line * 64 + rnd.randrange(64)))
    return out


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("l1")
    found = [EXAMPLES / f"{n}.vmtrace" for n in ("pointer-chase", "sequential-scan")]
    out = {"examples": [p for p in found if p.exists()]}
    for name, acc in (("evicting", evicting(n=200_000)), ("sets", round_the_sets()),
                      ("one", [(KIND["load"], 0x400123)]),
                      ("wide", [(KIND["load"], 0x1000_0000 + p * 4096) for p in range(17_000)] * 2)):
        out[name] = d / f"{name}.vmtrace"
        write_trace(out[name], acc)
    return out


def all_traces(traces):
    return traces["examples"] + [traces[k] for k in ("evicting", "sets", "one", "wide")]


@pytest.mark.parametrize("args", SETTINGS, ids=lambda a: " ".join(a))
def test_shared_l1s_give_each_modes_own_figures(traces, args):
    assert len(traces["examples"]) == 2     # make build records them
    for path in all_traces(traces):
        own = run(path, *args, "--jobs", "1", "--l1", "per-mode")
        assert own.returncode == 0, own.stderr
        for jobs in ("1", "2"):
            shared = run(path, *args, "--jobs", jobs)
            assert shared.returncode == 0, shared.stderr
            assert shared.stdout == own.stdout, f"{path.name} {args} --jobs {jobs}"


@pytest.mark.parametrize("at", ["1", "2", "2049", "40000", "123457"])
def test_leaving_the_shared_l1s_at_any_access_changes_nothing(traces, at):
    for path in all_traces(traces):
        own = run(path, "--format", "json", "--jobs", "1", "--l1", "per-mode")
        for jobs in ("1", "3"):
            left = run(path, "--format", "json", "--jobs", jobs, "--l1-leave-at", at)
            assert left.returncode == 0, left.stderr
            assert left.stdout == own.stdout, f"{path.name} leaving at {at}, --jobs {jobs}"


def test_the_traces_do_what_they_are_for(traces):
    rep = json.loads(run(traces["sets"], "--format", "json", "--jobs", "1").stdout)
    m = rep["modes"][0]
    # the loads miss the L1 often (16 lines a set go round 8 ways) and walks happen
    assert m["data_by_where"]["l2"] > 10_000 and m["walks"] > 100, m
    rep = json.loads(run(traces["evicting"], "--format", "json", "--jobs", "1").stdout)
    assert all(m["tlb_misses"] > 2 * rep["trace"]["pages"] for m in rep["modes"])
    assert json.loads(run(traces["wide"], "--format", "json").stdout)["trace"]["pages"] > 16_384


@pytest.mark.parametrize("bad", [["--l1", "both"], ["--l1"], ["--l1-leave-at", "-1"], ["--l1-leave-at", "x"]])
def test_bad_l1_options_refused(traces, bad):
    p = run(traces["one"], *bad)
    assert p.returncode == 2 and bad[0] in p.stderr, p.stderr
