"""The lexicographic driver: one loop, every engine (CPSAT-NOTES section 3.1, stages S1 -> S2).

:func:`solve` minimises ``objectives`` in order: stage ``k`` minimises
objective ``k`` with every earlier objective held at its stage value, each
``limits`` entry an upper bound throughout.  The driver owns what every
engine shares:

* the frame (:func:`prepare`): usable devices (an unreachable task is a
  proven ``infeasible``), the makespan's range (a valid hint within the limits
  caps the horizon when latency comes first), the devices whose memory is
  modelled, a limit below its relaxation bound (proven infeasible at once);
* the capability check: a request that needs what the engine lacks is a
  :class:`~cpsched.errors.CapabilityError` naming it;
* statuses: ``optimal`` only when every stage was proven, else ``feasible``
  with ``bounds`` (the stage's proven bound, never below the instance's
  relaxation bound, never above the value found; a valid hint within the
  limits when the engine found nothing in its time), ``infeasible`` with a
  reason that names the limit that cannot be met when limits are the cause,
  ``unknown`` when nothing was found;
* values recomputed by the validator from the read-back schedule, memory
  plans (``after``: packed here; ``joint``: read from the model), the final
  validation, Ctrl-C (:mod:`cpsched.interrupt`) between stages.

>>> from cpsched.generate import random_instance
>>> inst = random_instance(3, 6, 2)
>>> a, b = solve(inst, "latency"), solve(inst, "latency", engine="milp")
>>> a.status.value, b.status.value, a.objectives["latency"] == b.objectives["latency"]
('optimal', 'optimal', True)
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence

from cpsched import engines, interrupt
from cpsched.bounds import Unreachable, horizon, memory_may_bind, relaxation_bounds, usable_devices
from cpsched.engines.protocol import MEMORY_PLANS, Engine, Frame, Model, Options, requirements
from cpsched.errors import CapabilityError, ParameterError
from cpsched.instance import Instance
from cpsched.schedule import MODE_OBJECTIVES, OBJECTIVES, PLAN_OBJECTIVES, Placement, Schedule, Status, Transfer, non_dominated
from cpsched.validator import objectives as recompute
from cpsched.validator import scored, validate

#: seconds for the ``after`` plan when the solve has no time limit (greedy-by-size always runs;
#: the exact search proves a minimal arena within it or the plan says "feasible")
AFTER_PLAN_LIMIT = 60.0
#: seconds at most for the check that tells which limit made a stage infeasible
EXPLAIN_LIMIT = 10.0
#: seconds a later stage gets at least under Options.tail_share
MIN_TAIL = 1.0
#: share of the time left that confirming an infeasible answer under memory capacities may use
CONFIRM_SHARE = 0.5


def objective_list(objective: str | Sequence[str], memory_plan: str | None = None,
                   param: str = "objective") -> list[str]:
    """``objective`` as a list of distinct known names (a plain string is one objective)."""
    names = [objective] if isinstance(objective, str) else list(objective)
    allowed = OBJECTIVES + MODE_OBJECTIVES + (PLAN_OBJECTIVES if memory_plan == "joint" else ())
    bad = [n for n in names if n not in allowed]
    if not names or bad or len(set(names)) != len(names):
        extra = " ('arena' needs memory_plan='joint')" if any(n in PLAN_OBJECTIVES for n in bad) else ""
        raise ParameterError(param, objective, f"expected distinct names from {', '.join(allowed)}{extra}")
    return names


def check_limits(limits: Mapping[str, int] | None, memory_plan: str | None = None) -> dict[str, int]:
    """``limits`` as a dict of known objective names to integers, or a ParameterError."""
    limits = dict(limits or {})
    if limits:
        objective_list(list(limits), memory_plan, "limits")
    for name, ub in limits.items():
        if isinstance(ub, bool) or not isinstance(ub, int):
            raise ParameterError("limits", {name: ub}, "each limit must be an integer")
    return limits


def check_modes(instance: Instance, names: Sequence[str]) -> None:
    """Refuse the ``error`` objective (or limit) on an instance without named modes, where it
    is not defined (PROBLEM.md section 6)."""
    if instance.plain and any(n in MODE_OBJECTIVES for n in names):
        raise ParameterError("objective", "error", "the instance has no named modes (PROBLEM.md section 6), "
                                                   "so its error is not defined")


def check_options(options: Options) -> None:
    """Refuse option values no engine accepts, naming the parameter."""
    if options.time_limit is not None and not options.time_limit > 0:
        raise ParameterError("time_limit", options.time_limit, "must be > 0 seconds (or None: no limit)")
    if options.workers is not None and (isinstance(options.workers, bool) or not isinstance(options.workers, int)
                                        or options.workers < 1):
        raise ParameterError("workers", options.workers, "must be an integer >= 1 (or None: per problem class)")
    if isinstance(options.seed, bool) or not isinstance(options.seed, int) or options.seed < 0:
        raise ParameterError("seed", options.seed, "must be an integer >= 0")
    if options.tail_share is not None and not 0 < options.tail_share <= 1:
        raise ParameterError("tail_share", options.tail_share, "must be in (0, 1] (or None: all the time left)")
    if options.memory_plan not in (None, *MEMORY_PLANS):
        raise ParameterError("memory_plan", options.memory_plan, f"expected None, {' or '.join(MEMORY_PLANS)}")


def prepare(engine: Engine, instance: Instance, objectives: Sequence[str], options: Options,
            hint: Schedule | None = None, limits: Mapping[str, int] | None = None,
            usable: Mapping[str, tuple[str, ...]] | None = None,
            memory_devices: set[str] | None = None) -> tuple[Model, Frame] | str:
    """The engine's model of ``instance`` under ``limits``, or the reason it is proven infeasible.

    ``hint``, a valid schedule of the instance, caps the horizon when latency comes
    first and it meets the limits.  ``usable`` (default :func:`usable_devices`) may
    narrow each task's devices and ``memory_devices`` widen the devices whose memory
    is modelled, as a part of a larger instance needs (:mod:`cpsched.decompose`).
    Raises CapabilityError when the request needs what ``engine`` lacks.
    """
    limits = dict(limits or {})
    check_modes(instance, [*objectives, *limits])
    try:
        usable = dict(usable) if usable is not None else usable_devices(instance)
    except Unreachable as exc:
        return str(exc)
    floors = relaxation_bounds(instance, usable)
    floors["arena"] = floors["memory"]
    for name, ub in limits.items():
        if ub < floors[name]:
            return f"{name} <= {ub} is below its lower bound {floors[name]} (the instance alone proves it)"
    lower, upper = floors["latency"], horizon(instance, usable)
    if hint is not None and objectives[0] == "latency":
        values = recompute(instance, hint)[0]
        if all(values[name] <= ub for name, ub in limits.items() if name in values):
            upper = min(upper, values["latency"])
    upper = max(upper, lower)
    if "latency" in limits:
        upper = min(upper, limits["latency"])
    mem = memory_may_bind(instance, usable) | set(memory_devices or ())
    if "memory" in objectives or "memory" in limits or options.memory_plan == "joint":
        mem = {d.id for d in instance.devices}
    frame = Frame(usable, lower, upper, frozenset(mem), floors)
    for capability, why in requirements(instance, frame, objectives, limits, options):
        if not getattr(engine.capabilities, capability):
            raise CapabilityError(engine.name, capability, f"{why} (use engine='cpsat')")
    model = engine.build(instance, frame, objectives, options)
    for name, ub in limits.items():
        model.limit(name, ub)
    return model, frame


def solve(instance: Instance, objectives: str | Sequence[str] = ("latency",), options: Options = Options(),
          hint: Schedule | None = None, limits: Mapping[str, int] | None = None,
          engine: str | Engine = "cpsat", floors: Mapping[str, int] | None = None,
          spans: Sequence[tuple] = (), tables: Sequence[tuple] = ()) -> Schedule:
    """Minimise ``objectives`` lexicographically with ``engine``, each of ``limits`` an upper
    bound; return a validated :class:`Schedule` (see the module docstring for its status).

    ``floors`` are proven lower bounds on objectives (a sweep's lower set): added as
    constraints, they let the engine stop as soon as it meets one.  ``spans`` are the
    series decomposition's proven segment bounds (:attr:`cpsched.series.Series.spans`),
    added as redundant constraints (:meth:`Model.span`): valid under any limits, they give
    the engine the series bound per device choice.  ``tables`` are segments' span bounds per
    placement (:func:`cpsched.residency.tables`), added the same way (:meth:`Model.span_table`).
    """
    eng = engines.get(engine)
    objectives = objective_list(objectives, options.memory_plan)
    limits = check_limits(limits, options.memory_plan)
    check_options(options)
    clock = time.monotonic()
    settings = {"engine": eng.name, **eng.settings(instance, options), "objectives": objectives,
                **({"limits": limits} if limits else {}), "seed": options.seed, "time_limit": options.time_limit,
                "redundant": options.redundant, "lp": options.lp, **({"proof": True} if options.proof else {}),
                **({"memory_plan": options.memory_plan} if options.memory_plan else {}),
                **({"tail_share": options.tail_share} if options.tail_share is not None else {})}

    proofs: list[dict] = []  # what each stage proved (cpsched.certify): a sweep's lower set is built from them

    def proved(given: Mapping[str, int], objective: str | None, at_least: int | None) -> None:
        proofs.append({"given": dict(given), "objective": objective, "at_least": at_least})

    def finish(status: Status, reason: str | None = None, bounds: dict | None = None, **extra) -> Schedule:
        info = {**settings, **extra, "proofs": proofs, "wall_time": round(time.monotonic() - clock, 3)}
        return Schedule(instance.name, status, bounds=bounds or {}, reason=reason, solver=info)

    witness = hint if hint is not None and validate(instance, hint, check_claims=False).valid else None
    prepared = prepare(eng, instance, objectives, options, witness, limits)
    if isinstance(prepared, str):
        proved(limits, None, None)
        return finish(Status.INFEASIBLE, prepared)
    model, frame = prepared
    for name, lb in (floors or {}).items():
        model.at_least(name, lb)
    for span in spans:
        model.span(*span)
    if spans:
        settings["spans"] = len(spans)
    for (source, between, sink), rows in tables:
        model.span_table(source, between, sink, rows)
    if tables:
        settings["tables"] = len(tables)
    settings.update(getattr(model, "info", {}))
    if witness is not None:
        model.hint(witness)
    met: list[tuple] = []  # (tasks, transfers) of every intermediate solution, with Options.archive
    if options.archive and eng.capabilities.solutions and options.memory_plan is None:
        model.collect(lambda tasks, transfers, _plan: met.append((tasks, transfers)))
    best: Schedule | None = None
    bounds: dict[str, int] = {}
    stages: list[dict] = []
    proven, stopped = True, None
    # a stage's bound is at least the given floors, proven: CP-SAT's own bound may not take them in
    # (unfused inception_v1's least energy, ``edge``: 8.16e9 with a floor of 9.04e9)
    proven_floors = {n: max(v, (floors or {}).get(n, v)) for n, v in frame.floors.items()}
    first_bound = proven_floors[objectives[0]]
    source = "search"  # where the first objective's bound comes from (solver.bound_source)
    fixed: dict[str, int] = {}  # the earlier stages' values, each a limit of the later stages
    k = 0
    while k < len(objectives):
        name, tied = objectives[k], objectives[k + 1] if k + 1 < len(objectives) else None
        left = None if options.time_limit is None else options.time_limit - (time.monotonic() - clock)
        if k > 0 and left is not None and options.tail_share is not None:
            left = min(left, max(MIN_TAIL, options.tail_share * options.time_limit))
        if interrupt.requested() or (left is not None and left <= 0):
            proven, stopped = False, "interrupted" if interrupt.requested() else "time limit"
            break
        folded = model.minimise(name, then=tied)
        stage = model.solve(left)
        stages.append({"objective": name, "status": stage.word, "wall_time": stage.wall_time})
        if stage.status is Status.INFEASIBLE:
            if k > 0:
                raise RuntimeError(f"engine {eng.name!r} called stage {k + 1} ({name}) infeasible, but the "
                                   "previous stage's schedule satisfies it")
            spare = None if left is None else left - stage.wall_time
            confirmed, found = confirm(eng, instance, objectives, options, limits, frame, stage, spare)
            if found is not None:  # the engine was wrong: solve with the formulation that found a schedule
                rest = None if options.time_limit is None else max(0.001, options.time_limit
                                                                   - (time.monotonic() - clock))
                result = solve(instance, objectives, dataclasses.replace(options, time_limit=rest), found, limits,
                               eng.confirmer())
                return dataclasses.replace(result, solver={**result.solver, "contradiction": confirmed})
            reason, why = explain(eng, instance, objectives, options, limits, witness, frame,
                                  None if spare is None else spare - CONFIRM_SHARE * spare)
            if confirmed:
                why["confirmed_by"] = confirmed
            proved(limits, None, None)
            return finish(Status.INFEASIBLE, reason, stages=stages, infeasible=why)
        given = _given(limits, fixed)
        if not stage.status.has_schedule:
            proven = False
            if k == 0 and stage.bound is not None:
                first_bound = max(first_bound, stage.bound)
            if k == 0:
                proved(given, name, first_bound)
            stopped = "interrupted" if interrupt.requested() else "time limit"
            break
        current = schedule_of(instance, *model.read())
        value = current.objectives[name]
        floor = proven_floors[name]
        floor_source = "relaxation" if floor == frame.floors[name] else "floor"
        if stage.status is Status.OPTIMAL:
            if stage.bound is not None and value > stage.bound:
                raise RuntimeError(f"engine {eng.name!r} claimed {name} optimal with bound {stage.bound}, but "
                                   f"the schedule it returned has {name} {value}")
            bounds[name] = value
            if k == 0 and value == floor:  # the schedule meets the relaxation (or a given floor): that is the proof
                source = floor_source
        else:
            proven = False
            bounds[name] = min(value, max(floor, stage.bound if stage.bound is not None else floor))
            if k == 0 and (stage.bound is None or stage.bound <= floor):
                source = floor_source
        proved(given, name, bounds[name])
        best = current
        settled = [name]
        if folded and stage.status is Status.OPTIMAL:  # ``tied`` was minimised among these optima: proven too
            bounds[tied] = current.objectives[tied]
            proved(_given(limits, {**fixed, name: value}), tied, bounds[tied])
            stages.append({"objective": tied, "status": "folded", "wall_time": 0.0})
            settled.append(tied)
        k += len(settled)
        if k < len(objectives):
            for n in settled:
                model.limit(n, current.objectives[n])
                fixed[n] = current.objectives[n]
            model.hint(current)
    extra = {"stages": stages, "bound_source": source, **({"stopped": stopped} if stopped else {})}
    if best is None and witness is not None and options.memory_plan != "joint" \
            and all(recompute(instance, witness)[0][n] <= ub for n, ub in limits.items()):
        best = schedule_of(instance, dict(witness.tasks), list(witness.transfers))  # the warm start stands
        bounds = {objectives[0]: min(first_bound, best.objectives[objectives[0]])}
        extra["answer"] = "warm start (the engine found nothing better in its time)"
    if best is None:
        return finish(Status.UNKNOWN, "no schedule found within the time limit" if stopped != "interrupted"
                      else "interrupted before a schedule was found", {objectives[0]: first_bound}, **extra)
    info = {**settings, **extra, "proofs": proofs, "wall_time": round(time.monotonic() - clock, 3)}
    result = dataclasses.replace(best, status=Status.OPTIMAL if proven else Status.FEASIBLE, bounds=bounds,
                                 solver={**best.solver, **info})
    if options.memory_plan == "after":
        result = plan_after(instance, result, options, clock)
    report = validate(instance, result)
    if not report.valid:
        raise RuntimeError(f"engine {eng.name!r} produced an invalid schedule: "
                           + "; ".join(map(str, report.violations)))
    return dataclasses.replace(result, archive=archive(instance, met, result)) if met else result


def _given(limits: Mapping[str, int], fixed: Mapping[str, int]) -> dict[str, int]:
    """The limits a stage ran under: ``limits`` and the earlier stages' values, the lesser of each."""
    return {**limits, **{n: min(v, limits.get(n, v)) for n, v in fixed.items()}}


def archive(instance: Instance, solutions: Sequence[tuple], result: Schedule) -> tuple[Schedule, ...]:
    """The intermediate ``solutions`` as validated schedules that neither ``result`` nor another
    of them dominates (or equals) over every objective: candidates for any front's points."""
    return kept(instance, [schedule_of(instance, tasks, transfers) for tasks, transfers in solutions], result)


def kept(instance: Instance, schedules: Sequence[Schedule], result: Schedule) -> tuple[Schedule, ...]:
    """``schedules`` that neither ``result`` nor another of them dominates (or equals) over every
    objective, validated and marked ``feasible`` without bounds or solver record (what a
    sub-solve proved of them does not make them front points): candidates for any front's points."""
    candidates = [result, *schedules]
    vectors = [tuple(s.objectives[n] for n in OBJECTIVES) for s in candidates]
    out = tuple(dataclasses.replace(candidates[i], status=Status.FEASIBLE, bounds={}, solver={}, archive=())
                for i in non_dominated(vectors) if i > 0)
    for found in out:
        report = validate(instance, found)
        if not report.valid:
            raise RuntimeError(f"an intermediate solution is invalid: {'; '.join(map(str, report.violations))}")
    return out


def schedule_of(instance: Instance, tasks: dict[str, Placement], transfers: list[Transfer],
                plan: dict | None = None) -> Schedule:
    """A read-back solution as a schedule with recomputed objectives (and its joint memory plan)."""
    result = scored(instance, tasks, transfers)
    if plan is not None:
        from cpsched.memplan import with_plan
        result = with_plan(instance, result, plan)
    return result


def plan_after(instance: Instance, result: Schedule, options: Options, clock: float) -> Schedule:
    """The ``after`` mode: pack the solved schedule's buffers (:func:`cpsched.memplan.plan_schedule`);
    when no plan fits, the schedule is returned without one and ``solver.memory_plan`` says why."""
    from cpsched.memplan import NoPlan, plan_schedule

    left = AFTER_PLAN_LIMIT
    if options.time_limit is not None:
        left = max(0.0, options.time_limit - (time.monotonic() - clock))
    try:
        return plan_schedule(instance, result, left)
    except NoPlan as exc:
        return dataclasses.replace(result, solver={**result.solver,
                                                   "memory_plan": {"mode": "after", "error": str(exc)}})


def confirm(engine: Engine, instance: Instance, objectives: Sequence[str], options: Options,
            limits: Mapping[str, int], frame: Frame, stage, time_left: float | None) -> tuple[str | None, Schedule | None]:
    """Check an ``infeasible`` answer under memory capacities with the engine's independent
    formulation (:meth:`confirmer`, e.g. CP-SAT's ``demand`` memory model).

    Returns (what the check says, None), or (what it says, a schedule it found) when the
    second formulation contradicts the first: that schedule is validated, so the first
    answer was wrong.  None when nothing needs confirming (no memory modelled, a joint
    plan) or the engine has no second formulation.
    """
    confirmer = getattr(engine, "confirmer", lambda: None)()
    if confirmer is None or not frame.memory_devices or options.memory_plan == "joint":
        return None, None
    budget = max(EXPLAIN_LIMIT, 2 * stage.wall_time)
    if time_left is not None:
        budget = min(budget, CONFIRM_SHARE * time_left)
    label = f"{confirmer.name}, {getattr(confirmer, 'memory_model', 'second')} memory model"
    if budget <= 0 or interrupt.requested():
        return f"not confirmed (no time left for the {label})", None
    check = _check(confirmer, instance, objectives[0], options, limits, budget)
    if isinstance(check, str):
        return f"confirmed by the instance's bounds ({check})", None
    status, model = check
    if status is Status.INFEASIBLE:
        return f"confirmed by the {label}", None
    if status.has_schedule:
        found = schedule_of(instance, *model.read())
        if validate(instance, found).valid:
            return (f"{engine.name} proved it infeasible, but the {label} found a valid schedule "
                    f"({objectives[0]} {found.objectives[objectives[0]]})"), found
        raise RuntimeError(f"both {engine.name} memory models disagree and the schedule found is invalid")
    return f"not confirmed (the {label} decided nothing in {budget:.1f} s)", None


def explain(engine: Engine, instance: Instance, objectives: Sequence[str], options: Options,
            limits: Mapping[str, int], witness: Schedule | None, frame: Frame,
            time_left: float | None) -> tuple[str, dict]:
    """Why the first stage is infeasible: the limits (which ones), or the instance itself.

    A valid schedule that breaks some limits proves that dropping them makes the
    problem feasible, so those limits are named; without one, one feasibility solve
    without limits (at most :data:`EXPLAIN_LIMIT` seconds) tells limits from instance.
    """
    proof = f"{engine.name} proved it"
    instance_reason = (f"no schedule fits the memory capacities of {', '.join(sorted(frame.memory_devices))} "
                       f"({proof})" if frame.memory_devices else f"no schedule satisfies the instance ({proof})")
    if not limits:
        return instance_reason, {"cause": "instance"}
    if witness is not None:
        values = recompute(instance, witness)[0]
        broken = {n: ub for n, ub in limits.items() if values.get(n, 0) > ub}
        if not broken:
            raise RuntimeError(f"engine {engine.name!r} proved infeasible a model that a valid schedule satisfies "
                               f"(limits {limits})")
        return _limits_reason(broken, proof), {"cause": "limits", "limits": broken}
    budget = EXPLAIN_LIMIT if time_left is None else max(0.0, min(EXPLAIN_LIMIT, time_left))
    check = None
    if budget > 0 and not interrupt.requested():
        unlimited = _check(engine, instance, objectives[0], options, {}, budget)
        check = None if isinstance(unlimited, str) else unlimited[0]
    if check is not None and check.has_schedule:
        return _limits_reason(dict(limits), proof), {"cause": "limits", "limits": dict(limits)}
    if check is Status.INFEASIBLE:
        return instance_reason, {"cause": "instance"}
    bounds = ", ".join(f"{n} <= {ub}" for n, ub in limits.items())
    return (f"no schedule satisfies the instance within the limits {bounds} ({proof}; whether the limits or "
            f"the instance rule it out was not determined in time)"), {"cause": "unknown", "limits": dict(limits)}


def _check(engine: Engine, instance: Instance, objective: str, options: Options, limits: Mapping[str, int],
           budget: float) -> tuple[Status, Model] | str:
    """One minimisation of ``objective`` under ``limits`` within ``budget`` seconds, without
    callbacks: (its status, the model to read), or the reason the frame proves it infeasible."""
    prepared = prepare(engine, instance, [objective], dataclasses.replace(options, progress=None, log=None),
                       limits=limits)
    if isinstance(prepared, str):
        return prepared
    model, _ = prepared
    model.minimise(objective)
    return model.solve(budget).status, model


def _limits_reason(broken: Mapping[str, int], proof: str) -> str:
    named = " and ".join(f"{n} <= {ub}" for n, ub in broken.items())
    if len(broken) == 1:
        return f"no schedule meets the limit {named} ({proof}; without it there is one)"
    return f"no schedule meets the limits {named} together ({proof}; without them there is one)"
