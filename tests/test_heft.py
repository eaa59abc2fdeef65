"""HEFT: validity on random instances, failures (the canonical graph's published 80: test_taskgraph)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from cpsched.errors import NoSchedule
from cpsched.generate import random_instance
from cpsched.heuristics.heft import heft, priority_order
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor
from cpsched.schedule import Status
from cpsched.validator import objectives, validate

BIG = 10**12


@pytest.mark.parametrize("seed", range(40))
def test_random_schedules_are_valid_and_claim_the_recomputed_objectives(seed):
    inst = random_instance(seed, 8 + seed % 18, 2 + seed % 2, channels=(0, 1, 2))
    schedule = heft(inst)
    report = validate(inst, schedule)
    assert report.valid, report.violations
    assert dict(schedule.objectives) == objectives(inst, schedule)[0]
    assert set(schedule.tasks) == {t.id for t in inst.tasks}


def _one_task(devices, links, modes, weights=0, input_size=8) -> Instance:
    return Instance(
        "small", tuple(devices), tuple(links),
        (Task("conv", "Conv", modes, weights=weights),),
        (Tensor("x", input_size, None, ("conv",)),),
    )


def test_task_whose_only_device_is_unreachable_raises_naming_it():
    inst = _one_task(
        [Device("cpu", BIG, host=True), Device("npu", BIG)],
        [Link("npu", "cpu", 0, 1)],  # nothing goes from the host to the npu
        {"npu": Mode(3)},
    )
    with pytest.raises(NoSchedule, match="'conv'.*no link brings tensor 'x' from the host"):
        heft(inst)


def test_weights_over_every_memory_raise():
    inst = _one_task(
        [Device("cpu", 100, host=True), Device("gpu", 200)],
        [Link("cpu", "gpu", 0, 1)],
        {"cpu": Mode(3), "gpu": Mode(1)},
        weights=500,
    )
    with pytest.raises(NoSchedule, match="'conv'.*over its memory"):
        heft(inst)


def two_offloads(gpu_only_b: bool) -> Instance:
    """a and b each read a 6-byte input from the host and write a 6-byte output.

    Either fits the 17-byte gpu alone (12 bytes), but both there need 18 (both outputs live to
    the end, plus the input copy of whichever runs second), which HEFT only finds out at the end.
    """
    fast = {"cpu": Mode(50), "gpu": Mode(1)}
    return Instance(
        "offloads", (Device("cpu", BIG, host=True), Device("gpu", 17)),
        (Link("cpu", "gpu", 1, 6),),
        (Task("a", "op", fast), Task("b", "op", {"gpu": Mode(1)} if gpu_only_b else fast)),
        (Tensor("xa", 6, None, ("a",)), Tensor("xb", 6, None, ("b",)),
         Tensor("ya", 6, "a", (), True), Tensor("yb", 6, "b", (), True)),
    )


def test_a_device_over_memory_is_left_out_and_heft_reruns():
    inst = two_offloads(gpu_only_b=False)
    schedule = heft(inst)
    assert validate(inst, schedule).valid
    assert schedule.solver["left_out"] == ["gpu"]
    assert {p.device for p in schedule.tasks.values()} == {"cpu"}


def test_memory_overflow_with_nowhere_else_to_go_raises_naming_the_device():
    with pytest.raises(NoSchedule, match="needs 18 bytes on device 'gpu', over its memory 17.*'b'"):
        heft(two_offloads(gpu_only_b=True))


def test_a_task_that_fits_nowhere_raises():
    inst = _one_task([Device("cpu", 10, host=True)], [], {"cpu": Mode(3)}, input_size=100)
    with pytest.raises(NoSchedule, match="'conv'.*needs 100 bytes while it runs"):
        heft(inst)


def test_a_transfer_is_shared_by_the_consumers_on_one_device():
    inst = Instance(
        "shared", (Device("cpu", BIG, host=True), Device("gpu", BIG)),
        (Link("cpu", "gpu", 1, 1),),
        (Task("a", "op", {"cpu": Mode(50), "gpu": Mode(1)}), Task("b", "op", {"cpu": Mode(50), "gpu": Mode(1)})),
        (Tensor("x", 4, None, ("a", "b")),),
    )
    schedule = heft(inst)
    assert {p.device for p in schedule.tasks.values()} == {"gpu"}
    assert len(schedule.transfers) == 1 and validate(inst, schedule).valid
