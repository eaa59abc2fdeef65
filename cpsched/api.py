"""The front door: everything ``cpsched`` the command does, as Python functions.

Re-exported from :mod:`cpsched` (``cpsched.solve``, ``cpsched.front``, ...).
The CLI and ``cpsched bench`` call these functions and nothing else of the
pipeline, so a script gets exactly what the command gives:

* :func:`load` reads an input (ONNX model or bundled name, instance JSON, STG);
* :func:`solve` is the pipeline: warm start (HEFT, justified where no data
  moves), the engine or the decomposition, the memory plan, validation, and
  optionally the result cache;
* :func:`front` is the exact Pareto front (epsilon-constraint sweeps over the
  same pipeline, the first sub-solve warm-started like a single solve);
* :func:`select`, :func:`validate`, :func:`heuristic`, :func:`compare` are
  runtime selection, the independent checker, the heuristics and the quality
  indicators;
* :func:`export`, :func:`run` and :func:`run_front` deploy: a schedule as ONNX
  subgraphs with a manifest, executed with onnxruntime and checked against the
  unsplit model.

Ctrl-C during :func:`solve` or :func:`front` stops the engine through its own
stop call and returns what was found (:mod:`cpsched.interrupt`): a ``feasible``
schedule, or a front that is not complete.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import multiprocessing
import os
import signal
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from cpsched import cache, engines, interrupt, lexico, residency, seriesfront
from cpsched.checks import parse_int
from cpsched.engines.protocol import Options, Progress
from cpsched.errors import InputError, NoSchedule, ParameterError
from cpsched.instance import Instance
from cpsched.schedule import MODE_OBJECTIVES, OBJECTIVES, Front, Point, Schedule, load_front
from cpsched.validator import Report
from cpsched.validator import validate as check

#: share of the time limit the warm start may use at most (the rest goes to the engine)
WARM_SHARE = 0.25
#: a front's seeds (see _seeds): how many at most, the share of its time limit they may take, and
#: the graphs that get them, those with more tasks than SEED_TASKS (at 120 s: squeezenet's 66 tasks
#: 14.7 % -> 8.0 %; vgg19's 46 and fused squeezenet's 39, whose sweeps settle the memory end
#: themselves, 0.5 -> 0.7 % and 2.0 -> 2.7 % with them, the 3-12 s they cost)
SEEDS = 4
SEED_SHARE = 0.1
SEED_TASKS = 50
#: one more than the latency caps of a latency/energy front's energy bounds before its sweep (:func:`_rungs`)
RUNGS = 8
#: the share of a latency/energy front's time limit its segments' fronts may take (:func:`_joined`)
JOINED_SHARE = 0.3


def load(source: str | Path, platform: str | Path | None = None, dims: Mapping[str, int] | None = None,
         fuse: str | None = None, processors: int | None = None, contention: bool = False,
         costs: Sequence[str | Path] | None = None, precisions: Sequence[str | Path] | None = None) -> Instance:
    """Read an input as an :class:`~cpsched.instance.Instance`.

    ``source`` is an ONNX model (a path or a bundled name such as ``"alexnet"``,
    which needs ``platform``: ``"edge"``, ``"server"``, ``"multigpu"``, ``"cpu2"`` or a YAML
    file; ``dims`` pins symbolic dims, ``fuse`` is ``"none"``, ``"elementwise"`` or
    ``"standard"``), an instance JSON file, an STG graph (with ``processors``), or a
    task graph with communication costs (a Sinnen ``.dot`` with ``processors``, a
    Santiago ``.txt``/``.dag``, a HEFT ``*_task_exe_time.csv``; ``contention``:
    exclusive links instead of the published contention-free model).  ``costs`` lists
    measured cost tables of a model (``cpsched profile``): ``"PATH"`` for every device
    that runs as the table was measured, or ``"DEVICE=PATH"``; ``precisions`` lists
    precision tables (``cpsched quantize``), ``"PATH"`` for the device the table
    names or ``"DEVICE=PATH"``: devices whose platform entry lists int8 get fp32 and
    int8 modes for the nodes a table covers (PROBLEM.md section 6).

    >>> import cpsched
    >>> inst = cpsched.load("alexnet", platform="edge")
    >>> len(inst.tasks), [d.id for d in inst.devices]
    (24, ['cpu', 'gpu', 'npu'])
    """
    from cpsched.inputs import load_input

    return load_input(source, processors, platform, dims, fuse, contention, costs, precisions)


def _options(time_limit, workers, seed, memory_plan, log, progress) -> Options:
    options = Options(time_limit=time_limit, workers=workers, seed=seed, memory_plan=memory_plan, log=log,
                      progress=progress)
    lexico.check_options(options)
    return options


def _request(engine: str, options: Options, decompose, limits: Mapping[str, int] | None) -> dict[str, Any]:
    """What, besides the instance, decides a proven answer (the cache key's request part)."""
    return {"engine": engine, "workers": options.workers, "seed": options.seed, "redundant": options.redundant,
            "memory_plan": options.memory_plan, "decompose": decompose, "limits": dict(limits or {})}


def _engine_solver(engine: str, decompose: str | int) -> Callable[..., Schedule]:
    """The solve function of the pipeline without its warm start: decomposition or the whole model."""
    from cpsched import decompose as decomposition

    decomposition.check_decompose(decompose)
    return functools.partial(decomposition.solve, decompose=decompose, engine=engine)


def warm(instance: Instance, hint: str | Schedule | None, time_limit: float | None) -> Schedule | None:
    """The warm start ``hint`` asks for: ``"auto"`` (HEFT, justified when no data moves, within
    :data:`WARM_SHARE` of ``time_limit``), a schedule (checked), or None."""
    if hint is None or hint is False:
        return None
    if isinstance(hint, Schedule):
        return hint
    if hint != "auto":
        raise ParameterError("hint", hint, "expected 'auto', None or a Schedule")
    from cpsched.heuristics.justify import warm_start

    deadline = None if time_limit is None else time.monotonic() + WARM_SHARE * time_limit
    return warm_start(instance, deadline)


def solve(instance: Instance, objective: str | Sequence[str] = "latency", *, time_limit: float | None = None,
          workers: int | None = None, seed: int = 0, engine: str = "cpsat", decompose: str | int = "auto",
          memory_plan: str | None = None, hint: str | Schedule | None = "auto",
          limits: Mapping[str, int] | None = None, progress: Callable[[Progress], None] | None = None,
          log: Callable[[str], None] | None = None, cache_results: bool = False) -> Schedule:
    """Solve ``instance`` exactly: what ``cpsched solve`` does, warm start included.

    ``objective`` is one objective (``"latency"``, ``"energy"``, ``"memory"``, or
    ``"arena"`` with ``memory_plan="joint"``) or a lexicographic list
    (``["latency", "energy"]``: latency, then energy among the latency-optimal
    schedules); ``limits`` bounds objectives (``{"memory": 8 << 20}``).
    ``time_limit`` (seconds) covers the warm start and the solve; ``workers``
    None picks per problem class; ``engine`` is ``"cpsat"``, ``"milp"`` or
    ``"milp-highs"``; ``decompose`` is ``"auto"``, ``"off"`` or a window size;
    ``memory_plan`` is None, ``"after"`` or ``"joint"``; ``hint`` is ``"auto"``
    (HEFT, justified where no data moves), None, or a schedule.  ``progress``
    receives live :class:`~cpsched.engines.protocol.Progress` reports (from
    another thread), ``log`` the engine's log lines.  With ``cache_results``
    a proven answer is stored and reused (``$CPSCHED_CACHE_DIR``).

    The result is validated; ``status`` is ``optimal`` only when proven,
    ``feasible`` with ``bounds`` otherwise, ``infeasible`` / ``unknown`` with a
    ``reason``; ``solver`` records the settings, the warm start and the timings.

    >>> import cpsched
    >>> best = cpsched.solve(cpsched.load("alexnet", platform="edge"), "latency")
    >>> best.status.value, best.objectives["latency"]
    ('optimal', 7280)
    """
    options = _options(time_limit, workers, seed, memory_plan, log, progress)
    objectives = lexico.objective_list(objective, memory_plan)
    limits = lexico.check_limits(limits, memory_plan)
    solver = _engine_solver(engine, decompose)
    key = cache.key(instance, {"kind": "solve", "objectives": objectives,
                               **_request(engine, options, decompose, limits)}) if cache_results else None
    if key is not None:
        stored = cache.get(key, Schedule.from_dict, lambda s: check(instance, s).valid)
        if stored is not None:
            return dataclasses.replace(stored, solver={**stored.solver, "cached": True})
    clock = time.monotonic()
    with interrupt.guard():
        start = warm(instance, hint, time_limit)
        spent = time.monotonic() - clock
        if time_limit is not None:
            options = dataclasses.replace(options, time_limit=max(0.001, time_limit - spent))
        result = solver(instance, objectives, options, hint=start, limits=limits)
        if interrupt.requested():
            result = dataclasses.replace(result, solver={**result.solver, "stopped": "interrupted"})
    if hint == "auto":
        result = dataclasses.replace(result, solver={**result.solver, "warm_start": _warm_info(start, spent)})
    if key is not None and result.status.proven:
        cache.put(key, result.to_dict())
    return result


def _warm_info(start: Schedule | None, seconds: float) -> dict[str, Any]:
    """What ``solver.warm_start`` records: the engine (heft, or fbi: HEFT justified), its time, its
    objectives and HEFT's own (``heft``)."""
    if start is None:
        return {"engine": None, "wall_time": round(seconds, 3)}
    heft = start.solver.get("start", start.objectives) if start.solver.get("from") == "heft" else start.objectives
    return {"engine": start.solver.get("engine"), "wall_time": round(seconds, 3),
            "objectives": dict(start.objectives), "heft": dict(heft)}


def front(instance: Instance, objectives: Sequence[str] = ("latency", "memory"), *, epsilon: str = "auto",
          time_limit: float | None = None, point_limit: float | None = None, resume: Front | str | Path | None = None,
          progress: Callable[[str | Progress], None] | None = None, workers: int | None = None, seed: int = 0,
          engine: str = "cpsat", decompose: str | int = "auto", memory_plan: str | None = None,
          hint: str | Schedule | None = "auto", log: Callable[[str], None] | None = None,
          cache_results: bool = False, verify: bool = False, jobs: int | None = None,
          dask: str | Any = None) -> Front:
    """The exact Pareto front of ``instance`` over 2 or 3 ``objectives`` (epsilon-constraint sweep).

    ``epsilon`` names the objective that is bounded and stepped; ``"auto"`` steps a
    memory objective when there is one (capacity limits, the engine's strong case),
    else the first.  ``time_limit`` covers the whole sweep, ``point_limit`` each
    sub-solve; ``resume`` (a front or its file) continues an incomplete front
    of the same instance and request.  ``progress`` receives one line (a
    ``str``) per sub-solve and, with CP-SAT, live
    :class:`~cpsched.engines.protocol.Progress` reports during each.  The other
    parameters are those of :func:`solve`; the first sub-solve is warm-started
    like a single solve.  With ``verify``, a complete front is proven a second
    time from nothing (every gap between consecutive points re-solved;
    ``meta.verify``), within what is left of ``time_limit``.  ``jobs`` sub-solves
    run at once in local processes (default: as many as the cores hold solves of
    ``workers`` threads, so 1 on two cores), or on the dask scheduler ``dask``
    (an address or a ``distributed.Client``); the front is the same.

    ``complete`` is true exactly when the front's proven lower set (``lower``)
    equals its points; otherwise ``gap`` certifies how far it can be from the
    exact front (PROBLEM.md section 5).  Every point's schedule was validated by the
    solve that found it (resumed ones on loading).

    >>> import cpsched
    >>> from cpsched.generate import random_instance
    >>> f = cpsched.front(random_instance(4, 6, 2), ("latency", "energy"))
    >>> f.complete, all(p.status.value == "optimal" for p in f.points)
    (True, True)
    """
    from cpsched import pareto
    from cpsched.decompose import window_size

    live = progress if progress is not None and engines.get(engine).capabilities.progress else None
    options = _options(None, workers, seed, memory_plan, log, live)
    # a graph solved whole may prove its bounded steps on the proof portfolio (pareto uses it for those only:
    # each starts from a near point, so the proof is what is left)
    if window_size(instance, decompose) is None:
        options = dataclasses.replace(options, proof=True)
    names, epsilon, _, _ = pareto.roles(objectives, epsilon, memory_plan)
    for param, value in (("time_limit", time_limit), ("point_limit", point_limit)):
        if value is not None and not value > 0:
            raise ParameterError(param, value, "must be > 0 seconds (or None: no limit)")
    previous = _resumed(instance, resume, names, epsilon)
    solver = _engine_solver(engine, decompose)
    key = None
    if cache_results and previous is None:
        key = cache.key(instance, {"kind": "front", "objectives": names, "epsilon": epsilon,
                                   **_request(engine, options, decompose, None)})
        stored = cache.get(key, Front.from_dict, lambda f: all(check(instance, p.schedule).valid for p in f.points))
        if stored is not None:
            return dataclasses.replace(stored, meta={**stored.meta, "cached": True})
    budget = pareto.Budget(time_limit, point_limit)
    lines = (lambda line: progress(line)) if progress is not None else None
    with interrupt.guard(), _executor(jobs, dask, options.workers or 2) as (executor, width):
        start = warm(instance, hint, time_limit) if previous is None else None
        memory = [n for n in names if n in pareto.MEMORY]  # their floor: the residency relaxation's
        held = residency.within(instance, time_limit) if memory else None
        floors = {} if held is None else {n: held.bound for n in memory}
        seeds = _seeds(instance, names, held, start, time_limit) if hint and previous is None else []
        aims = _aims(instance, names, held, seeds) if hint else None
        joined = _joined(instance, names, options, time_limit, engine, decompose, lines) if previous is None else None
        seeds += list(joined.schedules) if joined is not None else []
        proofs = joined.proofs if joined is not None else []
        if joined is None or not joined.complete:
            proofs += _rungs(instance, names, time_limit)
        result = pareto.sweep(instance, names, epsilon, options, budget, lines, previous, solver, hint=start,
                              executor=executor, jobs=width, aims=aims, floors=floors, seeds=seeds, proofs=proofs)
        if joined is not None:
            result = dataclasses.replace(result, meta={**result.meta, "joined": dict(joined.info)})
        if verify and result.complete:
            result = pareto.verify(instance, result, options, budget, lines, solver, floors)
    if key is not None and result.complete:
        cache.put(key, result.to_dict())
    return result


def _aims(instance: Instance, names: Sequence[str], held: residency.Residency | None,
          seeds: Sequence[Schedule] = ()) -> dict[str, Schedule]:
    """Heuristic starts aimed at one objective: for the memory end, the least memory of a
    memory-frugal schedule (the residency relaxation's placement among its candidates) and
    ``seeds`` (the schedules under caps near the floor)."""
    if "memory" not in names:
        return {}
    from cpsched.heuristics.baselines import frugal

    try:
        starts = [frugal(instance, [held.devices] if held is not None and held.devices else []), *seeds]
    except NoSchedule:
        starts = list(seeds)
    return {"memory": min(starts, key=lambda s: s.objectives["memory"])} if starts else {}


def _seeds(instance: Instance, names: Sequence[str], held: residency.Residency | None, start: Schedule | None,
           time_limit: float | None) -> list[Schedule]:
    """Points near the memory end of a front with the memory objective, before its sweep, on a
    graph of more than :data:`SEED_TASKS` tasks: schedules under caps stepped up from the memory
    floor (:func:`cpsched.residency.ladder`), as many as :data:`SEEDS`, or fewer while they would
    take over :data:`SEED_SHARE` of the time limit.  Its steps under tight caps are the slowest
    to find anything (inception_v1's front at 120 s: 3 points and 61.0 % before, 7 points and
    16.4 % with them).  Each cap gets the relaxation's time within a solve of the time limit, or
    its share of half the seeds' time when that is more (a cap's placement may be sought twice):
    unfused inception_v1 (``edge``) 20 % above its floor has no placement in 3 s and 5,286 at
    14.0 MB in 6 s, where its 600-s front's steps found 7,903 at 13.9 MB."""
    if "memory" not in names or held is None or len(instance.tasks) <= SEED_TASKS:
        return []
    each = residency.time_for(time_limit)
    if time_limit is not None:
        each = max(each, SEED_SHARE * time_limit / (2 * SEEDS))
    count = SEEDS if time_limit is None else min(SEEDS, int(SEED_SHARE * time_limit / each))
    top = None if start is None or not start.status.has_schedule else start.objectives["memory"]
    return residency.ladder(instance, held.bound, top, count, each)


def _rungs(instance: Instance, names: Sequence[str], time_limit: float | None) -> list[dict]:
    """The energy's lower bounds under latency caps (:func:`cpsched.residency.rungs`) that a
    latency/energy front of a graph of more than :data:`SEED_TASKS` tasks starts its lower set
    with: :data:`RUNGS` caps, or fewer while they would take over :data:`SEED_SHARE` of the time
    limit."""
    if sorted(names) != ["energy", "latency"] or len(instance.tasks) <= SEED_TASKS:
        return []
    each = residency.time_for(time_limit)
    count = RUNGS if time_limit is None else min(RUNGS, int(SEED_SHARE * time_limit / each))
    return residency.rungs(instance, count, each) if count > 1 else []


def _joined(instance: Instance, names: Sequence[str], options: Options, time_limit: float | None, engine: str,
            decompose: str | int, progress: Callable[[str], None] | None) -> seriesfront.Joined | None:
    """The latency/energy front of a graph of more than :data:`SEED_TASKS` tasks joined from its
    segments' fronts (:func:`cpsched.seriesfront.front`) within :data:`JOINED_SHARE` of the time
    limit, which a latency/energy front starts with (its lower set and its glued points); None
    otherwise, with ``decompose`` off, or with a memory plan (the glued schedules have none)."""
    if sorted(names) != ["energy", "latency"] or len(instance.tasks) <= SEED_TASKS or decompose == "off" \
            or options.memory_plan is not None:
        return None
    share = None if time_limit is None else JOINED_SHARE * time_limit
    return seriesfront.front(instance, options, share, engine, progress)


@contextlib.contextmanager
def _executor(jobs: int | None, dask: str | Any, workers: int):
    """(executor, jobs) for a sweep: None for one job at a time, a process pool, or a dask client."""
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ParameterError("jobs", jobs, "must be an integer >= 1 (or None: as many as the cores allow)")
    if dask is not None:
        from distributed import Client

        client = dask if isinstance(dask, Client) else Client(dask)
        try:
            width = jobs or sum(client.nthreads().values()) or 1
            yield _DaskExecutor(client), width
        finally:
            if client is not dask:
                client.close()
        return
    width = jobs or max(1, (os.cpu_count() or 1) // workers)
    if width == 1:
        yield None, 1
        return
    pool = ProcessPoolExecutor(width, mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_sigint)
    try:
        yield pool, width
    finally:
        processes = dict(getattr(pool, "_processes", None) or {})
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes.values():  # a solve still in flight is not waited for
            process.terminate()


def _ignore_sigint() -> None:
    """Pool workers leave Ctrl-C to the sweep, which stops and writes what it has."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _DaskExecutor:
    """A dask client as an executor: every call runs (``pure=False``: no caching of equal calls)."""

    def __init__(self, client):
        self.client = client

    def submit(self, fn, *args, **kwargs):
        return self.client.submit(fn, *args, pure=False, **kwargs)


def _resumed(instance: Instance, resume: Front | str | Path | None, names: tuple[str, ...],
             epsilon: str) -> Front | None:
    """The front to resume, checked to belong to this instance and request."""
    if resume is None:
        return None
    where = None
    if not isinstance(resume, Front):
        where = str(resume)
        resume = load_front(resume)
    prefix = f"{where}: " if where else ""
    if resume.instance_hash is not None and resume.instance_hash != instance.content_hash:
        raise InputError(f"{prefix}that front belongs to another instance (its instance_hash differs)")
    if resume.instance != instance.name or tuple(resume.objectives) != names \
            or resume.meta.get("epsilon") != epsilon:
        raise InputError(f"{prefix}that front is for {resume.instance!r} over {','.join(resume.objectives)} "
                         f"(epsilon {resume.meta.get('epsilon')}), not this request")
    for i, p in enumerate(resume.points, 1):
        report = check(instance, p.schedule)
        if not report.valid:
            raise InputError(f"{prefix}point {i} does not validate against the instance: {report.violations[0]}")
    return resume


def select(front: Front, *, max_latency: int | str | None = None, max_energy: int | str | None = None,
           max_memory: int | str | None = None, max_error: int | str | None = None,
           minimise: str = "latency") -> Point:
    """Runtime selection: the point of ``front`` that minimises ``minimise`` within the limits.

    A limit is an integer in the front's unit or a string with a unit
    (``"2ms"``, ``"5mJ"``, ``"64MiB"``); ``max_error`` (PROBLEM.md section 6: the
    additive error proxy of the chosen modes) is an integer in the front's error
    unit.  When no point fits, the error names the
    limit that excludes the points (the one whose removal lets some point in).

    >>> import cpsched
    >>> from cpsched.generate import random_instance
    >>> f = cpsched.front(random_instance(4, 6, 2), ("latency", "energy"))
    >>> p = cpsched.select(f, max_energy=f.nadir[1], minimise="latency")
    >>> p.values == min(q.values for q in f.points)
    True
    """
    from cpsched import quantities

    if minimise not in OBJECTIVES + MODE_OBJECTIVES:
        raise ParameterError("minimise", minimise, f"expected one of {', '.join(OBJECTIVES + MODE_OBJECTIVES)}")
    given = {"latency": max_latency, "energy": max_energy, "memory": max_memory, "error": max_error}
    limits = {}
    for name, value in given.items():
        if value is None:
            continue
        if isinstance(value, str) and name in MODE_OBJECTIVES:
            limits[name] = parse_int(value, f"max_{name}")
        elif isinstance(value, str):
            limits[name] = quantities.parse(value, name, front.units.get(name, ""), f"max_{name}")
        elif isinstance(value, int) and not isinstance(value, bool):
            limits[name] = value
        else:
            raise ParameterError(f"max_{name}", value, "expected an integer or a quantity such as '2ms'")
    if not front.points:
        raise InputError("the front has no points")

    for i, point in enumerate(front.points, 1):
        lacking = [n for n in (*limits, minimise) if n not in point.schedule.objectives]
        if lacking:
            raise InputError(f"point {i} of the front has no {lacking[0]} value in its schedule")

    def fits(point: Point, names) -> bool:
        return all(point.schedule.objectives[n] <= limits[n] for n in names)

    chosen = [p for p in front.points if fits(p, limits)]
    if not chosen:
        raise _no_fit(front, limits, given, fits)
    return min(chosen, key=lambda p: (p.schedule.objectives[minimise], p.values))


def _no_fit(front: Front, limits: dict[str, int], given: dict, fits) -> ParameterError:
    """The error naming the limit that excludes every point (see :func:`select`)."""
    unit = front.units
    for name in limits:
        others = [n for n in limits if n != name]
        within = [p for p in front.points if fits(p, others)]
        if within:
            best = min(p.schedule.objectives[name] for p in within)
            scope = "within the other limits" if others else "of the front"
            shown = f"{best:,} {unit.get(name, '')}".rstrip()
            return ParameterError(f"max_{name}", given[name], f"excludes every point {scope} (their smallest "
                                  f"{name} is {shown})")
    names = ", ".join(f"max_{n}" for n in limits)
    return ParameterError("limits", {f"max_{n}": given[n] for n in limits},
                          f"no point fits; {names} each exclude points, and no single one is the cause")


def validate(instance: Instance, schedule: Schedule) -> Report:
    """Check ``schedule`` against ``instance`` (every rule of PROBLEM.md) and recompute its objectives.

    A schedule of another instance is an InputError saying so, not a list of violations.

    >>> import cpsched
    >>> inst = cpsched.load("alexnet", platform="edge")
    >>> report = cpsched.validate(inst, cpsched.heuristic("heft", inst))
    >>> report.valid, report.objectives["latency"]
    (True, 7314)
    """
    if schedule.status.has_schedule and schedule.tasks:
        foreign = [t for t in schedule.tasks if not instance.has_task(t)]
        if len(foreign) == len(schedule.tasks) or (schedule.instance and schedule.instance != instance.name
                                                    and foreign):
            raise InputError(f"the schedule is for {schedule.instance or 'another instance'!r}, not "
                             f"{instance.name!r} ({len(foreign)} of its {len(schedule.tasks)} tasks are unknown here)")
    return check(instance, schedule)


HEURISTICS = ("host", "fastest", "heft", "nsga2")


def heuristic(name: str, instance: Instance, *, objectives: Sequence[str] = ("latency", "memory"),
              population: int = 100, generations: int = 200, seed: int = 0) -> Schedule | Front:
    """A heuristic's answer: ``host``, ``fastest`` and ``heft`` give one validated schedule,
    ``nsga2`` a front (never complete) over ``objectives``.  Raises
    :class:`~cpsched.errors.NoSchedule` when the heuristic finds none.

    >>> import cpsched
    >>> s = cpsched.heuristic("heft", cpsched.load("alexnet", platform="edge"))
    >>> s.status.value, s.solver["engine"]
    ('feasible', 'heft')
    """
    if name not in HEURISTICS:
        raise ParameterError("name", name, f"expected one of {', '.join(HEURISTICS)}")
    if name == "nsga2":
        if isinstance(population, bool) or not isinstance(population, int) or population < 2:
            raise ParameterError("population", population, "must be an integer >= 2")
        if isinstance(generations, bool) or not isinstance(generations, int) or generations < 1:
            raise ParameterError("generations", generations, "must be an integer >= 1")
        from cpsched.heuristics.nsga2 import nsga2

        names = lexico.objective_list(list(objectives), None, "objectives")
        return nsga2(instance, names, population, generations, seed)
    from cpsched.heuristics import baselines
    from cpsched.heuristics.heft import heft

    return {"host": baselines.host, "fastest": baselines.fastest, "heft": heft}[name](instance)


def compare(reference: Front, other: Front, ref: float | Sequence[float] | None = None) -> dict:
    """Quality of ``other`` against ``reference``: hypervolumes and their ratio, IGD+, additive
    epsilon, reference points found exactly (moocore), in the reference's normalised space.

    ``ref`` is the hypervolume reference point per normalised objective (default
    1.1; each value must be >= 1 so that every reference point counts).  Fronts
    of different instances are refused; an incomplete reference gives a warning
    (the indicators are then relative to a front that is not proven).

    >>> import cpsched
    >>> from cpsched.generate import random_instance
    >>> inst = random_instance(4, 6, 2)
    >>> exact = cpsched.front(inst, ("latency", "energy"))
    >>> cpsched.compare(exact, exact)["hypervolume_ratio"]
    1.0
    """
    from cpsched import indicators

    if reference.instance_hash and other.instance_hash and reference.instance_hash != other.instance_hash:
        raise InputError(f"the fronts belong to different instances ({reference.instance!r} and "
                         f"{other.instance!r}: their instance_hash differ)")
    if reference.instance != other.instance:
        raise InputError(f"the fronts belong to different instances ({reference.instance!r} and {other.instance!r})")
    values = [ref] if isinstance(ref, (int, float)) else list(ref or [])
    if any(isinstance(r, bool) or not isinstance(r, (int, float)) or r < 1 for r in values):
        raise ParameterError("ref", ref, "each value must be a number >= 1 (the reference front's nadir is 1)")
    if not reference.complete:
        warnings.warn(f"the reference front of {reference.instance!r} is not complete: the indicators compare "
                      "with points that are not proven", stacklevel=2)
    try:
        return indicators.compare(reference, other, ref)
    except ValueError as exc:
        raise InputError(str(exc)) from None


__all__ = ["load", "solve", "front", "select", "validate", "heuristic", "compare", "NoSchedule"]


def export(schedule: Schedule | str | Path, model: str | Path, folder: str | Path, *,
           platform: str | Path | None = None, dims: Mapping[str, int] | None = None, fuse: str | None = None,
           costs: Sequence[str | Path] | None = None, precisions: Sequence[str | Path] | None = None):
    """Write ``schedule`` (a schedule or its file) of ``model`` as a deployable plan in ``folder``:
    one ONNX subgraph per part and ``manifest.json`` (:mod:`cpsched.subgraphs`).  ``platform``
    defaults to the preset the schedule's instance names; ``fuse`` None finds the fusion
    whose tasks are the schedule's; ``costs`` and ``precisions`` as for :func:`load`.  Returns the
    :class:`~cpsched.plan.Plan`.  A schedule of another model, with a task the model lacks,
    or not valid for it, is an InputError."""
    from cpsched.subgraphs import export as write
    from cpsched.subgraphs import match
    from cpsched.schedule import load_schedule

    schedule = schedule if isinstance(schedule, Schedule) else load_schedule(schedule)
    instance = match(model, schedule, platform, dims, fuse, costs, precisions)
    return write(schedule, instance, folder, platform)


def run(folder: str | Path, *, runs: int = 20, warmup: int = 3, golden: str | Path | None = None,
        atol: float = 1e-4, reference: str | Path | None = None):
    """Execute the plan in ``folder`` with onnxruntime (:mod:`cpsched.executor`): ``runs`` timed runs
    after ``warmup``, on ``golden`` inputs (an ``.npz``; default fixed-seed random data), outputs
    compared with the unsplit model (``reference`` overrides the plan's).  Returns the
    :class:`~cpsched.executor.Report` (``failed`` lists outputs beyond ``atol``)."""
    from cpsched.executor import run_plan

    return run_plan(folder, runs, warmup, golden, atol, reference)


def run_front(front: Front | str | Path, model: str | Path, *, platform: str | Path | None = None,
              dims: Mapping[str, int] | None = None, fuse: str | None = None,
              costs: Sequence[str | Path] | None = None, precisions: Sequence[str | Path] | None = None,
              runs: int = 20, warmup: int = 3, golden: str | Path | None = None, atol: float = 1e-4) -> dict:
    """:func:`run` for every point of ``front``: predicted and measured latency per point and
    Kendall's tau between the two orders (``kendall_tau``).  With int8 modes (``precisions``),
    each point also gets ``int8_tasks`` and ``int8_error``: the real error of the model with
    exactly its int8 tasks quantised (:func:`cpsched.quantization.measured_error`), beside the
    ``error`` proxy the solver used; the plans themselves run in fp32."""
    from cpsched.executor import run_front as execute
    from cpsched.subgraphs import match

    front = front if isinstance(front, Front) else load_front(front)
    if not front.points:
        raise InputError("the front has no points to run")
    instance = match(model, front.points[0].schedule, platform, dims, fuse, costs, precisions)
    if front.instance_hash and front.instance_hash != instance.content_hash:
        raise InputError(f"the front belongs to another instance than {instance.name} (its instance_hash differs)")
    result = execute(front, instance, runs, warmup, golden, atol, platform=platform)
    tables = instance.meta.get("precisions", {})
    if tables:
        from cpsched.precisions import int8_nodes
        from cpsched.quantization import measured_error

        first = next(iter(tables.values()))
        for row, point in zip(result["points"], front.points):
            nodes = int8_nodes(instance, point.schedule)
            row["int8_tasks"] = sum(1 for p in point.schedule.tasks.values() if p.mode.startswith("int8"))
            row["int8_error"] = measured_error(model, nodes, first.get("calibration", 8), first.get("seed", 0), dims)
    return result
