"""Exact Pareto fronts as strategies over a solve function, certified as they go (CPSAT-NOTES 3).

Every sub-solve is a lexicographic solve under upper limits; each of its stages
proves a statement (``solver.proofs``) that :mod:`cpsched.certify` turns into
the sweep's **lower set** ``L``: every feasible objective vector lies above
some point of ``L``.  The front is **complete** exactly when ``L`` equals the set
of points found (then nothing better exists anywhere); otherwise its certified
``gap`` says how far it can be from the truth.  A point in ``L`` is proven
non-dominated (``optimal``); the others are ``feasible``, with their bounds.

* two objectives (``other``, ``epsilon``): while ``L`` has a point that is not a
  found point, take the one with the smallest ``other`` value, bound ``epsilon``
  by the found point just above it minus one, and minimise ``other`` then
  ``epsilon`` there (the epsilon-constraint step; objectives are integers, so
  no point is skipped).  When ``epsilon`` is latency or energy, the minimum of
  ``epsilon`` is solved first, which spares the costly final infeasibility
  proof; when it is a memory peak, the steps are capacity limits (the engine's
  strong case) and the sweep ends with one proof that the smallest capacity
  minus one is infeasible.
* a timed two-objective sweep (a time limit, no per-step limit) aims at the
  certified gap: it solves both ends of the front first (so the gap's
  reference, the points' nadir, is the true one early), then halves the
  dense strips of the stepped objective that hold the most gap, each where its gap is halved
  (:func:`_steps`), and a strip whose exact step proved nothing is halved too; a timed step
  of either kind gets a third of the time
  left (a hard step cannot take it all); when nothing new is left to try, a
  step cut by its share is tried again with all the time left; what still
  could not be proven waits for ``--resume``, so a resumed sweep finishes.
* every feasible solution met inside any sub-solve (``Options.archive``) is a
  candidate point: kept when nothing found dominates it, it tightens the
  later steps' bounds and starts, and is what an interrupted sweep writes.
* three objectives: the same, nested: for each bound on the third objective,
  the two-objective front of the other two under it, with the third minimised
  last; the next bound is the largest third value of that level's points minus
  one, and the sweep ends when a level is empty.

A time limit or Ctrl-C (:mod:`cpsched.interrupt`) stops the sweep honestly: the
points found are kept with ``L``, and ``meta.sweep`` records where ``resume``
continues.  The sweep calls a solve function with the signature of
:func:`cpsched.lexico.solve` (``instance, objectives, options, hint=, limits=,
floors=``); the front door passes its pipeline (warm start, decomposition).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from typing import Any

from cpsched import __version__, interrupt, lexico
from cpsched.bounds import Unreachable, relaxation_bounds, usable_devices
from cpsched.certify import LowerSet, gap
from cpsched.engines.protocol import Options
from cpsched.errors import ParameterError
from cpsched.instance import Instance
from cpsched.schedule import UNIT_KIND, Front, Point, Schedule, Status, dominates

Progress = Callable[[str], None]
Solver = Callable[..., Schedule]  # the signature of cpsched.lexico.solve

#: objectives whose minimum is solved first when they are the stepped one (see the module docstring)
FLOOR_FIRST = ("latency", "energy")
#: the memory objectives: stepped as capacities, or the outer bound of three
MEMORY = ("memory", "arena")
#: without a per-step limit, a step of a timed sweep gets this share of the time left (a step cut by it
#: is tried again, with more time, while time is left) ...
STEP_SHARE = 1 / 3
#: ... but never less than this many seconds
MIN_STEP = 5.0
#: in a timed sweep, a sub-solve's later stages (the tie-break) get at most this share of its time
TAIL_SHARE = 1 / 4
#: in a timed sweep, a strip of the stepped objective wider than this share of its range is bisected
SPLIT_SHARE = 1 / 16
#: ... or holding more gap than this share of the box of both objectives' ranges (a strip's share of
#: all the gap left bisected nearly every strip near the end: squeezenet's front at 120 s took 34 steps
#: for its 23 points, against 29)
GAP_SPLIT_SHARE = 1 / 128


def auto_epsilon(names: Sequence[str]) -> str:
    """The objective ``epsilon="auto"`` steps.

    Two objectives: a memory objective when there is one (its steps are capacity
    limits, the engine's strong case), else the first.  Three: the first that is
    not a memory objective, so that memory, when present, is the outer bound (a
    capacity in every sub-solve; see :func:`roles`); measured on random 7-task
    instances, 1.7 solves per point against 2.2 with memory stepped inside.

    >>> auto_epsilon(("latency", "memory")), auto_epsilon(("latency", "energy", "memory"))
    ('memory', 'latency')
    """
    memory = [n for n in names if n in MEMORY]
    if len(names) == 2:
        return memory[0] if memory else names[0]
    return next(n for n in names if n not in memory)


def roles(objectives: Sequence[str], epsilon: str | None = "auto",
          memory_plan: str | None = None) -> tuple[tuple[str, ...], str, str, str | None]:
    """(the objectives, the stepped one, the other one, the outer third or None), checked.

    ``epsilon`` None or ``"auto"``: :func:`auto_epsilon`.  Of three objectives the
    third (the outer bound) is a memory objective when one remains, else the last.

    >>> roles(("memory", "energy", "latency"), "energy")
    (('memory', 'energy', 'latency'), 'energy', 'latency', 'memory')
    """
    names = tuple(lexico.objective_list(list(objectives), memory_plan, "objectives"))
    if len(names) not in (2, 3):
        raise ParameterError("objectives", list(objectives), "a front needs 2 or 3 objectives")
    epsilon = auto_epsilon(names) if epsilon in (None, "auto") else epsilon
    if epsilon not in names:
        raise ParameterError("epsilon", epsilon, f"is not one of the objectives {', '.join(names)}")
    rest = sorted((n for n in names if n != epsilon), key=lambda n: n in MEMORY)
    return names, epsilon, rest[0], rest[1] if len(rest) == 2 else None


@dataclass
class Budget:
    """The whole sweep's time limit and each sub-solve's; ``stopped`` says why it ended early."""

    time_limit: float | None = None
    point_limit: float | None = None
    started: float = field(default_factory=time.monotonic)
    stopped: str | None = None

    def left(self) -> float | None:
        """Seconds left for the whole sweep (None: unlimited)."""
        if self.time_limit is None:
            return None
        return max(0.0, self.time_limit - (time.monotonic() - self.started))

    def next_limit(self, share: float = 1.0) -> float | None:
        """Seconds for the next sub-solve (None: unlimited); 0 when the sweep is out of time.

        Without a ``point_limit``, a step gets ``share`` of what is left (at least
        :data:`MIN_STEP` seconds), so that one hard step cannot take the whole sweep.
        """
        left = self.left()
        if left is None:
            return self.point_limit
        if self.point_limit is not None:
            return min(left, self.point_limit)
        return min(left, max(share * left, MIN_STEP))


class _Stop(Exception):
    """The budget ran out or the user interrupted."""


class Inline:
    """An executor that runs each call at once, in this process (the sequential sweep)."""

    def submit(self, fn, *args, **kwargs) -> Future:
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed over with the future, as executors do
            future.set_exception(exc)
        return future


@dataclass
class _Job:
    """A sub-solve in flight."""

    future: Any
    objectives: list[str]
    limits: dict[str, int]
    started: float
    limit: float | None = None  # its time limit


def first_done(futures: list) -> Any:
    """The first finished of ``futures`` (concurrent or dask futures)."""
    done = [f for f in futures if f.done()]
    if done:
        return done[0]
    if isinstance(futures[0], Future):
        finished, _ = wait(futures, return_when=FIRST_COMPLETED)
        return next(iter(finished))
    from distributed import wait as dask_wait

    finished, _ = dask_wait(futures, return_when="FIRST_COMPLETED")
    return next(iter(finished))


@dataclass
class _Run:
    """One sweep's state: the solve function, the budget, the points and the lower set."""

    instance: Instance
    names: tuple[str, ...]
    options: Options
    budget: Budget
    progress: Progress | None
    solver: Solver
    lower: LowerSet
    points: dict[tuple[int, ...], Point] = field(default_factory=dict)
    solves: int = 0
    lower_floors: tuple[int, ...] = ()
    executor: Any = field(default_factory=lambda: Inline())  # submit(fn, *args, **kwargs) -> future
    jobs: int = 1  # sub-solves in flight at once
    aims: Mapping[str, Schedule] = field(default_factory=dict)  # heuristic schedules aimed at one objective
    proofs: tuple[Mapping, ...] = ()  # statements proven before the sweep (solver.proofs' format)

    def launch(self, objectives: list[str], limits: Mapping[str, int], hint: Schedule | None,
               share: float = STEP_SHARE) -> "_Job":
        """Start one sub-solve on the executor with ``share`` of the time left.  Raises _Stop when
        out of time or interrupted."""
        limit = self.budget.next_limit(share)
        if interrupt.requested():
            self.budget.stopped = "interrupted"
            raise _Stop
        if limit is not None and limit <= 0:
            self.budget.stopped = "time limit"
            raise _Stop
        opts = dataclasses.replace(self.options, time_limit=limit, archive=True,
                                   tail_share=TAIL_SHARE if limit is not None else None,
                                   proof=self.options.proof and bool(limits))
        if not isinstance(self.executor, Inline):  # callbacks stay in this process
            opts = dataclasses.replace(opts, progress=None, log=None)
        floors = self._floors(objectives[0], limits)
        hint = self._aimed(objectives[0], limits, hint)
        started = time.monotonic()
        future = self.executor.submit(self.solver, self.instance, objectives, opts, hint=hint, limits=dict(limits),
                                      floors=floors)
        return _Job(future, list(objectives), dict(limits), started, limit)

    def _aimed(self, first: str, limits: Mapping[str, int], hint: Schedule | None) -> Schedule | None:
        """The start for a sub-solve minimising ``first``: the heuristic aimed at it when that fits
        the limits and beats ``hint`` there, else ``hint``."""
        aimed = self.aims.get(first)
        if aimed is None or not aimed.within(limits):
            return hint
        if hint is not None and hint.objectives[first] <= aimed.objectives[first]:
            return hint
        return aimed

    def land(self, job: "_Job") -> Schedule:
        """The finished sub-solve's result, its proofs and point learnt.  Raises _Stop when the
        user interrupted (its point is kept, its step solved again on resume)."""
        try:
            result = job.future.result()
            self.solves += 1
            self.learn(result)
            self._report(job.objectives, job.limits, result, time.monotonic() - job.started)
        except KeyboardInterrupt:  # outside a guard, or a second Ctrl-C between solves
            self.budget.stopped = "interrupted"
            raise _Stop from None
        if interrupt.requested():
            self.budget.stopped = "interrupted"
            raise _Stop
        return result

    def learn(self, result: Schedule) -> None:
        """Apply the result's proven statements to the lower set and keep its point and the
        intermediate solutions it met (the archive of candidate points)."""
        forbid(self.lower, result, {n: i for i, n in enumerate(self.names)})
        if result.status.has_schedule:
            self.add(_point(dataclasses.replace(result, archive=()), self.names))
        for found in result.archive:
            self.add(_point(found, self.names))

    def add(self, point: Point) -> None:
        """Keep ``point`` unless a point found before dominates or equals it (an optimal point
        replaces a feasible one of the same values)."""
        known = self.points.get(point.values)
        if known is not None:
            if known.status is not Status.OPTIMAL and point.status is Status.OPTIMAL:
                self.points[point.values] = point
            return
        if any(dominates(v, point.values) for v in self.points):
            return
        self.points = {v: p for v, p in self.points.items() if not dominates(point.values, v)}
        self.points[point.values] = point

    def _floors(self, first: str, limits: Mapping[str, int]) -> dict[str, int]:
        """The lower set's bound on ``first`` within ``limits``: its optimum can only be above it."""
        if first not in self.names:
            return {}
        index = {n: i for i, n in enumerate(self.names)}
        within = [lo[index[first]] for lo in self.lower.points if all(lo[index[n]] <= v for n, v in limits.items())]
        return {first: min(within)} if within else {}

    def values(self) -> list[tuple[int, ...]]:
        """The objective vectors of the points (none dominates another), sorted."""
        return sorted(self.points)

    def front(self) -> list[Point]:
        """The points, each ``optimal`` exactly when the lower set certifies it, else with the
        lower set's bounds below it."""
        certified = set(self.lower.points)
        return [dataclasses.replace(self.points[v], status=Status.OPTIMAL if v in certified else Status.FEASIBLE,
                                    bounds={} if v in certified else self._bounds(v))
                for v in self.values()]

    def _bounds(self, values: tuple[int, ...]) -> dict[str, int]:
        """Per objective, the least value a feasible vector <= ``values`` can have (the lower set's)."""
        below = [lo for lo in self.lower.points if all(a <= b for a, b in zip(lo, values))]
        return {n: min(lo[i] for lo in below) for i, n in enumerate(self.names)} if below else {}

    def gap(self) -> float | None:
        return gap(self.lower.points, self.values())

    def complete(self) -> bool:
        """The lower set equals the points found: the front is exact, nothing is left to solve."""
        return set(self.lower.points) == set(self.values())

    def _report(self, objectives: list[str], limits: Mapping[str, int], result: Schedule, elapsed: float) -> None:
        if self.progress is None:
            return
        bound = " ".join(f"{k}<={v}" for k, v in limits.items()) or "unbounded"
        values = " ".join(f"{k}={result.objectives[k]}" for k in objectives) if result.status.has_schedule else ""
        found = self.values()
        certified = gap(self.lower.points, found)
        state = f"{len(found)} points" + (f", gap {certified:.1%}" if certified is not None else "")
        self.progress(f"solve {self.solves}: min {','.join(objectives)} | {bound}: "
                      f"{result.status} {values} ({elapsed:.2f} s) — {state}")


def forbid(lower: LowerSet, result: Schedule, coordinate: Mapping[str, int],
           level: tuple[str, int | None] | None = None) -> None:
    """Apply the statements a result proved (``solver.proofs``) to ``lower`` (:func:`apply`)."""
    apply(lower, result.solver.get("proofs", []), coordinate, level)


def apply(lower: LowerSet, proofs: Iterable[Mapping], coordinate: Mapping[str, int],
          level: tuple[str, int | None] | None = None) -> None:
    """Apply proven statements (``{"given": limits, "objective": name or None, "at_least":
    value}``, as in ``solver.proofs``) to ``lower``, whose coordinates are the objectives of
    ``coordinate``; a statement naming other objectives is left out.

    ``level`` (third objective, its bound or None) projects a nested sweep's level:
    a statement counts when it holds for the whole level (no bound on the third
    objective, or one at least the level's), with that bound dropped.
    """
    for proof in proofs:
        given = dict(proof["given"])
        if level is not None:
            third, cap = level
            own = given.pop(third, None)
            if own is not None and (cap is None or own < cap):
                continue  # holds for part of the level only
        if any(n not in coordinate for n in given) or (proof["objective"] is not None
                                                       and proof["objective"] not in coordinate):
            continue
        lower.forbid({coordinate[n]: v for n, v in given.items()},
                     None if proof["objective"] is None else coordinate[proof["objective"]], proof["at_least"])


def _point(result: Schedule, names: Sequence[str]) -> Point:
    values = tuple(result.objectives[n] for n in names)
    bounds = {} if result.status is Status.OPTIMAL else dict(result.bounds)
    return Point(values, result.status, result, bounds)


def _level_front(run: _Run, other: str, eps_name: str, third: str | None,
                 limits: Mapping[str, int]) -> dict[tuple[int, int], Point]:
    """A level's points: the (other, eps) pairs of the points within ``limits``, 2-D minimal, each
    with its point of smallest third value."""
    i1, i2 = run.names.index(other), run.names.index(eps_name)
    k3 = run.names.index(third) if third else None
    pairs: dict[tuple[int, int], Point] = {}
    for p in run.points.values():
        if k3 is not None and third in limits and p.values[k3] > limits[third]:
            continue
        key = (p.values[i1], p.values[i2])
        if key not in pairs or (k3 is not None and p.values[k3] < pairs[key].values[k3]):
            pairs[key] = p
    return {k: v for k, v in pairs.items() if not any(dominates(w, k) for w in pairs)}


def _level(run: _Run, other: str, eps_name: str, limits: Mapping[str, int], third: str | None,
           hint: Schedule | None, lower2: LowerSet, fresh: bool) -> bool:
    """Certify the (other, eps_name) front under ``limits``; True when this level is certified.

    ``lower2`` is the level's 2-D lower set over (other, eps_name), fed with the
    statements that hold for the whole level; ``fresh`` when nothing was solved in
    the level yet.  Raises _Stop (from the run).
    """
    stages = [other, eps_name] + ([third] if third else [])
    coordinate = {other: 0, eps_name: 1}
    tried: dict[int | None, float | None] = {}  # eps -> the time limit its last attempt had

    def launch(bounded: dict, start: Schedule | None, objectives: list[str] = stages,
               share: float = STEP_SHARE) -> _Job:
        return run.launch(objectives, bounded, start, share)

    def land(job: _Job) -> Schedule:
        result = run.land(job)
        forbid(lower2, result, coordinate, (third, limits.get(third)) if third else None)
        return result

    if run.complete():
        return True
    # (three objectives: the levels are many and small, so each walks exactly)
    split = run.budget.time_limit is not None and run.budget.point_limit is None and third is None
    barren: set[int] = set()  # bounds whose step found no new point: the strip above is not split again
    dense: set[int] = set()  # strip tops just below a point found close to its step's bound: split them
    tops: dict[int | None, int | None] = {}  # a split step's bound -> the top of the strip it split
    probed = False
    if (eps_name in FLOOR_FIRST or split) and fresh:
        # the minimum of the stepped objective first: the last step then needs no infeasibility proof,
        # and a timed sweep knows both ends of the front (its nadir, the gap's reference) early
        known = _level_front(run, other, eps_name, third, limits)
        start = known[min(known, key=lambda v: (v[1], v[0]))].schedule if known else hint
        floor = land(launch(dict(limits), start, [eps_name, other] + ([third] if third else [])))
        if floor.status is Status.INFEASIBLE:
            return True
    inflight: dict[Any, tuple[int | None, _Job]] = {}
    seeded = run.jobs == 1
    try:
        while True:
            if run.complete():
                return True
            points = _level_front(run, other, eps_name, third, limits)
            pending = sorted(lo for lo in lower2.points if lo not in points)
            flying = {eps for eps, _ in inflight.values()}
            choices: dict[int | None, Schedule | None] = {}
            retries: dict[int | None, Schedule | None] = {}  # steps cut by their share of the time
            left = run.budget.left()
            if split and not probed and len(points) >= 2:
                probed = True  # both ends known: the first step of each strip probes its middle
                dense.update(v[1] - 1 for v in points)
            for eps, start, top in _steps(points, pending, lower2.points, hint, dense, barren, tried):
                if eps in flying or eps in choices:
                    continue
                if eps not in tried:
                    choices[eps] = start
                    tops[eps] = top
                elif run.budget.point_limit is None and None not in (left, tried[eps]) and left > tried[eps] + 1:
                    retries.setdefault(eps, start)
            share = STEP_SHARE
            if not choices and not inflight and retries:  # nothing new to try: the first cut step gets all time left
                eps, start = next(iter(retries.items()))
                choices, share = {eps: start}, 1.0
            if not seeded and points and pending:
                seeded = True  # spread the first steps over the range, one per job
                top, bottom = max(v[1] for v in points), min(lo[1] for lo in lower2.points)
                for j in range(1, run.jobs):
                    eps = bottom + (top - bottom) * j // run.jobs
                    above = [v for v in points if v[1] > eps]
                    if bottom <= eps < top and eps not in tried and eps not in flying:
                        choices.setdefault(eps, points[min(above)].schedule if above else hint)
            for eps, start in list(choices.items())[:max(0, run.jobs - len(inflight))]:
                job = launch({**limits, **({eps_name: eps} if eps is not None else {})}, start, share=share)
                tried[eps] = job.limit
                inflight[job.future] = (eps, job)
            if not inflight:
                return not pending
            eps, job = inflight.pop(first_done(list(inflight)))
            known = set(_level_front(run, other, eps_name, third, limits))
            result = land(job)
            if result.status is Status.INFEASIBLE and eps is None:
                return True
            if eps is None and probed:  # an unbounded solve's new points: their strips are probed like the ends'
                dense.update(v[1] - 1 for v in _level_front(run, other, eps_name, third, limits) if v not in known)
            if eps is None or not split:
                continue
            found = (result.objectives[other], result.objectives[eps_name]) if result.status.has_schedule else None
            if found is None and result.status is not Status.INFEASIBLE:
                continue  # cut by the time limit: nothing learnt about the strip
            if tops.get(eps) is None and result.status is not Status.OPTIMAL \
                    and result.bounds.get(other, 0) < result.objectives[other]:
                dense.add(eps)  # an exact step that proved nothing: its strip is halved next
            if found is None or any(v[0] <= found[0] and v[1] <= found[1] for v in known):
                barren.add(eps)
            elif eps - found[1] < SPLIT_SHARE * _span(lower2.points, _level_front(run, other, eps_name, third,
                                                                                  limits)):
                dense.add(found[1] - 1)  # the next point was close: the strip below it is halved
            else:
                dense.discard(tops.get(eps))  # a long empty stretch: the strip above is walked exactly
    finally:
        for future in inflight:
            future.cancel()


def _steps(points: Mapping[tuple[int, int], Point], pending: Sequence[tuple[int, int]],
           lower: Sequence[tuple[int, int]], hint: Schedule | None, dense: set[int],
           barren: set[int], tried: Iterable[int | None] = ()) -> list[tuple[int | None, Schedule | None, int | None]]:
    """The steps (bound on the stepped objective, start, the top of the strip when the step
    halves it) that the ``pending`` lower points call for, the strip with the largest gap
    first, over a level's ``points`` (``(other, eps)`` -> point).

    The exact step of a pending ``lo`` bounds the stepped objective by the found point just
    above it minus one; the strip from ``lo`` up to that bound holds what is left to find there,
    and its gap is the area between the found staircase and ``lo`` over it (:func:`_area`).
    A timed sweep halves a strip by its gap instead (:func:`_middle`, in the part the bounds
    already ``tried`` in it leave with the most gap) when it is ``dense`` (its top is just below
    a point that its step found close to the step's bound: many points lie ahead, and an exact
    walk would crawl; or its exact step proved nothing, as a large graph's decomposed steps do,
    so that walking on from its top would only find points the lower set is already close to)
    and wider than :data:`SPLIT_SHARE` of the stepped range or holding more gap than
    :data:`GAP_SPLIT_SHARE` of the box of both objectives' ranges, unless it lies just above a
    ``barren`` bound (whose step found nothing new).  Any bound yields a front point or proves
    none is below it, so halving the largest dense strips first certifies the whole range
    early, while a sparse front keeps its one step per point.  Fused shufflenet
    (``edge``, 600 s): a strip 3 % of the range wide just above the memory end held nearly all
    of the 3.0 % gap, and was walked a few bytes a step.  A pending ``lo`` below every point
    in ``other`` (that end of the front is not proven yet) calls for the unbounded step first,
    then for the strip below the point of least ``other``, so that a sweep whose unbounded step
    was cut by the time fills the front's middle instead of retrying it.  A step starts from
    the known point that meets its bound with the least ``other`` value, else from the point
    above it.
    """
    span = _span(lower, points)
    ref = max((v[0] for v in (*points, *lower)), default=0) + 1
    strips: list[tuple[tuple[int, int], int, list[tuple[int, int]]]] = []  # (lo, top, the points above it)
    steps: dict[int | None, tuple[float, Schedule | None, int | None]] = {}
    for lo in pending:
        above = [v for v in points if v[0] <= lo[0]]
        if not above:
            steps.setdefault(None, (math.inf, hint, None))
            nearest = min(points, default=None)  # the other end is unproven: the strip below its nearest point
            if nearest is None or nearest[1] - 1 < lo[1]:
                continue
            above = [nearest]
        strips.append((lo, min(v[1] for v in above) - 1, above))
    box = span * (ref - min((v[0] for v in (*points, *lower)), default=ref))
    for lo, top, above in strips:
        width, area = top - lo[1], _area(points, lo, top, ref)
        split = top in dense and (width > SPLIT_SHARE * span or area > GAP_SPLIT_SHARE * box) and width > 1 \
            and lo[1] - 1 not in barren
        eps = _middle(points, lo, top, ref, tried) if split else top
        meets = [v for v in points if v[1] <= eps]
        start = points[min(meets)] if meets else points[max(above)]
        steps.setdefault(eps, (area, start.schedule, top if split else None))
    return [(eps, start, top) for eps, (_, start, top) in sorted(steps.items(), key=lambda kv: -kv[1][0])]


def _bands(points: Iterable[tuple[int, int]], lo: tuple[int, int], top: int,
           ref: int) -> Iterator[tuple[int, int, int]]:
    """The bands (from, to, height) between the found staircase (the least ``other`` of the points
    at or below each value of the stepped objective; ``ref`` below them all) and ``lo``'s ``other``
    value, over the stepped objective from ``lo`` up to ``top`` inclusive, in order."""
    at, best = lo[1], ref
    for other, eps in sorted((v for v in points if v[1] <= top), key=lambda v: v[1]):
        if eps > at:
            yield at, eps, max(0, best - lo[0])
            at = eps
        best = min(best, other)
    yield at, top + 1, max(0, best - lo[0])


def _area(points: Iterable[tuple[int, int]], lo: tuple[int, int], top: int, ref: int) -> int:
    """The area of :func:`_bands`: what the strip from ``lo`` to ``top`` adds to the certified gap."""
    return sum((end - at) * height for at, end, height in _bands(points, lo, top, ref))


def _middle(points: Iterable[tuple[int, int]], lo: tuple[int, int], top: int, ref: int,
            tried: Iterable[int | None]) -> int:
    """The bound that halves the area (:func:`_area`) of the part of the strip from ``lo`` to
    ``top`` that holds the most of it between the bounds already ``tried`` in the strip.

    Where a front's staircase falls steeply from its memory end, the gap lies low in the strip,
    and a step at the middle of its width would land among points already close to the lower
    set; and where the steps prove nothing (a large graph's decomposed sub-solves), the lower set
    stays where it is, so a strip's halving point moves little from step to step: the tried
    bounds part the strip, so that the next step goes where the most gap is left untried.
    Returns ``top`` when no part is more than one wide.
    """
    points = list(points)
    edges = [lo[1] - 1, *sorted({b for b in tried if b is not None and lo[1] <= b < top}), top]
    parts = [(_area(points, (lo[0], a + 1), b, ref), a + 1, b) for a, b in zip(edges, edges[1:]) if b - a > 1]
    if not parts:
        return top
    total, start, end = max(parts)
    area = 0
    for at, stop, height in _bands(points, (lo[0], start), end, ref):
        if height and 2 * (area + (stop - at) * height) >= total:
            return min(end - 1, max(start, at + math.ceil((total / 2 - area) / height) - 1))
        area += (stop - at) * height
    return start + (end - start) // 2


def _span(lower: Sequence[tuple[int, int]], points: Mapping[tuple[int, int], Point]) -> int:
    """The range of the stepped objective over a level's points and lower set."""
    values = [v[1] for v in points] + [lo[1] for lo in lower]
    return max(values) - min(values) if values else 0


def _sweep(run: _Run, other: str, eps_name: str, third: str | None, state: dict,
           hint: Schedule | None) -> dict | None:
    """The (nested) sweep from ``state``; returns the state to resume from (None: finished).

    ``state["levels"]`` lists the levels still to certify: [bound on the third
    objective (None: none), the level's lower set (None: fresh), whether it is the
    frontier level, whose completion opens the next].  A level whose steps could not
    all be proven stays in the list for the next resume; the sweep meanwhile goes on.
    """
    floors = run.lower_floors
    flat = (floors[run.names.index(other)], floors[run.names.index(eps_name)])
    queue = [tuple(x) for x in state.get("levels", [[None, None, True]])]
    unfinished: list[list] = []
    while queue and not run.complete():
        e3, level_lower, frontier = queue.pop(0)
        limits = {third: e3} if third is not None and e3 is not None else {}
        lower2 = LowerSet(flat, level_lower)
        if level_lower is None:
            apply(lower2, run.proofs, {other: 0, eps_name: 1}, (third, e3) if third else None)
        try:
            certified = _level(run, other, eps_name, limits, third, hint, lower2, level_lower is None)
        except _Stop:
            return {"levels": unfinished + [[e3, lower2.points, frontier]] + [list(q) for q in queue]}
        if not certified:
            unfinished.append([e3, lower2.points, False])
        if third is None or not frontier:
            continue
        k3 = run.names.index(third)
        level = [p.values[k3] for p in _level_front(run, other, eps_name, third, limits).values()]
        if level:  # the next level: below the largest third value of this level's front
            queue.append((max(level) - 1, None, True))
    return {"levels": unfinished} if unfinished else None


def sweep(instance: Instance, objectives: Sequence[str] = ("latency", "memory"), epsilon: str | None = None,
          options: Options = Options(), budget: Budget | None = None,
          progress: Progress | None = None, resume: Front | None = None,
          solver: Solver = lexico.solve, hint: Schedule | None = None, executor: Any = None,
          jobs: int = 1, aims: Mapping[str, Schedule] | None = None,
          floors: Mapping[str, int] | None = None, seeds: Sequence[Schedule] = (),
          proofs: Sequence[Mapping] = ()) -> Front:
    """The exact Pareto front of ``instance`` over 2 or 3 ``objectives``, with its lower set and gap.

    ``epsilon`` names the objective that is bounded and stepped (``"auto"`` or
    None: :func:`auto_epsilon`); the other two roles are :func:`roles`'.  ``resume`` continues an incomplete front of the same
    request; ``solver`` is any solve function with the signature of
    :func:`cpsched.lexico.solve`; ``hint`` warm-starts the first sub-solve.
    With an ``executor`` (``submit(fn, *args, **kwargs)`` returning a future: a
    process pool, a dask client) up to ``jobs`` sub-solves run at once: the
    first steps of a level are spread over its range, and every step still
    lands in the same lower set, so the front is the sequential one.  ``aims``
    maps an objective to a heuristic schedule aimed at it (e.g. a memory-frugal
    one), the start of the sub-solves that minimise that objective first when it
    beats the neighbouring point there.  ``floors`` maps an objective to a proven lower bound
    on it beyond the relaxation's (:mod:`cpsched.residency` for memory): the lower set starts
    there.  ``seeds`` are valid schedules found before the sweep (heuristics'), kept as candidate
    points like the archive's; ``proofs`` statements proven before it (in ``solver.proofs``'
    format, e.g. :func:`cpsched.residency.spent`'s energy bounds under latency caps), which the
    lower set starts with.
    """
    names, epsilon, other, third = roles(objectives, epsilon, options.memory_plan)
    budget = budget or Budget()
    floors = _floors(instance, names, floors)
    lower = LowerSet(floors, [tuple(v) for v in resume.lower] if resume is not None and resume.lower is not None
                     else None)
    run = _Run(instance, names, options, budget, progress, solver, lower, lower_floors=floors,
               executor=executor or Inline(), jobs=jobs if executor is not None else 1, aims=dict(aims or {}),
               proofs=tuple(proofs))
    apply(lower, run.proofs, {n: i for i, n in enumerate(names)})
    for p in resume.points if resume else ():
        run.add(p)
    for schedule in seeds:
        run.add(_point(schedule, names))
    state = dict(resume.meta.get("sweep", {})) if resume else {}
    nxt = _sweep(run, other, epsilon, third, state, hint)
    points = run.front()
    complete = run.complete()
    certified = 0.0 if complete else run.gap()
    meta = {"method": "epsilon-constraint" if len(names) == 2 else "nested epsilon-constraint",
            "epsilon": epsilon, "solves": run.solves + (resume.meta.get("solves", 0) if resume else 0),
            "wall_time": round(time.monotonic() - budget.started, 3)
            + (resume.meta.get("wall_time", 0) if resume else 0),
            "cpsched": __version__,
            "engine": {"workers": options.workers, "seed": options.seed, "point_limit": budget.point_limit}}
    if nxt is not None and not complete:
        meta["sweep"] = nxt
        out_of_time = budget.time_limit is not None and budget.next_limit() == 0
        meta["stopped"] = budget.stopped or ("time limit" if out_of_time else "some steps were not proven")
    units = {n: instance.units.get(kind, "") for n, kind in UNIT_KIND.items()}
    return Front(instance.name, names, tuple(points), complete, units, meta, instance.content_hash,
                 lower=tuple(run.lower.points), gap=certified)


def _floors(instance: Instance, names: Sequence[str], raised: Mapping[str, int] | None = None) -> tuple[int, ...]:
    """The relaxation bound of each objective, or the proven bound in ``raised`` when higher (0
    for a proven infeasible instance: nothing to bound)."""
    try:
        relaxed = relaxation_bounds(instance, usable_devices(instance))
    except Unreachable:
        return tuple(0 for _ in names)
    relaxed["arena"] = relaxed["memory"]
    return tuple(max(relaxed.get(n, 0), (raised or {}).get(n, 0)) for n in names)


def verify(instance: Instance, front: Front, options: Options = Options(), budget: Budget | None = None,
           progress: Progress | None = None, solver: Solver = lexico.solve,
           floors: Mapping[str, int] | None = None) -> Front:
    """Prove ``front`` again from nothing: a fresh lower set, every gap between consecutive points
    re-solved (each step hinted by the point above it).  Returns the front with
    ``meta.verify`` (solves, time, whether every gap was re-proven empty).  A verification
    that finds a point the front lacks, or misses one it has, is a RuntimeError: one of the
    two sweeps is wrong.  ``floors`` as :func:`sweep`'s."""
    names = tuple(front.objectives)
    floors = _floors(instance, names, floors)
    budget = budget or Budget()
    run = _Run(instance, names, options, budget, progress, solver, LowerSet(floors), lower_floors=floors)
    for p in front.points:
        run.add(dataclasses.replace(p, status=Status.FEASIBLE))
    _, epsilon, other, third = roles(names, front.meta.get("epsilon"))
    _sweep(run, other, epsilon, third, {}, None)
    again = {p.values for p in run.front()}
    certified = run.complete()
    if certified and (again != {p.values for p in front.points} or set(run.lower.points) != again):
        raise RuntimeError(f"verification of the front of {instance.name!r} disagrees with it: "
                           f"{sorted(again ^ {p.values for p in front.points})[:3]}")
    info = {"solves": run.solves, "wall_time": round(time.monotonic() - budget.started, 3),
            "certified": certified, **({"stopped": budget.stopped} if budget.stopped else {})}
    return dataclasses.replace(front, meta={**front.meta, "verify": info})
