"""Layer-level decomposition for graphs too large to prove whole, with a bound valid for the whole.

1. :func:`coarsen` merges chains (a task whose only successor has it as its
   only predecessor, both on the same usable devices) into super-tasks whose
   durations and energies are the exact sums, and whose memory is counted so
   that the expanded schedule never holds more than the coarse one did;
2. :func:`windows` groups the coarse graph's topological generations into
   windows of about ``size`` tasks;
3. the windows are solved in sequence: window ``k``'s model is the instance
   restricted to windows ``1..k`` (:func:`restrict`), the earlier tasks
   pinned where they were placed, so the state at the boundary (device ready
   times, where each live tensor is and when it got there, memory in use) is
   carried over exactly, and a later task may still fill an earlier gap.
   Each window minimises the first objective, ties broken towards early
   ends (``len(window) * objective + sum of the window's ends``);
4. the stitched schedule is expanded to the original tasks (:func:`expand`)
   and polished by a time-limited solve of the whole original model, hinted
   by it.

Before the windows, the series decomposition (:mod:`cpsched.series`) solves
the segments between cut tasks exactly: its bound holds for the whole, and
when its glued schedule meets it, it is optimal and the rest is skipped (the
objectives after the first, if any, are then solved on the whole model from it,
its optimum proven: no windows).  When the series glued any valid schedule
(or its priced tries did, or, memory first, the residency relaxation's start
below), ``auto`` skips the windows too: on ``edge`` at 60 s
the stitched schedule lost to it on every large bundled model (inception_v1
3,724 against 3,654, inception_v2 6,509 against 5,620, resnet50 15,774 against
15,164, densenet121 18,092 against 17,688), and the polish and the search
after it get the windows' time.

Everything goes through the engine protocol (:mod:`cpsched.engines.protocol`:
``fix``, ``minimise`` with early-end tie-breaking, ``solve``, ``read``), so
any engine that declares the ``decomposition`` capability can run it.

When memory comes first, the residency relaxation (:mod:`cpsched.residency`:
weights and the running task's bytes per device, time dropped) gives a bound
and, list-scheduled, a memory-frugal start; when latency comes first under a
memory limit (a front's step), its placement within the limit that is least
in a latency relaxation gives a start, and the windows still run (resnet50 on
``edge``, 40 s: at 42 MB the start is the only schedule found, 18,027; at
50 MB the windows' own, 17,395-17,563, are as good as what follows from it).
On a graph with cut tasks, such a step also gets the series bound under the
limit, priced where its device choice holds more weights than a device may
(:func:`_capped_priced`): the cost of the weights the cap pushes off the
fastest device, which the whole model's bound does not see; and the search
gets each segment's span bound per placement (:func:`cpsched.residency.tables`)
as redundant table constraints.

The answer is the best of the stitched, glued and polished schedules; its
bound is the largest of the polish's proven bound, the relaxation bounds
(:func:`cpsched.bounds.relaxation_bounds`), the series bound (priced under a
memory limit) and the residency bound, all valid for the original problem
(``solver.bound_source`` names the one that won), so ``optimal`` is said only
when the whole model proved it or the schedule meets that bound.

A fork, join or fork-join graph on interchangeable processors (:mod:`cpsched.forkjoin`)
is solved whole first, with :data:`FORKJOIN_SHARE` of the time; what that leaves
open, the assignment model's probes from its best schedule try to close.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import networkx as nx

from cpsched import engines, forkjoin, interrupt, lexico, lns, residency, series
from cpsched.bounds import Unreachable, memory_may_bind, relaxation_bounds, usable_devices
from cpsched.classes import device_classes
from cpsched.engines.protocol import Engine, Options
from cpsched.errors import CapabilityError, NoSchedule, ParameterError
from cpsched.heuristics.baselines import frugal
from cpsched.instance import Instance, Mode, Task, Tensor
from cpsched.schedule import Placement, Schedule, Status
from cpsched.validator import scored, validate

#: ``auto`` decomposes graphs with more tasks than this (CPSAT-NOTES 4.4: whole-model
#: proofs on 2 cores break down at 60-80 heterogeneous tasks)
AUTO_TASKS = 100
#: the window size ``auto`` uses, in coarse tasks
AUTO_WINDOW = 60
#: the share of the time left after the series bounds that the windows get together
WINDOW_SHARE = 0.5
#: the share of the time left after the windows that the polish gets; large-neighbourhood search
#: (cpsched.lns) from the best schedule so far gets the rest
POLISH_SHARE = 0.3
#: seconds per window when the solve has no time limit (the polish then runs unlimited)
WINDOW_LIMIT = 10.0
#: the shares of the time limit the series decomposition's segment solves get together, and
#: its priced rounds (cpsched.series.priced) when its device choice overfills a device (weights, or
#: weights and a task's own bytes) and every pair on the bound's path was proven (the rounds cost
#: about as much again; unproven segments say time is short), with what the series left of its share:
#: (series, priced), and for latency on a graph decomposed into windows, where the series is the
#: only proof in sight.  On edge at 60 s (one run each, this 2-core machine), those at 0.6 / 0.3
#: against 0.2 / 0.2: inception_v2 proves 12-15 of 14-17 segment solves instead of 2 of 8 (bound
#: 4,474 -> 4,812; gap 21.8 % -> 13.6 %), resnet50 fits three priced tries instead of one (5.1 % ->
#: 1.4 %); the tries stop early where pricing has little to gain (series._ceiling), which leaves
#: inception_v1 its search (0.2 % -> 0.1 %).  Fused inception_v2 (94 tasks, solved whole) proves at
#: 59.5 s after 0.2 of the time, not after 0.6.  Minimising memory, one run each moved inception_v1
#: from 2.4 % to 7.2 % and resnet50 from 18.8 % to 7.9 %, but two runs of one code differ as much
#: (the residency bound proves in one and not the other), so memory keeps 0.2 / 0.2
SHARES = (0.2, 0.2)
DECOMPOSED_LATENCY_SHARES = (0.6, 0.3)
#: the share of a sweep step's time limit that its latency spans get, the first time (see _latency_spans)
SPAN_SHARE = 0.2
#: graphs with more tasks than this try the series decomposition first (``decompose`` not ``off``,
#: no limits)
SERIES_TASKS = 50
#: graphs with more tasks than this get the latency series' spans as redundant constraints whenever
#: latency is an objective or a limit (cpsched.series.Series.spans)
SPAN_TASKS = 20
#: the share of the time a fork-join graph's whole model gets before the assignment model's probes
#: (Sinnen's 21-node fork, join and fork-join graphs at CCR 0.10 on 4 processors: open at 30 s
#: whole, proven in 1.6-6.6 s by the probes)
FORKJOIN_SHARE = 1 / 3


@dataclass(frozen=True)
class Coarse:
    """A coarse instance and, per super-task, the original tasks it runs back to back."""

    instance: Instance
    members: Mapping[str, tuple[str, ...]]


def check_decompose(decompose: str | int) -> str | int:
    """``decompose`` if it is ``auto``, ``off`` or a window size (an integer >= 1), else a ParameterError."""
    if decompose in ("auto", "off"):
        return decompose
    if isinstance(decompose, bool) or not isinstance(decompose, int) or decompose < 1:
        raise ParameterError("decompose", decompose, "expected 'auto', 'off' or a window size (an integer >= 1)")
    return decompose


def window_size(instance: Instance, decompose: str | int) -> int | None:
    """The window size ``decompose`` asks for on ``instance``, or None to solve it whole.

    ``auto`` decomposes when the graph has more than :data:`AUTO_TASKS` tasks
    and the model is not a pure identical-processor one (every device merged
    into classes, no memory, no transfers: that model proves whole, see
    ``benchmarks/results/stg-*.md``).
    """
    if decompose == "off":
        return None
    if decompose == "auto":
        if len(instance.tasks) <= AUTO_TASKS:
            return None
        try:
            usable = usable_devices(instance)
        except Unreachable:
            return None
        merged = device_classes(instance, usable, memory_may_bind(instance, usable))
        if sum(len(m) for m in merged.values()) == len(instance.devices):
            return None
        return AUTO_WINDOW
    return check_decompose(decompose)


def coarsen(instance: Instance, usable: Mapping[str, tuple[str, ...]]) -> Coarse:
    """Merge chains into super-tasks named after their first task.

    A chain link ``u -> v`` needs ``u``'s only successor to be ``v``, ``v``'s
    only predecessor ``u`` and the same usable devices; a chain stops growing
    where its super-task would no longer fit some usable device's memory.
    A super-task has the summed durations, energies and weights; the tensors
    between its members disappear, and its workspace is the most any member
    holds at once of its own workspace and those tensors.  Every other tensor
    is live over the whole super-task, so the coarse model never holds less
    than the expanded schedule does.
    """
    g = instance.graph
    chains: list[list[str]] = []
    where: dict[str, int] = {}
    for v in instance.topological_order:
        preds = list(g.predecessors(v))
        u = preds[0] if len(preds) == 1 else None
        if u is not None and g.out_degree(u) == 1 and usable[u] == usable[v]:
            chain = chains[where[u]]
            if _fits(instance, usable, chain + [v]):
                chain.append(v)
                where[v] = where[u]
                continue
        where[v] = len(chains)
        chains.append([v])
    members = {chain[0]: tuple(chain) for chain in chains}
    if len(members) == len(instance.tasks):
        return Coarse(instance, {v: (v,) for v in members})
    owner = {v: chain[0] for chain in chains for v in chain}
    tasks = tuple(_super_task(instance, usable, chain) if len(chain) > 1 else instance.task(chain[0])
                  for chain in chains)
    tensors = []
    for tensor in instance.tensors:
        src = owner.get(tensor.producer) if tensor.producer is not None else None
        consumers = tuple(dict.fromkeys(owner[c] for c in tensor.consumers if owner[c] != src))
        if not consumers and not tensor.output and tensor.producer is not None:
            continue  # between members of one chain
        tensors.append(Tensor(tensor.id, tensor.size, src, consumers, tensor.output))
    coarse = dataclasses.replace(instance, tasks=tasks, tensors=tuple(tensors), groups={})
    return Coarse(coarse, members)


def _internal(instance: Instance, chain: Sequence[str]) -> list[Tensor]:
    """The tensors produced and consumed inside a chain only."""
    inside = set(chain)
    return [t for v in chain for t in instance.outputs_of[v]
            if not t.output and t.consumers and set(t.consumers) <= inside]


def _super_task(instance: Instance, usable: Mapping[str, tuple[str, ...]], chain: Sequence[str]) -> Task:
    internal = _internal(instance, chain)
    held = {v: instance.task(v).workspace for v in chain}
    for t in internal:
        for v in (t.producer, *t.consumers):
            held[v] += t.size
    modes = {d: Mode(sum(instance.task(v).modes[d].duration for v in chain),
                     sum(instance.task(v).modes[d].energy for v in chain)) for d in usable[chain[0]]}
    return Task(chain[0], "chain", modes, weights=sum(instance.task(v).weights for v in chain),
                workspace=max(held.values()))


def _fits(instance: Instance, usable: Mapping[str, tuple[str, ...]], chain: Sequence[str]) -> bool:
    """Whether the super-task of ``chain`` still fits every device its members may use."""
    task = _super_task(instance, usable, chain)
    internal = {t.id for t in _internal(instance, chain)}
    external = {t.id: t.size for v in chain for t in instance.inputs_of[v] + instance.outputs_of[v]
                if t.id not in internal}
    need = task.weights + task.workspace + sum(external.values())
    return all(need <= instance.device(d).memory for d in usable[chain[0]])


def windows(instance: Instance, size: int) -> list[tuple[str, ...]]:
    """Consecutive topological generations of the task graph, grouped into windows of at
    least ``size`` tasks (the last may be smaller)."""
    out: list[tuple[str, ...]] = []
    current: list[str] = []
    for generation in nx.topological_generations(instance.graph):
        current.extend(sorted(generation, key=instance.topological_order.index))
        if len(current) >= size:
            out.append(tuple(current))
            current = []
    if current:
        out.append(tuple(current))
    return out


def restrict(instance: Instance, keep: set[str]) -> Instance:
    """The instance of the tasks in ``keep``: a tensor consumed outside it becomes an output
    (live to its end, as it is in the whole schedule at least that long); graph inputs no
    kept task reads are left out."""
    tensors = []
    for t in instance.tensors:
        consumers = tuple(c for c in t.consumers if c in keep)
        if t.producer is None and not consumers:
            continue
        if t.producer is not None and t.producer not in keep:
            continue
        tensors.append(Tensor(t.id, t.size, t.producer, consumers,
                              t.output or (t.producer is not None and len(consumers) < len(t.consumers))))
    return dataclasses.replace(instance, tasks=tuple(t for t in instance.tasks if t.id in keep),
                               tensors=tuple(tensors), groups={})


def expand(coarse: Coarse, original: Instance, schedule: Schedule) -> Schedule:
    """The coarse schedule on the original tasks: each chain back to back on its device."""
    tasks = {}
    for sid, p in schedule.tasks.items():
        start = p.start
        for v in coarse.members[sid]:
            tasks[v] = Placement(p.device, start)
            start += original.task(v).modes[p.device].duration
    order = {t.id: i for i, t in enumerate(original.tasks)}
    return scored(original, dict(sorted(tasks.items(), key=lambda kv: order[kv[0]])), schedule.transfers)


def _forkjoin(instance: Instance, shaped: forkjoin.Shape, options: Options, hint: Schedule | None,
              eng: Engine, floors: Mapping[str, int] | None) -> Schedule:
    """Latency of a fork-join graph: the whole model first, then the probes from its schedule."""
    clock = time.monotonic()
    total = options.time_limit
    whole = lexico.solve(instance, ["latency"], options if total is None else
                         dataclasses.replace(options, time_limit=FORKJOIN_SHARE * total),
                         hint=hint, engine=eng, floors=floors)
    if whole.status is not Status.FEASIBLE:
        return whole
    probed = forkjoin.solve(instance, shaped, _left(options, clock).time_limit,
                            options.workers or 2, best=whole, bound=whole.bounds["latency"])
    by_probe = probed.status is Status.OPTIMAL and probed.solver["bound_source"] == "search"
    return dataclasses.replace(probed, solver={**whole.solver, "forkjoin": probed.solver, "time_limit": total,
                                               **({"bound_source": "forkjoin"} if by_probe else {}),
                                               "wall_time": round(time.monotonic() - clock, 3)})


def solve(instance: Instance, objectives: Sequence[str] = ("latency",), options: Options = Options(),
          hint: Schedule | None = None, limits: Mapping[str, int] | None = None,
          decompose: str | int = "auto", engine: str | Engine = "cpsat",
          floors: Mapping[str, int] | None = None) -> Schedule:
    """:func:`cpsched.lexico.solve`, decomposed when ``decompose`` asks for it
    (``auto``, ``off`` or a window size in coarse tasks; see :func:`window_size`).

    Same signature and status semantics as the driver, so sweeps can use it;
    ``solver.decompose`` records the windows, the stitched values and where the
    bound came from.  The memory plan ``joint`` is solved whole (windows have no
    offsets); ``after`` packs the final schedule.  An engine without the
    ``decomposition`` capability solves whole under ``auto`` and refuses an
    explicit window size.
    """
    eng = engines.get(engine)
    size = window_size(instance, decompose)
    if size is not None and not eng.capabilities.decomposition:
        if decompose != "auto":
            raise CapabilityError(eng.name, "decomposition", f"decompose={decompose!r} was asked for")
        size = None
    if not instance.plain:  # windows and series parts are built for one mode per device
        if decompose not in ("auto", "off"):
            raise ParameterError("decompose", decompose, "the instance has named modes (PROBLEM.md section 6), "
                                                         "which the decomposition does not support: use 'auto' or 'off'")
        return lexico.solve(instance, objectives, options, hint=hint, limits=limits, engine=eng, floors=floors)
    objectives = lexico.objective_list(objectives, options.memory_plan)
    shaped = forkjoin.shape(instance) if objectives == ["latency"] and not limits and options.memory_plan is None \
        and eng.name == "cpsat" else None
    if shaped is not None:
        return _forkjoin(instance, shaped, options, hint, eng, floors)
    series_on = decompose != "off" and eng.capabilities.decomposition  # "joint" is solved whole just below
    if series_on and objectives[0] == "energy" and len(instance.tasks) > SPAN_TASKS:
        floors = _spent(instance, limits, floors, options.time_limit)
    # not under limits (a sweep's steps): its share of every step showed no gain (fronts-edge-60s-series.md);
    # there the latency series' spans (cached per instance) are the engine's redundant constraints instead
    cuts = series_on and len(instance.tasks) > SERIES_TASKS and objectives[0] in series.OBJECTIVES and not limits
    spanned = series_on and len(instance.tasks) > SPAN_TASKS and "latency" in (*objectives, *(limits or {}))
    if (size is None and not cuts and not spanned) or options.memory_plan == "joint":
        return lexico.solve(instance, objectives, options, hint=hint, limits=limits, engine=eng, floors=floors)
    clock = time.monotonic()
    try:
        usable = usable_devices(instance)
    except Unreachable:
        return lexico.solve(instance, objectives, options, hint=hint, limits=limits, engine=eng, floors=floors)
    total = options.time_limit
    series_share, price_share = (DECOMPOSED_LATENCY_SHARES if size is not None and objectives[0] == "latency"
                                 else SHARES)
    if cuts:
        cut = series.solve(instance, objectives[0], usable, options, eng, limits,
                           None if total is None else series_share * total)
    else:
        cut = series.Series(objectives[0], None, None, {"skipped": f"{len(instance.tasks)} tasks"})
    if cuts and cut.objective == "latency":  # solved without limits, lazily: its own spans serve this solve
        spans = cut.spans
    else:
        spans = _latency_spans(instance, usable, options, eng) if spanned else ()
    capped = objectives[0] == "latency" and "memory" in (limits or {})
    capped_price = series_on and capped and len(instance.tasks) > SERIES_TASKS
    # under a memory cap the placement relaxation's span bounds are computed anyway (_capped_start)
    tables = residency.tables(instance) if capped and spanned else ()
    if size is None and not cuts:
        if capped:
            hint, floors = _capped_start(instance, objectives, hint, limits, floors, total)
            proven = _capped_proven(instance, objectives, hint, (floors or {}).get("latency"), limits, options,
                                    _settings(instance, eng, options, objectives, limits, {"answer": "placed"}))
            if proven is not None:
                return _planned(instance, dataclasses.replace(proven, archive=(), solver={
                    **proven.solver, "wall_time": round(time.monotonic() - clock, 3)}), options, clock)
        if not capped_price:  # else solved whole below, with the priced bound among the bounds
            whole = lexico.solve(instance, objectives, _left(options, clock), hint=hint, limits=limits, engine=eng,
                                 floors=floors, spans=spans, tables=tables)
            return _tied_up(instance, objectives, whole, limits, options) if capped else whole
    if cut.exact and len(objectives) == 1:
        return _planned(instance, _glued(instance, cut, eng, options, limits, clock), options, clock)
    found = {"glued": cut.schedule} if cut.schedule is not None else {}
    bounds = {"relaxation": relaxation_bounds(instance, usable)[objectives[0]], "series": cut.bound}
    info = {"series": dict(cut.info)}
    if objectives[0] == "memory":
        found.update(_residency(instance, bounds, limits, total, at_floor=size is None,
                                tie_break=len(objectives) > 1))
        if not any(s.objectives["memory"] <= bounds.get("residency", -1) for s in found.values()):
            found.update(_pinned(instance, objectives, options, eng, limits, total))
    if objectives[0] == "latency" and cut.weights is not None and cut.info["all_proven"] and not cut.exact:
        left = None if total is None else (price_share * total
                                           + max(0.0, series_share * total - (time.monotonic() - clock)))
        priced = series.priced(instance, usable, options, eng, cut, limits, left)
        bounds["priced"], info["priced"] = priced.bound, priced.info
        if priced.schedule is not None:
            found["priced"] = priced.schedule
    floor = max((floors or {}).get("latency", 0), bounds["relaxation"])  # what a capped price must beat
    if capped_price and size is None:
        if hint is not None and hint.within(limits):
            found["start"] = hint
        more, bounds["priced"], info["priced"] = _capped_priced(instance, usable, options, eng, limits, floor, total)
        found.update(more)
    if cut.exact:  # the glued schedule meets it: the whole solve's first stage ends at once, and the
        # later stages (the tie-break at that optimum) get all the time left instead of windows
        floors = _raised(floors, objectives[0], cut.bound)
    if size is None or cut.exact:
        whole = lexico.solve(instance, objectives, _left(options, clock), hint=_best(objectives, found, hint),
                             limits=limits, engine=eng, floors=floors, spans=spans, tables=tables)
        answer = _combine(instance, objectives, whole, found, bounds, info, clock, limits)
        return _planned(instance, _tied_up(instance, objectives, answer, limits, options) if capped else answer,
                        options, clock)
    if decompose == "auto" and found:
        info["windows"] = f"skipped: {', '.join(sorted(found))} found a schedule"
    else:
        found.update(_windows(instance, usable, eng, size, objectives[0], options, limits, info, clock))
    if capped:  # after the windows, which it leaves to run
        more, bounds["placed"] = _placed(instance, limits, total)
        found.update(more)
    if capped_price:
        more, bounds["priced"], info["priced"] = _capped_priced(instance, usable, options, eng, limits, floor, total)
        found.update(more)
    polish_options = _left(options, clock)
    if total is not None:
        polish_options = dataclasses.replace(polish_options, time_limit=POLISH_SHARE * polish_options.time_limit)
    polish = lexico.solve(instance, objectives, polish_options, hint=_best(objectives, found, hint),
                          limits=limits, engine=eng, floors=floors, spans=spans, tables=tables)
    info["polish"] = {"status": str(polish.status), **({"objectives": dict(polish.objectives)}
                                                       if polish.status.has_schedule else {})}
    start = _best(objectives, {**found, **({"polish": polish} if polish.status.has_schedule else {})}, None)
    if start is not None and polish.status is not Status.OPTIMAL:
        found["lns"], info["lns"] = lns.improve(instance, start, objectives, options, eng, limits,
                                                _left(options, clock).time_limit)
    return _planned(instance, _combine(instance, objectives, polish, found, bounds, info, clock, limits), options,
                    clock)


#: instance content hash, engine -> the spans of its latency series without limits, every pair of
#: cut devices solved, computed once per process (a sweep's steps all solve the same instance under
#: other limits)
_SPANS: dict[tuple[str, str], tuple] = {}


def _latency_spans(instance: Instance, usable: Mapping[str, tuple[str, ...]], options: Options,
                   engine: Engine) -> tuple:
    """The spans of ``instance``'s latency series (:attr:`cpsched.series.Series.spans`), solved
    without limits (so valid under any) and for every pair of cut devices (under a limit the
    cheapest pairs may be out of reach), within :data:`SPAN_SHARE` of the time limit the first
    time, then kept."""
    key = instance.content_hash, engine.name
    if key not in _SPANS:
        limit = None if options.time_limit is None else SPAN_SHARE * options.time_limit
        cut = series.solve(instance, "latency", usable, options, engine, None, limit, every_pair=True)
        _SPANS[key] = cut.spans if cut.bound is not None else ()
    return _SPANS[key]


def _residency(instance: Instance, bounds: dict, limits: Mapping[str, int] | None,
               total: float | None, at_floor: bool = False, tie_break: bool = False) -> dict[str, Schedule]:
    """The residency relaxation's memory bound (:mod:`cpsched.residency`) put in ``bounds``, and
    the candidates that meet ``limits``: the memory-frugal schedule with its placement
    ("frugal") and, ``at_floor`` (a graph solved whole), the capped placement's list schedule
    under the bound itself ("floor"), which proves the memory where it meets it and starts the
    latency ``tie_break`` of a front's memory end (squeezenet on ``edge``: 2,545 at the floor,
    where the search had found 3,077 in 12 s); not sought when the memory is the only
    objective and the frugal schedule already meets the bound."""
    held = residency.within(instance, total)
    if held is None:
        return {}
    bounds["residency"] = held.bound
    found = {}
    if held.devices:
        try:
            found["frugal"] = frugal(instance, [held.devices])
        except NoSchedule:
            pass
    settled = "frugal" in found and found["frugal"].objectives["memory"] <= held.bound
    if at_floor and (tie_break or not settled):
        answer = residency.capped(instance, held.bound, residency.time_for(total))
        if answer is not None and answer.schedule is not None:
            found["floor"] = answer.schedule
    return {name: start for name, start in found.items() if start.within(limits)}


def _pinned(instance: Instance, objectives: Sequence[str], options: Options, engine: Engine,
            limits: Mapping[str, int] | None, total: float | None) -> dict[str, Schedule]:
    """{"pinned": the best schedule with every task on the residency relaxation's placement,
    "pinned 2", ...: on others that tie with it in the relaxation}, each solved by the
    engine (memory first) within an even share of what is left of :data:`PINNED_SHARE` of
    ``total`` and kept when it meets ``limits``; sought when no other start meets the
    relaxation's bound, and ended at the first that does.

    The relaxation counts each device's weights and the bytes of one task running there; on
    its own placement the engine only orders tasks and transfers, and often meets that count:
    fused resnet50 (``edge``) 38.96 MB in 0.9 s (bound 38.95 MB), where the whole model's
    memory search had 39.34 MB after 38 s; fused inception_v1 its optimum (11,052,384 bytes) in
    1-4 s, where the whole model's search ended at 11.17 MB after 195 s.  Placements that tie
    in the relaxation do not all meet it (:func:`cpsched.residency.another`); those that miss
    are points of the front all the same (11,516,256 bytes at 5,429, where the front's next
    point at 120 s was 14.35 MB)."""
    held = residency.within(instance, total)
    if held is None or not held.devices:
        return {}
    deadline = time.monotonic() + (PINNED_LIMIT if total is None else min(PINNED_LIMIT, PINNED_SHARE * total))
    tried: list[Mapping[str, str]] = []
    found: dict[str, Schedule] = {}
    devices: Mapping[str, str] | None = held.devices
    while devices is not None and not interrupt.requested():
        share = (deadline - time.monotonic()) / (PINNED_TRIES - len(tried))
        answer = lexico.solve(lns.pinned(instance, devices), objectives, dataclasses.replace(
            options, time_limit=share, progress=None, log=None, archive=False), limits=limits, engine=engine)
        if answer.status.has_schedule and answer.within(limits):
            found[f"pinned {len(tried) + 1}" if tried else "pinned"] = lns.unpinned(instance, answer)
        tried.append(devices)
        left = deadline - time.monotonic()
        if any(s.objectives["memory"] <= held.bound for s in found.values()) or len(tried) == PINNED_TRIES \
                or left <= 0:
            break
        devices = residency.another(instance, held, tried, len(tried), left / 2)
    return found


def _placed(instance: Instance, limits: Mapping[str, int],
            total: float | None) -> tuple[dict[str, Schedule], int | None]:
    """({"placed": :func:`cpsched.residency.capped`'s schedule under the memory limit} when it
    meets ``limits``, else empty; the capped relaxation's latency bound, None when it has none)."""
    answer = residency.capped(instance, limits["memory"], residency.time_for(total))
    if answer is None:
        return {}, None
    start = answer.schedule
    return ({"placed": start} if start is not None and start.within(limits) else {}), answer.bound


#: a memory-first solve's schedules on the residency relaxation's placements (:func:`_pinned`) get this
#: share of its time, at most PINNED_LIMIT seconds, for at most PINNED_TRIES placements: fused densenet121
#: (``edge``, a 600-s front's memory end) met its floor in 3 runs of 3, on the first placement or the third,
#: where 10 s and 3 tries met it in 1 run of 2
PINNED_SHARE = 0.1
PINNED_LIMIT = 30.0
PINNED_TRIES = 5
#: the share of a latency step's time under a memory cap that its priced bound gets at most (a third of
#: it for the series under the cap); fused resnet50 (``edge``) under 45.9 MB: 9,737 in 4 s, 10,148 in
#: 15 s, where the step's search stays at the bound without the cap, 8,837
CAPPED_PRICE_SHARE = 0.3
#: the share of a step's time under a memory cap that the memory tie-break's probe gets at most
#: (:func:`_capped_proven`; squeezenet on ``edge`` under 7.14 MB: proven in 1.5 s)
TIE_SHARE = 0.25
#: (instance content hash, memory cap) -> (the seconds it was given, the priced answer there): a step
#: tried again reuses it, unless given twice the time
_PRICED: dict[tuple[str, int], tuple[float | None, tuple[dict[str, Schedule], int | None, dict]]] = {}
#: (instance content hash, the capped limit's name with any other limit) -> the caps under which a step's extra bound (the priced
#: latency under a memory cap, the placed energy under a latency cap) beat none of the step's floors (a
#: miss): not sought again under a cap as large as one of them, nor at all when it has missed before it
#: ever beat them (inception_v1 fused, ``edge``: the priced bound below the floors under every cap,
#: 6-8 s a step)
_MISSED: dict[tuple[str, str], list[int]] = {}
#: the keys of :data:`_MISSED` whose extra bound beat a step's floors at least once
_BEATEN: set[tuple[str, str]] = set()


def _missed(key: tuple[str, str], cap: int) -> list[int] | None:
    """The caps of the misses (:data:`_MISSED`) for which a step of ``key`` under ``cap`` skips
    its extra bound, None when it seeks it."""
    missed = _MISSED.get(key, [])
    return missed if (missed and key not in _BEATEN) or any(cap >= c for c in missed) else None


def _note(key: tuple[str, str], cap: int, beaten: bool) -> None:
    """Record whether a step's extra bound under ``cap`` beat its floors (:data:`_MISSED`)."""
    if beaten:
        _BEATEN.add(key)
    else:
        _MISSED.setdefault(key, []).append(cap)


def _capped_priced(instance: Instance, usable: Mapping[str, tuple[str, ...]], options: Options, engine: Engine,
                   limits: Mapping[str, int], floor: int,
                   total: float | None) -> tuple[dict[str, Schedule], int | None, dict]:
    """({"priced": the best valid schedule the series and its priced tries found within ``limits``}
    or empty, the larger of the series bound and the priced bound under the memory cap when it
    beats ``floor``, the step's own latency bound (else None), a record).

    A graph's weights are live on their device for the whole makespan, so a memory cap may push
    weights off the fastest device; the whole model's bound does not see what that costs, and a
    front's capped step then stays at the latency bound without the cap (fused resnet50, 57 tasks,
    ``edge``: 8,837 under every cap).  The series bound under the cap, priced where its device
    choice holds more weights than a device's memory (:func:`cpsched.series.priced`), does: 9,572
    under 59.5 MB and 10,148 under 45.9 MB.  Where the choice's weights fit and only a task's own
    bytes overfill a device, pricing is not tried (squeezenet under 6.6 MB: 1,828 in 6 s, below
    the search's 1,842).  A bound no higher than the floors is a miss (:data:`_MISSED`,
    :data:`_BEATEN`).
    """
    cap, key = limits["memory"], instance.content_hash
    missed = _missed((key, "memory"), cap)
    if missed is not None:
        return {}, None, {"skipped": f"no gain under {', '.join(map(str, sorted(missed)))} bytes"}
    budget = None if total is None else CAPPED_PRICE_SHARE * total
    given, held = _PRICED.get((key, cap), (None, None))
    if held is None or (budget is not None and given is not None and budget >= 2 * given):
        held = _price_under(instance, usable, options, engine, limits, budget)
        _PRICED[key, cap] = budget, held
    found, bound, info = held
    beaten = bound is not None and bound > floor
    _note((key, "memory"), cap, beaten)
    return found, bound if beaten else None, info


def _price_under(instance: Instance, usable: Mapping[str, tuple[str, ...]], options: Options, engine: Engine,
                 limits: Mapping[str, int], budget: float | None) -> tuple[dict[str, Schedule], int | None, dict]:
    """:func:`_capped_priced`'s answer, solved within ``budget`` seconds (None: no limit)."""
    clock = time.monotonic()
    cut = series.solve(instance, "latency", usable, options, engine, limits, None if budget is None else budget / 3)
    bound, info, schedules = cut.bound, {"series": dict(cut.info)}, [cut.schedule]
    room = {d.id: min(d.memory, limits["memory"]) for d in instance.devices}
    if cut.weights is not None and cut.info.get("all_proven") and any(w > room[d] for d, w in cut.weights.items()):
        left = None if budget is None else max(0.0, budget - (time.monotonic() - clock))
        answer = series.priced(instance, usable, options, engine, cut, limits, left)
        info["priced"] = answer.info
        if answer.bound is not None and (bound is None or answer.bound > bound):
            bound = answer.bound
        schedules.append(answer.schedule)
    best = min((s for s in schedules if s is not None and s.within(limits)), default=None,
               key=lambda s: (s.objectives["latency"], s.objectives["memory"]))
    info["wall_time"] = round(time.monotonic() - clock, 3)
    return ({"priced": best} if best is not None else {}), bound, info


def _capped_start(instance: Instance, objectives: Sequence[str], hint: Schedule | None,
                  limits: Mapping[str, int], floors: Mapping[str, int] | None,
                  total: float | None) -> tuple[Schedule | None, Mapping[str, int] | None]:
    """(the better start of a latency step under a memory cap, ``floors`` with the latency's
    raised to the capped relaxation's bound where that is higher).  The start is the caller's
    hint when it meets ``limits`` and is shorter, else the capped placement's list schedule
    (:func:`_placed`): on squeezenet (``edge``) the optimum under 7.17 and 8.03 MB (2,103 and
    1,828) and the front's memory end under 6.31 MB, in 0.2-4 s, where the whole model's search
    took 11-67 s to find the first.  The bound lifts the front's lower set near its memory floor
    (squeezenet under 6.31 MB: 2,239 against the search's 1,646)."""
    found, bound = _placed(instance, limits, total)
    if hint is not None and hint.within(limits):
        found["hint"] = hint
    if bound is not None and bound > (floors or {}).get("latency", 0):
        floors = {**(floors or {}), "latency": bound}
    return _best(objectives, found, hint), floors


def _spent(instance: Instance, limits: Mapping[str, int] | None, floors: Mapping[str, int] | None,
           total: float | None) -> Mapping[str, int] | None:
    """``floors`` with the energy's raised to the placement relaxation's bound within ``limits``
    (:func:`cpsched.residency.spent`) where that is higher: a front's energy step under a
    latency limit, where the whole model's bound stays at the energy without it (fused
    shufflenet, ``edge``: 9.10e9 pJ under 3,851 against 8.71e9), and the energy end.  A step
    whose bound beats no floor is a miss (:func:`_missed`), as for the priced latency bound: on a
    graph whose steps the engine proves itself (fused inception_v1) the lower set is ahead of it,
    and each step would pay up to :data:`cpsched.residency.LIMIT` seconds for nothing."""
    # a miss says nothing of larger latency caps under another memory limit (a three-objective sweep's)
    cap, memory = (limits or {}).get("latency"), (limits or {}).get("memory")
    key = instance.content_hash, f"latency, memory {memory}"
    if cap is not None and _missed(key, cap) is not None:
        return floors
    bound = residency.spent(instance, limits, residency.time_for(total))
    beaten = bound is not None and bound > (floors or {}).get("energy", 0)
    if cap is not None:
        _note(key, cap, beaten)
    return {**(floors or {}), "energy": bound} if beaten else floors


def _capped_proven(instance: Instance, objectives: Sequence[str], found: Schedule | None, bound: int | None,
                   limits: Mapping[str, int], options: Options, solver: Mapping) -> Schedule | None:
    """``found`` proven optimal, with ``solver`` and the statements added, when its latency meets
    ``bound`` (a proven latency bound under the memory cap: the relaxation's from
    :func:`_capped_start`, or a search's) and, for a memory tie-break, no placement within one
    byte less has the placement relaxation's latency within it (:func:`cpsched.residency.tied`).
    None otherwise, and for other objectives after latency.  Squeezenet (``edge``) under 7.17 MB:
    2,103 and 7,140,960 proven in 1.3 s, from the relaxation's own list schedule."""
    if found is None or not found.within(limits) or list(objectives) not in (["latency"], ["latency", "memory"]) \
            or not validate(instance, found, check_claims=False).valid:
        return None
    latency, memory = found.objectives["latency"], found.objectives["memory"]
    if bound is None or latency > bound:
        return None
    proofs = [{"given": dict(limits), "objective": "latency", "at_least": latency}]
    if len(objectives) == 2:
        limit = residency.LIMIT if options.time_limit is None else min(residency.LIMIT, TIE_SHARE * options.time_limit)
        if not residency.tied(instance, latency, memory, limit):
            return None
        proofs.append({"given": {**limits, "latency": latency}, "objective": "memory", "at_least": memory})
    return dataclasses.replace(found, status=Status.OPTIMAL, bounds={}, reason=None, solver={
        **solver, "bound_source": "placed", "proofs": [*solver.get("proofs", []), *proofs]})


def _tied_up(instance: Instance, objectives: Sequence[str], answer: Schedule, limits: Mapping[str, int],
             options: Options) -> Schedule:
    """``answer`` of a step under a memory cap, proven optimal where its search met its latency
    bound but left the memory tie-break open (:func:`_capped_proven`); else as it is."""
    if answer.status is not Status.FEASIBLE:
        return answer
    return _capped_proven(instance, objectives, answer, answer.bounds.get("latency"), limits, options,
                          answer.solver) or answer


def _raised(floors: Mapping[str, int] | None, first: str, bound: int) -> dict[str, int]:
    """``floors`` with the first objective's raised to ``bound``, a proven bound that the hint
    meets: the whole solve then stops its first stage at once and goes on to the later ones.
    (A bound the hint does not meet is not passed: in cnn-edge runs at 60 s it showed no gain,
    inception_v2 at 48.6 % with it against 33.0 % and 37.4 % without.)"""
    return {**(floors or {}), first: max((floors or {}).get(first, 0), bound)}


def _planned(instance: Instance, result: Schedule, options: Options, clock: float) -> Schedule:
    """``result`` with the ``after`` memory plan when one is asked for and it has none yet (the
    polish packs its own; a glued or stitched answer is packed here)."""
    if options.memory_plan != "after" or not result.status.has_schedule or result.memory_plan:
        return result
    return lexico.plan_after(instance, result, options, clock)


def _left(options: Options, clock: float) -> Options:
    """``options`` with the time limit that is left since ``clock``."""
    if options.time_limit is None:
        return options
    return dataclasses.replace(options, time_limit=max(0.001, options.time_limit - (time.monotonic() - clock)))


def _best(objectives: Sequence[str], found: Mapping[str, Schedule], hint: Schedule | None) -> Schedule | None:
    """The lexicographically best schedule found so far, the caller's hint when there is none."""
    return min(found.values(), key=lambda s: [s.objectives[name] for name in objectives], default=hint)


def _glued(instance: Instance, cut: series.Series, engine: Engine, options: Options, limits: Mapping[str, int] | None,
           clock: float) -> Schedule:
    """The series decomposition's glued schedule, proven optimal by its own bound."""
    solver = {**_settings(instance, engine, options, [cut.objective], limits,
                          {"series": dict(cut.info), "answer": "glued"}),
              "bound_source": "series", "proofs": _proofs([], cut.objective, cut.bound, limits),
              "wall_time": round(time.monotonic() - clock, 3)}
    return dataclasses.replace(cut.schedule, status=Status.OPTIMAL, bounds={}, solver=solver)


def _settings(instance: Instance, engine: Engine, options: Options, objectives: Sequence[str],
              limits: Mapping[str, int] | None, decomposed: dict) -> dict:
    """What ``solver`` records of an answer the decomposition proved without the engine's search
    (the engine and its settings, the request, ``decomposed`` as ``solver.decompose``)."""
    return {"engine": engine.name, **engine.settings(instance, options), "objectives": list(objectives),
            **({"limits": dict(limits)} if limits else {}), "seed": options.seed,
            "time_limit": options.time_limit, "decompose": decomposed}


def _windows(instance: Instance, usable: Mapping[str, tuple[str, ...]], engine: Engine, size: int, first: str,
             options: Options, limits: Mapping[str, int] | None, info: dict, clock: float) -> dict[str, Schedule]:
    """{"stitched": the windows' schedule, expanded and validated} (empty when they found none),
    the windows solved within :data:`WINDOW_SHARE` of the time left; ``info`` records them."""
    coarse = coarsen(instance, usable)
    parts = windows(coarse.instance, size)
    info.update({"window": size, "windows": len(parts), "tasks": len(instance.tasks),
                 "coarse_tasks": len(coarse.instance.tasks)})
    total = options.time_limit
    budget = None if total is None else WINDOW_SHARE * max(0.0, total - (time.monotonic() - clock))
    stitched, note = _stitch(engine, coarse, parts, first, options, limits, budget)
    info["window_time"] = round(time.monotonic() - clock, 3)
    if stitched is None:
        info["stitched"] = note
        return {}
    stitched = expand(coarse, instance, stitched)
    report = validate(instance, stitched, check_claims=False)
    if not report.valid:
        raise RuntimeError("decomposition produced an invalid schedule: " + "; ".join(map(str, report.violations)))
    info["stitched"] = dict(stitched.objectives)
    return {"stitched": stitched}


def _stitch(engine: Engine, coarse: Coarse, parts: list[tuple[str, ...]], first: str, options: Options,
            limits: Mapping[str, int] | None, budget: float | None) -> tuple[Schedule | None, str]:
    """Solve the windows in sequence; the last window's schedule covers the coarse instance.

    Limits are kept in every window: each objective of a prefix is at most its
    value in the whole schedule, so they are necessary there.  Returns None and
    why when a window finds nothing (then only the polish runs).
    """
    inst = coarse.instance
    # windows pin earlier tasks where they were placed, which symmetry breaking could forbid
    opts = dataclasses.replace(options, memory_plan=None, log=None, progress=None, symmetry=False)
    # the whole coarse instance's usable devices and memory-bound devices: a prefix alone
    # allows placements that later tasks rule out
    usable = usable_devices(inst)
    memory = memory_may_bind(inst, usable)
    pinned: dict[str, Placement] = {}
    result = None
    spent = time.monotonic()
    for k, part in enumerate(parts):
        if interrupt.requested():
            return None, f"interrupted in window {k + 1} of {len(parts)}"
        keep = set(pinned) | set(part)
        prefix = restrict(inst, keep)
        prepared = lexico.prepare(engine, prefix, [first], opts, limits=limits,
                                  usable={v: ds for v, ds in usable.items() if v in keep}, memory_devices=memory)
        if isinstance(prepared, str):
            return None, f"window {k + 1}: {prepared}"
        model, _ = prepared
        for v, p in pinned.items():
            model.fix(v, p)
        model.minimise(first, early=part)
        if budget is None:
            limit = WINDOW_LIMIT
        else:
            limit = max(0.1, (budget - (time.monotonic() - spent)) / (len(parts) - k))
        stage = model.solve(limit)
        if not stage.status.has_schedule:
            return None, f"window {k + 1} of {len(parts)}: {stage.status}"
        tasks, transfers, _ = model.read()
        pinned = tasks
        result = scored(prefix, tasks, transfers)
    return result, ""


def _combine(instance: Instance, objectives: list[str], polish: Schedule, found: Mapping[str, Schedule],
             other_bounds: Mapping[str, int | None], info: dict, clock: float,
             limits: Mapping[str, int] | None) -> Schedule:
    """The best schedule of the polish and the ``found`` ones (stitched, glued), with the bound
    that holds for the whole problem: the largest of the search's and ``other_bounds``; the
    others, and the polish's archive, in its archive (a sweep's candidate points)."""
    first = objectives[0]
    if polish.status is Status.INFEASIBLE:
        if found:
            raise RuntimeError("the engine proved infeasible an instance the decomposition scheduled")
        return dataclasses.replace(polish, solver={**polish.solver, "decompose": info})
    search_bound = polish.bounds.get(first, polish.objectives.get(first) if polish.status.proven else None)
    # the search's bound is the relaxation's when that floor was higher (lexico's bound_source)
    info["bounds"] = {"search": search_bound, **other_bounds}
    candidates = {polish.solver.get("bound_source", "search"): search_bound, **other_bounds}
    source, bound = max(((name, b) for name, b in candidates.items() if b is not None), key=lambda nb: nb[1])

    def key(s: Schedule) -> tuple:
        return tuple(s.objectives[name] for name in objectives)

    best, info["answer"] = polish, "polish"
    for name, schedule in found.items():
        if not best.status.has_schedule or key(schedule) < key(best):
            best, info["answer"] = schedule, name
    solver = {**polish.solver, "decompose": info, "bound_source": source,
              "wall_time": round(time.monotonic() - clock, 3)}
    if not best.status.has_schedule:
        return dataclasses.replace(polish, bounds={first: bound}, solver=solver)
    others = [s for s in (*polish.archive, polish, *found.values()) if s is not best and s.status.has_schedule]
    archive = lexico.kept(instance, others, best)
    if best is polish and polish.status is Status.OPTIMAL:  # proven by the bound it was given, if that meets it
        given = next((n for n, b in other_bounds.items() if b is not None and b >= polish.objectives[first]),
                     "search")
        return dataclasses.replace(polish, solver={**solver, "bound_source": given}, archive=archive)
    proven = len(objectives) == 1 and best.objectives[first] <= bound
    bounds = {**polish.bounds, first: bound} if best is polish else {first: bound}
    solver["proofs"] = _proofs(polish.solver.get("proofs", []), first, bound, limits)
    return dataclasses.replace(best, status=Status.OPTIMAL if proven else Status.FEASIBLE,
                               bounds={} if proven else bounds, solver=solver, archive=archive)


def _proofs(polish: list[dict], first: str, bound: int, limits: Mapping[str, int] | None) -> list[dict]:
    """The polish's statements, the first stage's bound raised to the combined one (cpsched.certify)."""
    given = dict(limits or {})
    out = [p for p in polish if not (p["objective"] == first and p["given"] == given)]
    return [{"given": given, "objective": first, "at_least": bound}, *out]
