"""Exact Pareto fronts as strategies over an engine (CPSAT-NOTES section 3).

* :func:`sweep` — two objectives, epsilon-constraint: each step minimises the
  other objective under ``epsilon-objective <= eps``, then the epsilon
  objective at that optimum (so the point is non-dominated), then sets
  ``eps`` to the point's value minus one.  Objectives are integers, so every
  point is visited; the sweep ends at the proven minimum of the epsilon
  objective (solved first, which spares the costly final infeasibility proof).
* three objectives — the same sweep nested: for each bound on the third
  objective, the complete two-objective front with the third minimised last;
  the next bound is the largest third value found minus one (complete: see
  :func:`_sweep3`).

A front is ``complete`` only when every sub-solve was proven (optimal or
infeasible).  A time limit, an unproven sub-solve or Ctrl-C
(:mod:`cpsched.interrupt`) stops or degrades the sweep honestly: the points
found are kept, the front is not complete, and ``meta.sweep`` records where
:func:`sweep` resumes.

The sweep calls a solve function with the signature of
:func:`cpsched.lexico.solve` (``instance, objectives, options, hint=,
limits=``); the front door passes its pipeline (warm start, decomposition).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from cpsched import __version__, interrupt, lexico
from cpsched.engines.protocol import Options
from cpsched.errors import ParameterError
from cpsched.instance import Instance
from cpsched.schedule import UNIT_KIND, Front, Point, Schedule, Status, non_dominated

Progress = Callable[[str], None]
Solver = Callable[..., Schedule]  # the signature of cpsched.lexico.solve


@dataclass
class Budget:
    """The whole sweep's time limit and each sub-solve's; ``stopped`` says why it ended early."""

    time_limit: float | None = None
    point_limit: float | None = None
    started: float = field(default_factory=time.monotonic)
    stopped: str | None = None

    def next_limit(self) -> float | None:
        """Seconds for the next sub-solve (None: unlimited); 0 when the sweep is out of time."""
        if self.time_limit is None:
            return self.point_limit
        left = max(0.0, self.time_limit - (time.monotonic() - self.started))
        return left if self.point_limit is None else min(left, self.point_limit)


class _Stop(Exception):
    """Raised inside a sweep when the budget ran out or the user interrupted; ``result`` is the
    interrupted sub-solve's answer (its point is kept, and its step is solved again on resume)."""

    def __init__(self, result: Schedule | None = None):
        super().__init__()
        self.result = result


@dataclass
class _Run:
    """One sweep's shared state: the engine call, the budget and the bookkeeping."""

    instance: Instance
    options: Options
    budget: Budget
    progress: Progress | None
    solver: Solver = lexico.solve
    solves: int = 0
    proven: bool = True

    def solve(self, objectives: list[str], limits: Mapping[str, int], hint: Schedule | None) -> Schedule:
        limit = self.budget.next_limit()
        if interrupt.requested():
            self.budget.stopped = "interrupted"
            raise _Stop
        if limit is not None and limit <= 0:
            self.budget.stopped = "time limit"
            raise _Stop
        opts = dataclasses.replace(self.options, time_limit=limit)
        clock = time.monotonic()
        try:
            result = self.solver(self.instance, objectives, opts, hint=hint, limits=limits)
            self._report(objectives, limits, result, time.monotonic() - clock)
        except KeyboardInterrupt:  # outside a guard, or a second Ctrl-C between solves
            self.budget.stopped = "interrupted"
            raise _Stop from None
        self.solves += 1
        if interrupt.requested():  # its step is solved again on resume: it does not unprove the front
            self.budget.stopped = "interrupted"
            raise _Stop(result if result.status.has_schedule else None)
        if not result.status.proven:
            self.proven = False
        return result

    def _report(self, objectives: list[str], limits: Mapping[str, int], result: Schedule, elapsed: float) -> None:
        if self.progress is None:
            return
        bound = " ".join(f"{k}<={v}" for k, v in limits.items()) or "unbounded"
        values = " ".join(f"{k}={result.objectives[k]}" for k in objectives) if result.status.has_schedule else ""
        self.progress(f"solve {self.solves + 1}: min {','.join(objectives)} | {bound}: "
                      f"{result.status} {values} ({elapsed:.2f} s)")


def _point(result: Schedule, names: Sequence[str]) -> Point:
    values = tuple(result.objectives[n] for n in names)
    bounds = {} if result.status is Status.OPTIMAL else dict(result.bounds)
    return Point(values, result.status, result, bounds)


def _sweep2(run: _Run, other: str, eps_name: str, names: Sequence[str], limits: Mapping[str, int],
            third: str | None, eps: int | None, floor: int | None, hint: Schedule | None,
            points: list[Point]) -> tuple[bool, int | None]:
    """Append the front of (other, eps_name) under ``limits`` to ``points``, from ``eps`` down.

    Stops after the point whose epsilon value is ``floor`` (a proven minimum),
    or when a sub-problem is infeasible.  Returns (finished, the eps to resume from).
    """
    stages = [other, eps_name] + ([third] if third else [])
    while True:
        bounded = {**limits, **({eps_name: eps} if eps is not None else {})}
        try:
            result = run.solve(stages, bounded, hint)
        except _Stop as stop:
            if stop.result is not None:
                points.append(_point(stop.result, names))
            return False, eps
        if result.status is Status.INFEASIBLE:
            return True, None
        if not result.status.has_schedule:  # unknown: nothing found in the limit
            run.budget.stopped = run.budget.stopped or "sub-solve found nothing in its time limit"
            return False, eps
        points.append(_point(result, names))
        hint = result
        value = result.objectives[eps_name]
        if floor is not None and value <= floor:
            return True, None
        eps = value - 1


def sweep(instance: Instance, objectives: Sequence[str] = ("latency", "memory"), epsilon: str | None = None,
          options: Options = Options(), budget: Budget | None = None,
          progress: Progress | None = None, resume: Front | None = None,
          solver: Solver = lexico.solve, hint: Schedule | None = None) -> Front:
    """The exact Pareto front of ``instance`` over 2 or 3 ``objectives``.

    ``epsilon`` names the objective that is bounded and stepped (default: the
    first); for 3 objectives the remaining order is (other, epsilon, third).
    ``resume`` continues an incomplete front of the same request; ``solver``
    is any solve function with the signature of :func:`cpsched.lexico.solve`;
    ``hint`` warm-starts the first sub-solve.
    """
    names = tuple(lexico.objective_list(list(objectives), options.memory_plan, "objectives"))
    if len(names) not in (2, 3):
        raise ParameterError("objectives", list(objectives), "a front needs 2 or 3 objectives")
    epsilon = epsilon or names[0]
    if epsilon not in names:
        raise ParameterError("epsilon", epsilon, f"is not one of the objectives {', '.join(names)}")
    budget = budget or Budget()
    run = _Run(instance, options, budget, progress, solver)
    rest = [n for n in names if n != epsilon]
    points: list[Point] = list(resume.points) if resume else []
    state = dict(resume.meta.get("sweep", {})) if resume else {}
    if len(names) == 2:
        nxt = _run2(run, rest[0], epsilon, names, points, state, hint)
    else:
        nxt = _sweep3(run, rest[0], epsilon, rest[1], names, points, state, hint)
    points.sort(key=lambda p: p.status is not Status.OPTIMAL)  # of equal points, keep a proven one
    keep = non_dominated([p.values for p in points])
    points = sorted((points[i] for i in keep), key=lambda p: p.values)
    complete = nxt is None and run.proven and all(p.status is Status.OPTIMAL for p in points) \
        and (resume is None or resume.meta.get("proven", True))
    meta = {"method": "epsilon-constraint" if len(names) == 2 else "nested epsilon-constraint",
            "epsilon": epsilon, "solves": run.solves + (resume.meta.get("solves", 0) if resume else 0),
            "wall_time": round(time.monotonic() - budget.started, 3)
            + (resume.meta.get("wall_time", 0) if resume else 0),
            "cpsched": __version__, "proven": run.proven and (resume is None or resume.meta.get("proven", True)),
            "engine": {"workers": options.workers, "seed": options.seed, "point_limit": budget.point_limit}}
    if nxt is not None:
        meta["sweep"] = nxt
        meta["stopped"] = budget.stopped or "a sub-solve was not proven"
    units = {n: instance.units.get(kind, "") for n, kind in UNIT_KIND.items()}
    return Front(instance.name, names, tuple(points), complete, units, meta)


def _run2(run: _Run, other: str, eps_name: str, names, points: list[Point], state: dict,
          hint: Schedule | None) -> dict | None:
    """The 2-objective sweep; returns the resume state (None when finished)."""
    floor = state.get("floor")
    if "eps" not in state:
        try:
            end = run.solve([eps_name, other], {}, hint)
        except _Stop as stop:
            if stop.result is not None:
                points.append(_point(stop.result, names))
            return {}
        if end.status is Status.INFEASIBLE:
            return None
        if not end.status.has_schedule:
            run.budget.stopped = run.budget.stopped or "no schedule found in the time limit"
            return {}
        points.append(_point(end, names))
        floor = end.objectives[eps_name] if end.status is Status.OPTIMAL else None
        state = {"eps": None, "floor": floor}
    hint = points[-1].schedule if points else None
    finished, eps = _sweep2(run, other, eps_name, names, {}, None, state["eps"], floor, hint, points)
    return None if finished else {"eps": eps, "floor": floor}


def _sweep3(run: _Run, other: str, eps_name: str, third: str, names, points: list[Point],
            state: dict, hint: Schedule | None) -> dict | None:
    """Nested sweep: for each bound ``third <= e3``, the (other, eps_name) front with ``third``
    minimised last.  A non-dominated point z is found at the level e3 = z[third]: any point
    that beats it on the first two objectives within that bound would dominate it.  Points
    found at a level cover every non-dominated third value above their largest one, so the
    next level is that value minus one, and the sweep ends when a level is empty."""
    k3 = names.index(third)
    e3, eps, top = state.get("e3"), state.get("eps"), state.get("top")
    while True:
        level: list[Point] = []
        limits = {third: e3} if e3 is not None else {}
        hint = points[-1].schedule if points else hint
        finished, eps = _sweep2(run, other, eps_name, names, limits, third, eps, None, hint, level)
        points.extend(level)
        top = max([p.values[k3] for p in level] + ([top] if top is not None else []), default=None)
        if not finished:
            return {"e3": e3, "eps": eps, "top": top}
        if top is None:
            return None
        e3, eps, top = top - 1, None, None
