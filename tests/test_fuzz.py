"""The fuzz suite: random instances, fronts, interrupted sweeps and mutated input files.

* random instances of every feature (links with 0, 1 and 2 channels, size-0
  tensors, outputs, devices a task cannot use, tight memory) are solved through
  the front door: every schedule passes the validator with the objectives it
  claims, and the answer agrees with independent evidence: the brute force
  (tests/oracle.py) where memory cannot bind, the exact (latency, memory) front
  of tests/oracle_front.py filtered by the capacity on tiny memory-bound
  instances, CP-SAT's second memory model, and the MILP where it applies;
* fronts agree with the brute-force front, and both epsilon directions agree;
* sweeps interrupted after k sub-solves leave valid fronts that resume to the
  uninterrupted one;
* mutated files of every kind (instance, schedule, front, platform, cost table,
  benchmark suite, STG graph, MiniMalloc CSV) give exit 0, 1, 2 or 3 from the
  command, never an internal error or a traceback; exit 2 is one line and no
  output file.

Sized by the profile in tests/fuzz.py (``CPSCHED_FUZZ=long`` for benchmarks/fuzz.py).
"""

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import cpsched
from cpsched import interrupt, lexico
from cpsched.bounds import Unreachable, memory_may_bind, usable_devices
from cpsched.cli import app
from cpsched.engines import Options
from cpsched.engines.cpsat import CpSatEngine
from cpsched.generate import random_instance
from cpsched.schedule import Status
from fuzz import EXAMPLES, mutate_file, record
from oracle import brute_force
from oracle_front import brute_front

ROOT = Path(__file__).resolve().parent.parent
OBJECTIVES = (("latency",), ("energy",), ("latency", "energy"), ("memory", "latency"))
SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=list(HealthCheck),
                database=None)


def instances():
    return st.builds(
        dict, seed=st.integers(0, 10**6), n=st.integers(1, 6), d=st.integers(1, 3),
        channels=st.sampled_from([(0,), (1,), (2,), (0, 1, 2)]), zero=st.sampled_from([0.0, 0.2, 1.0]),
        memory=st.sampled_from([8, 12, 16, 24, 40, 10**9]))


def build(p: dict):
    return random_instance(p["seed"], p["n"], p["d"], channels=p["channels"], size_zero_prob=p["zero"],
                           memory=p["memory"])


def check_valid(inst, s):
    if s.status.has_schedule:
        report = cpsched.validate(inst, s)
        assert report.valid, report.violations
        assert dict(s.objectives) == report.objectives
        for name, bound in s.bounds.items():
            assert bound <= s.objectives[name]


def binds(inst) -> bool:
    """Whether some device's memory could bind (an instance that memory alone makes infeasible counts)."""
    try:
        return bool(memory_may_bind(inst, usable_devices(inst)))
    except Unreachable:
        return any(d.memory < 10**9 for d in inst.devices)


def values(s, objectives):
    return [s.objectives[n] for n in objectives] if s.status.has_schedule else s.status.value


@settings(max_examples=EXAMPLES["instances"], **SETTINGS)
@given(p=instances(), objectives=st.sampled_from(OBJECTIVES), hint=st.booleans())
def test_random_instances_solve_to_valid_agreeing_answers(p, objectives, hint):
    inst = build(p)
    s = cpsched.solve(inst, list(objectives), time_limit=30, hint="auto" if hint else None)
    check_valid(inst, s)
    assert s.status.proven, (s.status, s.reason)
    evidence = []
    if objectives == ("latency",) and not binds(inst) and p["n"] <= 5:
        try:
            best = brute_force(inst)[0]
        except ValueError:  # no placement has the links it needs
            best = None
        assert (s.objectives["latency"] if s.status is Status.OPTIMAL else None) == best
        evidence.append("brute force")
    if binds(inst) and p["n"] <= 3 and p["d"] <= 2 and objectives in (("latency",), ("memory", "latency")):
        # the exact (latency, memory) front without capacities, cut at the (uniform) capacity
        within = [pt for pt, _ in brute_front(inst, ("latency", "memory")) if pt[1] <= p["memory"]]
        if not within:
            expected = "infeasible"
        elif objectives == ("latency",):
            expected = [min(within)[0]]
        else:
            least = min(pt[1] for pt in within)
            expected = [least, min(pt[0] for pt in within if pt[1] == least)]
        assert values(s, objectives) == expected
        evidence.append("brute-force front")
    if binds(inst) or "memory" in objectives:
        other = lexico.solve(inst, list(objectives), Options(time_limit=30), engine=CpSatEngine("demand"))
        assert values(other, objectives) == values(s, objectives) and "contradiction" not in s.solver
        evidence.append("second memory model")
    elif max(p["channels"]) <= 1:
        other = lexico.solve(inst, list(objectives), Options(time_limit=30), engine="milp-highs")
        assert values(other, objectives) == values(s, objectives)
        evidence.append("MILP")
    record("instance", params=p, objectives=list(objectives), status=s.status.value, evidence=evidence)


@settings(max_examples=EXAMPLES["fronts"], **SETTINGS)
@given(p=instances().filter(lambda p: p["n"] <= 5), pair=st.sampled_from([("latency", "energy"),
                                                                          ("latency", "memory")]))
def test_random_fronts_agree_with_brute_force_and_both_directions(p, pair):
    inst = build(p)
    f = cpsched.front(inst, pair, time_limit=120)
    assert f.complete
    for point in f.points:
        check_valid(inst, point.schedule)
    g = cpsched.front(inst, pair, epsilon=pair[1], time_limit=120)
    assert [q.values for q in g.points] == [q.values for q in f.points]
    small = p["n"] <= 3 and p["d"] <= 2
    if pair == ("latency", "energy") and not binds(inst) or pair == ("latency", "memory") and small:
        try:
            exact = [pt for pt, _ in brute_front(inst, pair)]
        except ValueError:
            exact = []
        if pair == ("latency", "memory"):
            exact = [pt for pt in exact if pt[1] <= p["memory"]]
        assert [q.values for q in f.points] == sorted(exact)
    record("front", params=p, objectives=list(pair), points=len(f.points))


@settings(max_examples=EXAMPLES["interrupted"], **SETTINGS)
@given(p=instances().filter(lambda p: p["n"] >= 3), k=st.integers(1, 6),
       objectives=st.sampled_from([("latency", "memory"), ("latency", "energy", "memory")]))
def test_interrupted_sweeps_leave_valid_fronts_that_resume_to_the_whole(p, k, objectives):
    inst = build(p)
    whole = cpsched.front(inst, objectives)
    seen = []

    def progress(event):
        if isinstance(event, str):
            seen.append(event)
            if len(seen) == k:
                interrupt.request()

    with interrupt.guard():
        part = cpsched.front(inst, objectives, progress=progress)
    assert not interrupt.requested()
    for point in part.points:
        check_valid(inst, point.schedule)
    if len(seen) >= k:
        assert part.meta.get("stopped") == "interrupted" or part.complete
    resumed = cpsched.front(inst, objectives, resume=part)
    assert resumed.complete and [q.values for q in resumed.points] == [q.values for q in whole.points]
    record("interrupted", params=p, objectives=list(objectives), after=k, points=len(part.points))


# ----- mutated input files -------------------------------------------------------------------

@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """One valid file of every kind, with the command that reads it."""
    folder = tmp_path_factory.mktemp("base")
    inst = random_instance(11, 5, 2, channels=(0, 1))
    (folder / "inst.json").write_text(json.dumps(inst.to_dict()))
    best = cpsched.solve(inst)
    (folder / "schedule.json").write_text(json.dumps(best.to_dict()))
    (folder / "front.json").write_text(json.dumps(cpsched.front(inst, ("latency", "energy")).to_dict()))
    preset = (ROOT / "cpsched" / "presets" / "edge.yaml").read_text()
    (folder / "platform.yaml").write_text(preset)
    costs = {"format": "cpsched-costs/1", "device": "cpu", "unit": "us",
             "nodes": {"n0": {"median": 120.5, "p90": 130.0, "op": "Conv"}, "n1": {"median": 3.0}}}
    (folder / "costs.json").write_text(json.dumps(costs))
    with_costs = preset.replace("host: true", "host: true, costs: costs.json", 1)
    assert with_costs != preset
    (folder / "with-costs.yaml").write_text(with_costs)
    suite = {"name": "fz", "time_limit": 5, "objectives": ["latency"], "decompose": "auto",
             "entries": [{"instance": "inst.json", "known": best.objectives["latency"]}]}
    (folder / "suite.yaml").write_text(json.dumps(suite))
    (folder / "graph.stg").write_text((ROOT / "instances" / "smoke" / "g12.stg").read_text())
    (folder / "buffers.csv").write_text("id,lower,upper,size\n0,0,4,8\n1,2,6,16\n2,5,9,8\n3,0,9,4\n")
    return folder


#: kind -> (file, its syntax, the command reading it: FILE and OUT stand for the paths)
KINDS = {
    "instance": ("inst.json", "json", ["solve", "FILE", "-o", "OUT", "--time-limit", "10", "--no-cache"]),
    "schedule": ("schedule.json", "json", ["validate", "BASE/inst.json", "FILE"]),
    "front": ("front.json", "json", ["select", "FILE", "--max-latency", "1000000", "-o", "OUT"]),
    "platform": ("platform.yaml", "yaml", ["import", "alexnet", "--platform", "FILE", "-o", "OUT"]),
    "costs": ("costs.json", "json", ["import", "alexnet", "--platform", "BASE/with-costs.yaml", "-o", "OUT"]),
    "suite": ("suite.yaml", "yaml", ["bench", "FILE", "-j", "1", "-o", "OUT"]),
    "stg": ("graph.stg", "text", ["solve", "FILE", "--processors", "2", "-o", "OUT", "--time-limit", "10",
                                  "--no-cache"]),
    "csv": ("buffers.csv", "text", ["memplan", "FILE", "--capacity", "40", "-o", "OUT"]),
}


@settings(max_examples=EXAMPLES["mutations"], **SETTINGS)
@given(kind=st.sampled_from(sorted(KINDS)), seed=st.integers(0, 2**32 - 1))
def test_mutated_input_files_are_answered_or_refused_in_one_line(base, tmp_path_factory, kind, seed):
    name, syntax, args = KINDS[kind]
    folder = tmp_path_factory.mktemp(kind)
    for f in base.iterdir():
        (folder / f.name).write_bytes(f.read_bytes())
    data, what = mutate_file((base / name).read_text(), syntax, random.Random(seed))
    (folder / name).write_bytes(data)
    out = folder / ("out.csv" if kind == "suite" else "out.json")
    argv = [a.replace("FILE", str(folder / name)).replace("BASE", str(folder)).replace("OUT", str(out))
            for a in args]
    result = CliRunner().invoke(app, argv)
    context = (kind, what, result.exit_code, result.stderr[-500:])
    assert result.exit_code in (0, 1, 2, 3), context
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, context
    if result.exit_code == 2:
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), context
        assert not out.exists(), context
    record("mutation", file=kind, mutation=what, exit=result.exit_code)
