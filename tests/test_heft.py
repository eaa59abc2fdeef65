"""HEFT: the published makespan on the canonical graph, validity on random instances, failures."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from cpsched.errors import NoSchedule
from cpsched.heuristics.heft import heft, priority_order
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor
from cpsched.schedule import Status
from cpsched.validate import objectives, validate

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BIG = 10**12


def _rows(path: Path) -> list[list[str]]:
    with open(path, newline="") as fh:
        return [row for row in csv.reader(fh) if row]


def canonical_instance() -> Instance:
    """Topcuoglu et al.'s sample DAG in the classical model: contention-free links, bandwidth 1, latency 0."""
    folder = DATA / "heft_canonical"
    if not folder.is_dir():
        pytest.skip(f"{folder} is missing")
    exe = _rows(folder / "canonicalgraph_task_exe_time.csv")
    procs = exe[0][1:]
    tasks = tuple(
        Task(row[0], "op", {p: Mode(int(w)) for p, w in zip(procs, row[1:])}) for row in exe[1:]
    )
    conn = _rows(folder / "canonicalgraph_task_connectivity.csv")
    tensors = tuple(
        Tensor(f"T_{i}->T_{j}", int(size), f"T_{i}", (f"T_{j}",))
        for i, row in enumerate(conn[1:])
        for j, size in enumerate(row[1:])
        if int(size) > 0
    )
    devices = tuple(Device(p, BIG, 0, host=(p == procs[0])) for p in procs)
    links = tuple(Link(a, b, 0, 1, 0, channels=0) for a in procs for b in procs if a != b)
    return Instance("heft-canonical", devices, links, tasks, tensors)


def test_canonical_graph_makespan_is_the_published_80():
    inst = canonical_instance()
    # The paper's order: n1, n3, n4, n2, n5, n6, n9, n7, n8, n10 (n3 and n4 tie at rank 80).
    assert priority_order(inst) == [f"T_{i}" for i in (0, 2, 3, 1, 4, 5, 8, 6, 7, 9)]
    schedule = heft(inst)
    assert validate(inst, schedule).valid
    assert schedule.objectives["latency"] == 80
    assert schedule.status is Status.FEASIBLE and schedule.solver == {"engine": "heft"}


def random_instance(seed: int) -> Instance:
    """8-25 tasks on 2-3 devices of different speeds; every task runs on the host, some elsewhere too."""
    rng = random.Random(seed)
    ids = [f"d{k}" for k in range(rng.randint(2, 3))]
    speed = {d: rng.randint(1, 4) for d in ids}
    devices = tuple(Device(d, BIG, rng.randint(0, 3), host=(d == ids[0])) for d in ids)
    links = tuple(
        Link(a, b, rng.randint(0, 3), rng.randint(1, 8), rng.randint(0, 2), channels=rng.choice((0, 1, 2)))
        for a in ids for b in ids if a != b
    )
    n = rng.randint(8, 25)
    tasks = []
    for i in range(n):
        work = rng.randint(1, 20)
        on = [ids[0]] + [d for d in ids[1:] if rng.random() < 0.7]
        modes = {d: Mode(max(1, work * speed[d] // 2), rng.randint(0, 50)) for d in on}
        tasks.append(Task(f"t{i}", "op", modes, rng.randint(0, 100), rng.randint(0, 50)))
    tensors = []
    for k in range(rng.randint(1, 3)):  # graph inputs
        consumers = tuple(f"t{i}" for i in range(n) if rng.random() < 0.2) or ("t0",)
        tensors.append(Tensor(f"in{k}", rng.choice((0, rng.randint(1, 64))), None, consumers))
    for i in range(n):  # each task's output, read by a few later tasks (or a graph output)
        consumers = tuple(f"t{j}" for j in range(i + 1, n) if rng.random() < 0.25)
        size = rng.choice((0, rng.randint(1, 64), rng.randint(1, 64)))
        tensors.append(Tensor(f"out{i}", size, f"t{i}", consumers, output=not consumers or rng.random() < 0.1))
    return Instance(f"random-{seed}", devices, links, tuple(tasks), tuple(tensors))


@pytest.mark.parametrize("seed", range(40))
def test_random_schedules_are_valid_and_claim_the_recomputed_objectives(seed):
    inst = random_instance(seed)
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


def test_tensor_over_memory_raises_naming_the_device():
    inst = _one_task([Device("cpu", 10, host=True)], [], {"cpu": Mode(3)}, input_size=100)
    with pytest.raises(NoSchedule, match="needs 100 bytes on device 'cpu', over its memory 10"):
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
