"""The residency relaxation: where the weights live, time dropped.

Every schedule keeps each task's weights on its device for the whole makespan
(PROBLEM.md section 3), and while a task runs there its inputs, outputs and
workspace are live beside them (:func:`~cpsched.bounds.bytes_beside_weights`).
So every schedule's memory objective is at least

    min over placements of  max over devices d of  (weights placed on d
                                                    + the most bytes beside the weights
                                                      of a task placed on d)

with each device's term within its capacity.  This assignment problem, with
no times, orders or transfers, is small enough for CP-SAT to bound tightly in
seconds even on densenet121 (668 tasks), where the closed-form floor
(:func:`~cpsched.bounds.relaxation_bounds`: the weights spread evenly, or the
one largest task) ignores both the capacities and the tasks' own bytes.  On
``edge``, in 3 s (a third minimising, then probing caps), it raises the memory
floor of resnet50 from 34.1 MB to 40.0 MB, of inception_v1 from 9.3 to 11.7 MB
(1 byte below the optimum), of inception_v2 from 15.0 to 17.3 MB and of
densenet121 from 10.9 to 13.3 MB (minimising alone for the 3 s: 37.7, 11.7
proven, 17.1 and 13.0 MB).

The best placement it finds is also a memory-frugal start: list-scheduled in
topological order (one task at a time, so few tensors are live at once) it is
the front's memory-end aim when it beats :func:`~cpsched.heuristics.baselines.frugal`'s
other candidates (resnet50's 60 s memory solve: 40.3 MB from it, 44.1 MB before).
Under a memory cap, the placement within it that is least in a latency
relaxation (:func:`placed`), list-scheduled (:func:`capped`), starts a step
under that cap; a few caps stepped up from the floor (:func:`ladder`) give a
large graph's front points near its memory end before its sweep.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass

from cpsched import interrupt
from cpsched.bounds import Unreachable, bytes_beside_weights, relaxation_bounds, usable_devices
from cpsched.errors import NoSchedule
from cpsched.heuristics.baselines import place
from cpsched.instance import Instance
from cpsched.schedule import Schedule

#: seconds CP-SAT gets at most, and the share of a solve's or sweep's time limit it takes when that is
#: less (on 2 cores inception_v1's is proven in 2.1 s; resnet50's bound is 37.7 MB at 2 s, 37.9 at 3 s,
#: 38.1 at 5 s)
LIMIT = 3.0
SHARE = 0.05
#: the share of the relaxation's time spent minimising before the bisection (:func:`_solve`)
MINIMISE = 1 / 3


@dataclass(frozen=True)
class Residency:
    """A proven lower bound on the memory objective (and the arena, which is never below it),
    and the best placement found (task -> device; None when none was found in time)."""

    bound: int
    devices: Mapping[str, str] | None
    proven: bool  # the placement's value equals the bound


#: instance content hash -> (the seconds it was given, its relaxation), kept per process (a front's
#: floors, its memory end's sub-solve and a single solve of memory all ask for it)
_SOLVED: dict[str, tuple[float, Residency | None]] = {}


def time_for(total: float | None) -> float:
    """The seconds the relaxation gets within a solve or sweep of ``total`` seconds (None: no limit)."""
    return LIMIT if total is None else min(LIMIT, SHARE * total)


def solve(instance: Instance, time_limit: float = LIMIT, workers: int = 2) -> Residency | None:
    """The residency relaxation of ``instance`` solved within ``time_limit`` seconds (kept, and
    solved again only when unproven and given more time); None when it does not apply (named
    modes, whose weights and bytes differ per mode, or no task can be placed).

    The bound is never below the closed-form memory floor; when the relaxation itself is
    infeasible (no placement fits the capacities) it is one more than the largest capacity, which
    no schedule's memory reaches either.
    """
    key = instance.content_hash
    given, held = _SOLVED.get(key, (-1.0, None))
    if given < time_limit and (held is None or not held.proven):
        held = _solve(instance, time_limit, workers)
        _SOLVED[key] = time_limit, held
    return held


@dataclass(frozen=True)
class Placed:
    """The latency relaxation under a memory cap (:func:`placed`): its best placement (None when
    none was found) and its proven bound, which every schedule within the cap meets (None when
    no placement fits the cap: then no schedule does)."""

    devices: Mapping[str, str] | None
    bound: int | None


def placed(instance: Instance, cap: int, time_limit: float = LIMIT, workers: int = 2) -> Placed | None:
    """The placements whose weights and running tasks' bytes fit every device within ``cap``
    bytes (and its capacity), least in a latency relaxation: each device's load, and every path
    of durations with a transfer at the fastest link's speed wherever a tensor changes device
    (from the host for a graph input), solved for ``time_limit`` seconds; None when the
    relaxation does not apply.

    Its bound is far below the latency bounds the decomposition proves on large graphs, and
    above the plain ones only near the memory floor (squeezenet on ``edge``: 2,239 under
    6.31 MB, where the whole model's bound is 1,646; 1,756 under 7.17 MB).  Its placement is a
    start for a latency step under a memory cap, where the sweep has no point near the cap and
    the whole model's search may find none in its share: resnet50 (``edge``) at 42 MB, 40 s,
    ends at 18,027 from it and with nothing without it (the front's nearest point above the cap
    was 30,047 at 45.7 MB).
    """
    from ortools.sat.python import cp_model  # here, not at import: a MILP-only run loads no OR-Tools

    built = _model(instance, {d.id: min(d.memory, cap) for d in instance.devices})
    if built is None:
        return None
    m, place, usable, _ = built
    host = instance.host.id
    duration = {v: sum(instance.task(v).modes[d].duration * place[v, d] for d in ds) for v, ds in usable.items()}
    horizon = sum(max(instance.task(v).modes[d].duration for d in ds) for v, ds in usable.items())
    horizon += sum(min((link.transfer_time(t.size) for link in instance.links), default=0) for t in instance.tensors)
    makespan = m.new_int_var(0, horizon, "makespan")
    end = {v: m.new_int_var(0, horizon, f"end[{v}]") for v in usable}
    for v in usable:
        m.add(end[v] >= duration[v])
        m.add(end[v] <= makespan)
    for device in instance.devices:
        m.add(sum(instance.task(v).modes[device.id].duration * place[v, device.id]
                  for v in usable if (v, device.id) in place) <= makespan)
    for tensor in instance.tensors:
        fastest = min((link.transfer_time(tensor.size) for link in instance.links), default=0) if tensor.size else 0
        for c in tensor.consumers:
            if tensor.producer is None:  # on the host at time 0: c elsewhere waits for a copy
                if fastest and (c, host) in place:
                    m.add(end[c] >= duration[c] + fastest * (1 - place[c, host]))
                elif fastest:
                    m.add(end[c] >= duration[c] + fastest)
                continue
            moved = m.new_bool_var(f"moved[{tensor.id},{c}]") if fastest else 0  # c is off the producer's device
            for d in usable[tensor.producer] if fastest else ():
                m.add(moved >= place[tensor.producer, d] - (place[c, d] if (c, d) in place else 0))
            m.add(end[c] >= end[tensor.producer] + duration[c] + fastest * moved)
    m.minimize(makespan)
    solver, status = _run(m, time_limit, workers)
    if status == cp_model.INFEASIBLE:
        return Placed(None, None)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Placed(None, 0)
    devices = {v: d for (v, d), literal in place.items() if solver.boolean_value(literal)}
    return Placed(devices, math.ceil(solver.best_objective_bound - 1e-6))


@dataclass(frozen=True)
class Capped:
    """:func:`capped`'s answer: the relaxation's bound under the cap (:attr:`Placed.bound`) and
    the list schedule of its placement when that meets the cap (else None)."""

    bound: int | None
    schedule: Schedule | None


def capped(instance: Instance, cap: int, time_limit: float = LIMIT) -> Capped | None:
    """The list schedule of :func:`placed`'s placement within ``cap`` bytes, when its peak is
    within ``cap`` (the list keeps tensors live that the relaxation does not count: when its peak
    is over, the placement is sought once more under ``cap`` lowered by the excess), in
    ``time_limit`` seconds for each placement, with the bound of the relaxation under ``cap``;
    None when the relaxation does not apply."""
    first = placed(instance, cap, time_limit)
    if first is None:
        return None
    start = _listed(instance, first)
    if start is not None and start.objectives["memory"] > cap:
        again = placed(instance, cap - (start.objectives["memory"] - cap), time_limit)
        start = None if again is None else _listed(instance, again)
    return Capped(first.bound, start if start is not None and start.objectives["memory"] <= cap else None)


def _listed(instance: Instance, found: Placed) -> Schedule | None:
    """The list schedule of ``found``'s placement; None without one or when a device's own
    capacity overflows."""
    if found.devices is None:
        return None
    try:
        return place(instance, found.devices, "placed")
    except NoSchedule:
        return None


def ladder(instance: Instance, floor: int, top: int | None, count: int, time_limit: float = LIMIT) -> list[Schedule]:
    """Up to ``count`` schedules of :func:`capped` under caps stepped up from the memory ``floor``
    (10, 20, 40, 80 % above it, ...), below ``top`` (None: no ceiling), until two in a row give
    none (densenet121's placement is not found in 3 s under any of them): points near a front's
    memory end, where a large graph's steps under tight caps are the slowest to find anything.
    On resnet50 (``edge``) 41.4 MB at 28,301 and 43.0 MB at 19,806, where its 120 s front's
    memory end was 40.1 MB at 42,102 and its next point 56.7 MB at 20,878."""
    found, missed = [], 0
    for k in range(count):
        cap = floor + floor * (1 << k) // 10
        if (top is not None and cap >= top) or interrupt.requested() or missed == 2:
            break
        answer = capped(instance, cap, time_limit)
        start = None if answer is None else answer.schedule
        if start is None:
            missed += 1
        else:
            missed = 0
            found.append(start)
    return found


def _model(instance: Instance, capacity: Mapping[str, int]) -> tuple | None:
    """(the CP-SAT model that places every task on one usable device with each device's weights
    and its running tasks' bytes within ``capacity``, its placement literals, the usable devices,
    the largest device's such sum), or None when the relaxation does not apply."""
    from ortools.sat.python import cp_model

    if not instance.plain or not instance.tasks:
        return None
    try:
        usable = usable_devices(instance)
    except Unreachable:
        return None
    m = cp_model.CpModel()
    place = {(v, d): m.new_bool_var(f"place[{v},{d}]") for v, ds in usable.items() for d in ds}
    for v, ds in usable.items():
        m.add_exactly_one(place[v, d] for d in ds)
    top = max(d.memory for d in instance.devices)
    # not floored at the closed-form bound: measured, that domain left CP-SAT's bound on inception_v2
    # at 14.99 MB (17.12 MB without)
    peak = m.new_int_var(0, top, "peak")
    for device in instance.devices:
        d = device.id
        weights = sum(instance.task(v).weights * place[v, d] for v in usable if (v, d) in place)
        beside = m.new_int_var(0, device.memory, f"beside[{d}]")
        for v in usable:
            held = bytes_beside_weights(instance, v, d) if (v, d) in place else 0
            if held:
                m.add(beside >= held).only_enforce_if(place[v, d])
        m.add(weights + beside <= capacity[d])
        m.add(peak >= weights + beside)
    return m, place, usable, peak


def _solve(instance: Instance, time_limit: float, workers: int) -> Residency | None:
    """Minimise the relaxation's peak for :data:`MINIMISE` of ``time_limit`` (all of it while no
    placement is found), then, when that is not proven, bisect between its bound and its best
    placement with decision probes (is there a placement within this cap?) in the rest of the
    time: CP-SAT proves a cap infeasible far sooner than its bound on the minimum climbs there
    (:func:`_bisect`)."""
    from ortools.sat.python import cp_model

    built = _model(instance, {d.id: d.memory for d in instance.devices})
    if built is None:
        return None
    m, place, usable, peak = built
    floor = relaxation_bounds(instance, usable)["memory"]
    top = max(d.memory for d in instance.devices)
    deadline = time.monotonic() + time_limit
    m.minimize(peak)
    solver, status = _run(m, MINIMISE * time_limit, workers)
    if status == cp_model.UNKNOWN and deadline > time.monotonic():  # nothing yet: the rest to find one
        solver, status = _run(m, deadline - time.monotonic(), workers)
    if status == cp_model.INFEASIBLE:
        return Residency(max(floor, top + 1), None, True)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Residency(floor, None, False)
    devices = {v: d for (v, d), literal in place.items() if solver.boolean_value(literal)}
    bound = max(floor, int(solver.best_objective_bound))
    if status == cp_model.OPTIMAL:
        return Residency(bound, devices, True)
    return _bisect(instance, bound, devices, deadline, workers)


def _bisect(instance: Instance, bound: int, devices: dict[str, str], deadline: float, workers: int) -> Residency:
    """Narrow [``bound``, the peak of ``devices``] by probing the cap halfway until they meet,
    time runs out or a probe ends undecided: an infeasible cap raises the bound above it, a
    feasible one gives a placement at or below it.  On ``edge`` (2 cores) the gap left by 3 s
    of minimising closes to within 0.1 % in 0.6-6.6 s: resnet50's bound from 37.7 to 40.0 MB,
    densenet121's from 13.0 to 13.3 MB, shufflenet's and inception_v2's by 2.3 % and 1.0 %."""
    from ortools.sat.python import cp_model

    best = _peak(instance, devices)
    while bound < best and not interrupt.requested():
        left = deadline - time.monotonic()
        if left <= 0:
            break
        cap = (bound + best) // 2
        m, place, _, _ = _model(instance, {d.id: min(d.memory, cap) for d in instance.devices})
        solver, status = _run(m, left, workers)
        if status == cp_model.INFEASIBLE:
            bound = cap + 1
        elif status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            devices = {v: d for (v, d), literal in place.items() if solver.boolean_value(literal)}
            best = _peak(instance, devices)
        else:
            break
    return Residency(bound, devices, bound >= best)


def _peak(instance: Instance, devices: Mapping[str, str]) -> int:
    """The relaxation's value of a placement: its largest device's weights plus the most bytes
    beside them of a task placed there."""
    held: dict[str, list[str]] = {}
    for v, d in devices.items():
        held.setdefault(d, []).append(v)
    return max(sum(instance.task(v).weights for v in vs) + max(bytes_beside_weights(instance, v, d) for v in vs)
               for d, vs in held.items())


def _run(m, time_limit: float, workers: int) -> tuple:
    """(the solver, its status) after solving ``m`` within ``time_limit`` seconds, Ctrl-C left to
    :mod:`cpsched.interrupt` (which stops the search, as it does the engine's)."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    solver.parameters.catch_sigint_signal = False
    return solver, interrupt.run(lambda: solver.solve(m), solver.stop_search)
