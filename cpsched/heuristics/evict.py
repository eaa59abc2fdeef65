"""Fitting a schedule into memory: tasks moved off over-full devices, the cheapest bytes first.

A schedule glued from parts solved apart (:mod:`cpsched.series`) can hold
more on a device than it has, each part having counted only its own weights.
:func:`fit` moves tasks off every over-full device, each to its best other
usable device, those whose weights cost the least extra time (or energy) per
byte first, until the bytes moved cover the excess, and list-schedules the
result in the schedule's own order (by start, then topologically); again
while a device is still over.  On inception_v2 (edge), the series' glued
schedule (5,169, the NPU 12.6 MB over) fits at 5,646 in one round, 0.02 s,
where the whole search had found 7,650 in 60 s.

>>> from cpsched.generate import random_instance
>>> from cpsched.heuristics.heft import list_schedule
>>> inst = random_instance(3, 6, 2)
>>> fit(inst, list_schedule(inst, {t.id: "d0" for t in inst.tasks})).status.value
'feasible'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from cpsched.bounds import Unreachable, usable_devices
from cpsched.errors import NoSchedule
from cpsched.heuristics.heft import fastest, list_schedule
from cpsched.instance import Instance
from cpsched.schedule import Schedule
from cpsched.validator import validate

#: list-schedulings tried before giving up
ROUNDS = 10


def fit(instance: Instance, schedule: Schedule, usable: Mapping[str, Sequence[str]] | None = None,
        objective: str = "latency") -> Schedule | None:
    """A valid schedule near ``schedule`` (any placement, any memory), or None.

    Every task keeps its device unless it is moved off an over-full one, and
    runs in its fastest mode there (the series' instances have one); the cost
    of a move is the extra duration there (the extra energy when
    ``objective`` is energy) per byte of the task's weights.  The result is
    validated, with its objectives; None when some device is still over after
    :data:`ROUNDS` schedulings, or no task with weights can leave it.
    """
    if usable is None:
        try:
            usable = usable_devices(instance)
        except Unreachable:  # some task fits nowhere: no schedule is valid
            return None
    rank = {v: i for i, v in enumerate(instance.topological_order)}
    order = sorted(schedule.tasks, key=lambda v: (schedule.tasks[v].start, rank[v]))
    devices = {v: p.device for v, p in schedule.tasks.items()}
    for _ in range(ROUNDS):
        try:
            candidate = list_schedule(instance, devices, order, solver=schedule.solver)
        except NoSchedule:
            return None
        report = validate(instance, candidate, check_claims=False)
        if report.valid:
            return dataclasses.replace(candidate, objectives=report.objectives)
        if any(v.kind != "capacity" for v in report.violations):
            return None
        over = {d.id: report.peaks[d.id] - d.memory for d in instance.devices if report.peaks[d.id] > d.memory}
        for device, excess in over.items():
            moves = sorted(_moves(instance, usable, devices, device, objective))
            if not moves:
                return None
            for *_, task, there, weights in moves:
                if excess <= 0:
                    break
                devices[task] = there
                excess -= weights
    return None


def _moves(instance: Instance, usable: Mapping[str, Sequence[str]], devices: Mapping[str, str], device: str,
           objective: str) -> list[tuple[float, str, str, int]]:
    """(cost per byte, extra duration per byte, task, where it goes, its weights) for each task
    with weights on ``device`` that can run elsewhere, to its cheapest other device (ties: the
    fastest); the duration breaks ties of cost, as in a re-priced series, where every byte
    moved off a priced device saves the same."""
    key = (lambda m: m.energy) if objective == "energy" else (lambda m: m.duration)
    moves = []
    for task_id, placed in devices.items():
        task = instance.task(task_id)
        others = [d for d in usable[task_id] if d != device]
        if placed != device or task.weights <= 0 or not others:
            continue
        there = min(others, key=lambda d: (key(fastest(task, d)), fastest(task, d).duration))
        extra = key(fastest(task, there)) - key(fastest(task, device))
        slower = fastest(task, there).duration - fastest(task, device).duration
        moves.append((extra / task.weights, slower / task.weights, task_id, there, task.weights))
    return moves
