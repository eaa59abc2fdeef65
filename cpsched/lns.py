"""Large-neighbourhood search: improve a schedule by solving it again a window at a time.

Each step frees the tasks of one window of the topological order (their
devices and starts) while every other task keeps its device (its start stays
free), and solves that restricted instance exactly for a few seconds, hinted
with the current schedule: the restricted instance only removes choices, so
whatever it finds is a schedule of the original, validated before it
replaces the current one when it is better.  Windows slide by half their size
and wrap around; after a full round without improvement they grow by half,
and the search ends at the time limit or once a window would hold the whole
graph.  The large graphs' answer (:mod:`cpsched.decompose`) goes through it
after the polish.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence

from cpsched import interrupt, lexico
from cpsched.engines.protocol import Engine, Options
from cpsched.instance import Instance
from cpsched.schedule import Schedule, Status
from cpsched.validator import validate

#: tasks freed per step at first
WINDOW_TASKS = 30
#: seconds per step
STEP_LIMIT = 3.0


def improve(instance: Instance, start: Schedule, objectives: Sequence[str], options: Options, engine: Engine,
            limits: Mapping[str, int] | None = None, budget: float | None = None) -> tuple[Schedule, dict]:
    """The best schedule found from ``start`` (``start`` itself when nothing better turns up;
    never worse under ``objectives``, lexicographically), and what the search did."""
    clock = time.monotonic()
    order = instance.topological_order
    opts = dataclasses.replace(options, log=None, progress=None, archive=False, memory_plan=None, symmetry=False)

    def key(s: Schedule) -> list[int]:
        return [s.objectives[name] for name in objectives]

    current, size, offset, idle, steps, better = start, WINDOW_TASKS, 0, 0, 0, 0
    while size < len(order):
        left = None if budget is None else budget - (time.monotonic() - clock)
        if interrupt.requested() or (left is not None and left < 0.5):
            break
        free = set(order[offset:offset + size]) if offset + size <= len(order) else \
            set(order[offset:]) | set(order[:offset + size - len(order)])
        kept = {v: at.device for v, at in current.tasks.items() if v not in free}
        found = lexico.solve(pinned(instance, kept), objectives,
                             dataclasses.replace(opts, time_limit=STEP_LIMIT if left is None else min(STEP_LIMIT, left)),
                             hint=current, limits=limits, engine=engine)
        steps += 1
        if found.status.has_schedule and key(found) < key(current):
            current, idle, better = unpinned(instance, found), 0, better + 1
        else:
            idle += 1
        offset = (offset + size // 2) % len(order)
        if idle * (size // 2) >= len(order):  # a full round without improvement
            size, idle = size + size // 2, 0
    info = {"steps": steps, "improved": better, "from": key(start), "to": key(current),
            "wall_time": round(time.monotonic() - clock, 3)}
    return current, info


def unpinned(instance: Instance, found: Schedule) -> Schedule:
    """``found``, a schedule of a :func:`pinned` copy of ``instance``, as a start for the whole:
    ``feasible`` with no bounds or solver record (what the copy proved does not hold for the
    whole), checked valid there."""
    start = dataclasses.replace(found, status=Status.FEASIBLE, bounds={}, solver={})
    if not validate(instance, start, check_claims=False).valid:
        raise RuntimeError(f"a schedule of {instance.name!r} with pinned devices is invalid for the whole instance")
    return start


def pinned(instance: Instance, devices: Mapping[str, str]) -> Instance:
    """``instance`` with every task of ``devices`` (task -> device) kept to that device."""
    tasks = tuple(dataclasses.replace(t, modes={devices[t.id]: t.modes[devices[t.id]]}) if t.id in devices else t
                  for t in instance.tasks)
    return dataclasses.replace(instance, tasks=tasks)
