"""Transfers that are only a delay (cpsched.engines.cpsat: CpSatModel._delay).

Where no memory is modelled and every link a tensor may take has no channel
limit, no link energy and one duration, the CP-SAT model drops the tensor's
transfer variables and delays each consumer off the producer's device instead.
That model must lose no schedule and add none: its optima equal the brute
force's, on heterogeneous and on identical devices, and its read-back
transfers pass the validator.
"""

from __future__ import annotations

import dataclasses

import pytest
from oracle import brute_force_latency
from oracle_front import brute_front_latency_energy

from cpsched import engines
from cpsched.engines import Options
from cpsched.generate import random_instance
from cpsched.instance import Instance, Link
from cpsched.lexico import prepare, solve
from cpsched.pareto import sweep
from cpsched.schedule import Status
from cpsched.validator import validate


def contention_free(instance: Instance, latency: int, bandwidth: int) -> Instance:
    """``instance`` with every link alike: no channel limit, no energy, one latency and bandwidth."""
    return dataclasses.replace(instance, links=tuple(
        Link(link.src, link.dst, latency, bandwidth, 0, 0) for link in instance.links))


def delayed(instance: Instance) -> tuple[int, int]:
    """(consumers delayed, transfer literals) in the CP-SAT model of ``instance``."""
    model, _ = prepare(engines.get("cpsat"), instance, ["latency"], Options())
    return len(model.same), len(model.z)


@pytest.mark.parametrize("seed", range(30))
def test_delays_keep_the_brute_force_latency(seed):
    inst = contention_free(random_instance(700 + seed, 5 + seed % 2, 3), seed % 3, 1 + seed % 2)
    same, z = delayed(inst)
    assert same > 0 and z == 0
    result = solve(inst, ["latency"], Options(time_limit=30))
    assert result.status is Status.OPTIMAL and validate(inst, result).valid
    assert result.objectives["latency"] == brute_force_latency(inst)


@pytest.mark.parametrize("seed", range(6))
def test_delays_keep_the_brute_force_latency_energy_front(seed):
    inst = contention_free(random_instance(800 + seed, 5, 3), 1, 2)
    front = sweep(inst, ("latency", "energy"), options=Options(time_limit=30))
    assert front.complete
    assert [p.values for p in front.points] == [tuple(v) for v in brute_front_latency_energy(inst)]
    for point in front.points:
        assert validate(inst, point.schedule).valid


@pytest.mark.parametrize("seed", range(6))
def test_links_of_different_durations_keep_their_transfers(seed):
    base = random_instance(900 + seed, 5, 3)
    inst = dataclasses.replace(base, links=tuple(
        dataclasses.replace(link, channels=0, energy_per_byte=0, latency=k % 3)
        for k, link in enumerate(base.links)))
    same, z = delayed(inst)
    assert z > 0  # the tensors whose links differ keep their transfer model
    result = solve(inst, ["latency"], Options(time_limit=30))
    assert result.status is Status.OPTIMAL and validate(inst, result).valid
    assert result.objectives["latency"] == brute_force_latency(inst)


def test_a_memory_objective_keeps_the_transfers():
    inst = contention_free(random_instance(950, 5, 3), 1, 1)
    model, _ = prepare(engines.get("cpsat"), inst, ["memory"], Options())
    assert not model.same and model.z
