"""Series decomposition at cut tasks: a lower bound valid for the whole graph, and a candidate schedule.

The schedule splits in time at every cut task (:mod:`cpsched.cuts`), and
between two kept cuts ``a`` and ``b`` lies a segment, its cut tasks pinned to
one device each.  For every pair of devices (``a`` on ``d``, ``b`` on ``d'``) the
segment is solved exactly (:func:`cpsched.lexico.solve`); any schedule of the
whole, cut at ``a`` and ``b``, is a schedule of that segment instance (memory
counts only the segment's own weights and tensors, so the segment relaxes it).
A dynamic programme over the cut tasks' devices then gives:

* latency: the sum of the segments' makespans, each cut task counted once;
* energy: the same sum of the segments' energies (a segment's static energy
  covers its own span), each cut task's energy and static share counted once;
* memory: the largest segment peak (a peak of the whole is at least each
  segment's).

Each segment contributes its proven optimum or, when its solve stops early,
its proven bound, so the result is a lower bound on the whole problem's
objective under the same ``limits`` (each limit holds for every segment too).
When every segment was solved to optimality, gluing the chosen segments'
schedules end to end gives a schedule whose value is that bound: if it passes
the validator (the whole's memory is what the segments relax), it is optimal.

Most pairs of devices never matter, so they are solved lazily: every pair
starts at its relaxation bound (critical path and load), the programme runs
over these values, the pairs on its cheapest path not solved yet are solved
(at once, in parallel), and it runs again, until its path uses solved pairs
only.  Every value standing in for an unsolved pair is a lower bound of the
pair's own, so that path's value is the one the programme over every pair
solved would give.  On ``edge``, resnet50's bound takes 15 solves of its 72
pairs (1.5 s), and densenet121's 519 pairs are settled in 1.4 s, where
solving every pair ran out of its 12 s.  The spans (below), which
constrain the pairs a solve under limits may take, ask for ``every_pair``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cpsched import interrupt, lexico
from cpsched.bounds import bytes_beside_weights, relaxation_bounds
from cpsched.classes import identical_devices
from cpsched.cuts import cheapest, overlap, segment_instance, segments
from cpsched.engines.protocol import Engine, Options
from cpsched.heuristics import evict
from cpsched.heuristics.heft import heft_or_none
from cpsched.instance import Instance, Mode
from cpsched.schedule import Placement, Schedule, Status
from cpsched.validator import peak_memory, scored, validate

#: the fewest tasks between two kept cut tasks (fewer, smaller segments: more solves, same bound)
SEGMENT_TASKS = 10
#: seconds per segment solve when the caller gives no time limit
SEGMENT_LIMIT = 10.0
#: how many equal shares of the time left one segment solve may take (most take far less)
SHARES = 4
#: after this many segment solves, one that proves under a third of them stops solving segments (the
#: rest contribute their relaxation bounds): the time is better spent on the search for schedules
GIVE_UP_AFTER = 9
#: the share of the budget left after the bound that repairing an over-full glued schedule may take
REPAIR_SHARE = 0.5
#: the Lagrangian pricing of device weights (see priced): tries, the first price as a share of the
#: plain bound per excess byte, the factor a price moves by until both sides are known, the scale
PRICES = 3
PRICE_START = 0.05
PRICE_STEP = 3
PRICE_SCALE = 10**6
#: the share of the priced bound's time kept for its room split (see _Room) after the tries
SPLIT_SHARE = 0.1
#: the steps of capacity in which the priced tries' segments are mixed (see _mixed)
MIX_STEPS = 1000
#: the shares of room left beside the mixed weights, each mixed once (see _lagrangian): on resnet50
#: (edge) the mixes fit at 15,875 with no room, 15,164 at 0.9 of it, 15,336 at 1.5
MIX_ROOM = tuple(k / 10 for k in range(16))
#: the least gain, as a share of the plain bound, that the Lagrangian's cutting-plane ceiling must leave
#: room for before another price is tried (see _ceiling): inception_v1 on edge leaves 0.1 %, resnet50 0.7 %
PRICE_GAIN = 0.003
#: the objectives the series bound covers (each with its way of joining segments)
OBJECTIVES = ("latency", "energy", "memory")


@dataclass(frozen=True)
class Series:
    """What the series decomposition proved and found.

    ``bound`` is a lower bound on the objective valid for the whole problem
    (None: the graph has no cut task, or no segment could be solved under the
    limits); ``schedule`` the glued schedule of the device choice whose
    segments' found schedules (proven or not) add up least, when it is valid
    for the whole (repaired if need be); ``info`` what ``solver.decompose.series``
    records.
    """

    objective: str
    bound: int | None
    schedule: Schedule | None
    info: Mapping
    #: the weights each device holds in the glued schedule's device choice (None: nothing to glue)
    weights: Mapping[str, int] | None = None
    #: per device, the most bytes besides the weights (inputs, outputs, workspace) that a task placed
    #: there in that choice holds while it runs (:func:`~cpsched.bounds.bytes_beside_weights`;
    #: None as ``weights``)
    touched: Mapping[str, int] | None = None
    #: (source cut, its device, sink cut, its device, a lower bound on the objective of the segment
    #: between them run with those devices): for latency, ``end[sink] - start[source]`` in every
    #: schedule of the whole (None ends: the schedule's start and its makespan)
    spans: tuple[tuple[str | None, str | None, str | None, str | None, int], ...] = ()
    #: per segment, (source device, sink device) -> the best schedule found for that pair (proven or
    #: not; HEFT's where the bound path had none), for :func:`priced` to mix
    found: tuple[Mapping[tuple[str | None, str | None], Schedule], ...] = ()

    @property
    def exact(self) -> bool:
        """Whether the glued schedule meets the bound: it is then optimal."""
        return self.schedule is not None and self.schedule.objectives[self.objective] == self.bound


def solve(instance: Instance, objective: str, usable: Mapping[str, tuple[str, ...]], options: Options,
          engine: Engine, limits: Mapping[str, int] | None = None, budget: float | None = None,
          least: int = SEGMENT_TASKS, repair: bool = True, every_pair: bool = False,
          floors: Mapping[tuple, int] | None = None, hints: Sequence[Sequence[Mapping]] = ()) -> Series:
    """The series bound (and glued schedule) for ``objective``; see the module docstring.

    ``budget`` seconds cover all segment solves (None: :data:`SEGMENT_LIMIT`
    each); a segment left without time contributes its relaxation bound.
    When the glued schedule breaks a memory capacity (each segment counted
    only its own weights), segments are solved again with the weights the
    other segments leave on each device taken off its capacity (:func:`_repair`),
    unless ``repair`` is False.  ``every_pair`` solves each segment once per
    pair of its cut tasks' devices up front instead of lazily (the spans of
    pairs the cheapest path avoids are then their own bounds).  ``floors``
    maps ``(source, its device, sink, its device)`` to a proven lower bound
    on that pair's objective, raising where it stands in for a lazy pair.
    ``hints`` are earlier series' ``found`` schedules of the same segments,
    valid under ``limits`` (per segment, pair -> schedule): a pair's solve
    starts from the one of least objective here (:func:`_hint`) instead of
    HEFT's, and a pair whose hint meets its floor is not solved at all.
    """
    parts = segments(instance, least)
    info: dict = {"cuts": len(parts) - 1, "segments": len(parts), "solves": 0, "proven": 0}
    if len(parts) < 2 or objective not in OBJECTIVES:
        return Series(objective, None, None, {**info, "skipped": "no cut task" if len(parts) < 2 else objective})
    quiet = dataclasses.replace(options, log=None, progress=None, archive=False, memory_plan=None)
    single, threads = _concurrency(instance, options)
    one = dataclasses.replace(quiet, workers=1, lp=objective in ONE_WORKER_LP)
    run = _Run(instance, objective, one if single else quiet, engine, limits, budget, info, quiet if single else None)
    ends = [([None] if a is None else list(usable[a]), [None] if b is None else list(usable[b])) for a, _, b in parts]
    info["pairs"] = sum(len(sources) * len(sinks) for sources, sinks in ends)
    # entries[k][(da, db)]: segment k with its cut tasks on da and db (None: proven infeasible)
    entries: list[dict[tuple, _Entry | None]] = [{} for _ in parts]
    pairs = [(k, da, db) for k, (sources, sinks) in enumerate(ends) for da in sources for db in sinks]
    built = {(k, da, db): segment_instance(instance, usable, parts[k][0], da, parts[k][1], parts[k][2], db, k)
             for k, da, db in pairs}
    hints = [found for found in hints if len(found) == len(parts)]  # others were cut otherwise
    starts = {(k, da, db): _hint(built[k, da, db], objective, [found[k].get((da, db)) for found in hints])
              for k, da, db in pairs} if hints else {}
    with ThreadPoolExecutor(threads) as pool:
        def settle(todo: list[tuple[int, str | None, str | None]]) -> None:
            run.pending = len(todo)
            for (k, da, db), (value, schedule) in zip(todo, pool.map(run.segment, [built[t] for t in todo],
                                                                      [starts.get(t) for t in todo])):
                entries[k][(da, db)] = None if value is None else _Entry(value, schedule, True)

        if every_pair:
            settle(pairs)
        else:
            for k, da, db in pairs:
                value = max(run.floor(built[k, da, db]), (floors or {}).get((parts[k][0], da, parts[k][2], db), 0))
                start = starts.get((k, da, db))
                if start is not None and start.objectives[objective] <= value:  # a hint at the floor is optimal
                    entries[k][(da, db)] = _Entry(start.objectives[objective], start, True)
                    info["at_floor"] = info.get("at_floor", 0) + 1
                else:
                    entries[k][(da, db)] = _Entry(value, None, False)
        while True:
            path = cheapest(instance, objective, parts,
                            [{pair: None if e is None else e.value for pair, e in segment.items()} for segment in entries])
            if path is None:
                return Series(objective, None, None, {**info, "skipped": "no device choice has a schedule under "
                                                                         "the limits"})
            todo = [(k, da, db) for k, (da, db) in enumerate(path[1]) if not entries[k][(da, db)].final]
            if not todo:
                break
            settle(todo)
    info["bound_time"] = round(time.monotonic() - run.clock, 3)
    bound, devices = path
    chosen = [(da, db, entries[k][(da, db)].schedule) for k, (da, db) in enumerate(devices)]
    spans = tuple((a, da, b, db, e.value) for (a, _, b), found in zip(parts, entries)
                  for (da, db), e in found.items() if e is not None)
    info["all_proven"] = not info.get("floors") and all(
        schedule is not None and schedule.objectives[objective] == entries[k][(da, db)].value
        for k, (da, db, schedule) in enumerate(chosen))
    glued = glue(instance, parts, chosen)
    # unless the bound's own path glues into the least value, the glued schedule follows the cheapest
    # path over the schedules found (proven or not), the bound path's pairs that time left without
    # one scheduled by HEFT, so that there is one to glue
    found = [{pair: e.schedule for pair, e in segment.items() if e is not None and e.schedule is not None}
             for segment in entries]
    for k, (da, db, schedule) in enumerate(chosen):
        if schedule is None and (fallback := heft_or_none(built[k, da, db])) is not None:
            found[k][da, db] = fallback
    upper = cheapest(instance, objective, parts, [
        {pair: schedule.objectives[objective] for pair, schedule in segment.items()} for segment in found])
    if upper is not None:
        other = [(da, db, found[k][da, db]) for k, (da, db) in enumerate(upper[1])]
        cheaper = glue(instance, parts, other)
        if glued is None or cheaper.objectives[objective] < glued.objectives[objective]:
            chosen, glued = other, cheaper
    weights = touched_most = None
    if glued is not None:
        weights = {d.id: 0 for d in instance.devices}
        touched_most = {d.id: 0 for d in instance.devices}
        for v, p in glued.tasks.items():
            weights[p.device] += instance.task(v).weights
            touched_most[p.device] = max(touched_most[p.device], bytes_beside_weights(instance, v, p.device))
    if glued is not None and not _valid(instance, glued, limits):
        info["glued_invalid"] = dict(glued.objectives)
        fitted = evict.fit(instance, glued, usable, objective)
        fitted = fitted if fitted is not None and _valid(instance, fitted, limits) else None
        info["fitted"] = None if fitted is None else dict(fitted.objectives)
        if budget is not None:  # the repair gets a share of what is left, the caller the rest
            spent = time.monotonic() - run.clock
            run.budget = spent + REPAIR_SHARE * max(0.0, budget - spent)
        repaired = _repair(instance, usable, parts, chosen, run, limits, glued) if repair else None
        glued = min((s for s in (fitted, repaired) if s is not None), default=None,
                    key=lambda s: s.objectives[objective])
    info["wall_time"] = round(time.monotonic() - run.clock, 3)
    info["glued"] = None if glued is None else dict(glued.objectives)
    return Series(objective, bound, glued, info, weights, touched_most, spans, tuple(found))


def _hint(part: Instance, objective: str, schedules: Sequence[Schedule | None]) -> Schedule | None:
    """Of ``schedules`` (the same segment's, solved on a copy of the instance re-priced otherwise:
    same tasks, devices and durations), the one of least ``objective`` scored on ``part`` (None: none).
    A schedule of other tasks (a series cut otherwise) is passed over."""
    tasks = {t.id for t in part.tasks}
    again = [scored(part, dict(s.tasks), list(s.transfers)) for s in schedules
             if s is not None and s.tasks.keys() == tasks]
    return min(again, key=lambda s: s.objectives[objective], default=None)


@dataclass(frozen=True)
class _Entry:
    """A segment's value with its cut tasks on one pair of devices: a lower bound, ``final`` once
    that pair was solved itself (then ``schedule`` is its best, None if it found none)."""

    value: int
    schedule: Schedule | None
    final: bool


def _concurrency(instance: Instance, options: Options) -> tuple[bool, int]:
    """(whether each segment is solved first with one worker, how many segment solves run at once).

    A segment is small and its solve leaves cores idle much of the time, so on
    heterogeneous devices (``workers`` not given) each segment is solved first
    with one worker, as many at once as there are cores, and again with the
    engine's own workers only when one worker does not prove it (see
    :class:`_Run`); identical devices, whose proofs need the engine's larger
    portfolio, and a ``workers`` given share the cores out.
    """
    cores = os.cpu_count() or 1
    if options.workers is None and not identical_devices(instance):
        return True, cores
    return False, max(1, cores // (options.workers or cores))


@dataclass(frozen=True)
class Priced:
    """What :func:`priced` proved and found: a latency bound (None: not applicable or no time),
    a record of how, and the best valid schedule its tries glued (None: none)."""

    bound: int | None
    info: dict
    schedule: Schedule | None = None


def priced(instance: Instance, usable: Mapping[str, tuple[str, ...]], options: Options, engine: Engine,
           plain: Series, limits: Mapping[str, int] | None = None, budget: float | None = None,
           least: int = SEGMENT_TASKS) -> Priced:
    """A latency bound that charges what the plain series bound put over a device's memory.

    Each segment counts only its own weights and tensors, so the plain bound
    may overfill a small device in two ways:

    * **weights over memory**: the weights on those devices, all together,
      exceed their capacities ``C``: the Lagrangian (:func:`_lagrangian`)
      prices them against ``C``;
    * **weights within memory, a task's bytes on top over it**: the
      Lagrangian prices them against ``C - A``, ``A`` the most bytes a task of
      the plain choice holds on the device ``d`` most over (below).

    Either way the bound then splits on the room the tasks' own bytes take
    (:class:`_Room`): while a task ``v`` runs on ``d``, its inputs, outputs and
    workspace (``bytes_beside_weights``) are live beside all of ``d``'s
    weights.  So for any ``A``, every schedule either runs no task holding
    ``A`` bytes or more on ``d`` (those tasks lose ``d``: that case's plain
    series bound), or keeps the weights within ``C - A`` (the tries' duals
    at that capacity); the lesser of the two bounds holds for the whole, and
    the best ``A`` is searched for.

    Each try's glued schedule (fitted into memory, :mod:`cpsched.heuristics.evict`),
    the cases' lighter ones and the tries' segments mixed (:func:`_mixed`, the
    least latency whose weights fit) are schedules of the whole: the best valid
    one comes back beside the bound (a Lagrangian heuristic).  On resnet50 (edge)
    the plain choice, 54 MB over the NPU, fits at 17,721, the first try's, 7 MB
    over, at 16,295, the second try's fits as it is, at 15,626, and the mix at
    15,164, which neither the whole model's polish nor the search after it beat
    in 60 s (the windows had found 15,774).
    """
    clock = time.monotonic()
    if plain.bound is None or plain.weights is None or plain.touched is None:
        return Priced(None, {"skipped": "the plain series bound has no device choice"})
    cap = (limits or {}).get("memory")
    memory = {d.id: d.memory if cap is None else min(d.memory, cap) for d in instance.devices}
    over = sorted(d for d in plain.weights if memory[d] < plain.weights[d])
    if over:
        capacity = target = sum(memory[d] for d in over)
        d = max(over, key=lambda d: plain.touched[d])
    else:
        full = [d for d in plain.weights if plain.weights[d] and plain.weights[d] + plain.touched[d] > memory[d]]
        if not full:
            return Priced(None, {"skipped": "every device holds the plain bound's weights and its tasks' bytes"})
        d = max(full, key=lambda d: plain.weights[d] + plain.touched[d] - memory[d])
        over, capacity = [d], memory[d]
        target = capacity - plain.touched[d]
    if _futile(plain, over, target):
        return Priced(None, {"devices": over, "skipped": "pricing cannot gain one unit"})
    room = _Room(instance, usable, options, engine, plain, d, capacity, limits, least)
    if target < capacity:  # the tries' bound holds only for the case within; the other first, at the
        # plain choice's room, with a third of the time
        room.without(plain.touched[d], None if budget is None else budget / 3)
    left = None if budget is None else budget - (time.monotonic() - clock)
    best, record, found, duals = _lagrangian(instance, usable, options, engine, plain, over, target, limits,
                                             None if left is None else (1 - SPLIT_SHARE) * left, least)
    if target < capacity:
        best = None
    room.search(duals, None if budget is None else budget - (time.monotonic() - clock))
    split = room.best(duals)
    if split is not None and (best is None or split[0] > best):
        best, split = split
    else:
        split = None
    if (lighter := room.lighter()) is not None:
        found = lighter if found is None else _better(found, lighter, "latency")
    info = {"devices": over, **record, **({"split": split} if split is not None else {}),
            "wall_time": round(time.monotonic() - clock, 3)}
    return Priced(best, info, found)


class _Room:
    """The room split of :func:`priced` on one device: per threshold ``A`` of the bytes a task
    holds there besides the weights, the bound of each case, the lesser of which holds.

    "Within" (some task holding ``A`` or more runs there) is the best of the
    tries' duals ``(p, v)`` at ``capacity - A``, ``ceil((v - p * (capacity - A)) / PRICE_SCALE)``
    (or the plain bound), which grows with ``A``; "without" (no such task does)
    is the series bound with those tasks kept off the device (None: that case
    has no schedule), which falls as ``A`` grows.
    """

    def __init__(self, instance: Instance, usable: Mapping[str, tuple[str, ...]], options: Options,
                 engine: Engine, plain: Series, device: str, capacity: int, limits: Mapping[str, int] | None,
                 least: int):
        self.instance, self.usable, self.options, self.engine = instance, usable, options, engine
        self.plain, self.device, self.capacity, self.limits, self.least = plain, device, capacity, limits, least
        self.beside = {v: bytes_beside_weights(instance, v, device) for v, ds in usable.items() if device in ds}
        self.sizes = sorted(set(self.beside.values()))
        self.floors = {span[:4]: span[4] for span in plain.spans}  # fewer devices: no lower
        #: threshold -> (the "without" case's bound, its glued schedule when valid)
        self.solved: dict[int, tuple[int | None, Schedule | None]] = {}

    def without(self, held: int, budget: float | None) -> int | None:
        """The "without" case's bound at ``held`` (solved once, within ``budget`` seconds)."""
        if held not in self.solved:
            keep = {v: tuple(x for x in ds if x != self.device or self.beside[v] < held)
                    for v, ds in self.usable.items()}
            if not all(keep.values()):
                self.solved[held] = (None, None)
            else:
                case = solve(self.instance, "latency", keep, self.options, self.engine, self.limits, budget,
                             self.least, repair=False, floors=self.floors)
                self.solved[held] = (case.bound, case.schedule)
        return self.solved[held][0]

    def within(self, held: int, duals: Sequence[tuple[int, int]]) -> int | None:
        """The "within" case's bound at ``held`` (None: no schedule keeps the weights within
        ``capacity - held``)."""
        room = self.capacity - held
        if room < 0:
            return None
        return max([self.plain.bound, *(_dual_bound(p, value, room) for p, value in duals)])

    def search(self, duals: Sequence[tuple[int, int]], budget: float | None) -> None:
        """Solve the "without" case at the thresholds a bisection for the cases' crossing visits,
        each with half the time left, while time is left."""
        clock = time.monotonic()
        lo, hi = 0, len(self.sizes) - 1
        while lo <= hi and not interrupt.requested():
            left = None if budget is None else budget - (time.monotonic() - clock)
            if left is not None and left <= 0.5:
                break
            mid = (lo + hi) // 2
            outside = self.without(self.sizes[mid], None if left is None else left / 2)
            inside = self.within(self.sizes[mid], duals)
            if outside is None or inside is None or outside >= inside:
                lo = mid + 1
            else:
                hi = mid - 1

    def best(self, duals: Sequence[tuple[int, int]]) -> tuple[int, dict] | None:
        """The bound of the solved threshold whose lesser case bounds highest and its record (None:
        none solved or no case has a schedule): ``bytes``, the ``tasks`` kept off in the "without"
        case, both cases' bounds and the thresholds ``tried``."""
        cases = {held: (outside, self.within(held, duals)) for held, (outside, _) in self.solved.items()}
        values = {held: min(v for v in both if v is not None)
                  for held, both in cases.items() if both != (None, None)}
        if not values:
            return None
        held = max(values, key=values.get)
        return values[held], {"device": self.device, "bytes": held,
                              "tasks": sum(b >= held for b in self.beside.values()),
                              "without": cases[held][0], "within": cases[held][1], "tried": sorted(self.solved)}

    def lighter(self) -> Schedule | None:
        """The least-latency valid schedule the "without" cases glued (None: none)."""
        return min((s for _, s in self.solved.values() if s is not None), key=lambda s: s.objectives["latency"],
                   default=None)


def _futile(plain: Series, devices: Sequence[str], capacity: int) -> bool:
    """Whether pricing the weights on ``devices`` against ``capacity`` cannot raise the plain bound
    by one unit, so that its rounds would only take time.

    At a price ``p`` the plain choice caps the Lagrangian at ``plain + p * excess``,
    and a choice that moves every weight off at its cost minus ``p * capacity``; with
    that cost at most twice the plain bound, no price gains ``plain * excess /
    (capacity + excess)`` or more.  A rule for where to spend time, not a bound:
    inception_v1 on ``edge`` overfills the NPU by 128 bytes beside its concat, and
    three rounds (18 s at 60 s) gave only negative bounds.
    """
    excess = sum(plain.weights[d] for d in devices) - capacity
    return plain.bound * excess < capacity + excess


def _lagrangian(instance: Instance, usable: Mapping[str, tuple[str, ...]], options: Options, engine: Engine,
                plain: Series, devices: Sequence[str], capacity: int, limits: Mapping[str, int] | None,
                budget: float | None, least: int) -> tuple[int | None, dict, Schedule | None, list[tuple[int, int]]]:
    """A latency bound for the schedules that keep the weights on ``devices`` within ``capacity``
    bytes, which the plain bound's choice overfills.

    For a price ``p / q`` (time units per byte) on those weights, the segments
    minimise ``q * makespan + p * weights there`` (an energy objective of a
    re-priced copy of the instance: static power ``q`` on one device, task
    energy ``p * weights`` on the priced devices, nothing else), and
    ``ceil((bound - p * capacity) / q)`` is a latency bound (Lagrangian
    relaxation).  Prices are tried from an estimate out of ``plain`` (its
    latency bound over the excess weights, scaled by :data:`PRICE_START`), up
    by :data:`PRICE_STEP` while the priced choice still holds too much, down
    while it fits, and between the two (geometric mean) once both sides are
    known, each try with all the time left (a segment solve takes only what
    it needs), until the tries' cutting-plane ceiling (:func:`_ceiling`)
    leaves less than :data:`PRICE_GAIN` of the plain bound to gain.  A pair's
    re-priced value is at least ``q`` times its latency, so the plain series'
    spans stand in for the pairs not solved yet, far above their relaxation
    bounds, and so do its values at the earlier prices (:func:`_between`): the
    lazy rounds solve fewer pairs, a pair whose earlier schedule meets that
    bound is proven without a solve, and the others start from the earlier
    tries' best schedule.
    Returns the best bound (None: no try finished), a record (each try; the
    latency of the tries' segments mixed, :func:`_mixed`), the best valid
    schedule of the tries' and the mix, scored on ``instance`` (None: none),
    and each try's dual ``(p, the re-priced series bound)``, which bounds
    latency under any other capacity too (:class:`_Room`).
    """
    excess = sum(plain.weights[d] for d in devices) - capacity
    price = PRICE_START * plain.bound / excess
    clock = time.monotonic()
    kept = {n: v for n, v in (limits or {}).items() if n != "energy"}  # energy is re-priced
    # a pair's re-priced energy is at least PRICE_SCALE times its makespan, at least its plain span
    # (solved under the same limits; an energy limit, dropped here, could have raised it); with the
    # tries' own spans, these are its bounds at known prices (see _between)
    known: dict[tuple, list[tuple[int, int]]] = {} if "energy" in (limits or {}) else {
        (a, da, b, db): [(0, PRICE_SCALE * value)] for a, da, b, db, value in plain.spans}
    best, tries, schedule, pools, duals = None, [], None, [plain.found], []
    lines = [(0.0, plain.bound, excess)]  # (price, bound, weights over capacity): the dual's supergradients
    over_at = under_at = None  # the highest price whose choice held too much, the lowest one that fit
    for _ in range(PRICES):
        left = None if budget is None else budget - (time.monotonic() - clock)
        if interrupt.requested() or (left is not None and left <= 0.5):
            break
        p = max(1, round(price * PRICE_SCALE))
        floors = {pair: _between(points, p) for pair, points in known.items()}
        found = solve(_repriced(instance, devices, p), "energy", usable, options, engine, kept, left, least,
                      repair=False, floors=floors, hints=pools)
        for a, da, b, db, value in found.spans:
            known.setdefault((a, da, b, db), []).append((p, value))
        if found.bound is None:
            break
        bound = _dual_bound(p, found.bound, capacity)
        duals.append((p, found.bound))
        held = None if found.weights is None else sum(found.weights[d] for d in devices)
        tries.append({"price": p / PRICE_SCALE, "bound": bound, "weights": held, "solves": found.info["solves"],
                      "at_floor": found.info.get("at_floor", 0)})
        pools.append(found.found)
        if found.schedule is not None:  # same tasks, devices and memory: a schedule of the whole
            again = scored(instance, dict(found.schedule.tasks), list(found.schedule.transfers))
            if _valid(instance, again, limits):
                schedule = _better(schedule, again, "latency")
                tries[-1]["latency"] = again.objectives["latency"]
        best = bound if best is None else max(best, bound)
        if held is None:  # some segment found nothing: no direction to move the price in
            break
        lines.append((p / PRICE_SCALE, bound, held - capacity))
        ceiling = _ceiling(lines)
        tries[-1]["ceiling"] = None if ceiling == math.inf else round(ceiling, 1)  # JSON has no Infinity
        if ceiling < max(best, plain.bound) + PRICE_GAIN * plain.bound:
            break
        if held > capacity:
            over_at = price
        else:
            under_at = price
        price = (math.sqrt(over_at * under_at) if over_at is not None and under_at is not None else
                 price * PRICE_STEP if held > capacity else price / PRICE_STEP)
    # the weights mixed up to the capacity less shares of the most bytes a task of the plain choice
    # holds there besides them, the room the tasks' own bytes may need
    parts, room, mixes = segments(instance, least), max(plain.touched[d] for d in devices), []
    choices = _choices(instance, parts, pools, devices)
    for share in MIX_ROOM:
        picks = _mixed(choices, capacity - round(share * room))
        mixed = None if picks is None else glue(instance, parts, picks)
        if mixed is not None and not _valid(instance, mixed, limits):
            mixed = evict.fit(instance, mixed, usable)
        if mixed is not None and _valid(instance, mixed, limits):
            schedule = _better(schedule, mixed, "latency")
            mixes.append(mixed.objectives["latency"])
    return best, {"tries": tries, "mixed": mixes}, schedule, duals


def _between(points: Sequence[tuple[int, int]], p: int) -> int:
    """A lower bound on a pair's re-priced value at price ``p`` from lower bounds ``(price, value)``
    at other prices.

    The value is the least of ``PRICE_SCALE * makespan + price * weights`` over
    the pair's schedules, so it never falls as the price rises (the weights
    are not negative), and it is concave in the price (a least of lines): it
    lies above every chord between two prices on either side of ``p``.
    """
    best = max((v for q, v in points if q <= p), default=0)
    for q1, v1 in points:
        for q2, v2 in points:
            if q1 < p < q2:
                best = max(best, v1 - ((v1 - v2) * (p - q1) // (q2 - q1)))
    return best


def _dual_bound(p: int, value: int, capacity: int) -> int:
    """The latency bound a price's re-priced series bound ``value`` gives when the priced weights
    are at most ``capacity``: ``ceil((value - p * capacity) / PRICE_SCALE)`` (see :func:`_lagrangian`)."""
    return -(-(value - p * capacity) // PRICE_SCALE)


def _ceiling(lines: Sequence[tuple[float, int, int]]) -> float:
    """The most the Lagrangian dual could reach at any price, were the tries exact.

    The dual is concave in the price, so each try at price ``p`` with bound
    ``b`` and ``g`` bytes over the capacity (a supergradient) caps it at
    ``b + g * (q - p)`` for every price ``q``; the least of these lines is
    highest at ``q = 0`` or where two of them cross.  Inf when every line
    rises.  Segments left unproven make the lines approximate, so it rules
    where time goes (another price or not), never a bound.
    """
    if all(g > 0 for _, _, g in lines):
        return math.inf
    prices = [0.0] + [(b2 - b1 + g1 * p1 - g2 * p2) / (g1 - g2)
                      for i, (p1, b1, g1) in enumerate(lines) for p2, b2, g2 in lines[i + 1:] if g1 != g2]
    return max(min(b + g * (q - p) for p, b, g in lines) for q in prices if q >= 0)


def _choices(instance: Instance, parts, pools: Sequence[Sequence[Mapping]], devices: Sequence[str]) -> list[list]:
    """Per segment, ``(source device, sink device, weights on devices, latency, schedule)`` for each
    schedule of ``pools`` (the plain series' and each priced try's, per segment and pair of cut
    devices); the latency less the source cut task's, counted in the segment before."""
    return [[(da, db, sum(instance.task(v).weights for v, p in found.tasks.items() if v != a and p.device in devices),
              found.objectives["latency"] - (overlap(instance, "latency", a, da) if a is not None else 0), found)
             for pool in pools for (da, db), found in pool[k].items()]
            for k, (a, _, _) in enumerate(parts)]


def _mixed(choices: list[list], capacity: int) -> list | None:
    """The segments' schedules (``(source device, sink device, schedule)`` each) whose glued
    schedule has the least latency with the weights within ``capacity``, each segment's taken
    from its :func:`_choices`; None when no choice fits.

    A multiple-choice knapsack: a dynamic programme over the segments whose states are the last
    cut task's device and the bytes used so far, counted up in :data:`MIX_STEPS` steps of
    ``capacity`` (so a choice it keeps fits), only the states no other state beats in both kept.
    The tries' own choices sit on either side of ``capacity``; mixing them lands near it.
    """
    if capacity <= 0:
        return None
    unit = -(-capacity // MIX_STEPS)
    most = capacity // unit
    best: dict[tuple[str | None, int], tuple[int, list]] = {(None, 0): (0, [])}
    for segment in choices:
        step: dict[tuple[str | None, int], tuple[int, list]] = {}
        for da, db, held, value, found in segment:
            steps = -(-held // unit)
            for (at, used), (total, picks) in best.items():
                if at == da and used + steps <= most and (
                        (db, used + steps) not in step or total + value < step[db, used + steps][0]):
                    step[db, used + steps] = (total + value, picks + [(da, db, found)])
        best, least = {}, {}  # least: per device, the lowest total of the states kept so far
        for at, used in sorted(step, key=lambda state: (state[0] or "", state[1])):
            if at not in least or step[at, used][0] < least[at]:
                best[at, used], least[at] = step[at, used], step[at, used][0]
        if not best:
            return None
    return min(best.values(), key=lambda entry: entry[0])[1]


def _better(best: Schedule | None, other: Schedule, objective: str) -> Schedule:
    """The one of ``best`` (None: none yet) and ``other`` lower in ``objective``."""
    return other if best is None or other.objectives[objective] < best.objectives[objective] else best


def _repriced(instance: Instance, devices: Sequence[str], p: int) -> Instance:
    """The copy of ``instance`` whose energy is ``PRICE_SCALE * makespan + p * weights on devices``."""
    tasks = tuple(dataclasses.replace(t, modes={d: Mode(m.duration, p * t.weights if d in devices else 0)
                                                for d, m in t.modes.items()}) for t in instance.tasks)
    return dataclasses.replace(
        instance, tasks=tasks,
        devices=tuple(dataclasses.replace(d, static_power=PRICE_SCALE if d.host else 0) for d in instance.devices),
        links=tuple(dataclasses.replace(link, energy_per_byte=0) for link in instance.links))


#: seconds a segment's one-worker solve gets before the engine's portfolio takes over (most prove in
#: a tenth of that; resnet50 on edge had a re-priced segment that one worker proved in 12.4 s and two
#: in 1.2 s, both with the LP relaxation)
ONE_WORKER_LIMIT = 1.0
#: the objectives whose one-worker segment solves keep the LP relaxation (``Options.lp``).  For
#: latency and energy its bound stays at the critical path until the search closes the gap anyway,
#: and the search is cheaper without it.  Latency on edge, every pair of every segment solved, one
#: worker then the portfolio, two at once (CPU seconds, with LP / without): inception_v2 176 / 76
#: (its module segments 4-6 s / 0.6-1.6 s each), resnet50 7.8 / 4.2, inception_v1 6.5 / 4.1,
#: densenet121 15.7 / 15.9.  Memory keeps it (inception_v1's series 0.9 s with, 1.5 s without)
ONE_WORKER_LP = ("memory",)
#: segment (content hash), objective, limits, engine -> its proven result (optimal or infeasible),
#: kept per process: the priced bounds solve most of the plain series' segments again
_PROVEN: dict[tuple, Schedule] = {}
PROVEN_KEPT = 4096


class _Run:
    """The segment solves of one series decomposition, sharing its time budget (from several
    threads at once: the counters are kept under a lock).  A segment that ``options`` leave
    unproven is solved again with ``fallback`` when given (one worker first, then the engine's
    portfolio: measured on 2 cores, one worker each solved densenet121 fused's 177 re-priced
    segments in 7.9 s instead of 14.2 s, but left some of resnet50's unproven, which lowered its
    priced bound from 14,951 to 14,756)."""

    def __init__(self, instance: Instance, objective: str, options: Options, engine: Engine,
                 limits: Mapping[str, int] | None, budget: float | None, info: dict,
                 fallback: Options | None = None):
        self.instance, self.objective, self.options, self.engine = instance, objective, options, engine
        self.limits, self.budget, self.info, self.fallback = limits, budget, info, fallback
        self.clock = time.monotonic()
        self.pending = 1  # solves still to come, each getting an equal share of what is left
        self.lock = threading.Lock()

    def segment(self, part: Instance, hint: Schedule | None = None) -> tuple[int | None, Schedule | None]:
        """(a proven lower bound on the segment's objective, its best schedule or None);
        (None, None) when the segment is proven infeasible.  ``hint`` is used where it fits, HEFT's
        schedule when there is none (inception_v2's twelve segments on edge, one worker each: 65 s
        to prove without it, 35 s with it)."""
        with self.lock:
            if self.budget is None:
                limit = SEGMENT_LIMIT
            else:
                left = self.budget - (time.monotonic() - self.clock)
                limit = min(left, SHARES * left / self.pending)
            self.pending = max(1, self.pending - 1)
            hopeless = self.info["solves"] >= GIVE_UP_AFTER and self.info["proven"] * 3 < self.info["solves"]
            if interrupt.requested() or limit <= 0.01 or hopeless:
                self.info["floors"] = self.info.get("floors", 0) + 1  # segments left to their relaxation
                return self.floor(part), None
        key = (part.content_hash, self.objective, tuple(sorted((self.limits or {}).items())), self.engine.name)
        result = _PROVEN.get(key)
        if result is None:
            hint = hint if hint is not None else heft_or_none(part)
            first = limit if self.fallback is None else min(limit, ONE_WORKER_LIMIT)
            result = lexico.solve(part, [self.objective], dataclasses.replace(self.options, time_limit=first),
                                  hint=hint, limits=self.limits, engine=self.engine)
            if self.fallback is not None and result.status not in (Status.OPTIMAL, Status.INFEASIBLE):
                result = lexico.solve(part, [self.objective], dataclasses.replace(self.fallback, time_limit=limit),
                                      hint=result if result.status.has_schedule else hint, limits=self.limits,
                                      engine=self.engine)
            if result.status in (Status.OPTIMAL, Status.INFEASIBLE):
                with self.lock:
                    if len(_PROVEN) >= PROVEN_KEPT:
                        _PROVEN.clear()
                    _PROVEN[key] = result
        with self.lock:
            self.info["solves"] += 1
            self.info["proven"] += result.status is Status.OPTIMAL
        if result.status is Status.INFEASIBLE:
            return None, None
        if result.status is Status.OPTIMAL:
            return result.objectives[self.objective], result
        bound = result.bounds.get(self.objective)
        return (self.floor(part) if bound is None else bound), result if result.status.has_schedule else None

    def floor(self, part: Instance) -> int:
        """The segment's relaxation bound (its tasks' modes are already the usable ones)."""
        return relaxation_bounds(part, {t.id: tuple(t.modes) for t in part.tasks}, series=False)[self.objective]


def _repair(instance: Instance, usable: Mapping[str, tuple[str, ...]], parts, chosen: list, run: _Run,
            limits: Mapping[str, int] | None, glued: Schedule) -> Schedule | None:
    """A valid glued schedule near the over-full ``glued``, or None.

    One segment is solved again on the same cut devices, the others kept,
    with every device's memory lowered by the weights the other segments
    place there (:func:`_refit`), and once more lowered further by what
    ``glued`` is over (so that the segment frees weights for the others'
    peaks); the best valid result wins: the cheapest single change.  When
    none is valid, every segment in turn, each seeing the previous ones' new
    schedules.
    """
    peaks = peak_memory(instance, glued)
    over = {d.id: peaks[d.id] - d.memory for d in instance.devices if peaks[d.id] > d.memory}
    run.pending = 3 * len(parts)
    best: Schedule | None = None
    for k in range(len(parts)):
        for extra in ({}, over):
            again = glue(instance, parts, _refit(instance, usable, parts, chosen, k, run, extra))
            if again is not None and _valid(instance, again, limits) and (
                    best is None or again.objectives[run.objective] < best.objectives[run.objective]):
                best = again
    if best is not None:
        return best
    for k in range(len(parts)):
        chosen = _refit(instance, usable, parts, chosen, k, run, {})
    again = glue(instance, parts, chosen)
    return again if again is not None and _valid(instance, again, limits) else None


def _refit(instance: Instance, usable: Mapping[str, tuple[str, ...]], parts, chosen: list, k: int,
           run: _Run, extra: Mapping[str, int]) -> list:
    """``chosen`` with segment ``k`` solved again, each device's memory lowered by the weights the
    other segments' schedules place there and by ``extra`` (unchanged when that finds nothing)."""
    a, between, b = parts[k]
    own = set(between) | {a, b}
    held = dict(extra)
    for _, _, schedule in chosen:
        for v, p in (schedule.tasks.items() if schedule is not None else ()):
            if v not in own:
                held[p.device] = held.get(p.device, 0) + instance.task(v).weights
    da, db, current = chosen[k]
    part = segment_instance(instance, usable, a, da, between, b, db, k)
    devices = tuple(dataclasses.replace(d, memory=max(0, d.memory - held.get(d.id, 0))) for d in part.devices)
    _, schedule = run.segment(dataclasses.replace(part, devices=devices), current)
    return chosen if schedule is None else [*chosen[:k], (da, db, schedule), *chosen[k + 1:]]


def glue(instance: Instance, parts, chosen: list) -> Schedule | None:
    """The segments' schedules end to end, each shifted so its source cut task runs where the
    previous segment placed it as its sink; None when a segment has no schedule."""
    if any(schedule is None for _, _, schedule in chosen):
        return None
    tasks: dict[str, Placement] = {}
    transfers = []
    for (source, _, _), (_, _, schedule) in zip(parts, chosen):
        shift = 0 if source is None else tasks[source].start - schedule.tasks[source].start
        for v, p in schedule.tasks.items():
            if v != source:
                tasks[v] = Placement(p.device, p.start + shift)
        transfers += [dataclasses.replace(t, start=t.start + shift) for t in schedule.transfers]
    order = {t.id: i for i, t in enumerate(instance.tasks)}
    return scored(instance, dict(sorted(tasks.items(), key=lambda kv: order[kv[0]])), transfers)


def _valid(instance: Instance, schedule: Schedule, limits: Mapping[str, int] | None) -> bool:
    """Whether the glued schedule is valid for the whole and meets ``limits``."""
    return validate(instance, schedule, check_claims=False).valid and schedule.within(limits)
