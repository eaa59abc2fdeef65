"""The residency relaxation: where the weights live, time dropped.

Every schedule keeps each task's weights on its device for the whole makespan
(PROBLEM.md section 3), and while a task runs there its inputs, outputs and
workspace are live beside them (:func:`~cpsched.bounds.bytes_beside_weights`),
and so is every tensor produced before it and consumed after it on that
device (:func:`_around`: a skip connection's, a dense block's earlier outputs).
So every schedule's memory objective is at least

    min over placements of  max over devices d of  (weights placed on d
                                                    + the most bytes beside the weights
                                                      of a task placed on d)

with each device's term within its capacity.  This assignment problem, with
no times, orders or transfers, is small enough for CP-SAT to bound tightly in
seconds even on densenet121 (668 tasks), where the closed-form floor
(:func:`~cpsched.bounds.relaxation_bounds`: the weights spread evenly, or the
one largest task) ignores both the capacities and the tasks' own bytes.  On
``edge``, in 3 s (a third minimising, then probing caps), the running tasks'
bytes alone raised the memory floor of resnet50 from 34.1 MB to 40.0 MB, of
inception_v1 from 9.3 to 11.7 MB (1 byte below the optimum), of inception_v2
from 15.0 to 17.3 MB and of densenet121 from 10.9 to 13.3 MB; with the tensors
around them, in 10 s (a fifth minimising), densenet121's is 14.14 MB, and the
fused graphs' are proven, each their memory end's optimum (resnet50 38,960,896,
inception_v1 11,052,384, inception_v2 16,492,544, shufflenet 3,328,152,
densenet121 13,625,600; shufflenet's and densenet121's were 2 bytes and
0.28 MB lower without them).

The best placement it finds is also a memory-frugal start: list-scheduled in
topological order (one task at a time, so few tensors are live at once) it is
the front's memory-end aim when it beats :func:`~cpsched.heuristics.baselines.frugal`'s
other candidates (resnet50's 60 s memory solve: 40.3 MB from it, 44.1 MB before).
Under a memory cap, the placement within it that is least in a latency
relaxation (:func:`placed`: one placement per segment between cut tasks, each
segment's span bounded by its paths and loads) bounds every schedule within
the cap, and, list-scheduled (:func:`capped`), starts a step under that cap;
a few caps stepped up from the floor (:func:`ladder`) give a large graph's
front points near its memory end before its sweep.

The same placements bound the energy (:func:`spent`): a schedule spends at
least its tasks' energy on its placement, the copies that placement needs and
the devices' static power over its latency relaxation, which a latency limit
caps; a few caps
between the latency's bound and the least energy's relaxed latency
(:func:`rungs`) start a latency/energy front's lower set.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from cpsched import interrupt
from cpsched.bounds import Unreachable, bytes_beside_weights, least_delay, relaxation_bounds, usable_devices
from cpsched.cuts import Segment, cut_tasks, segments
from cpsched.errors import NoSchedule
from cpsched.heuristics.baselines import place
from cpsched.instance import Instance
from cpsched.schedule import Schedule

#: seconds CP-SAT gets at most, and the share of a solve's or sweep's time limit it takes when that is
#: less (on 2 cores inception_v1's is proven in 2.1 s; resnet50's bound is 37.7 MB at 2 s, 37.9 at 3 s,
#: 38.1 at 5 s)
LIMIT = 3.0
SHARE = 0.05
#: seconds the relaxation of the whole instance (:func:`solve`, once per instance) gets at most, and
#: the share of a solve's or sweep's time limit when that is less: with 3 s it stops just short of its
#: optimum on fused inception_v1 (11,052,361 against 11,052,384) and fused resnet50, which it proves in
#: 3.6 s and 2.1 s, fused shufflenet and densenet121 in 9.7 s and 8.4 s; a memory end that meets it is
#: then proven at once.  Densenet121 unfused: 13.94 MB at 6 s, 14,137,554 at 10 s (placement 14,138,880)
WHOLE = 20.0
#: the share of the relaxation's time spent minimising before the bisection (:func:`_solve`); with a
#: third, densenet121 (``edge``) was bounded at 13.00 MB in 10 s, with a fifth 14.14 MB
MINIMISE = 0.2


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
    """The seconds a relaxation under a cap gets within a solve or sweep of ``total`` seconds (None: no limit)."""
    return LIMIT if total is None else min(LIMIT, SHARE * total)


def within(instance: Instance, total: float | None) -> Residency | None:
    """:func:`solve` within a solve or sweep of ``total`` seconds (None: no limit): :data:`WHOLE`
    seconds at most, :data:`SHARE` of ``total`` when that is less."""
    return solve(instance, WHOLE if total is None else min(WHOLE, SHARE * total))


def solve(instance: Instance, time_limit: float = WHOLE, workers: int = 2) -> Residency | None:
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
    bytes (and its capacity), least in a latency relaxation, solved for ``time_limit`` seconds;
    None when the relaxation does not apply.

    Every schedule splits in time at each cut task (:mod:`cpsched.cuts`), so its latency is at
    least the cut tasks' durations plus, per segment between two of them, the segment's span
    (from the source's end to the sink's start).  A segment of at most :data:`ENUMERATED`
    placements has every placement's span bounded apart (:func:`_span`: its paths with each
    transfer at its link's speed, each device's single-machine bound from heads and tails,
    each link's load), one placement chosen per segment; a larger one is split into branches
    bounded the same way, each device's load of the whole segment added (:func:`_pieces`); a
    branch still too large (or a graph without a cut task) is relaxed task by task
    (:func:`_paths`: paths with a transfer at the fastest link's speed wherever a tensor
    changes device, and the loads).  Choosing whole placements is what lets the cap price the
    weights it pushes off the fastest device: squeezenet (``edge``) under 7.17 MB is bounded
    at 2,101 (optimum 2,103), where task by task gave 1,756 and the series priced 1,645; under
    6 of its 8 hardest caps the bound is the optimum.  Fused inception_v1 under 15.5 MB: 2,958
    after 30 s by branches (2,811 variables), 2,445 with its modules enumerated whole (159,722)
    and 2,314 with its largest relaxed task by task.

    CP-SAT's presolve is off: in 3 s it bounds fused shufflenet (``edge``) under 3.6 MB at 3,409,
    proven in 0.9 s, where with it the bound was 2,367, and unfused inception_v1 under 11.8 MB
    at 3,575 against 2,721 (the residency relaxation itself, :func:`solve`, gains from it).

    Its placement is a start for a latency step under a memory cap, where the sweep has no
    point near the cap and the whole model's search may find none in its share: resnet50
    (``edge``) at 42 MB, 40 s, ends at 18,027 from it and with nothing without it (the front's
    nearest point above the cap was 30,047 at 45.7 MB).
    """
    from ortools.sat.python import cp_model  # here, not at import: a MILP-only run loads no OR-Tools

    built = _timed(instance, cap)
    if built is None:
        return None
    m, place, _, latency, _ = built
    m.minimize(latency)
    solver, status = _run(m, time_limit, workers, presolve=False)
    if status == cp_model.INFEASIBLE:
        return Placed(None, None)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Placed(None, 0)
    devices = {v: d for (v, d), literal in place.items() if solver.boolean_value(literal)}
    return Placed(devices, math.ceil(solver.best_objective_bound - 1e-6))


def _timed(instance: Instance, cap: int, energy: bool = False) -> tuple | None:
    """(:func:`_model` within ``cap``, its placement literals, its peak, the expression of
    :func:`placed`'s latency relaxation, the energy its transfers take at least), or None when the
    relaxation does not apply; with ``energy``, the segments' options kept for an energy
    objective too (:func:`_options`), and the transfers priced (else 0): every tensor's copies
    to the devices of its consumers off its producer's, paid once per (tensor, device), each
    tensor by one piece's options (:func:`_owned`) or else by the placement literals of its
    consumers outside every enumerated piece (:func:`_moved_elsewhere`)."""
    built = _model(instance, {d.id: min(d.memory, cap) for d in instance.devices})
    if built is None:
        return None
    m, place, usable, peak = built
    parts = _bounded(instance, usable, energy)
    cuts = [b for (_, _, b), _ in parts if b is not None]
    latency = sum(instance.task(c).modes[d].duration * place[c, d] for c in cuts for d in usable[c])
    moved, owned, enumerated = 0, set(), set()
    for part, pieces in parts:
        spans = []
        for piece, _, options, paid in pieces:
            span, most, cost = _piece_span(m, instance, usable, place, piece, options, paid)
            spans.append((span, most))
            moved += cost
            if paid is not None:
                owned.update(tensor.id for tensor, _ in paid)
                enumerated.update(piece[1])
        latency += spans[0][0] if len(spans) == 1 else _joined(m, instance, usable, place, part, spans)
    if energy:
        moved += _moved_elsewhere(m, instance, usable, place, owned, enumerated)
    return m, place, peak, latency, moved


def tied(instance: Instance, latency: int, memory: int, time_limit: float = LIMIT, workers: int = 2) -> bool:
    """Whether every schedule of at most ``latency`` is proven to hold at least ``memory`` bytes:
    no placement within ``memory - 1`` bytes has :func:`placed`'s latency relaxation within
    ``latency``, proven in ``time_limit`` seconds (False: not proven, or not applicable)."""
    from ortools.sat.python import cp_model

    built = _timed(instance, memory - 1)
    if built is None:
        return False
    m, _, _, relaxed, _ = built
    m.add(relaxed <= latency)
    return _run(m, time_limit, workers)[1] == cp_model.INFEASIBLE


def spent(instance: Instance, limits: Mapping[str, int] | None, time_limit: float = LIMIT,
          workers: int = 2) -> int | None:
    """A proven lower bound on the energy of every schedule within ``limits`` (its latency and
    memory limits; the others are not used), solved for ``time_limit`` seconds and kept per
    instance and limits (solved again only when unproven and given more time); None when the
    relaxation does not apply or proves nothing in time.

    A schedule's energy is its tasks' energy, its transfers' and the devices' static power over
    its makespan (PROBLEM.md section 4): at least the tasks' energy on its placement, the copies
    of tensors to their consumers' devices that the placement needs (:func:`_timed`) and the
    static power over :func:`placed`'s latency relaxation of that placement, which a latency
    limit caps.  Without the copies, unfused inception_v1's least energy (``edge``) was bounded
    at 8.66e9 pJ, below the whole model's bound (8.92e9), where the least found is 9.10e9, its
    copies 0.45e9 of it; with them 9.04e9 (CP-SAT's presolve off: proven in 2.0 s, where with
    it nothing was found in 3 s).  Pushing work off the most frugal device to meet the limit
    (or off a full one) is what the whole model's energy bound under a latency limit misses:
    fused shufflenet (``edge``) under latency 3,851, 9.51e9 pJ proven in 2.6 s (9.10e9 without
    the copies), where a front's 32-s step and its 66-s retry left the energy at the bound
    without the limit, 8.71e9 (found 9.85e9)."""
    held = _spent(instance, limits, time_limit, workers)
    return None if held is None else held[0]


def rungs(instance: Instance, count: int, time_limit: float = LIMIT, workers: int = 2) -> list[dict]:
    """Statements for a latency/energy front's lower set before its sweep: every schedule
    spends at least :func:`spent`'s bound without a cap (unfused inception_v1, ``edge``: 9.04e9
    pJ, where the whole model's search proves 8.92e9), and every schedule
    within latency ``c`` at least its bound there, for up to ``count - 1``
    caps ``c`` evenly spaced from the latency's closed-form bound up to the relaxed latency of
    the relaxation's least energy without a cap (above it the bound is flat), each solved for
    ``time_limit`` seconds, those above the uncapped bound kept (in ``solver.proofs``' format).
    A front's steps each prove one such statement in 30-60 s, or none: fused shufflenet
    (``edge``) at 120 s had two lower corners, the ends."""
    free = _spent(instance, None, time_limit, workers)
    if free is None:
        return []
    out = [{"given": {}, "objective": "energy", "at_least": free[0]}]
    try:
        low = relaxation_bounds(instance, usable_devices(instance))["latency"]
    except Unreachable:
        return out
    if free[2] is None:
        return out
    for k in range(1, count):
        cap = low + (free[2] - low) * k // count
        held = _spent(instance, {"latency": cap}, time_limit, workers)
        if held is not None and held[0] > free[0]:
            out.append({"given": {"latency": cap}, "objective": "energy", "at_least": held[0]})
    return out


def _spent(instance: Instance, limits: Mapping[str, int] | None, time_limit: float,
           workers: int) -> tuple[int, bool, int] | None:
    """:func:`spent`'s (bound, whether proven, the relaxed latency of its best placement, None
    when it found none in time), kept per instance and limits; None when it does not apply or
    proves nothing in time."""
    from ortools.sat.python import cp_model

    kept = {n: v for n, v in (limits or {}).items() if n in ("latency", "memory")}
    key = instance.content_hash, tuple(sorted(kept.items()))
    given, held = _SPENT.get(key, (-1.0, None))
    if given >= time_limit or (held is not None and held[1]):
        return held
    built = _timed(instance, kept.get("memory", max(d.memory for d in instance.devices)), energy=True)
    if built is None:
        return None
    m, place, _, latency, moved = built
    if "latency" in kept:
        m.add(latency <= kept["latency"])
    static = sum(d.static_power for d in instance.devices)
    m.minimize(sum(instance.task(v).modes[d].energy * literal for (v, d), literal in place.items())
               + moved + static * latency)
    solver, status = _run(m, time_limit, workers, presolve=False)
    bound = math.ceil(solver.best_objective_bound - 1e-6)
    held = None
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        held = bound, status == cp_model.OPTIMAL, round(solver.value(latency))
    elif status == cp_model.UNKNOWN and bound > 0:  # no placement found in time, the search's bound still holds
        held = bound, False, None
    _SPENT[key] = time_limit, held
    return held


#: a segment (or a branch of one, :func:`_pieces`) with at most this many placements of its tasks has each
#: one's span bounded apart (:func:`_options`); squeezenet's largest segment has 243 on ``edge``; fused
#: inception_v1's modules 2,187 (their branches at most 9): enumerated whole, their 19,000 options each
#: left CP-SAT's bound under a cap far below the branches' in the same time (:func:`placed`)
ENUMERATED = 3**5
#: one option of a piece: (its span's bound, the placement of its tasks in their order)
Option = tuple[int, tuple[str, ...]]
#: a piece's span bounds: (the devices of its source, of its tasks in order and of its sink, None for
#: a missing cut) -> the bound of :func:`_span` (None where a tensor cannot reach its consumer)
Spans = dict[tuple[str | None, ...], int | None]
#: a piece's options: (source device, sink device) -> its placements that :func:`_options` keeps
Choices = dict[tuple[str | None, str | None], list[Option]]
#: one piece with its :data:`Spans` and :data:`Choices` (both None where it has too many placements), and,
#: kept for energy, the tensors whose copies its options pay for (:func:`_owned`; else None)
Bounded = tuple[Segment, Spans | None, Choices | None, list[tuple] | None]
#: instance content hash -> :func:`_around`'s answer
_AROUND: dict[str, dict[str, list[tuple]]] = {}
#: (instance content hash, its latency and memory limits) -> (the seconds :func:`spent` was given, its
#: (bound, proven, relaxed latency) or None)
_SPENT: dict[tuple[str, tuple], tuple[float, tuple[int, bool, int] | None]] = {}
#: (instance content hash, kept for energy) -> :func:`_bounded`'s answer: the same under every cap, so a
#: sweep computes it once
_BOUNDED: dict[tuple[str, bool], list[tuple[Segment, list[Bounded]]]] = {}


def tables(instance: Instance) -> list[tuple[Segment, Spans]]:
    """The pieces of the segments between cut tasks (:func:`cpsched.cuts.segments`,
    :func:`_pieces`) of at most :data:`ENUMERATED` placements, each with its span's bound per
    placement of its tasks and cut tasks (kept per instance): a proven bound on every schedule's
    time from the source's end to the sink's start, which the engine takes as a redundant table
    constraint (:meth:`~cpsched.engines.protocol.Model.span_table`).  Squeezenet (``edge``): the
    six hard caps of its front that need a search proven in 14.5-21.3 s, where the relaxation's
    bound as the step's floor alone took 21.4-62.2 s.  Empty when some task has no usable device."""
    try:
        usable = usable_devices(instance)
    except Unreachable:
        return []
    return [(piece, spans) for _, pieces in _bounded(instance, usable) for piece, spans, _, _ in pieces
            if spans is not None]


def _placements(usable: Mapping[str, tuple[str, ...]], tasks: Sequence[str]) -> int:
    """How many ways ``tasks`` can be placed on their usable devices."""
    return math.prod(len(usable[v]) for v in tasks)


def _pieces(instance: Instance, usable: Mapping[str, tuple[str, ...]]) -> list[tuple[Segment, list[Segment]]]:
    """The segments whose spans add up to the latency relaxation, each with the pieces that bound
    its span.

    The segments are :func:`cpsched.cuts.segments`' (at least one task between two cut
    tasks); one of more than :data:`ENUMERATED` placements is split again at the cut tasks
    inside it.  A segment's piece is the segment itself when it has at most
    :data:`ENUMERATED` placements or a single branch, else each branch (a weakly connected
    component of its tasks, with the segment's source and sink): a branch's paths and the
    loads of its tasks and transfers are all within the segment's, so each branch's span
    bound is one of the segment's, and the branches' device loads add up (:func:`_joined`).
    Fused inception_v1 (``edge``): the modules that begin with their pool (8 tasks, 6,561
    placements) lose it to a segment of their own; every module's 7 other tasks (2,187
    placements) split into four branches of at most 9."""
    cut = set(cut_tasks(instance))
    parts: list[Segment] = []
    for source, between, sink in segments(instance, 1):
        if _placements(usable, between) <= ENUMERATED:
            parts.append((source, between, sink))
            continue
        start, run = source, []
        for v in between:
            if v in cut:
                parts.append((start, tuple(run), v))
                start, run = v, []
            else:
                run.append(v)
        parts.append((start, tuple(run), sink))
    out = []
    for source, between, sink in parts:
        branches = [] if _placements(usable, between) <= ENUMERATED else list(
            nx.weakly_connected_components(instance.graph.subgraph(between)))
        pieces = [(source, tuple(v for v in between if v in branch), sink) for branch in branches]
        out.append(((source, between, sink), pieces if len(pieces) > 1 else [(source, between, sink)]))
    return out


def _bounded(instance: Instance, usable: Mapping[str, tuple[str, ...]],
             energy: bool = False) -> list[tuple[Segment, list[Bounded]]]:
    """:func:`_pieces`, each piece of at most :data:`ENUMERATED` placements with its
    :data:`Spans` and its :func:`_options` (kept per instance; with ``energy``, for an energy
    objective too, with the tensors it pays for); a branch's options keep their device loads
    apart (:func:`_joined` adds them up)."""
    key = instance.content_hash, energy
    if key not in _BOUNDED:
        out = []
        for part, pieces in _pieces(instance, usable):
            rows: list[Bounded] = []
            for piece in pieces:
                spans = _spans(instance, usable, piece) if _placements(usable, piece[1]) <= ENUMERATED else None
                paid = _owned(instance, piece, pieces) if energy and spans is not None else None
                rows.append((piece, spans, None if spans is None else
                             _options(instance, usable, piece, spans, loads=len(pieces) > 1, paid=paid), paid))
            out.append((part, rows))
        _BOUNDED[key] = out
    return _BOUNDED[key]


def _spans(instance: Instance, usable: Mapping[str, tuple[str, ...]], part: Segment) -> Spans:
    """The piece's :data:`Spans`, every placement of its tasks and cut tasks bounded by :func:`_span`."""
    source, between, sink = part
    inputs = {v: _within(instance, part, v) for v in (*between, *([sink] if sink is not None else []))}
    moved = [t for v in (source, *between) if v is not None for t in instance.outputs_of[v] if t.size]
    if source is None:
        moved += [t for t in instance.tensors if t.producer is None and t.size]
    out: Spans = {}
    for da in (None,) if source is None else usable[source]:
        for placement in itertools.product(*(usable[v] for v in between)):
            for db in (None,) if sink is None else usable[sink]:
                at = {**dict(zip(between, placement)), source: da, sink: db}
                out[(da, *placement, db)] = _span(instance, part, at, inputs, moved)
    return out


def _options(instance: Instance, usable: Mapping[str, tuple[str, ...]], part: Segment,
             spans: Spans, loads: bool = False, paid: Sequence[tuple] | None = None) -> Choices:
    """(source device, sink device) -> the piece's placements with their span's bound
    (``spans``), less those another one beats or ties in the span, in every device's weights
    and in every device's most bytes beside them (and, with ``loads``, in every device's sum of
    durations; with ``paid``, the tensors whose transfers the piece pays for (:func:`_owned`),
    in its tasks' energy and those transfers'), so the relaxation's optimum is the same without
    them; pairs under which a tensor cannot reach its consumer are left out."""
    energy = paid is not None
    between = part[1]
    index = {d.id: i for i, d in enumerate(instance.devices)}
    width = len(index)
    beside = {(v, d): bytes_beside_weights(instance, v, d) for v in between for d in usable[v]}
    held_by: dict[tuple[str, ...], list[int]] = {}
    for placement in itertools.product(*(usable[v] for v in between)):
        # each device's weights, then its most bytes beside them, then (loads) its tasks' durations,
        # then (energy) their energy
        held = held_by[placement] = [0] * ((3 if loads else 2) * width + (1 if energy else 0))
        for v, d in zip(between, placement):
            held[index[d]] += instance.task(v).weights
            held[width + index[d]] = max(held[width + index[d]], beside[v, d])
            if loads:
                held[2 * width + index[d]] += instance.task(v).modes[d].duration
            if energy:
                held[-1] += instance.task(v).modes[d].energy
    out: dict[tuple[str | None, str | None], list] = {}
    for (da, *placement, db), span in spans.items():
        if span is not None:
            held = held_by[tuple(placement)]
            if paid is not None:
                held = [*held[:-1], held[-1] + _moved(instance, paid, part, placement, (da, db))]
            out.setdefault((da, db), []).append((span, *held, tuple(placement)))
    return {pair: _undominated(found) for pair, found in out.items()}


def _span(instance: Instance, part: Segment, at: Mapping[str | None, str | None], inputs: Mapping[str, list],
          moved: Sequence) -> int | None:
    """A lower bound on the segment's span (from its source's end, or 0, to its sink's start, or
    the makespan) with its tasks and cut tasks on ``at``'s devices, ``inputs`` each task's (and
    the sink's) inputs from within the segment, ``moved`` the tensors it may move; None when a
    tensor cannot reach a consumer.  It is the longest of: every path of durations and transfers at their
    link's speed (from the host at time 0 for a graph input); on each device, the tasks whose
    head (earliest start) or tail (least time from their end to the span's end) is at least
    some value, run one at a time after the least head and before the least tail among them
    (a single machine's bound); each link's transfers over its channels (:func:`_busy_links`)."""
    source, between, sink = part
    host = instance.host.id
    duration = {v: instance.task(v).modes[at[v]].duration for v in between}
    head: dict[str, int] = {}

    def arrival(tensor, d: str) -> int | None:
        if tensor.producer is None:
            return least_delay(instance, tensor, host, d)
        delay = least_delay(instance, tensor, at[tensor.producer], d)
        since = 0 if tensor.producer == source else head[tensor.producer] + duration[tensor.producer]
        return None if delay is None else since + delay

    for v in (*between, *([sink] if sink is not None else [])):
        times = [arrival(tensor, at[v]) for tensor in inputs[v]]
        if None in times:
            return None
        head[v] = max(times, default=0)
    span = head[sink] if sink is not None else max((head[v] + duration[v] for v in between), default=0)
    tail: dict[str, int] = {}
    for v in reversed(between):
        tail[v] = max((least_delay(instance, tensor, at[v], at[c]) + (duration[c] + tail[c] if c != sink else 0)
                       for tensor in instance.outputs_of[v] for c in tensor.consumers if c == sink or c in tail),
                      default=0)
    for d in {at[v] for v in between}:
        jobs = [(head[v], duration[v], tail[v]) for v in between if at[v] == d]
        for h, _, q in jobs:
            later = [job for job in jobs if job[0] >= h]
            span = max(span, h + sum(job[1] for job in later) + min(job[2] for job in later))
            closer = [job for job in jobs if job[2] >= q]
            span = max(span, min(job[0] for job in closer) + sum(job[1] for job in closer) + q)
    return max([span, *_busy_links(instance, at, moved)])


def _busy_links(instance: Instance, at: Mapping[str | None, str | None], moved: Sequence) -> list[int]:
    """Per link with a limit on concurrent transfers, how long a segment's transfers keep it busy
    over its channels: each of ``moved`` (the nonzero tensors its source or tasks produce, and
    the graph inputs in the first segment) moves once to each other device of its consumers in
    the segment, within the segment's span, over the link from its producer's device (the
    host's for a graph input)."""
    busy: dict = {}
    for tensor in moved:
        size = instance.size_range[tensor.id][0]
        src = instance.host.id if tensor.producer is None else at[tensor.producer]
        for dst in {at[c] for c in tensor.consumers if c in at} - {src}:
            link = instance.link(src, dst)
            busy[link] = busy.get(link, 0) + link.transfer_time(size)
    return [-(-total // link.channels) for link, total in busy.items() if link.channels > 0]


def _undominated(found: list[tuple]) -> list[Option]:
    """The (span, placement) of the rows of ``found`` (span, held bytes..., placement) that no
    other row beats or ties in every number (of equal rows, the first)."""
    values = np.array([row[:-1] for row in found], dtype=np.int64)
    keep = []
    for i, row in enumerate(values):
        below = np.all(values <= row, axis=1)
        below[i] = False
        equal = np.all(values == row, axis=1)
        if not np.any(below & ~equal) and not np.any(equal[:i]):
            keep.append((found[i][0], found[i][-1]))
    return keep


def _chosen(m, usable: Mapping[str, tuple[str, ...]], place: Mapping[tuple[str, str], object], part: Segment,
            options: Choices):
    """(the segment's span in the model, each option's literal): one of ``options`` chosen, tied
    to the placement literals of its tasks and of its cut tasks."""
    source, between, sink = part
    chosen = {(pair, k): m.new_bool_var("") for pair, found in options.items() for k in range(len(found))}
    for v_index, v in enumerate(between):
        for d in usable[v]:
            m.add(place[v, d] == sum(lit for (pair, k), lit in chosen.items() if options[pair][k][1][v_index] == d))
    for cut, side in ((source, 0), (sink, 1)):
        for d in (None,) if cut is None else usable[cut]:
            on = 1 if cut is None else place[cut, d]
            m.add(sum(lit for (pair, _), lit in chosen.items() if pair[side] == d) == on)
    return sum(options[pair][k][0] * lit for (pair, k), lit in chosen.items()), chosen


def _paths(m, instance: Instance, usable: Mapping[str, tuple[str, ...]], place: Mapping[tuple[str, str], object],
           part: Segment):
    """The segment's span in the model, task by task: at least each device's load of its tasks,
    and each path of durations with a transfer at the fastest link's speed wherever a tensor
    changes device (from the host for a graph input)."""
    source, between, sink = part
    host = instance.host.id
    duration = {v: sum(instance.task(v).modes[d].duration * place[v, d] for d in usable[v]) for v in between}
    horizon = sum(max(instance.task(v).modes[d].duration for d in usable[v]) for v in between)
    horizon += sum(_fastest(instance, t.size) for v in (*between, *([sink] if sink else []))
                   for t in _within(instance, part, v))
    span = m.new_int_var(0, horizon, "")
    end = {v: m.new_int_var(0, horizon, "") for v in between}
    for d in instance.devices:
        m.add(sum(instance.task(v).modes[d.id].duration * place[v, d.id] for v in between if (v, d.id) in place)
              <= span)

    def arrival(tensor, consumer: str):
        """When ``tensor`` can be on ``consumer``'s device, from the segment's start."""
        fastest = _fastest(instance, tensor.size)
        if tensor.producer is None:  # on the host at time 0: a consumer elsewhere waits for a copy
            return fastest * (1 - place[consumer, host]) if (consumer, host) in place else fastest
        moved = 0
        if fastest:  # the consumer is off the producer's device
            moved = m.new_bool_var("")
            for d in usable[tensor.producer]:
                m.add(moved >= place[tensor.producer, d] - (place[consumer, d] if (consumer, d) in place else 0))
        return (0 if tensor.producer == source else end[tensor.producer]) + fastest * moved

    for v in between:
        m.add(end[v] >= duration[v])
        m.add(end[v] <= span)
        for tensor in _within(instance, part, v):
            m.add(end[v] >= arrival(tensor, v) + duration[v])
    for tensor in _within(instance, part, sink) if sink is not None else ():
        m.add(span >= arrival(tensor, sink))
    return span


def _piece_span(m, instance: Instance, usable: Mapping[str, tuple[str, ...]],
                place: Mapping[tuple[str, str], object], piece: Segment, options: Choices | None,
                paid: Sequence[tuple] | None = None) -> tuple[object, int, object]:
    """(the piece's span in the model, the largest value it can take, the energy of the
    transfers it pays for, ``paid`` (:func:`_owned`; None: 0)): one of its ``options`` chosen
    (:func:`_chosen`), or task by task without them (:func:`_paths`)."""
    if options is None:
        span = _paths(m, instance, usable, place, piece)
        return span, span.proto.domain[-1], 0
    span, chosen = _chosen(m, usable, place, piece, options)
    cost = 0 if paid is None else sum(_moved(instance, paid, piece, options[pair][k][1], pair) * literal
                                      for (pair, k), literal in chosen.items())
    return span, max(s for found in options.values() for s, _ in found), cost


def _joined(m, instance: Instance, usable: Mapping[str, tuple[str, ...]],
            place: Mapping[tuple[str, str], object], part: Segment, spans: Sequence[tuple[object, int]]):
    """The span of a segment split into branches in the model: at least each branch's span
    (``spans``: (expression, its largest value)) and each device's load of all the segment's tasks."""
    between = part[1]
    top = sum(max(instance.task(v).modes[d].duration for d in usable[v]) for v in between)
    span = m.new_int_var(0, max(top, *(most for _, most in spans)), "")
    for piece, _ in spans:
        m.add(span >= piece)
    for d in instance.devices:
        m.add(sum(instance.task(v).modes[d.id].duration * place[v, d.id] for v in between if (v, d.id) in place)
              <= span)
    return span


def _owned(instance: Instance, piece: Segment, siblings: Sequence[Segment]) -> list[tuple]:
    """The (tensor, its consumers in ``piece``: among its tasks and its sink) whose transfers the
    piece's options pay for: the nonzero tensors its tasks produce, and those its source
    produces (the graph inputs for no source) where it is the first of its part's branches
    (``siblings``, itself among them) with a consumer of them among its tasks.  Each tensor is
    paid for by one piece at most, to the devices of these consumers only, so no copy is paid
    twice."""
    source, between, sink = piece
    made = [t for v in between for t in instance.outputs_of[v]]
    inside = {sink, *between} - {None}
    for t in instance.tensors if source is None else instance.outputs_of[source]:
        if t.producer == source and piece == next((s for s in siblings if set(t.consumers) & set(s[1])), None):
            made.append(t)
    out = []
    for t in made:
        consumers = [c for c in t.consumers if c in inside]
        if instance.size_range[t.id][0] and consumers:
            out.append((t, consumers))
    return out


def _moved(instance: Instance, paid: Sequence[tuple], piece: Segment, placement: Sequence[str],
           pair: tuple[str | None, str | None]) -> int:
    """The energy of the transfers of ``paid`` (:func:`_owned`) with the piece's tasks on
    ``placement``'s devices and its source and sink on ``pair``'s: one copy of each tensor to each
    device of its consumers off its producer's (the host for a graph input)."""
    source, between, sink = piece
    at = {**dict(zip(between, placement)), source: pair[0], sink: pair[1]}
    total = 0
    for tensor, consumers in paid:
        src = instance.host.id if tensor.producer is None else at[tensor.producer]
        for dst in {at[c] for c in consumers} - {src}:
            link = instance.link(src, dst)
            total += 0 if link is None else instance.size_range[tensor.id][0] * link.energy_per_byte
    return total


def _moved_elsewhere(m, instance: Instance, usable: Mapping[str, tuple[str, ...]],
                     place: Mapping[tuple[str, str], object], owned: set[str], enumerated: set[str]):
    """The energy, in the model, of the copies of the tensors no piece pays for (not ``owned``:
    made by a cut task, a task of a piece relaxed task by task or the host as a graph input; an
    ``enumerated`` piece owns every tensor its tasks make, as no tensor jumps over a cut task and
    a branch is a connected component) to the devices of their consumers outside the enumerated
    pieces' tasks, whose options know nothing of them: one copy per (tensor, device) where a
    consumer is placed and its producer is not, at the cheapest link into that device."""
    host = instance.host.id
    total = 0
    for tensor in instance.tensors:
        size = instance.size_range[tensor.id][0]
        consumers = [c for c in tensor.consumers if c not in enumerated]
        if not size or tensor.id in owned or not consumers:
            continue
        for d in {d for c in consumers for d in usable[c]}:
            into = [link.energy_per_byte for link in instance.links if link.dst == d and link.src != d
                    and (tensor.producer is not None or link.src == host)]
            if not into or not min(into) or (tensor.producer is None and d == host):
                continue
            copied = m.new_bool_var("")
            stays = 0 if tensor.producer is None else place.get((tensor.producer, d), 0)
            for c in consumers:
                if (c, d) in place:
                    m.add(copied >= place[c, d] - stays)
            total += size * min(into) * copied
    return total


def _within(instance: Instance, part: Segment, v: str) -> list:
    """``v``'s inputs from inside the segment (its source, its tasks, graph inputs); the others are
    size-0 tensors from before the source, a precedence the cut already imposes."""
    source, between, _ = part
    inside = {source, *between}
    return [t for t in instance.inputs_of[v] if t.producer is None or t.producer in inside]


def _fastest(instance: Instance, size: int) -> int:
    """The least time ``size`` bytes take over any link (0 for nothing to move)."""
    return min((link.transfer_time(size) for link in instance.links), default=0) if size else 0


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
    (10, 20, 40, 80 % above it, ...), below ``top`` (None: no ceiling), until two in a row find
    no placement (densenet121's is not found in 3 s under any of them; a placement whose list
    schedule overflows the cap is not such a miss: unfused resnet50's at 48 MB in 7.5 s, where the
    looser caps then gave 56 and 72 MB): points near a front's memory end, where a large graph's
    steps under tight caps are the slowest to find anything.
    On resnet50 (``edge``) 41.4 MB at 28,301 and 43.0 MB at 19,806, where its 120 s front's
    memory end was 40.1 MB at 42,102 and its next point 56.7 MB at 20,878."""
    found, missed = [], 0
    for k in range(count):
        cap = floor + floor * (1 << k) // 10
        if (top is not None and cap >= top) or interrupt.requested() or missed == 2:
            break
        answer = capped(instance, cap, time_limit)
        if answer is None or not answer.bound:  # no placement found (0: none in time)
            missed += 1
        else:
            missed = 0
            if answer.schedule is not None:
                found.append(answer.schedule)
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
    around = _around(instance)
    for device in instance.devices:
        d = device.id
        weights = sum(instance.task(v).weights * place[v, d] for v in usable if (v, d) in place)
        beside = m.new_int_var(0, device.memory, f"beside[{d}]")
        kept: dict[tuple[str, frozenset[str]], object] = {}  # (tensor, consumers) -> "it stays on d over them"
        for v in usable:
            if (v, d) not in place:
                continue
            held = bytes_beside_weights(instance, v, d)
            stays = [(tensor.size, _stays(m, place, instance.host.id, d, producer, consumers, kept, tensor.id))
                     for tensor, producer, consumers in around[v]]
            stays = [(size, literal) for size, literal in stays if literal is not None]
            if held or stays:
                m.add(beside >= held + sum(size * literal for size, literal in stays)).only_enforce_if(place[v, d])
        m.add(weights + beside <= capacity[d])
        m.add(peak >= weights + beside)
    return m, place, usable, peak


def _around(instance: Instance) -> dict[str, list[tuple]]:
    """Per task ``v``: the (tensor, its producer, its consumers after ``v``) that are live through
    ``v``'s run on its device whenever they stay there: neither ``v``'s input nor output, produced
    before ``v`` (or a graph input) and consumed after it there, or a graph output produced before
    it.  Each is live from its producer's start until its consumers' end on that device (until the
    makespan for a graph output), PROBLEM.md section 3.  Fused densenet121 (``edge``): the
    placement the relaxation found without them holds 14.17 MB on its NPU with them, 13.37 MB
    without.  Kept per instance."""
    key = instance.content_hash
    if key in _AROUND:
        return _AROUND[key]
    graph = instance.graph
    after = {v: nx.descendants(graph, v) for v in graph}
    out: dict[str, list[tuple]] = {v: [] for v in graph}
    for tensor in instance.tensors:
        if not tensor.size:
            continue
        for v in graph if tensor.producer is None else after[tensor.producer]:
            if v in tensor.consumers:
                continue
            consumers = frozenset(c for c in tensor.consumers if c in after[v])
            if consumers or tensor.output:
                out[v].append((tensor, tensor.producer, consumers))
    _AROUND[key] = out
    return out


def _stays(m, place: Mapping[tuple[str, str], object], host: str, d: str, producer: str | None,
           consumers: frozenset[str], kept: dict, key: str):
    """A literal true whenever a tensor of ``producer`` (None: a graph input, on ``host``) is kept on
    device ``d`` until one of ``consumers`` there ends (for a graph output, ``consumers`` empty: its
    producer is there), shared per (tensor, consumers) in ``kept``; None when it cannot be."""
    if (producer is None and d != host) or (producer is not None and (producer, d) not in place):
        return None
    there = [place[c, d] for c in consumers if (c, d) in place]
    if consumers and not there:
        return None
    if (key, consumers) not in kept:
        literal = kept[key, consumers] = m.new_bool_var(f"stays[{key},{d}]")
        made = [] if producer is None else [place[producer, d].negated()]
        for c in there or [None]:
            m.add_bool_or([*made, *([] if c is None else [c.negated()]), literal])
    return kept[key, consumers]


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


def another(instance: Instance, held: Residency, avoid: Sequence[Mapping[str, str]], seed: int,
            time_limit: float = LIMIT, workers: int = 2) -> dict[str, str] | None:
    """A placement whose relaxation value is at most that of ``held``'s placement, other than each
    of ``avoid`` (task -> device), from a search randomised by ``seed``; None when none is found
    in ``time_limit`` seconds.  Placements that tie in the relaxation differ in the memory a
    schedule needs: of eight found under fused inception_v1's bound (``edge``), five meet it
    (11,052,384 bytes) and three, with most tasks on the GPU, need 11,516,256."""
    if not held.devices:
        return None
    built = _model(instance, {d.id: min(d.memory, _peak(instance, held.devices)) for d in instance.devices})
    if built is None:
        return None
    m, place, _, _ = built
    for devices in avoid:
        m.add_bool_or([place[v, d].negated() for v, d in devices.items()])
    solver, status = _run(m, time_limit, workers, seed)
    if solver.status_name(status) not in ("OPTIMAL", "FEASIBLE"):
        return None
    return {v: d for (v, d), literal in place.items() if solver.boolean_value(literal)}


def _peak(instance: Instance, devices: Mapping[str, str]) -> int:
    """The relaxation's value of a placement: its largest device's weights plus the most bytes
    beside them of a task placed there (with the tensors kept there around it, :func:`_around`)."""
    host, around = instance.host.id, _around(instance)

    def stays(d: str, producer: str | None, consumers: frozenset[str]) -> bool:
        return (devices[producer] if producer is not None else host) == d and (
            not consumers or any(devices[c] == d for c in consumers))

    held: dict[str, list[str]] = {}
    for v, d in devices.items():
        held.setdefault(d, []).append(v)
    return max(sum(instance.task(v).weights for v in vs)
               + max(bytes_beside_weights(instance, v, d) + sum(t.size for t, p, cs in around[v] if stays(d, p, cs))
                     for v in vs)
               for d, vs in held.items())


def _run(m, time_limit: float, workers: int, seed: int | None = None, presolve: bool = True) -> tuple:
    """(the solver, its status) after solving ``m`` within ``time_limit`` seconds (a search
    randomised by ``seed`` when given; CP-SAT's presolve off without ``presolve``), Ctrl-C left
    to :mod:`cpsched.interrupt` (which stops the search, as it does the engine's)."""
    from ortools.sat.python import cp_model

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = time_limit
    solver.parameters.num_workers = workers
    solver.parameters.cp_model_presolve = presolve
    if seed is not None:
        solver.parameters.random_seed = seed
        solver.parameters.randomize_search = True
    solver.parameters.catch_sigint_signal = False
    return solver, interrupt.run(lambda: solver.solve(m), solver.stop_search)
