"""The latency relaxation bound (cpsched.bounds.latency_lower_bound) against brute force.

Besides the critical path it spreads the total work over the devices together
with the time each device must stand idle before its first task and after its
last one (communication it cannot avoid).  It must never exceed the optimum:
on random heterogeneous instances, and on fork and join graphs on identical
processors with communication, where the idle time is what it adds.
"""

from __future__ import annotations

import random

import pytest
from oracle import brute_force_latency

from cpsched.bounds import latency_lower_bound, usable_devices
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
