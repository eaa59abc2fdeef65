"""The CP-SAT engine against brute force, hand-computed cases and published STG optima."""

import csv
from pathlib import Path

import pytest
from oracle import brute_force_latency, random_instance
from oracle_front import brute_front
from typer.testing import CliRunner

from cpsched.cli import app
from cpsched.engines import Options
from cpsched.lexico import solve
from cpsched.heuristics.heft import heft
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor
from cpsched.io.stg import read_stg
from cpsched.io.taskgraph import build
from cpsched.schedule import Status
from cpsched.validator import validate

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="shared/data not present")


def check(instance, schedule):
    report = validate(instance, schedule)
    assert report.valid, report.violations
    assert dict(schedule.objectives) == report.objectives


CASES = [(seed, 4 + seed % 3, 2 + seed % 2) for seed in range(36)]


@pytest.mark.parametrize("seed,n_tasks,n_devices", CASES)
def test_optimal_latency_equals_brute_force(seed, n_tasks, n_devices):
    inst = random_instance(seed, n_tasks, n_devices, channels=(0, 1, 2))
    result = solve(inst, ["latency"], Options(time_limit=30))
    assert result.status is Status.OPTIMAL
    check(inst, result)
    assert result.objectives["latency"] == brute_force_latency(inst)


@pytest.mark.parametrize("seed,n_tasks,n_devices", CASES[:12])
def test_one_worker_without_the_lp_relaxation_proves_the_brute_force_optimum(seed, n_tasks, n_devices):
    inst = random_instance(seed, n_tasks, n_devices, channels=(0, 1, 2))
    result = solve(inst, ["latency"], Options(time_limit=30, workers=1, lp=False))
    assert result.status is Status.OPTIMAL and result.solver["lp"] is False
    check(inst, result)
    assert result.objectives["latency"] == brute_force_latency(inst)


@pytest.mark.parametrize("seed", range(8))
def test_the_proof_portfolio_proves_each_capped_brute_force_optimum(seed):
    """Two complete searches (with and without the LP) in place of one beside LNS: under each
    memory cap of the brute-force front, the least latency is that front point's."""
    inst = random_instance(80 + seed, 3, 2, channels=(1,))
    for (latency, memory), _ in brute_front(inst, ("latency", "memory")):
        result = solve(inst, ["latency"], Options(time_limit=30, workers=2, proof=True), limits={"memory": memory})
        assert result.status is Status.OPTIMAL and result.solver["proof"] is True
        check(inst, result)
        assert result.objectives["latency"] == latency


@pytest.mark.parametrize("seed", range(8))
def test_lexicographic_stages(seed):
    inst = random_instance(100 + seed, 6, 3, channels=(1,))
    first = solve(inst, ["latency"], Options(time_limit=30))
    lex = solve(inst, ["latency", "energy"], Options(time_limit=30))
    energy = solve(inst, ["energy"], Options(time_limit=30))
    for s in (first, lex, energy):
        assert s.status is Status.OPTIMAL
        check(inst, s)
    assert lex.objectives["latency"] == first.objectives["latency"]
    assert lex.objectives["energy"] <= first.objectives["energy"]
    assert energy.objectives["energy"] <= lex.objectives["energy"]
    memory = solve(inst, ["latency", "memory"], Options(time_limit=30))
    assert memory.status is Status.OPTIMAL
    check(inst, memory)
    assert memory.objectives["latency"] == first.objectives["latency"]
    assert memory.objectives["memory"] <= first.objectives["memory"]


def two_branches(memory: int) -> Instance:
    """Two independent tasks, each writing a 10-byte output; one device, so they run in turn.

    With a and b in sequence, the output of the first lives until the makespan: peak 20.
    ``memory`` below 20 makes it infeasible; the memory objective is 20 at any latency.
    """
    return Instance(
        "branches", (Device("cpu", memory, host=True),), (),
        (Task("a", "X", {"cpu": Mode(3)}), Task("b", "X", {"cpu": Mode(4)})),
        (Tensor("ya", 10, "a", (), True), Tensor("yb", 10, "b", (), True)))


def test_memory_objective_and_capacity_by_hand():
    s = solve(two_branches(100), ["memory"])
    assert s.status is Status.OPTIMAL and s.objectives["memory"] == 20
    check(two_branches(100), s)
    assert solve(two_branches(20), ["latency"]).objectives["latency"] == 7
    assert solve(two_branches(19), ["latency"]).status is Status.INFEASIBLE


def offload(capacity: int) -> Instance:
    """x (input, 6 bytes) -> a -> y (6) -> b; the gpu is fast but holds ``capacity`` bytes.

    On the gpu both: copy of x [0, a's end) and y [a's start, b's end) overlap: 12 bytes, latency
    (1 + 3) + 1 + 1 = 6.  With capacity 11 the best is a on cpu (5), y sent (1 + 3 = 4), b on gpu
    (1): 10; or both on cpu: 5 + 5 = 10 — so latency 10 either way.
    """
    return Instance(
        "offload", (Device("cpu", 100, host=True), Device("gpu", capacity)),
        (Link("cpu", "gpu", 1, 2), Link("gpu", "cpu", 1, 2)),
        (Task("a", "Conv", {"cpu": Mode(5), "gpu": Mode(1)}), Task("b", "Conv", {"cpu": Mode(5), "gpu": Mode(1)})),
        (Tensor("x", 6, None, ("a",)), Tensor("y", 6, "a", ("b",), True)))


def test_memory_capacity_changes_the_optimum():
    roomy = solve(offload(12), ["latency"])
    tight = solve(offload(11), ["latency"])
    assert roomy.status is tight.status is Status.OPTIMAL
    assert roomy.objectives["latency"] == 6
    assert tight.objectives["latency"] == 10
    check(offload(11), tight)
    assert validate(offload(11), roomy).violations[0].kind == "capacity"


@pytest.mark.parametrize("seed", range(6))
def test_heft_is_never_better_than_the_optimum(seed):
    inst = random_instance(200 + seed, 6, 3, channels=(1, 2))
    assert heft(inst).objectives["latency"] >= solve(inst, ["latency"]).objectives["latency"]


@pytest.mark.parametrize("seed", range(4))
def test_presolve_probing_is_off_on_heterogeneous_devices_only(seed):
    """Heterogeneous devices solve with CP-SAT's presolve probing off (cpsat.probing_level), still to
    the brute-force optimum; identical processors keep CP-SAT's default; each result records it."""
    inst = random_instance(seed, 5, 2, channels=(1,))
    result = solve(inst, ["latency"], Options(time_limit=30))
    assert result.status is Status.OPTIMAL and result.solver["probing"] == 0
    assert result.objectives["latency"] == brute_force_latency(inst)
    same = build("same", {"a": [3, 3], "b": [2, 2], "c": [4, 4]}, [("a", "b", 1), ("a", "c", 2)])
    result = solve(same, ["latency"], Options(time_limit=30))
    assert result.status is Status.OPTIMAL and result.solver["probing"] == 2
    assert result.objectives["latency"] == brute_force_latency(same) == 7  # a, c on one; b beside


def stg_optima(n_tasks: int, processors: int) -> dict[str, int]:
    with open(DATA / "stg" / "stg_v2_optimal.csv") as fh:
        return {row["graph"]: int(row["optimal"]) for row in csv.DictReader(fh)
                if row["status"] == "optimal" and int(row["n_tasks"]) == n_tasks
                and int(row["processors"]) == processors}


@needs_data
@pytest.mark.parametrize("processors", [2, 4])
@pytest.mark.parametrize("graph", [f"rand{k:04d}" for k in range(10)])
def test_stg_published_optima(graph, processors):
    known = stg_optima(50, processors).get(f"50/{graph}.stg")
    if known is None:
        pytest.skip("open in the published table")
    inst = read_stg(DATA / "stg" / "50" / f"{graph}.stg", processors)
    s = solve(inst, ["latency"], Options(time_limit=60), hint=heft(inst))
    assert s.status is Status.OPTIMAL
    assert s.objectives["latency"] == known


@needs_data
def test_time_limit_gives_feasible_with_bound_and_exit_3(tmp_path):
    # an open STG entry (135-143); with 2 workers the bound does not close in a second
    path = DATA / "stg" / "50" / "rand0117.stg"
    out = tmp_path / "s.json"
    result = CliRunner().invoke(app, ["solve", str(path), "-m", "4", "--workers", "2",
                                      "--time-limit", "1", "-o", str(out)])
    assert result.exit_code == 3, result.stderr
    from cpsched.schedule import load_schedule
    s = load_schedule(out)
    assert s.status is Status.FEASIBLE
    assert 135 <= s.bounds["latency"] < s.objectives["latency"]
    assert "feasible" in result.stderr and "gap" in result.stderr
