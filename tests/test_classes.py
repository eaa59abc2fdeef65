"""Merged classes of interchangeable devices (cpsched.classes.device_classes).

The merged model must lose no schedule and add none: its optimum equals the
brute-force optimum of the unmerged instance, and its schedules (devices
assigned by interval partitioning) pass the validator.
"""

from __future__ import annotations

import random

import pytest
from oracle import brute_force_latency

from cpsched.bounds import usable_devices
from cpsched.classes import device_classes
from cpsched.engines import Options
from cpsched.lexico import solve
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor
from cpsched.schedule import Status
from cpsched.validator import validate


def identical_instance(seed: int, n_tasks: int, k: int, other: bool, size: int = 0) -> Instance:
    """``k`` identical devices ``g*`` (plus a distinct host ``cpu`` when ``other``), a random
    DAG whose tensors all have ``size`` bytes; with a host, some tasks run only there."""
    rng = random.Random(seed)
    gs = [f"g{i}" for i in range(k)]
    devices = ([Device("cpu", 10**9, 1, host=True)] if other else []) + [
        Device(g, 10**9, 2, host=not other and i == 0) for i, g in enumerate(gs)]
    ids = [d.id for d in devices]
    links = tuple(Link(a, b, 1, 1, 1, 1) for a in ids for b in ids if a != b)
    tasks, tensors = [], []
    for i in range(n_tasks):
        dur, energy = rng.randint(1, 9), rng.randint(0, 5)
        modes = {} if other and rng.random() < 0.2 else {g: Mode(dur, energy) for g in gs}
        if other:
            modes["cpu"] = Mode(rng.randint(2, 12), rng.randint(0, 5))
        tasks.append(Task(f"v{i}", "op", modes))
    for i in range(n_tasks):
        succ = sorted({rng.randrange(i + 1, n_tasks) for _ in range(rng.randint(0, 2)) if i + 1 < n_tasks})
        if succ:
            tensors.append(Tensor(f"v{i}.out", size, f"v{i}", tuple(f"v{j}" for j in succ)))
    return Instance(f"identical-{seed}", tuple(devices), links, tuple(tasks), tuple(tensors))


@pytest.mark.parametrize("seed", range(12))
def test_merged_optimum_equals_brute_force(seed):
    inst = identical_instance(seed, 5 + seed % 3, 2 + seed % 2, other=seed % 2 == 0)
    result = solve(inst, ["latency"], Options(time_limit=30))
    assert result.status is Status.OPTIMAL
    assert result.solver["classes"] == [[f"g{i}" for i in range(2 + seed % 2)]]
    assert validate(inst, result).valid
    assert result.objectives["latency"] == brute_force_latency(inst)


@pytest.mark.parametrize("seed", range(6))
def test_merged_and_unmerged_agree_on_latency_then_energy(seed):
    inst = identical_instance(100 + seed, 9, 3, other=True)
    merged = solve(inst, ["latency", "energy"], Options(time_limit=30))
    plain = solve(inst, ["latency", "energy"], Options(time_limit=30, classes=False))
    assert merged.status is plain.status is Status.OPTIMAL
    assert plain.solver["classes"] == []
    assert merged.objectives == plain.objectives
    assert validate(inst, merged).valid


def test_assignment_uses_every_member_when_all_must_run_at_once():
    """Four independent unit-length tasks on four identical devices: latency 1 only if each
    gets its own device, which the interval partitioning must find."""
    devices = tuple(Device(f"p{i}", 10**9, host=i == 0) for i in range(4))
    tasks = tuple(Task(f"t{i}", "op", {d.id: Mode(3, 0) for d in devices}) for i in range(4))
    inst = Instance("wide", devices, (), tasks, ())
    result = solve(inst, ["latency"], Options(time_limit=10))
    assert result.objectives["latency"] == 3
    assert sorted(p.device for p in result.tasks.values()) == ["p0", "p1", "p2", "p3"]
    assert validate(inst, result).valid


def test_classes_only_where_nothing_tells_members_apart():
    moving = identical_instance(1, 6, 3, other=True, size=4)  # tensors cross links: not merged
    usable = usable_devices(moving)
    assert device_classes(moving, usable, set()) == {}
    still = identical_instance(1, 6, 3, other=True)
    usable = usable_devices(still)
    assert device_classes(still, usable, set()) == {"g0": ("g0", "g1", "g2")}
    assert device_classes(still, usable, {"g1"}) == {"g0": ("g0", "g2")}  # memory modelled on g1
    assert device_classes(still, usable, {"g1", "g2"}) == {}


# ----- symmetry breaking where data moves (classes.symmetric_groups) ----------------------------

@pytest.mark.parametrize("seed", range(30))
def test_symmetry_breaking_with_communication_keeps_the_brute_force_optimum(seed):
    k = 2 + seed % 3
    inst = identical_instance(200 + seed, 5 + seed % 2, k, other=seed % 2 == 0, size=1 + seed % 4)
    result = solve(inst, ["latency"], Options(time_limit=30))
    assert result.status is Status.OPTIMAL and validate(inst, result).valid
    members = [f"g{i}" for i in range(k)]
    assert result.solver["classes"] == [] and result.solver["symmetric"] == [members]
    assert result.objectives["latency"] == brute_force_latency(inst)


@pytest.mark.parametrize("seed", range(6))
def test_symmetry_breaking_keeps_lexicographic_optima_and_warm_starts(seed):
    from cpsched.heuristics.heft import heft

    inst = identical_instance(300 + seed, 9, 3, other=True, size=3)
    broken = solve(inst, ["latency", "energy", "memory"], Options(time_limit=30), hint=heft(inst))
    plain = solve(inst, ["latency", "energy", "memory"], Options(time_limit=30, symmetry=False))
    assert broken.status is plain.status is Status.OPTIMAL
    assert "symmetric" not in plain.solver and broken.solver["symmetric"] == [["g0", "g1", "g2"]]
    assert broken.objectives == plain.objectives and validate(inst, broken).valid


def test_symmetric_groups_only_where_a_relabelling_maps_the_instance_onto_itself():
    from cpsched.classes import canonical, symmetric_groups
    from cpsched.schedule import Placement

    moving = identical_instance(1, 6, 3, other=True, size=4)
    usable = usable_devices(moving)
    assert symmetric_groups(moving, usable) == [("g0", "g1", "g2")]
    assert symmetric_groups(moving, usable, {"g0": ("g0", "g1", "g2")}) == []  # merged already
    slow = Instance(moving.name, moving.devices, tuple(
        Link(x.src, x.dst, x.latency, 2 if "g2" in (x.src, x.dst) else x.bandwidth, x.energy_per_byte, x.channels)
        for x in moving.links), moving.tasks, moving.tensors)
    assert symmetric_groups(slow, usable_devices(slow)) == [("g0", "g1")]  # g2's links differ
    hosted = identical_instance(1, 6, 3, other=False, size=4)  # g0 is the host, no graph input
    assert symmetric_groups(hosted, usable_devices(hosted)) == [("g0", "g1", "g2")]
    first = hosted.topological_order[0]
    tasks = {v: Placement("g2" if v == first else "g1", 0) for v in hosted.topological_order}
    assert canonical(hosted, tasks, [("g0", "g1", "g2")]) == {"g2": "g0", "g0": "g2"}


# ----- pools of alike devices (CpSatModel._pools) --------------------------------------------

def fork(k: int, far: bool = False, size: int = 1) -> Instance:
    """A root on the host ``g0`` feeding ``k`` children of 10 units each, one tensor of ``size``
    apiece, on ``k`` identical devices: only all children at once, one per device, end by 13
    (14 when ``far``: the links to and from ``g2`` take a unit longer)."""
    gs = [f"g{i}" for i in range(k)]
    devices = tuple(Device(g, 10**9, host=i == 0) for i, g in enumerate(gs))
    links = tuple(Link(a, b, 2 if far and "g2" in (a, b) else 1, 1) for a in gs for b in gs if a != b)
    tasks = (Task("r", "op", {g: Mode(1) for g in gs}),
             *(Task(f"c{i}", "op", {g: Mode(10) for g in gs}) for i in range(k)))
    tensors = tuple(Tensor(f"t{i}", size, "r", (f"c{i}",)) for i in range(k))
    return Instance(f"fork-{k}", devices, links, tasks, tensors)


def test_alike_devices_pool_their_runs_at_their_number():
    inst = fork(3)
    pooled = solve(inst, ["latency"], Options(time_limit=30))
    # a pool of two would leave one child for after another: 21 at least
    assert pooled.status is Status.OPTIMAL and pooled.objectives["latency"] == 13 == brute_force_latency(inst)
    assert pooled.solver["pools"] == [["g0", "g1", "g2"]] and validate(inst, pooled).valid
    plain = solve(inst, ["latency"], Options(time_limit=30, redundant=False))
    assert "pools" not in plain.solver and plain.objectives["latency"] == 13
    # links tell devices apart for the symmetry breaking, not for the pool
    far = fork(3, far=True)
    pooled = solve(far, ["latency"], Options(time_limit=30))
    assert pooled.solver["pools"] == [["g0", "g1", "g2"]] and pooled.solver.get("symmetric") != [["g0", "g1", "g2"]]
    assert pooled.objectives["latency"] == 14 == brute_force_latency(far) and validate(far, pooled).valid


def test_no_pool_where_moving_the_data_outweighs_the_work():
    # each child's tensor takes 61 units to move, 183 in all, over five times the 31 units of work:
    # no pool, and the optimum runs everything on the host
    heavy = fork(3, size=60)
    best = solve(heavy, ["latency"], Options(time_limit=30))
    assert "pools" not in best.solver
    assert best.status is Status.OPTIMAL and best.objectives["latency"] == 31 == brute_force_latency(heavy)
    # at 50 bytes (153 units against 155) the pool is built, the optimum the same
    light = fork(3, size=50)
    best = solve(light, ["latency"], Options(time_limit=30))
    assert best.solver["pools"] == [["g0", "g1", "g2"]] and best.objectives["latency"] == 31


@pytest.mark.parametrize("seed", range(10))
def test_pools_beside_other_devices_and_named_modes_keep_the_optima(seed):
    # tasks that may also run on the host, or only there: the pool's runs are optional; two speed
    # levels per device: one run per level
    from cpsched.generate import SHAPES, dvfs_instance

    inst = identical_instance(400 + seed, 6, 2 + seed % 2, other=True, size=2)
    pooled = solve(inst, ["latency"], Options(time_limit=30))
    assert pooled.solver["pools"] == [[f"g{i}" for i in range(2 + seed % 2)]]
    assert pooled.objectives["latency"] == brute_force_latency(inst)
    levels = dvfs_instance(seed, 5, SHAPES[seed % len(SHAPES)], 1.0, 2, 3)
    a = solve(levels, ["latency", "energy"], Options(time_limit=30))
    b = solve(levels, ["latency", "energy"], Options(time_limit=30, redundant=False))
    assert "pools" in a.solver and "pools" not in b.solver
    assert a.status is b.status is Status.OPTIMAL  # memory is no objective here: its ties may differ
    assert (a.objectives["latency"], a.objectives["energy"]) == (b.objectives["latency"], b.objectives["energy"])
