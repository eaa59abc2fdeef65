"""Engine conformance: every engine behind the protocol, driven by the one lexicographic driver.

CP-SAT, MILP/CBC and MILP/HiGHS: the same proven optima on shared instances,
the same statuses, each declared capability honoured and each missing one a
CapabilityError naming it, a limit-infeasible stage naming the limit.  Every
engine is run once per (instance, objectives) and cached, and each engine's
optimum is compared with another family's (CP-SAT against MILP/CBC, the MILP
backends against CP-SAT).  Objective values are compared, never schedules.
"""

import functools
import json

import pytest
from typer.testing import CliRunner

from cpsched.bounds import latency_lower_bound, relaxation_bounds, usable_devices
from cpsched.cli import app
from cpsched import decompose, engines, lexico
from cpsched.engines import Options
from cpsched.errors import CapabilityError, ParameterError
from cpsched.generate import random_instance
from cpsched.heuristics.heft import heft
from cpsched.inputs import load_input
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor, save_instance
from cpsched.schedule import Status
from cpsched.validator import validate

ENGINES = list(engines.ENGINES)
MILP = ["milp", "milp-highs"]
REFERENCE = {"cpsat": "milp", "milp": "cpsat", "milp-highs": "cpsat"}
LIMIT = 30


def solve(engine, instance, objectives, options=Options(time_limit=LIMIT), **kwargs):
    return lexico.solve(instance, objectives, options, engine=engine, **kwargs)


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
    s = solve(engine, inst, ["latency"], Options(time_limit=LIMIT, workers=1, seed=3), hint=heft(inst))
    assert s.status is Status.OPTIMAL
    check(inst, s)
    assert s.objectives["latency"] == solved("cpsat", CASES[5], ("latency",)).objectives["latency"]
    assert s.solver["engine"] == engine and s.solver["backend"] == {"milp": "cbc", "milp-highs": "highs"}[engine]
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


#: one request per capability, each needing that capability and nothing else an engine may lack
def _memory(engine):
    return solve(engine, npu_instance(10), ["latency"])


def _memory_objective(engine):
    return solve(engine, npu_instance(12), ["latency", "memory"])


def _memory_limit(engine):
    return solve(engine, npu_instance(12), ["latency"], limits={"memory": 100})


def _channels(engine):
    return solve(engine, random_instance(1, 6, 3, channels=(2,)), ["latency"])


def _memory_plan(engine):
    return solve(engine, npu_instance(12), ["latency"], Options(time_limit=LIMIT, memory_plan="after"))


def _decomposition(engine):
    return decompose.solve(random_instance(2, 12, 2, channels=(1,)), ["latency"], Options(time_limit=LIMIT),
                           decompose=4, engine=engine)


def _progress(engine):
    return solve(engine, npu_instance(12), ["latency"], Options(time_limit=LIMIT, progress=lambda p: None))


def _modes(engine):
    return solve(engine, random_instance(3, 5, 2, n_modes=2), ["latency", "error"])


REQUESTS = {"memory": (_memory, _memory_objective, _memory_limit), "channels": (_channels,),
            "memory_plan": (_memory_plan,), "decomposition": (_decomposition,), "progress": (_progress,),
            "modes": (_modes,)}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("capability", sorted(REQUESTS))
def test_declared_capabilities_are_honoured_and_missing_ones_named(engine, capability):
    declared = getattr(engines.get(engine).capabilities, capability)
    for request in REQUESTS[capability]:
        if declared:
            s = request(engine)
            assert s.status.has_schedule, (capability, request.__name__, s.reason)
        else:
            with pytest.raises(CapabilityError, match=f"engine '{engine}' lacks the capability '{capability}'") \
                    as info:
                request(engine)
            assert info.value.capability == capability and "\n" not in str(info.value)


def test_every_capability_but_the_optional_ones_has_a_request():
    assert set(REQUESTS) | {"bounds", "solutions"} == set(engines.Capabilities.__dataclass_fields__)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_archive_holds_valid_intermediate_solutions_none_dominated(engine):
    inst = random_instance(2, 12, 3, channels=(1,))
    s = solve(engine, inst, ["energy", "latency"], Options(archive=True), hint=heft(inst))
    assert s.status is Status.OPTIMAL
    if not engines.get(engine).capabilities.solutions:
        assert s.archive == ()
        return
    assert len(s.archive) >= 2  # the search trades latency for energy on its way (5 on this instance)
    vectors = [tuple(x.objectives[n] for n in ("latency", "energy", "memory")) for x in (s, *s.archive)]
    assert len(set(vectors)) == len(vectors)
    for found, vector in zip(s.archive, vectors[1:]):
        assert validate(inst, found).valid
        assert not any(all(a <= b for a, b in zip(other, vector)) for other in vectors if other != vector)
    assert "archive" not in s.to_dict() and solve(engine, inst, ["energy", "latency"]).archive == ()


@pytest.mark.parametrize("engine", MILP)
def test_memory_that_cannot_bind_needs_no_memory_model(engine):
    assert solve(engine, npu_instance(12), ["latency"]).objectives["latency"] == 2
    with pytest.raises(CapabilityError, match=r"memory capacity can bind on npu \(use engine='cpsat'\)"):
        _memory(engine)


def test_importing_the_milp_engine_does_not_import_ortools():
    import subprocess
    import sys
    code = ("import sys, cpsched.engines.milp, cpsched.lexico; "
            "print(any(m.startswith('ortools') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_engine_is_a_parameter_error():
    with pytest.raises(ParameterError, match="engine='gurobi'"):
        solve("gurobi", instance_of(CASES[0]), ["latency"])


@pytest.mark.parametrize("engine", ENGINES)
def test_unreachable_task_is_infeasible_with_the_reason(engine):
    inst = Instance(
        "island", (Device("cpu", 100, host=True), Device("npu", 100)), (),
        (Task("a", "X", {"npu": Mode(2)}),), (Tensor("x", 4, None, ("a",)),))
    s = solve(engine, inst, ["latency"])
    assert s.status is Status.INFEASIBLE and not s.tasks
    assert "task 'a' can run on no device" in s.reason and "no link" in s.reason


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("witness", [True, False])
def test_a_limit_below_the_optimum_is_named_in_the_reason(engine, witness):
    case = CASES[3]
    inst = instance_of(case)
    best = solved("cpsat", case, ("latency",)).objectives["latency"]
    floor = latency_lower_bound(inst, usable_devices(inst))
    limit = max(best - 1, floor)
    assert limit < best
    s = solve(engine, inst, ["energy"], limits={"latency": limit}, hint=heft(inst) if witness else None)
    assert s.status is Status.INFEASIBLE
    assert f"latency <= {limit}" in s.reason and "without it there is one" in s.reason, s.reason
    assert s.solver["infeasible"] == {"cause": "limits", "limits": {"latency": limit}}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_limit_below_the_relaxation_bound_is_refused_without_solving(engine):
    inst = instance_of(CASES[3])
    floor = latency_lower_bound(inst, usable_devices(inst))
    s = solve(engine, inst, ["energy"], limits={"latency": floor - 1})
    assert s.status is Status.INFEASIBLE and f"latency <= {floor - 1} is below its lower bound {floor}" in s.reason
    assert "stages" not in s.solver


@pytest.mark.parametrize("engine", MILP)
def test_time_limit_gives_feasible_or_unknown_with_a_valid_bound(engine):
    inst = random_instance(7, 30, 3, channels=(1,))
    optimum = lexico.solve(inst, ["latency"], Options(time_limit=30)).objectives["latency"]
    s = solve(engine, inst, ["latency"], Options(time_limit=1))
    assert latency_lower_bound(inst, usable_devices(inst)) <= s.bounds["latency"] <= optimum
    if s.status is Status.UNKNOWN:
        assert not s.tasks and s.reason
        return
    check(inst, s)
    assert s.status in (Status.FEASIBLE, Status.OPTIMAL)
    assert s.bounds["latency"] <= s.objectives["latency"]
    if s.status is Status.OPTIMAL:
        assert s.objectives["latency"] == optimum


@pytest.mark.parametrize("seed", range(3))
def test_a_given_floor_is_the_bound_where_the_search_proves_less(seed):
    """``floors`` are proven bounds (a sweep's lower set, a relaxation's): where the search
    proves less than the floor, here none at all (stopped before its first stage, the warm
    start kept), the answer's bound is the floor, not the closed-form one below it."""
    inst = random_instance(seed, 40, 3)
    optimum = lexico.solve(inst, ["energy"], Options(time_limit=30))
    assert optimum.status is Status.OPTIMAL
    least = optimum.objectives["energy"]
    assert relaxation_bounds(inst, usable_devices(inst))["energy"] < least
    s = lexico.solve(inst, ["energy"], Options(time_limit=0.001), hint=heft(inst), floors={"energy": least})
    check(inst, s)
    assert s.status is Status.FEASIBLE and s.bounds == {"energy": least}


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
        assert out["solver"]["engine"] == engine


def test_tail_share_caps_later_stages_only():
    """A tie-break stage under ``tail_share`` still proves what it has time for; out-of-range
    shares are refused by name."""
    inst = instance_of(CASES[5])
    full = solve("cpsat", inst, ["latency", "energy"], Options(time_limit=LIMIT, workers=1))
    tail = solve("cpsat", inst, ["latency", "energy"], Options(time_limit=LIMIT, workers=1, tail_share=0.01))
    assert tail.status is Status.OPTIMAL and tail.objectives == full.objectives
    assert tail.solver["tail_share"] == 0.01
    for bad in (0, 1.5):
        with pytest.raises(ParameterError, match=r"^tail_share="):
            solve("cpsat", inst, ["latency"], Options(tail_share=bad))


def test_cbc_that_dies_on_its_mip_start_finishes_without_it(tmp_path):
    """A fork-join of 21 tasks on 16 identical processors (Sinnen's shape): CBC's MIP start
    outlasts a 1 s limit and CBC 2.10 crashes on exit; the stage still ends with an answer."""
    lines = ["digraph g {", "1 [Weight=53];", "21 [Weight=40];"]
    for v in range(2, 21):
        lines += [f"{v} [Weight={30 + 7 * v % 150}];", f"1 -> {v} [Weight={3 + v % 8}];",
                  f"{v} -> 21 [Weight={2 + v % 9}];"]
    path = tmp_path / "fork_join.dot"
    path.write_text("\n".join(lines + ["}"]))
    inst = load_input(path, processors=16)
    optimum = lexico.solve(inst, ["latency"], Options(time_limit=30))
    assert optimum.status is Status.OPTIMAL
    s = solve("milp", inst, ["latency"], Options(time_limit=1), hint=optimum)  # raised PulpSolverError
    if s.status is Status.UNKNOWN:  # the run without the start found nothing in its second
        assert not s.tasks and s.reason
        return
    check(inst, s)
    assert s.bounds.get("latency", 0) <= optimum.objectives["latency"] <= s.objectives["latency"]


def test_an_infeasibility_reported_at_the_time_limit_is_not_a_proof():
    """CBC stopped by its time limit inside preprocessing says the model is infeasible (seen on
    the fork-join above): the MILP engine keeps that verdict only when it came before the limit."""
    from cpsched.engines.milp import _trusted

    assert _trusted("infeasible", 0.32, 0.19) == "none"
    assert _trusted("infeasible", 0.05, 0.19) == "infeasible"
    assert _trusted("infeasible", 5.0, None) == "infeasible"
    assert _trusted("feasible", 0.32, 0.19) == "feasible"


@pytest.mark.parametrize("seed", range(10))
def test_a_folded_pair_is_the_two_stage_optimum(seed):
    """CP-SAT minimises a lexicographic pair whose second objective has a limit in one solve
    (``first * (limit + 1) + then``): the brute-force front's lexicographic point for latency and
    memory, MILP/CBC's two stages for energy and latency; the second objective proven, its proof
    recorded.  Without the limit, two stages."""
    from oracle_front import brute_front_latency_memory, memory_instance

    inst = memory_instance(seed, 4)
    front = brute_front_latency_memory(inst)  # (latency, memory), by latency
    cap = front[len(front) // 2][1]
    least = min((m, t) for t, m in front)
    expected = {("memory", "latency"): least, ("latency", "memory"): front[len(front) // 2]}
    for objectives, limits in ((["latency", "memory"], {"memory": cap}), (["memory", "latency"], {"latency": 99}),
                               (["energy", "latency"], {"latency": 99}), (["latency", "energy"], {"energy": 10**6})):
        mine = solve("cpsat", inst, objectives, limits=limits)
        assert mine.status is Status.OPTIMAL
        check(inst, mine)
        values = tuple(mine.objectives[n] for n in objectives)
        if "memory" in objectives:
            assert values == expected[tuple(objectives)]
        else:
            theirs = solve("milp", inst, objectives, limits=limits)
            assert values == tuple(theirs.objectives[n] for n in objectives)
            assert [s["objective"] for s in theirs.solver["stages"]] == objectives
        assert mine.solver["stages"][1] == {"objective": objectives[1], "status": "folded", "wall_time": 0.0}
        tied = mine.solver["proofs"][-1]
        assert tied == {"given": {**limits, objectives[0]: values[0]}, "objective": objectives[1], "at_least": values[1]}
    unbounded = solve("cpsat", inst, ["memory", "latency"])
    assert (unbounded.objectives["memory"], unbounded.objectives["latency"]) == least
    assert [s["status"] for s in unbounded.solver["stages"]] == ["OPTIMAL", "OPTIMAL"]


def test_a_pair_too_heavy_to_fold_exactly_is_solved_in_two_stages():
    """Energies of 10^15 per task times a latency weight pass 2^53, where a double no longer holds
    every integer: the pair is left to two stages."""
    inst = npu_instance(12)
    heavy = Instance(inst.name, inst.devices, inst.links,
                     tuple(Task(t.id, t.op, {d: Mode(m.duration, 10**15) for d, m in t.modes.items()},
                                weights=t.weights) for t in inst.tasks), inst.tensors)
    s = solve("cpsat", heavy, ["energy", "latency"], limits={"latency": 99})
    assert s.status is Status.OPTIMAL
    assert [(st["objective"], st["status"]) for st in s.solver["stages"]] == [("energy", "OPTIMAL"),
                                                                              ("latency", "OPTIMAL")]


def test_a_folded_stage_reports_progress_in_its_first_objective():
    """Live reports of a folded solve are the first objective's incumbent and bound, not the
    weighted sum's."""
    inst = random_instance(11, 14, 3, channels=(1,))
    reports = []
    s = solve("cpsat", inst, ["latency", "energy"], Options(time_limit=LIMIT, progress=reports.append),
              limits={"energy": 10**12})
    assert s.solver["stages"][1]["status"] == "folded"
    latency = s.objectives["latency"]
    incumbents = [r.value for r in reports if r.value is not None]
    assert incumbents and min(incumbents) == latency and max(incumbents) < 10 * latency
    assert all(r.bound <= latency for r in reports if r.bound is not None)
