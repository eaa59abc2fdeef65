"""The MILP engine (PuLP: CBC, HiGHS) against CP-SAT: the same proven optima, the same statuses.

Every engine is run once per (instance, objectives) and cached, and each engine's
optimum is compared with another family's (CP-SAT against MILP/CBC, the MILP
backends against CP-SAT).  Objective values are compared, never schedules.
"""

import functools
import json

import pytest
from typer.testing import CliRunner

from cpsched.bounds import latency_lower_bound, usable_devices
from cpsched.cli import app
from cpsched.engines import cpsat, milp
from cpsched.errors import InputError
from cpsched.generate import random_instance
from cpsched.heuristics.heft import heft
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor, save_instance
from cpsched.schedule import Status
from cpsched.validate import validate

ENGINES = ["cpsat", "milp-cbc", "milp-highs"]
MILP = ["milp-cbc", "milp-highs"]
REFERENCE = {"cpsat": "milp-cbc", "milp-cbc": "cpsat", "milp-highs": "cpsat"}
LIMIT = 30


def solve(engine, instance, objectives, options=cpsat.Options(time_limit=LIMIT), **kwargs):
    if engine == "cpsat":
        return cpsat.solve(instance, objectives, options, **kwargs)
    return milp.solve(instance, objectives, options, backend=engine.removeprefix("milp-"), **kwargs)


def check(instance, schedule):
    report = validate(instance, schedule)
    assert report.valid, report.violations
    assert dict(schedule.objectives) == report.objectives


# 5-10 tasks, 2-3 devices, links with 0 or 1 channels
CASES = [(seed, 5 + seed % 6, 2 + seed % 2) for seed in range(22)]


@functools.cache
def instance_of(case):
    seed, n_tasks, n_devices = case
    return random_instance(300 + seed, n_tasks, n_devices, channels=(0, 1))


@functools.cache
def solved(engine, case, objectives, limits=()):
    inst = instance_of(case)
    s = solve(engine, inst, list(objectives), limits=dict(limits))
    assert s.status is Status.OPTIMAL, (engine, case, objectives, s.status, s.reason)
    check(inst, s)
    return s


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}")
def test_same_optimal_latency_and_energy(engine, case):
    for objective in ("latency", "energy"):
        mine = solved(engine, case, (objective,))
        theirs = solved(REFERENCE[engine], case, (objective,))
        assert mine.objectives[objective] == theirs.objectives[objective], (engine, case, objective)
        assert mine.bounds == {objective: mine.objectives[objective]}


@pytest.mark.parametrize("engine", MILP)
@pytest.mark.parametrize("case", CASES[::5], ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}")
def test_lexicographic_and_limits_agree_with_cpsat(engine, case):
    lex = solved(engine, case, ("latency", "energy"))
    ref = solved("cpsat", case, ("latency", "energy"))
    assert [lex.objectives[n] for n in ("latency", "energy")] == [ref.objectives[n] for n in ("latency", "energy")]
    assert [s["objective"] for s in lex.solver["stages"]] == ["latency", "energy"]
    capped = (("latency", ref.objectives["latency"] + 2),)
    assert solved(engine, case, ("energy",), capped).objectives["energy"] == \
        solved("cpsat", case, ("energy",), capped).objectives["energy"]


@pytest.mark.parametrize("engine", MILP)
def test_hint_and_solver_record(engine):
    inst = instance_of(CASES[5])
    s = solve(engine, inst, ["latency"], cpsat.Options(time_limit=LIMIT, workers=1, seed=3), hint=heft(inst))
    assert s.status is Status.OPTIMAL
    check(inst, s)
    assert s.objectives["latency"] == solved("cpsat", CASES[5], ("latency",)).objectives["latency"]
    assert s.solver["engine"] == "milp" and s.solver["backend"] == engine.removeprefix("milp-")
    assert s.solver["seed"] == 3 and s.solver["workers"] == 1 and s.solver["wall_time"] >= 0
    assert s.solver["stages"][0]["status"] == "optimal"


def npu_instance(npu_memory: int) -> Instance:
    """Two tasks with 6 bytes of weights each: both on the npu need 12 bytes."""
    return Instance(
        "npu", (Device("cpu", 10**6, host=True), Device("npu", npu_memory)),
        (Link("cpu", "npu", 1, 1), Link("npu", "cpu", 1, 1)),
        (Task("a", "X", {"cpu": Mode(4), "npu": Mode(1)}, weights=6),
         Task("b", "X", {"cpu": Mode(4), "npu": Mode(1)}, weights=6)),
        (Tensor("x", 0, None, ("a", "b")),))


@pytest.mark.parametrize("engine", MILP)
def test_memory_that_can_bind_is_an_input_error_naming_the_device(engine):
    with pytest.raises(InputError, match=r"memory capacity can bind on npu: use --engine cpsat"):
        solve(engine, npu_instance(10), ["latency"])
    assert solve(engine, npu_instance(12), ["latency"]).objectives["latency"] == 2  # cannot bind: solved
    with pytest.raises(InputError, match="no memory model"):
        solve(engine, npu_instance(12), ["latency", "memory"])
    with pytest.raises(InputError, match="no memory model"):
        solve(engine, npu_instance(12), ["latency"], limits={"memory": 100})


@pytest.mark.parametrize("engine", MILP)
def test_links_with_two_channels_are_an_input_error(engine):
    with pytest.raises(InputError, match=r"supports link channels 0 and 1 \(link d\d->d\d has 2\)"):
        solve(engine, random_instance(1, 6, 3, channels=(2,)), ["latency"])


def test_unknown_backend_is_an_input_error():
    with pytest.raises(InputError, match="backend"):
        milp.solve(instance_of(CASES[0]), backend="gurobi")


@pytest.mark.parametrize("engine", ENGINES)
def test_unreachable_task_is_infeasible_with_the_reason(engine):
    inst = Instance(
        "island", (Device("cpu", 100, host=True), Device("npu", 100)), (),
        (Task("a", "X", {"npu": Mode(2)}),), (Tensor("x", 4, None, ("a",)),))
    s = solve(engine, inst, ["latency"])
    assert s.status is Status.INFEASIBLE and not s.tasks
    assert "task 'a' can run on no device" in s.reason and "no link" in s.reason


@pytest.mark.parametrize("engine", MILP)
def test_limits_below_the_optimum_are_proven_infeasible(engine):
    case = CASES[3]
    best = solved("cpsat", case, ("latency",)).objectives["latency"]
    s = solve(engine, instance_of(case), ["energy"], limits={"latency": best - 1})
    assert s.status is Status.INFEASIBLE and s.reason


@pytest.mark.parametrize("engine", MILP)
def test_time_limit_gives_feasible_or_unknown_with_a_valid_bound(engine):
    inst = random_instance(7, 30, 3, channels=(1,))
    optimum = cpsat.solve(inst, ["latency"], cpsat.Options(time_limit=30)).objectives["latency"]
    s = solve(engine, inst, ["latency"], cpsat.Options(time_limit=1))
    assert latency_lower_bound(inst, usable_devices(inst)) <= s.bounds["latency"] <= optimum
    if s.status is Status.UNKNOWN:
        assert not s.tasks and s.reason
        return
    check(inst, s)
    assert s.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert s.bounds["latency"] <= s.objectives["latency"]
    if s.status is Status.OPTIMAL:
        assert s.objectives["latency"] == optimum


def test_cli_engine_milp(tmp_path):
    inst = instance_of(CASES[2])
    path = tmp_path / "inst.json"
    save_instance(inst, path)
    best = solved("cpsat", CASES[2], ("latency",)).objectives["latency"]
    for engine in ("milp", "milp-highs"):
        result = CliRunner().invoke(app, ["solve", str(path), "--engine", engine, "--no-cache"])
        assert result.exit_code == 0, result.stderr
        out = json.loads(result.stdout)
        assert out["status"] == "optimal" and out["objectives"]["latency"] == best
        assert out["solver"]["engine"] == "milp"
