"""Baseline placements: everything on the host, or each task on its fastest device.

Both are list-scheduled by :func:`cpsched.heuristics.heft.list_schedule`
(HEFT's priority order, insertion into the gaps of devices and links) and
checked by :func:`cpsched.validator.validate`; one that needs more memory than a
device has raises :class:`~cpsched.errors.NoSchedule` naming the device.

>>> from cpsched.generate import random_instance
>>> inst = random_instance(1, 6, 3)
>>> {p.device for p in host(inst).tasks.values()}
{'d0'}
>>> fastest(inst).solver
{'engine': 'fastest'}
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from cpsched.bounds import latency_lower_bound, usable_devices
from cpsched.errors import NoSchedule
from cpsched.heuristics.heft import fastest as fastest_mode, list_schedule
from cpsched.instance import Instance
from cpsched.schedule import UNIT_KIND, Front, Point, Schedule, Status
from cpsched.validator import validate


def host(instance: Instance) -> Schedule:
    """Every task on the host device, list-scheduled (status feasible, validated).

    Raises :class:`NoSchedule` naming the first task (in topological order)
    that cannot run on the host, or the device whose memory it overflows.
    """
    usable = usable_devices(instance)
    dev = instance.host.id
    for task_id in instance.topological_order:
        task = instance.task(task_id)
        if dev not in task.choices:
            raise NoSchedule(f"task {task_id!r} does not run on the host {dev!r}")
        if dev not in usable[task_id]:
            raise NoSchedule(f"task {task_id!r} cannot run on the host {dev!r} in any schedule "
                             f"(it may run only on {'/'.join(usable[task_id])})")
    return place(instance, {t.id: dev for t in instance.tasks}, "host", usable)


def fastest_devices(instance: Instance, usable: Mapping[str, Sequence[str]] | None = None) -> dict[str, str]:
    """Task id -> its usable device of smallest duration (ties: the first in instance device order)."""
    usable = usable_devices(instance) if usable is None else usable
    return {t.id: min(usable[t.id], key=lambda d: fastest_mode(t, d).duration) for t in instance.tasks}


def fastest(instance: Instance) -> Schedule:
    """Each task on its fastest usable device (:func:`fastest_devices`), list-scheduled and validated.

    Raises :class:`NoSchedule` when two chosen devices have no link for a
    tensor between them (naming the task), or on a memory overflow (naming the device).
    """
    usable = usable_devices(instance)
    return place(instance, fastest_devices(instance, usable), "fastest", usable)


def frugal(instance: Instance, placements: Sequence[Mapping[str, str]] = ()) -> Schedule:
    """A memory-aware schedule: the least peak memory of a few sequential placements.

    Candidates: everything on one device (each device that can run every task),
    the weights spread over the devices (the heaviest task first, to the
    device whose memory is least full) and ``placements`` (task -> device, e.g.
    the residency relaxation's, :mod:`cpsched.residency`); each list-scheduled
    in topological order, so that at most a few tensors are live at once.  The
    warm start a front gives to its memory end.  Raises :class:`NoSchedule`
    when no candidate fits.
    """
    usable = usable_devices(instance)
    candidates = [{t.id: d for t in instance.tasks} for d in (dev.id for dev in instance.devices)
                  if all(d in usable[t.id] for t in instance.tasks)]
    resident = {d.id: 0 for d in instance.devices}  # weights spread: the heaviest task first, to the emptiest device
    spread = {}
    for t in sorted(instance.tasks, key=lambda t: -t.weights):
        d = min(usable[t.id], key=lambda d: (resident[d] + t.weights) / max(instance.device(d).memory, 1))
        spread[t.id] = d
        resident[d] += t.weights
    candidates += [spread, *placements]
    found = []
    for devices in candidates:
        try:
            schedule = list_schedule(instance, devices, list(instance.topological_order), solver={"engine": "frugal"},
                                     bounds={"latency": latency_lower_bound(instance, usable)})
            found.append(checked(instance, schedule, "frugal"))
        except NoSchedule:
            continue
    if not found:
        raise NoSchedule("no sequential placement fits the devices' memory")
    return min(found, key=lambda s: (s.objectives["memory"], s.objectives["latency"]))


def place(instance: Instance, devices: Mapping[str, str], engine: str,
          usable: Mapping[str, Sequence[str]] | None = None) -> Schedule:
    """List-schedule the fixed placement ``devices`` and validate it; the objectives are the recomputed ones.

    ``solver`` is ``{"engine": engine}``, ``bounds`` the relaxation lower bound on latency.
    """
    usable = usable_devices(instance) if usable is None else usable
    bounds = {"latency": latency_lower_bound(instance, dict(usable))}
    schedule = list_schedule(instance, devices, solver={"engine": engine}, bounds=bounds)
    return checked(instance, schedule, engine)


def checked(instance: Instance, schedule: Schedule, who: str) -> Schedule:
    """``schedule`` with its recomputed objectives; NoSchedule naming the device on a memory overflow.

    Any other violation is a bug of the list scheduler (AssertionError).
    """
    report = validate(instance, schedule, check_claims=False)
    bugs = [str(v) for v in report.violations if v.kind != "capacity"]
    if bugs:
        raise AssertionError(f"{who} built an invalid schedule: {'; '.join(bugs)}")
    if report.violations:
        worst = max(instance.devices, key=lambda d: report.peaks[d.id] - d.memory)
        raise NoSchedule(f"the {who} schedule needs {report.peaks[worst.id]} bytes on device {worst.id!r}, "
                         f"over its memory {worst.memory}")
    return dataclasses.replace(schedule, objectives=report.objectives)


def as_front(instance: Instance, schedule: Schedule, objectives: Sequence[str] = ("latency", "memory")) -> Front:
    """A one-point, not complete front holding ``schedule`` (for comparing a heuristic with a front)."""
    names = tuple(objectives)
    values = tuple(schedule.objectives[n] for n in names)
    point = Point(values, Status.FEASIBLE, schedule, dict(schedule.bounds))
    units = {n: instance.units.get(kind, "") for n, kind in UNIT_KIND.items()}
    return Front(instance.name, names, (point,), False, units,
                 {"method": str(schedule.solver.get("engine", "heuristic"))})
