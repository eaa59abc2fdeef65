"""NSGA-II over device placements (the HeteroOpt write-up), built on pymoo.

A chromosome holds one integer gene per task: the index of its (device, mode)
among the modes of its devices in ``usable_devices(instance)[task]`` (with one
mode per device, the index of its device).  It is decoded by list scheduling
(:func:`cpsched.heuristics.heft.list_schedule`: the fixed devices and modes, HEFT's
priority order, insertion into the gaps of devices and links) and scored by
:func:`cpsched.validator.objectives`.  A placement that needs a missing link, or
whose schedule exceeds some device's memory, is infeasible: its pymoo
constraint ``G > 0`` is the excess bytes, or a number larger than any excess
for each unreachable (tensor, device) pair, and pymoo's constraint domination
ranks it behind every feasible one.  The initial population holds the HEFT,
host and fastest placements (those that exist) and random ones; selection is
pymoo's NSGA-II (non-dominated sorting, crowding distance), with integer SBX
and polynomial mutation (rounded) and duplicate elimination.

The answer is the non-dominated set of every feasible placement decoded during
the run (not only the last population), as a :class:`~cpsched.schedule.Front`
that is never ``complete``: its points are ``feasible``, with the schedule of
each, validated.  The same seed gives the same front.

>>> from cpsched.generate import random_instance
>>> front = nsga2(random_instance(3, 6, 2), population=8, generations=3, seed=1)
>>> front.complete, front.meta["method"], {p.status.value for p in front.points}
(False, 'nsga2', {'feasible'})
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import time
from collections.abc import Sequence

import numpy as np
from pymoo.algorithms.moo.nsga2 import NSGA2
from pymoo.core.problem import Problem
from pymoo.core.sampling import Sampling
from pymoo.core.termination import Termination
from pymoo.operators.crossover.sbx import SBX
from pymoo.operators.mutation.pm import PM
from pymoo.operators.repair.rounding import RoundingRepair
from pymoo.operators.sampling.rnd import IntegerRandomSampling
from pymoo.optimize import minimize

from cpsched.bounds import latency_lower_bound, usable_devices
from cpsched.errors import NoSchedule
from cpsched.heuristics.baselines import checked, fastest_devices
from cpsched.heuristics.heft import fastest, heft, list_schedule, priority_order
from cpsched.instance import Instance
from cpsched.schedule import (
    MODE_OBJECTIVES,
    OBJECTIVES,
    UNIT_KIND,
    Front,
    Point,
    Schedule,
    Status,
    dominates,
)
from cpsched.validator import objectives as recompute


class _Decoder:
    """Chromosome -> (objective values, constraint violation), cached per chromosome."""

    def __init__(self, instance: Instance, names: Sequence[str]):
        self.instance = instance
        self.names = tuple(names)
        self.usable = usable_devices(instance)
        #: task -> its genes' meanings: (device, mode name), devices in usable order
        self.options = {t.id: [(d, m.name) for d in self.usable[t.id] for m in t.choices[d]] for t in instance.tasks}
        self.task_ids = [t.id for t in instance.tasks]
        self.order = priority_order(instance)
        self.bounds = {"latency": latency_lower_bound(instance, self.usable)}
        self.memory = {d.id: d.memory for d in instance.devices}
        # more than any excess a reachable placement can have: every byte on every device
        total = sum(max(t.weights_in(m) + t.workspace_in(m) for ms in t.choices.values() for m in ms)
                    for t in instance.tasks) + sum(instance.size_range[x.id][1] for x in instance.tensors)
        self.unreachable_penalty = float(total * len(instance.devices) + 1)
        self.cache: dict[tuple[int, ...], tuple[tuple[int, ...], float]] = {}

    def devices(self, genes: Sequence[int]) -> dict[str, str]:
        return {t: self.options[t][int(g)][0] for t, g in zip(self.task_ids, genes)}

    def modes(self, genes: Sequence[int]) -> dict[str, str]:
        return {t: self.options[t][int(g)][1] for t, g in zip(self.task_ids, genes)}

    def genes(self, placement: dict[str, tuple[str, str]]) -> tuple[int, ...] | None:
        """The chromosome of a placement, task -> (device, mode) (None when some device is not
        usable for its task)."""
        if any(placement[t] not in self.options[t] for t in self.task_ids):
            return None
        return tuple(self.options[t].index(placement[t]) for t in self.task_ids)

    def missing_links(self, devices: dict[str, str]) -> int:
        """How many (tensor, consumer device) pairs have no link from the tensor's device."""
        host, count = self.instance.host.id, 0
        for tensor in self.instance.tensors:
            if tensor.size == 0:  # (section 6: no mode changes whether a tensor has size 0)
                continue
            src = host if tensor.producer is None else devices[tensor.producer]
            dests = {devices[c] for c in tensor.consumers} - {src}
            count += sum(self.instance.link(src, d) is None for d in dests)
        return count

    def schedule(self, genes: Sequence[int]) -> Schedule:
        return list_schedule(self.instance, self.devices(genes), self.order, modes=self.modes(genes),
                             solver={"engine": "nsga2"}, bounds=self.bounds)

    def evaluate(self, genes: Sequence[int]) -> tuple[tuple[int, ...], float]:
        key = tuple(int(g) for g in genes)
        if key not in self.cache:
            devices = self.devices(key)
            missing = self.missing_links(devices)
            if missing:
                # a placeholder objective vector; pymoo ranks it by its violation alone
                self.cache[key] = (tuple(0 for _ in self.names), missing * self.unreachable_penalty)
            else:
                values, peaks = recompute(self.instance, self.schedule(key))
                excess = sum(max(0, peaks[d] - cap) for d, cap in self.memory.items())
                self.cache[key] = (tuple(values[n] for n in self.names), float(excess))
        return self.cache[key]


class _Placements(Problem):
    def __init__(self, decoder: _Decoder):
        upper = [len(decoder.options[t]) - 1 for t in decoder.task_ids]
        super().__init__(n_var=len(upper), n_obj=len(decoder.names), n_ieq_constr=1,
                         xl=np.zeros(len(upper), dtype=int), xu=np.array(upper, dtype=int), vtype=int)
        self.decoder = decoder

    def _evaluate(self, X, out, *args, **kwargs):
        scored = [self.decoder.evaluate(x) for x in np.asarray(X).astype(int)]
        out["F"] = np.array([values for values, _ in scored], dtype=float)
        out["G"] = np.array([[violation] for _, violation in scored], dtype=float)


class _Seeded(Sampling):
    """The given chromosomes first, then integer-uniform random ones."""

    def __init__(self, seeds: list[tuple[int, ...]]):
        super().__init__()
        self.seeds = seeds

    def _do(self, problem, n_samples, *args, random_state=None, **kwargs):
        seeds = np.array(self.seeds[:n_samples], dtype=int).reshape(-1, problem.n_var)
        rest = IntegerRandomSampling()._do(problem, n_samples - len(seeds), random_state=random_state)
        return np.vstack([seeds, np.asarray(rest, dtype=int).reshape(-1, problem.n_var)])


class _Until(Termination):
    """After ``generations`` (pymoo's n_gen), or as soon as every placement has been decoded."""

    def __init__(self, generations: int, decoder: _Decoder, space: int):
        super().__init__()
        self.generations, self.decoder, self.space = generations, decoder, space

    def _update(self, algorithm) -> float:
        if len(self.decoder.cache) >= self.space:
            return 1.0
        return algorithm.n_gen / self.generations


def seed_placements(instance: Instance, usable: dict[str, tuple[str, ...]]) -> dict[str, dict[str, tuple[str, str]]]:
    """The HEFT, host and fastest placements (task -> (device, mode), each device in its task's
    fastest mode there), by name, of those that exist (HEFT may raise NoSchedule)."""
    def fast(devices: dict[str, str]) -> dict[str, tuple[str, str]]:
        return {t: (d, fastest(instance.task(t), d).name) for t, d in devices.items()}

    out: dict[str, dict[str, tuple[str, str]]] = {}
    try:
        out["heft"] = {t: (p.device, p.mode) for t, p in heft(instance).tasks.items()}
    except NoSchedule:
        pass
    host = instance.host.id
    if all(host in usable[t.id] for t in instance.tasks):
        out["host"] = fast({t.id: host for t in instance.tasks})
    out["fastest"] = fast(fastest_devices(instance, usable))
    return out


def nsga2(instance: Instance, objectives: Sequence[str] = ("latency", "memory"), population: int = 100,
          generations: int = 200, seed: int = 0) -> Front:
    """A not-complete front of ``instance`` over ``objectives`` found by NSGA-II (see the module docstring).

    ``generations`` counts the initial population as the first (pymoo's ``n_gen``);
    the search stops early once every placement has been decoded, and when
    there are no more placements than ``population`` it decodes them all
    without a genetic search (``meta.exhaustive``).
    Raises :class:`NoSchedule` when no feasible placement was decoded, and
    :class:`~cpsched.bounds.Unreachable` when the instance is proven infeasible.
    """
    names = tuple(objectives)
    allowed = OBJECTIVES + (() if instance.plain else MODE_OBJECTIVES)
    if not names or len(set(names)) != len(names) or any(n not in allowed for n in names):
        raise ValueError(f"objectives must be 1 to 3 distinct names from {', '.join(allowed)}")
    if population < 2 or generations < 1:
        raise ValueError("population must be >= 2 and generations >= 1")
    started = time.monotonic()
    decoder = _Decoder(instance, names)
    seeds = [g for g in (decoder.genes(p) for p in seed_placements(instance, decoder.usable).values())
             if g is not None]
    seeds = list(dict.fromkeys(seeds))
    space = math.prod(len(decoder.options[t]) for t in decoder.task_ids)
    if space <= population:  # the first population would hold every placement: decode them all
        for genes in itertools.product(*(range(len(decoder.options[t])) for t in decoder.task_ids)):
            decoder.evaluate(genes)
        evaluations = len(decoder.cache)
    else:
        algorithm = NSGA2(
            pop_size=population,
            sampling=_Seeded(seeds),
            crossover=SBX(prob=0.9, eta=3.0, vtype=float, repair=RoundingRepair()),
            mutation=PM(eta=3.0, vtype=float, repair=RoundingRepair()),
            eliminate_duplicates=True,
        )
        result = minimize(_Placements(decoder), algorithm, _Until(generations, decoder, space),
                          seed=seed, verbose=False, copy_termination=False)
        evaluations = int(result.algorithm.evaluator.n_eval)

    feasible = [(values, genes) for genes, (values, violation) in decoder.cache.items() if violation <= 0]
    if not feasible:
        raise NoSchedule(f"NSGA-II decoded no placement within memory and links "
                         f"({evaluations} evaluations)")
    best: dict[tuple[int, ...], tuple[int, ...]] = {}
    for values, genes in sorted(feasible):  # the smallest chromosome of each objective vector
        best.setdefault(values, genes)
    # in lexicographic order every dominator of a vector comes first, and a kept one dominates it
    kept: list[tuple[int, ...]] = []
    for vector in sorted(best):
        if not any(dominates(k, vector) for k in kept):
            kept.append(vector)
    points = []
    for vector in kept:
        schedule = checked(instance, decoder.schedule(best[vector]), "nsga2")
        schedule = dataclasses.replace(schedule, solver={"engine": "nsga2", "seed": seed})
        values = tuple(schedule.objectives[n] for n in names)
        assert values == vector, (values, vector)
        points.append(Point(values, Status.FEASIBLE, schedule, dict(decoder.bounds)))
    units = {n: instance.units.get(kind, "") for n, kind in UNIT_KIND.items()}
    meta = {"method": "nsga2", "population": population, "generations": generations, "seed": seed,
            "evaluations": evaluations, "placements": len(decoder.cache), "exhaustive": space <= population,
            "wall_time": round(time.monotonic() - started, 3)}
    return Front(instance.name, names, tuple(points), False, units, meta)
