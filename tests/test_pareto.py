"""Exact fronts against brute force; validity, non-dominance, resume, CLI, cache and select."""

import json

import pytest
from oracle_front import brute_front_latency_energy, brute_front_latency_memory, memory_instance
from typer.testing import CliRunner

from cpsched.cli import app
from cpsched.engines import Options
from cpsched.generate import random_instance
from cpsched.instance import save_instance
from cpsched.pareto import Budget, sweep
from cpsched.schedule import Status, dominates, load_front
from cpsched.validator import validate


def check_front(inst, front):
    """Every schedule valid with the values it claims; no point dominates another."""
    for p in front.points:
        report = validate(inst, p.schedule)
        assert report.valid, report.violations
        assert p.values == tuple(report.objectives[n] for n in front.objectives)
    for a in front.points:
        for b in front.points:
            assert not dominates(a.values, b.values)
    assert len({p.values for p in front.points}) == len(front.points)


@pytest.mark.parametrize("seed", range(26))
def test_latency_energy_front_equals_brute_force(seed):
    inst = random_instance(300 + seed, 4 + seed % 3, 2 + seed % 2, channels=(0, 1, 2))
    front = sweep(inst, ("latency", "energy"), "latency")
    assert front.complete
    check_front(inst, front)
    assert [p.values for p in front.points] == [tuple(v) for v in brute_front_latency_energy(inst)]


@pytest.mark.parametrize("seed", range(10))
def test_latency_memory_front_equals_brute_force_over_start_times(seed):
    inst = memory_instance(seed, 3 + seed % 2)
    front = sweep(inst, ("latency", "memory"), "latency")
    assert front.complete
    check_front(inst, front)
    assert [p.values for p in front.points] == [tuple(v) for v in brute_front_latency_memory(inst)]


@pytest.mark.parametrize("seed", range(4))
def test_both_epsilon_directions_give_the_same_front(seed):
    inst = random_instance(400 + seed, 6, 3, channels=(1,))
    by_latency = sweep(inst, ("latency", "memory"), "latency")
    by_memory = sweep(inst, ("latency", "memory"), "memory")
    assert by_latency.complete and by_memory.complete
    assert [p.values for p in by_latency.points] == [p.values for p in by_memory.points]


@pytest.mark.parametrize("seed", range(3))
def test_three_objective_front_projects_onto_the_two_objective_fronts(seed):
    inst = random_instance(500 + seed, 5, 3, channels=(1,))
    front3 = sweep(inst, ("latency", "energy", "memory"), "latency")
    assert front3.complete
    check_front(inst, front3)
    # every (latency, energy) non-dominated point is the projection of some 3-D point
    pairs = {(p.values[0], p.values[1]) for p in front3.points}
    for p in sweep(inst, ("latency", "energy"), "latency").points:
        assert p.values in pairs
    # and no feasible schedule found by any 2-D sweep dominates a 3-D point
    two = sweep(inst, ("latency", "memory"), "latency")
    for p in two.points:
        vec = (p.values[0], p.schedule.objectives["energy"], p.values[1])
        assert not any(dominates(vec, q.values) for q in front3.points)


def interrupt_after(n):
    calls = []

    def progress(line):
        calls.append(line)
        if len(calls) == n:
            raise KeyboardInterrupt
    return progress


@pytest.mark.parametrize("objectives", [("latency", "memory"), ("latency", "energy", "memory")])
def test_an_interrupted_sweep_resumes_to_the_same_complete_front(objectives):
    inst = random_instance(7, 6, 3, channels=(1,))
    whole = sweep(inst, objectives, "latency")
    assert whole.complete and whole.gap == 0 and set(whole.lower) == {p.values for p in whole.points}
    for k in range(1, whole.meta["solves"]):
        part = sweep(inst, objectives, "latency", progress=interrupt_after(k))
        if part.complete:  # CP-SAT's threads met other points: this sweep needed only k solves
            assert [p.values for p in part.points] == [p.values for p in whole.points]
            continue
        assert part.meta["stopped"] == "interrupted" and part.gap > 0
        resumed = sweep(inst, objectives, "latency", resume=part)
        assert resumed.complete and resumed.gap == 0
        assert [p.values for p in resumed.points] == [p.values for p in whole.points]


def test_a_spent_budget_gives_an_incomplete_front():
    inst = random_instance(8, 6, 3, channels=(1,))
    front = sweep(inst, ("latency", "memory"), "latency", budget=Budget(time_limit=1e-9))
    assert not front.complete and front.meta["stopped"] == "time limit"


def test_unproven_points_are_feasible_with_bounds_and_the_front_incomplete():
    from cpsched.io.stg import read_stg
    from test_cpsat import DATA
    if not DATA.is_dir():
        pytest.skip("shared/data not present")
    inst = read_stg(DATA / "stg" / "50" / "rand0117.stg", 4)  # open entry: not proven in 0.5 s, 2 workers
    front = sweep(inst, ("latency", "energy"), "latency", Options(workers=2), Budget(point_limit=0.5))
    assert not front.complete
    assert any(p.status is Status.FEASIBLE and p.bounds for p in front.points)


runner = CliRunner()


@pytest.fixture
def instance_file(tmp_path, monkeypatch):
    monkeypatch.setenv("CPSCHED_CACHE_DIR", str(tmp_path / "cache"))
    inst = random_instance(9, 6, 3, channels=(1,))
    path = tmp_path / "inst.json"
    save_instance(inst, path)
    return inst, path


def test_cli_front_files_cache_and_select(instance_file, tmp_path):
    inst, path = instance_file
    out = tmp_path / "front.json"
    result = runner.invoke(app, ["solve", str(path), "--epsilon", "latency", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    front = load_front(out)
    assert front.complete and front.objectives == ("latency", "memory")
    text = (tmp_path / "front.txt").read_text().splitlines()
    assert [tuple(map(int, line.split())) for line in text] == [p.values for p in front.points]
    assert "complete" in result.stderr and "solve 1" in result.stderr
    data = json.loads(out.read_text())
    assert data["ideal"] == front.ideal and data["nadir"] == front.nadir

    again = runner.invoke(app, ["solve", str(path), "--epsilon", "latency", "-o", str(out)])
    assert again.exit_code == 0 and "cached" in again.stderr and "solve 1" not in again.stderr
    for entry in (tmp_path / "cache").iterdir():
        entry.write_text("{corrupt")
    rewritten = runner.invoke(app, ["solve", str(path), "--epsilon", "latency", "-o", str(out)])
    assert rewritten.exit_code == 0 and "cached" not in rewritten.stderr
    assert all(json.loads(e.read_text()) for e in (tmp_path / "cache").iterdir())
    nocache = runner.invoke(app, ["solve", str(path), "--epsilon", "latency", "--no-cache"])
    assert "cached" not in nocache.stderr

    # select: the lowest-latency point within a memory limit
    limit = sorted(p.values[1] for p in front.points)[len(front.points) // 2]
    sel = tmp_path / "sel.json"
    result = runner.invoke(app, ["select", str(out), "--max-memory", str(limit), "-o", str(sel)])
    assert result.exit_code == 0, result.stderr
    chosen = json.loads(sel.read_text())
    best = min(p.values[0] for p in front.points if p.values[1] <= limit)
    assert chosen["objectives"]["latency"] == best and chosen["objectives"]["memory"] <= limit
    none = runner.invoke(app, ["select", str(out), "--max-memory", str(front.ideal[1] - 1), "--max-latency", "1s"])
    assert none.exit_code == 2 and "--max-memory" in none.stderr and len(none.stderr.strip().splitlines()) == 1


def test_cli_interrupted_then_resumed(instance_file, tmp_path):
    inst, path = instance_file
    out = tmp_path / "front.json"
    result = runner.invoke(app, ["solve", str(path), "--epsilon", "latency", "--objectives",
                                 "latency,energy,memory", "--time-limit", "0.000001", "-o", str(out)])
    assert result.exit_code == 3 and not load_front(out).complete
    result = runner.invoke(app, ["solve", str(path), "--epsilon", "latency", "--objectives",
                                 "latency,energy,memory", "--resume", str(out), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    front = load_front(out)
    assert front.complete
    check_front(inst, front)
    wrong = runner.invoke(app, ["solve", str(path), "--epsilon", "memory", "--resume", str(out)])
    assert wrong.exit_code == 2


def test_cli_front_usage_errors(instance_file):
    _, path = instance_file
    for args in (["--epsilon", "energy"], ["--epsilon", "latency", "--objectives", "latency"],
                 ["--resume", "x.json"], ["--epsilon", "latency", "--objectives", "latency,speed"]):
        assert runner.invoke(app, ["solve", str(path), *args]).exit_code == 2


@pytest.mark.parametrize("seed", [702, 703, 707, 709])
def test_statements_proven_before_a_sweep_start_its_lower_set_and_leave_its_front(seed):
    """``proofs`` (statements in ``solver.proofs``' format) enter the lower set before any
    sub-solve: with one true statement per front point past the first (within its latency,
    at least its energy) and a statement on another objective, a sweep stopped at once has
    their corners in its lower set (and none from the other), and the full sweep is the same
    complete front as without them."""
    inst = random_instance(seed, 6, 2)
    exact = sweep(inst, ("latency", "energy"))
    assert exact.complete and len(exact.points) >= 2
    proofs = [{"given": {"latency": p.values[0]}, "objective": "energy", "at_least": p.values[1]}
              for p in exact.points[1:]] + [{"given": {"memory": 1}, "objective": "energy", "at_least": 10**12}]
    stopped = sweep(inst, ("latency", "energy"), budget=Budget(1e-9), proofs=proofs)
    assert stopped.meta["solves"] == 0
    for p in exact.points[1:]:
        assert any(lo[1] == p.values[1] for lo in stopped.lower)
    assert all(lo[1] < 10**12 for lo in stopped.lower)
    given = sweep(inst, ("latency", "energy"), proofs=proofs)
    assert given.complete and [p.values for p in given.points] == [p.values for p in exact.points]
