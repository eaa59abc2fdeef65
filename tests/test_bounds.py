"""The latency relaxation bound (cpsched.bounds.latency_lower_bound) against brute force.

Besides the critical path it spreads the total work over the devices together
with the time each device must stand idle before its first task and after its
last one (communication it cannot avoid).  It must never exceed the optimum:
on random heterogeneous instances, and on fork and join graphs on identical
processors with communication, where the idle time is what it adds.  The
series bound (cpsched.bounds.series_lower_bound) joins both over the segments
between cut tasks; it too never exceeds the optimum, on chains of diamonds on
identical and on heterogeneous processors, and its relabelling of identical
processors changes no value.  Energetic reasoning raises the bound on trees of
identical processors (brute force on in- and out-trees).
"""

from __future__ import annotations

import random

import pytest
from oracle import brute_force_latency

import cpsched
from cpsched import bounds, cuts
from cpsched.bounds import latency_lower_bound, series_lower_bound, usable_devices
from cpsched.generate import random_instance
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor


def bound(instance: Instance) -> int:
    return latency_lower_bound(instance, usable_devices(instance))


def star(seed: int, leaves: int, processors: int, fork: bool) -> Instance:
    """A fork (one task feeding ``leaves`` others) or a join (``leaves`` tasks feeding one) on
    identical processors, a communication cost on every edge paid only across processors."""
    rng = random.Random(seed)
    devices = tuple(Device(f"p{k}", 10**9, host=k == 0) for k in range(processors))
    links = tuple(Link(a.id, b.id, 0, 1, 0, 0) for a in devices for b in devices if a != b)
    ids = ["hub"] + [f"t{k}" for k in range(leaves)]
    tasks = tuple(Task(v, "X", {d.id: Mode(rng.randint(1, 9)) for d in devices}) for v in ids)
    tensors = tuple(Tensor(f"e{k}", rng.randint(1, 6), "hub" if fork else leaf, (leaf,) if fork else ("hub",))
                    for k, leaf in enumerate(ids[1:]))
    return Instance(f"{'fork' if fork else 'join'}-{seed}", devices, links, tasks, tensors)


@pytest.mark.parametrize("seed", range(40))
def test_the_bound_never_exceeds_the_brute_force_optimum(seed):
    inst = random_instance(1300 + seed, 5 + seed % 2, 2 + seed % 2, channels=(0, 1))
    assert bound(inst) <= brute_force_latency(inst)


@pytest.mark.parametrize("seed", range(20))
def test_the_bound_never_exceeds_the_optimum_of_forks_and_joins_on_identical_processors(seed):
    inst = star(seed, 4 + seed % 2, 2 + seed % 2, fork=seed % 2 == 0)
    assert bound(inst) <= brute_force_latency(inst)


def test_a_fork_needs_the_idle_time_of_the_processors_waiting_for_its_source():
    """Source 4, three children 3 each, each edge 2 across processors, two processors: the
    critical path (7) and the work spread (13 / 2) give 7; the second processor idles until
    6 at least, so 2C >= 13 + 6 and C >= 10, the optimum (two children after the source,
    one on the other processor from 6 to 9)."""
    devices = (Device("p0", 10**9, host=True), Device("p1", 10**9))
    links = (Link("p0", "p1", 0, 1, 0, 0), Link("p1", "p0", 0, 1, 0, 0))
    tasks = (Task("s", "X", {"p0": Mode(4), "p1": Mode(4)}),
             *(Task(f"c{k}", "X", {"p0": Mode(3), "p1": Mode(3)}) for k in range(3)))
    tensors = tuple(Tensor(f"e{k}", 2, "s", (f"c{k}",)) for k in range(3))
    inst = Instance("fork", devices, links, tasks, tensors)
    assert bound(inst) == brute_force_latency(inst) == 10


def test_a_processor_left_unused_idles_the_makespan_and_no_more():
    """A chain a (3) -> b (2) whose edge costs 10 across processors runs on one processor in 5;
    the other idles 5, not the 25 its head and tail would add up to: the bound is 5."""
    devices = (Device("p0", 10**9, host=True), Device("p1", 10**9))
    links = (Link("p0", "p1", 0, 1, 0, 0), Link("p1", "p0", 0, 1, 0, 0))
    tasks = (Task("a", "X", {"p0": Mode(3), "p1": Mode(3)}), Task("b", "X", {"p0": Mode(2), "p1": Mode(2)}))
    inst = Instance("chain", devices, links, tasks, (Tensor("e", 10, "a", ("b",)),))
    assert bound(inst) == brute_force_latency(inst) == 5


def diamonds(seed: int, blocks: int, processors: int, identical: bool) -> Instance:
    """``blocks`` diamonds in a row (a task feeding two branches that feed the next diamond's
    first task): cut tasks between them, a communication cost on every edge paid only across
    processors; the processors identical or each task's durations drawn per processor."""
    rng = random.Random(seed)
    devices = tuple(Device(f"p{k}", 10**9, host=k == 0) for k in range(processors))
    links = tuple(Link(a.id, b.id, 0, 1, 0, 0) for a in devices for b in devices if a != b)
    ids, tensors = ["c0"], []
    for k in range(blocks):
        for branch in "lr":
            ids.append(f"{branch}{k}")
            tensors.append(Tensor(f"c{k}{branch}", rng.randint(1, 5), f"c{k}", (f"{branch}{k}",)))
            tensors.append(Tensor(f"{branch}{k}c", rng.randint(1, 5), f"{branch}{k}", (f"c{k + 1}",)))
        ids.append(f"c{k + 1}")

    def modes() -> dict[str, Mode]:
        same = rng.randint(1, 9)
        return {d.id: Mode(same if identical else rng.randint(1, 9)) for d in devices}

    return Instance(f"diamonds-{seed}", devices, links, tuple(Task(v, "X", modes()) for v in ids), tuple(tensors))


@pytest.mark.parametrize("seed", range(30))
def test_the_series_bound_never_exceeds_the_brute_force_optimum(seed):
    inst = diamonds(seed, 2, 2 + seed % 2, identical=seed % 3 != 0)
    usable = usable_devices(inst)
    assert len(cuts.segments(inst, 0)) > 2
    assert series_lower_bound(inst, usable) <= brute_force_latency(inst)


@pytest.mark.parametrize("seed", range(10))
def test_relabelling_identical_processors_changes_no_segment_bound(seed):
    """Each segment bounded once per pair up to relabelling gives, pair by pair, the value of
    bounding it for every pair of its cut tasks' devices."""
    inst = diamonds(100 + seed, 3, 4, identical=True)
    usable = usable_devices(inst)
    parts = cuts.segments(inst, 0)
    values = []
    for k, (a, between, b) in enumerate(parts):
        values.append({(da, db): latency_lower_bound(part, {t.id: tuple(t.modes) for t in part.tasks})
                       for da in ([None] if a is None else usable[a]) for db in ([None] if b is None else usable[b])
                       for part in [cuts.segment_instance(inst, usable, a, da, between, b, db, k)]})
    assert bounds._segment_bounds(inst, usable, parts) == values


def test_every_device_idles_at_a_cut_task():
    """Two diamonds on two identical processors, every task 4 and every edge 2: the plain bound
    spreads the work (7 tasks, 28) with the idle time at the ends only (20).  Each diamond alone
    spans 14 at least: its branches run side by side only if one of them pays an edge in and
    its join an edge from the other (4 + 2 + 4 + 4), or in a row (16); the cut task between
    them counted once, 14 + 14 - 4 = 24, the optimum."""
    devices = (Device("p0", 10**9, host=True), Device("p1", 10**9))
    links = (Link("p0", "p1", 0, 1, 0, 0), Link("p1", "p0", 0, 1, 0, 0))
    ids = ["c0", "l0", "r0", "c1", "l1", "r1", "c2"]
    tensors = tuple(Tensor(f"{u}{v}", 2, u, (v,)) for u, v in [("c0", "l0"), ("c0", "r0"), ("l0", "c1"), ("r0", "c1"),
                                                              ("c1", "l1"), ("c1", "r1"), ("l1", "c2"), ("r1", "c2")])
    inst = Instance("two-diamonds", devices, links, tuple(Task(v, "X", {d.id: Mode(4) for d in devices}) for v in ids),
                    tensors)
    usable = usable_devices(inst)
    assert latency_lower_bound(inst, usable) == 20
    assert series_lower_bound(inst, usable) == 24 == brute_force_latency(inst)
    assert bounds.relaxation_bounds(inst, usable)["latency"] == 24
    assert bounds.relaxation_bounds(inst, usable, series=False)["latency"] == 20


def test_squeezenets_series_bound_is_its_optimum():
    """On edge the fire modules' concats are cut tasks: the series of the plain bounds meets the
    optimum (1,645 us, proven by the series decomposition), where the plain bound gives 1,399."""
    inst = cpsched.load("squeezenet", platform="edge")
    usable = usable_devices(inst)
    assert latency_lower_bound(inst, usable) == 1399
    assert series_lower_bound(inst, usable) == 1645 == cpsched.solve(inst, time_limit=60).objectives["latency"]


def tree(seed: int, n: int, processors: int, inward: bool) -> Instance:
    """A random in-tree (each task feeds one later task) or out-tree (each is fed by one) of ``n``
    tasks on identical processors, small communication costs paid only across processors."""
    rng = random.Random(seed)
    devices = tuple(Device(f"p{k}", 10**9, host=k == 0) for k in range(processors))
    links = tuple(Link(a.id, b.id, 0, 1, 0, 0) for a in devices for b in devices if a != b)
    ids = [f"t{k}" for k in range(n)]
    tasks = tuple(Task(v, "X", {d.id: Mode(w) for d in devices}) for v in ids for w in [rng.randint(1, 9)])
    tensors = []
    for k in range(1, n):
        parent = rng.randrange(k)
        u, v = (ids[k], ids[parent]) if inward else (ids[parent], ids[k])
        tensors.append(Tensor(f"e{k}", rng.randint(0, 2), u, (v,)))
    return Instance(f"tree-{seed}", devices, links, tasks, tuple(tensors))


@pytest.mark.parametrize("seed", range(40))
def test_the_bound_never_exceeds_the_optimum_of_trees_on_identical_processors(seed):
    inst = tree(seed, 7, 2 + seed % 2, inward=seed % 4 < 2)
    assert bound(inst) <= brute_force_latency(inst)


def test_energetic_reasoning_counts_the_work_that_must_end_before_a_chain():
    """Three leaves of 3 feed a chain x -> y (3 each) on two processors, no data to move: the
    path (9) and the work with idle time (2C >= 15 + 3) give 9; the leaves all run within
    [0, C - 6], so 2 (C - 6) >= 9 and C >= 11 (the optimum is 12: two leaves, then the third)."""
    devices = (Device("p0", 10**9, host=True), Device("p1", 10**9))
    links = (Link("p0", "p1", 0, 1, 0, 0), Link("p1", "p0", 0, 1, 0, 0))
    tasks = tuple(Task(v, "X", {d.id: Mode(3) for d in devices}) for v in ("a", "b", "c", "x", "y"))
    tensors = (*(Tensor(f"{v}x", 0, v, ("x",)) for v in "abc"), Tensor("xy", 0, "x", ("y",)))
    inst = Instance("leaves-then-chain", devices, links, tasks, tensors)
    assert bound(inst) == 11
    assert brute_force_latency(inst) == 12


@pytest.mark.parametrize("seed", range(10))
def test_the_remembered_bound_is_the_bound_of_that_usable_map(seed):
    # remembered per instance and usable map: pinning tasks gives its own (never lower) value
    inst = random_instance(seed, 8, 3)
    usable = usable_devices(inst)
    pinned = {v: devices[-1:] for v, devices in usable.items()}
    free = latency_lower_bound(inst, usable)
    fixed = latency_lower_bound(inst, pinned)
    assert free == bounds._latency_lower_bound(inst, usable) == latency_lower_bound(inst, dict(usable))
    assert fixed == bounds._latency_lower_bound(inst, pinned) >= free
