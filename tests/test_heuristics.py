"""Baselines (host, fastest) and NSGA-II: validity, placements, reproducibility, never beating an exact front."""

from __future__ import annotations

import pytest

from cpsched.bounds import Unreachable, usable_devices
from cpsched.errors import NoSchedule
from cpsched.generate import random_instance
from cpsched.heuristics import evict
from cpsched.heuristics.baselines import as_front, fastest, fastest_devices, host
from cpsched.heuristics.heft import heft, list_schedule, priority_order
from cpsched.heuristics.nsga2 import nsga2
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor
from cpsched.pareto import sweep
from cpsched.schedule import Status, dominates
from cpsched.validator import objectives, validate

BIG = 10**12
SMALL = {"population": 20, "generations": 15}


def check(inst, schedule):
    report = validate(inst, schedule)
    assert report.valid, report.violations
    assert dict(schedule.objectives) == objectives(inst, schedule)[0]
    assert set(schedule.tasks) == {t.id for t in inst.tasks}
    assert schedule.status is Status.FEASIBLE and schedule.bounds["latency"] <= schedule.objectives["latency"]


@pytest.mark.parametrize("seed", range(12))
def test_host_and_fastest_are_valid_and_place_as_promised(seed):
    inst = random_instance(seed, 6 + (seed * 7) % 20, 2 + seed % 2, channels=(0, 1, 2))
    usable = usable_devices(inst)
    h = host(inst)
    check(inst, h)
    assert {p.device for p in h.tasks.values()} == {inst.host.id} and h.transfers == ()
    assert h.solver == {"engine": "host"}
    f = fastest(inst)
    check(inst, f)
    assert f.solver == {"engine": "fastest"}
    for task in inst.tasks:
        best = min(task.modes[d].duration for d in usable[task.id])
        assert f.tasks[task.id].device in usable[task.id]
        assert task.modes[f.tasks[task.id].device].duration == best


@pytest.mark.parametrize("seed", range(4))
def test_nsga2_points_are_valid_non_dominated_and_reproducible(seed):
    inst = random_instance(100 + seed, 6 + seed * 6, 3, channels=(0, 1, 2))
    objs = ("latency", "memory") if seed % 2 == 0 else ("latency", "energy")
    front = nsga2(inst, objs, seed=seed, **SMALL)
    assert not front.complete and front.points and front.objectives == objs
    assert front.meta["method"] == "nsga2" and front.meta["seed"] == seed and front.meta["evaluations"] > 0
    for p in front.points:
        check(inst, p.schedule)
        assert p.status is Status.FEASIBLE and p.values == tuple(p.schedule.objectives[n] for n in objs)
    values = [p.values for p in front.points]
    assert values == sorted(set(values))
    assert not any(dominates(a, b) for a in values for b in values)
    again = nsga2(inst, objs, seed=seed, **SMALL)
    assert [p.values for p in again.points] == values
    assert [dict(p.schedule.tasks) for p in again.points] == [dict(p.schedule.tasks) for p in front.points]


def test_nsga2_is_at_least_as_good_as_its_seeds():
    inst = random_instance(7, 15, 3, channels=(1,))
    front = nsga2(inst, ("latency", "memory"), seed=3, **SMALL)
    for s in (heft(inst), host(inst), fastest(inst)):
        vec = (s.objectives["latency"], s.objectives["memory"])
        assert any(p.values == vec or dominates(p.values, vec) for p in front.points)


@pytest.mark.parametrize("seed", range(12))
def test_nsga2_never_dominates_a_complete_exact_front(seed):
    inst = random_instance(700 + seed, 5 + seed % 3, 2 + seed % 2, channels=(0, 1, 2))
    objs = ("latency", "memory") if seed < 6 else ("latency", "energy")
    exact = sweep(inst, objs, "latency")
    assert exact.complete
    heuristic = nsga2(inst, objs, seed=seed, **SMALL)
    for p in heuristic.points:
        assert not any(dominates(p.values, q.values) for q in exact.points), (p.values, exact.points)
        # and each heuristic point is matched or dominated by an exact one
        assert any(q.values == p.values or dominates(q.values, p.values) for q in exact.points)


def test_memory_binding_nsga2_respects_capacity_where_host_and_fastest_fail():
    inst = random_instance(1, 10, 3, memory=18, channels=(1,))
    with pytest.raises(NoSchedule, match="on device 'd2', over its memory 18"):
        fastest(inst)
    with pytest.raises(NoSchedule, match="on device 'd0', over its memory 18"):
        host(inst)
    front = nsga2(inst, ("latency", "memory"), seed=0, **SMALL)
    assert front.points
    for p in front.points:
        check(inst, p.schedule)
        assert all(v <= 18 for v in validate(inst, p.schedule).peaks.values())


def two_offloads() -> Instance:
    """a and b each fit the 17-byte gpu alone but not together (see tests/test_heft.py)."""
    fast = {"cpu": Mode(50), "gpu": Mode(1)}
    return Instance(
        "offloads", (Device("cpu", BIG, host=True), Device("gpu", 17)),
        (Link("cpu", "gpu", 1, 6),),
        (Task("a", "op", fast), Task("b", "op", fast)),
        (Tensor("xa", 6, None, ("a",)), Tensor("xb", 6, None, ("b",)),
         Tensor("ya", 6, "a", (), True), Tensor("yb", 6, "b", (), True)),
    )


def test_tiny_placement_space_is_decoded_exhaustively_within_capacity():
    inst = two_offloads()
    with pytest.raises(NoSchedule, match="needs 18 bytes on device 'gpu'"):
        fastest(inst)
    front = nsga2(inst, ("latency", "memory"), seed=0, **SMALL)
    assert front.meta["exhaustive"] and front.meta["placements"] == 4
    for p in front.points:
        check(inst, p.schedule)
        assert sorted(x.device for x in p.schedule.tasks.values()) != ["gpu", "gpu"]


def test_host_raises_naming_a_task_the_host_cannot_run():
    inst = Instance(
        "npu-only", (Device("cpu", BIG, host=True), Device("npu", BIG)),
        (Link("cpu", "npu", 0, 1), Link("npu", "cpu", 0, 1)),
        (Task("a", "op", {"cpu": Mode(3), "npu": Mode(1)}), Task("b", "op", {"npu": Mode(2)})),
        (Tensor("x", 2, None, ("a",)), Tensor("y", 2, "a", ("b",))),
    )
    with pytest.raises(NoSchedule, match="task 'b' does not run on the host 'cpu'"):
        host(inst)
    check(inst, fastest(inst))


def test_fastest_raises_when_its_devices_have_no_link_between_them():
    # a is fastest on npu, b on gpu, and nothing goes npu -> gpu
    both = {"cpu": Mode(9), "npu": Mode(1), "gpu": Mode(2)}
    inst = Instance(
        "no-link", (Device("cpu", BIG, host=True), Device("npu", BIG), Device("gpu", BIG)),
        (Link("cpu", "npu", 0, 1), Link("cpu", "gpu", 0, 1), Link("npu", "cpu", 0, 1), Link("gpu", "cpu", 0, 1)),
        (Task("a", "op", both), Task("b", "op", {"cpu": Mode(9), "npu": Mode(3), "gpu": Mode(1)})),
        (Tensor("x", 2, None, ("a",)), Tensor("y", 2, "a", ("b",))),
    )
    with pytest.raises(NoSchedule, match="task 'b' cannot run on 'gpu': no link npu->gpu"):
        fastest(inst)
    front = nsga2(inst, ("latency", "memory"), seed=0, **SMALL)  # the unreachable pair is only penalised
    for p in front.points:
        check(inst, p.schedule)


def test_list_schedule_follows_the_given_devices_and_as_front_wraps_one_schedule():
    inst = random_instance(5, 9, 3, channels=(0, 1))
    usable = usable_devices(inst)
    devices = {t: devs[-1] for t, devs in usable.items()}
    s = list_schedule(inst, devices, priority_order(inst))
    assert {t: p.device for t, p in s.tasks.items()} == devices
    assert not [v for v in validate(inst, s).violations if v.kind != "capacity"]
    h = heft(inst)
    f = as_front(inst, h, ("latency", "energy"))
    assert not f.complete and [p.values for p in f.points] == [(h.objectives["latency"], h.objectives["energy"])]


def test_nsga2_rejects_bad_arguments():
    inst = random_instance(0, 5, 2)
    with pytest.raises(ValueError, match="objectives"):
        nsga2(inst, ("latency", "speed"))
    with pytest.raises(ValueError, match="population"):
        nsga2(inst, population=1)


@pytest.mark.parametrize("seed", range(6))
def test_frugal_is_valid_and_never_above_everything_on_the_host_in_memory(seed):
    from cpsched.heuristics.baselines import frugal

    inst = random_instance(seed, 8, 3)
    s = frugal(inst)
    assert validate(inst, s).valid and s.solver["engine"] == "frugal"
    assert s.objectives["memory"] <= host(inst).objectives["memory"]


def test_fit_moves_only_weighted_tasks_and_returns_a_valid_schedule():
    """Everything on its fastest device overfills small memories; ``evict.fit`` either gives up or
    returns a schedule that passes the validator, having moved only tasks that hold weights, and
    it makes at least some over-full schedules fit."""
    fitted = 0
    for seed in range(40):
        inst = random_instance(900 + seed, 9, 3, memory=20 + seed % 6)
        try:
            start = list_schedule(inst, fastest_devices(inst))
        except Unreachable:  # some task fits on no device
            continue
        if validate(inst, start, check_claims=False).valid:
            continue
        result = evict.fit(inst, start)
        if result is None:
            continue
        report = validate(inst, result)
        assert report.valid, report.violations
        assert dict(result.objectives) == report.objectives
        moved = [v for v, p in result.tasks.items() if p.device != start.tasks[v].device]
        assert moved and all(inst.task(v).weights > 0 for v in moved)
        fitted += 1
    assert fitted >= 10  # 17 of the 32 over-full ones
