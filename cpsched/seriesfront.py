"""Latency/energy fronts joined from the fronts of the segments between cut tasks.

A schedule splits in time at every cut task (:mod:`cpsched.cuts`), and its latency and
its energy both add up over the segments between cut tasks, each cut task's share
(:func:`cpsched.cuts.overlap`) counted once: the part of a schedule between two cut tasks
is a schedule of that segment's instance (:func:`cpsched.cuts.segment_instance`, the cut
tasks pinned to their devices), whose makespan and energy (static power over its own span)
add up to the whole's.  So each segment's latency/energy front, one per pair of devices of
its cut tasks (:func:`cpsched.pareto.sweep`), joined over the cut tasks' devices (every
sum, the dominated ones dropped: :func:`_join`) gives

* a lower set of the whole's front: the segments' lower sets joined (every schedule's
  vector is at least one of the sums), which a sweep's lower set starts with
  (:attr:`Joined.proofs`);
* candidate points: the segments' points' schedules glued end to end
  (:func:`cpsched.series.glue`), kept when valid for the whole (each segment counts only
  its own weights against the memory capacities), else fitted into them.

Where every segment front is complete and every glued schedule valid, the two are equal:
the whole's front is exact without one step of the whole.  The segments are every cut
task's (the decomposition is exact at each, and small segments' fronts are quick).  On
``edge``, fused shufflenet (110 tasks, 19 segments, 91 pairs of cut devices): its exact
front, 171 points, in 6 s, where a 600-s sweep of the whole had left it within 18.8 %;
unfused inception_v1 (143 tasks, 17 segments, 135 pairs): 134 of its segment fronts
complete in 160 s (the largest segments, 13-14 tasks, 1-4 s a pair), but its glued
schedules all overfill the NPU by 0.1-0.9 MB (its weights nearly fill it), so the joined
lower set starts its sweep and a few glued schedules repaired (:func:`_moved`) start its
points: 34.8 % -> 16.8 % at 600 s.
Where the capacities bind harder, neither part helps (:data:`CROWDED`).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cpsched import interrupt, lexico, lns, pareto
from cpsched.bounds import Unreachable, bytes_beside_weights, usable_devices
from cpsched.cuts import Segment, overlap, segment_instance, segments
from cpsched.engines.protocol import Options
from cpsched.heuristics.evict import fit
from cpsched.instance import Instance
from cpsched.schedule import Front, Schedule
from cpsched.series import glue
from cpsched.validator import validate

#: the objectives a joined front covers: both add up over the segments
NAMES = ("latency", "energy")
#: seconds each segment's front gets at most without a time limit
PAIR_LIMIT = 30.0
#: the joined front is left out where some device would be fuller than this share of its memory with every
#: task that can run on it there (:func:`_crowded`): its glued schedules then break the capacities, and its
#: lower set, which does not see them, lies far below the front.  On ``edge``: unfused inception_v1 1.03
#: (its latency/energy front at 600 s 34.8 % -> 19.9 % with it), fused inception_v2 1.34 (120 s: 50.1 % ->
#: 54.7 %, its glued schedules' energy 15-20 % above the lower set), resnet50 2.35-3.24
CROWDED = 1.1
#: glued schedules that overfill a device, evenly spread along the joined front, repaired by moving one task
#: off it (:func:`_moved`), each in at most REPAIR_LIMIT seconds.  Unfused inception_v1 (``edge``): all its
#: glued schedules overfill the NPU by 0.1-0.9 MB; with one 1.28 MB convolution moved to the GPU and the
#: rest ordered again (1-5 s each), mid-front points 0.6-2.1 % below a 600-s sweep's in energy
REPAIRS = 8
REPAIR_LIMIT = 3.0


@dataclass(frozen=True)
class Joined:
    """The joined front of an instance: its proven lower set (``(latency, energy)``, latency
    ascending), the glued schedules on the joined front of the segments' points that are valid
    for the whole, and what :func:`front` did (``info``)."""

    lower: tuple[tuple[int, int], ...]
    schedules: tuple[Schedule, ...]
    info: Mapping[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether the glued points are the lower set: the whole's front is exact."""
        return {(s.objectives["latency"], s.objectives["energy"]) for s in self.schedules} == set(self.lower)

    @property
    def proofs(self) -> list[dict]:
        """The lower set as statements in ``solver.proofs``' format: every schedule's latency is at
        least the first point's, and every schedule within a latency below a point's has at least
        the energy of the point before it (the last point's energy everywhere)."""
        if not self.lower:
            return [{"given": {}, "objective": None, "at_least": None}]
        out = [{"given": {}, "objective": "latency", "at_least": self.lower[0][0]}]
        for (_, energy), (latency, _) in zip(self.lower, self.lower[1:]):
            out.append({"given": {"latency": latency - 1}, "objective": "energy", "at_least": energy})
        out.append({"given": {}, "objective": "energy", "at_least": self.lower[-1][1]})
        return out


def front(instance: Instance, options: Options = Options(), time_limit: float | None = None,
          engine: str = "cpsat", progress: Callable[[str], None] | None = None,
          crowded: float = CROWDED) -> Joined | None:
    """The joined latency/energy front of ``instance`` (see the module docstring), the segments'
    fronts solved within ``time_limit`` seconds in all (None: :data:`PAIR_LIMIT` each), the
    smallest segments first, each pair getting an even share of the time left; a front cut by its
    share gives its lower set and points so far.  None when it does not apply: named modes, no
    cut task, a task with no usable device, or a device more ``crowded`` than that
    (:func:`_crowded`).  A glued schedule that breaks a device's capacity is fitted
    (:func:`cpsched.heuristics.evict.fit`: tasks moved off, list-scheduled again), and
    :data:`REPAIRS` of them are repaired (:func:`_moved`) in the time left."""
    if not instance.plain:
        return None
    try:
        usable = usable_devices(instance)
    except Unreachable:
        return None
    parts = segments(instance, 1)
    if len(parts) < 2 or _crowded(instance, usable) > crowded:
        return None
    clock = time.monotonic()
    fronts = _fronts(instance, usable, parts, options, time_limit, engine, progress)
    lower = [v for v, _ in _join(instance, parts, _vectors(fronts, lambda f: f.lower or ()))]
    joined = _glued(instance, parts, fronts)
    glued = [schedule for schedule, excess in joined if not excess]
    broken = [(schedule, excess) for schedule, excess in joined if excess]
    fitted = [s for s in (fit(instance, schedule, usable, "energy") for schedule, _ in broken) if s is not None]
    moved = []
    for schedule, excess in broken[::-(-len(broken) // REPAIRS)] if broken else ():
        left = None if time_limit is None else time_limit - (time.monotonic() - clock)
        if left is not None and left <= 0 or interrupt.requested():
            break
        found = _moved(instance, usable, schedule, excess, options, engine,
                       REPAIR_LIMIT if left is None else min(REPAIR_LIMIT, left))
        if found is not None:
            moved.append(found)
    info = {"segments": len(parts), "pairs": sum(map(len, fronts)),
            "complete": sum(f.complete for found in fronts for f in found.values()), "lower": len(lower),
            "glued": len(glued), "fitted": len(fitted), "moved": len(moved),
            "wall_time": round(time.monotonic() - clock, 3)}
    glued += fitted + moved
    return Joined(tuple(lower), tuple(glued), info)


def _crowded(instance: Instance, usable: Mapping[str, tuple[str, ...]]) -> float:
    """The most any device's memory would hold, as a share of it, with every task that can run on it
    keeping its weights there and the largest of their bytes beside the weights."""
    return max((sum(instance.task(v).weights for v in usable if d.id in usable[v])
                + max((bytes_beside_weights(instance, v, d.id) for v in usable if d.id in usable[v]), default=0))
               / d.memory for d in instance.devices)


def _fronts(instance: Instance, usable: Mapping[str, tuple[str, ...]], parts: Sequence[Segment], options: Options,
            time_limit: float | None, engine: str, progress: Callable[[str], None] | None) -> list[dict]:
    """Per segment, (source device, sink device) -> its latency/energy front (:func:`front`'s)."""
    clock = time.monotonic()
    quiet = dataclasses.replace(options, progress=None, log=None)
    solver = functools.partial(lexico.solve, engine=engine)
    pairs = sorted(((k, da, db) for k, (a, _, b) in enumerate(parts)
                    for da in ([None] if a is None else usable[a]) for db in ([None] if b is None else usable[b])),
                   key=lambda pair: len(parts[pair[0]][1]))
    fronts: list[dict] = [{} for _ in parts]
    complete = 0
    for i, (k, da, db) in enumerate(pairs):
        source, between, sink = parts[k]
        part = segment_instance(instance, usable, source, da, between, sink, db, k)
        limit = PAIR_LIMIT
        if time_limit is not None:
            limit = max(0.0, time_limit - (time.monotonic() - clock)) / (len(pairs) - i)
        if interrupt.requested():
            limit = 0.0
        found = pareto.sweep(part, NAMES, "auto", quiet, pareto.Budget(limit), solver=solver)
        fronts[k][da, db] = found
        complete += found.complete
        if progress is not None and (i + 1) % max(1, len(pairs) // 10) == 0:
            progress(f"series front: {i + 1} of {len(pairs)} segment fronts, "
                     f"{complete} complete ({time.monotonic() - clock:.1f} s)")
    return fronts


def _vectors(fronts: list[dict], of: Callable[[Front], Sequence[Sequence[int]]]) -> list[dict]:
    """Per segment, (source device, sink device) -> the vectors ``of`` its front (its lower set, its
    points' values), each as (latency, energy): the input of :func:`_join`."""
    return [{pair: [tuple(v[f.objectives.index(n)] for n in NAMES) for v in of(f)] for pair, f in found.items()}
            for found in fronts]


def _moved(instance: Instance, usable: Mapping[str, tuple[str, ...]], schedule: Schedule,
           excess: Mapping[str, int], options: Options, engine: str, time_limit: float) -> Schedule | None:
    """A valid schedule near a glued one that overfills devices by ``excess`` (device -> bytes):
    on each, the one task whose weights cover the excess that costs least moved to its best other
    device (the extra energy, the devices' static power over the extra time included), every
    other task kept where it is, and the tasks and transfers ordered again by the engine
    (:func:`cpsched.lns.pinned`, latency then energy) in ``time_limit`` seconds; None when no
    single task covers an excess or nothing is found."""
    static = sum(d.static_power for d in instance.devices)
    devices = {v: p.device for v, p in schedule.tasks.items()}
    for device, over in excess.items():
        costs = []
        for v, d in devices.items():
            task = instance.task(v)
            if d != device or task.weights < over:
                continue
            here = task.modes[d]
            for there in usable[v]:
                if there != d:
                    mode = task.modes[there]
                    costs.append((mode.energy - here.energy + static * (mode.duration - here.duration), v, there))
        if not costs:
            return None
        _, v, there = min(costs)
        devices[v] = there
    quiet = dataclasses.replace(options, time_limit=time_limit, progress=None, log=None, archive=False)
    found = lexico.solve(lns.pinned(instance, devices), list(NAMES), quiet, engine=engine)
    return lns.unpinned(instance, found) if found.status.has_schedule else None


def _glued(instance: Instance, parts: Sequence[Segment], fronts: list[dict]) -> list[tuple[Schedule, dict]]:
    """The schedules of the joined front of the segments' points, glued end to end, each with the
    bytes by which it overfills each device (device -> bytes; empty when it is valid); those that
    break more than the capacities (each segment counted only its own weights) left out."""
    out = []
    for _, picks in _join(instance, parts, _vectors(fronts, lambda f: [p.values for p in f.points])):
        schedule = glue(instance, parts, [(da, db, fronts[k][da, db].points[j].schedule)
                                          for k, (da, db, j) in enumerate(picks)])
        report = validate(instance, schedule, check_claims=False)
        if not report.valid and any(v.kind != "capacity" for v in report.violations):
            continue
        out.append((schedule, {d.id: report.peaks[d.id] - d.memory for d in instance.devices
                               if report.peaks.get(d.id, 0) > d.memory}))
    return out


def _join(instance: Instance, parts: Sequence[Segment],
          values: Sequence[Mapping[tuple[str | None, str | None], Sequence[tuple[int, int]]]]) -> list[tuple]:
    """The minimal ((latency, energy), picks) over the cut tasks' devices of the sums of one vector
    per segment (``values``: per segment, (source device, sink device) -> its vectors), each cut
    task's :func:`~cpsched.cuts.overlap` counted once; ``picks`` names each segment's vector as
    (source device, sink device, its index).  The dynamic programme of
    :func:`cpsched.cuts.cheapest`, with a set of vectors per device of the cut task reached."""
    # per segment: device of its sink -> (its minimal sums n x 2, per sum (pair, index of the sum it extends,
    # index of the segment's vector)), the pairs in the order of values[k]
    history: list[dict[str | None, tuple[np.ndarray, np.ndarray]]] = []
    states = {None: (np.zeros((1, 2), dtype=np.int64), np.zeros((1, 3), dtype=np.int64))}
    for (source, _, _), found in zip(parts, values):
        grown: dict[str | None, list] = {}
        for p, ((da, db), vectors) in enumerate(found.items()):
            if da not in states or not vectors:
                continue
            held = states[da][0]
            own = np.array(vectors, dtype=np.int64).reshape(-1, 2)
            if source is not None:
                own = own - np.array([overlap(instance, n, source, da) for n in NAMES], dtype=np.int64)
            sums = (held[:, None, :] + own[None, :, :]).reshape(-1, 2)
            before, index = np.indices((len(held), len(own))).reshape(2, -1)
            grown.setdefault(db, []).append((sums, np.stack([np.full_like(before, p), before, index], axis=1)))
        states = {}
        for db, chunks in grown.items():
            sums = np.concatenate([s for s, _ in chunks])
            came = np.concatenate([c for _, c in chunks])
            keep = _minimal(sums)
            states[db] = (sums[keep], came[keep])
        if not states:
            return []
        history.append(states)
    pairs = [list(found) for found in values]
    out = []
    for end, v in enumerate(states[None][0]):
        picks, at, device = [], end, None
        for k in range(len(parts) - 1, -1, -1):
            p, at, j = (int(x) for x in history[k][device][1][at])
            da, db = pairs[k][p]
            picks.append((da, db, j))
            device = da
        out.append(((int(v[0]), int(v[1])), picks[::-1]))
    return out


def _minimal(sums: np.ndarray) -> np.ndarray:
    """The indices of the rows of ``sums`` (latency, energy) no other row is <= to, one of equal
    rows, latency ascending."""
    order = np.lexsort((sums[:, 1], sums[:, 0]))
    energy = sums[order, 1]
    best = np.minimum.accumulate(energy)
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = energy[1:] < best[:-1]
    return order[keep]
