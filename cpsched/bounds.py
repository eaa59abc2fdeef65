"""What the instance alone says: usable devices, relaxation lower bounds, a horizon.

These are solver-independent facts used by every engine and heuristic:

* :func:`usable_devices` removes the placements no schedule can use (a device
  that cannot hold what is live while the task runs, or that no link connects
  to where the task's inputs come from or its outputs must go), propagating
  to a fixpoint, and raises :class:`Unreachable` when a task is left with none
  or the graph inputs, all on the host at time 0, do not fit its memory;
* :func:`latency_lower_bound` is valid for the original problem (critical path
  with each task's fastest usable mode, total work and unavoidable idle time
  spread over all devices, the work each window of time must hold), and so is
  :func:`series_lower_bound` (that bound summed over the segments between cut
  tasks), which :func:`relaxation_bounds` adds;
* :func:`horizon` bounds the makespan of some optimal schedule, for any
  objective (see its docstring).
"""

from __future__ import annotations


import math
import weakref
from collections.abc import Mapping, Sequence

from cpsched import cuts
from cpsched.classes import symmetric_groups
from cpsched.errors import NoSchedule
from cpsched.instance import Instance, Tensor


#: the most windows times tasks for which :func:`_energetic_bound` runs (each makespan tried takes
#: one pass over them: a few ms at this size)
ENERGETIC_SIZE = 3_000_000


class Unreachable(NoSchedule):
    """Some task has no usable device: the instance is proven infeasible. The message names it."""


def usable_devices(instance: Instance) -> dict[str, tuple[str, ...]]:
    """Task id -> the devices it may run on in some schedule (in instance device order).

    >>> from cpsched.instance import Instance
    >>> inst = Instance.from_dict({"format": "cpsched-instance/1", "devices": [
    ...     {"id": "cpu", "memory": 9, "host": True}, {"id": "npu", "memory": 9}], "links": [],
    ...     "tasks": [{"id": "a", "op": "X", "modes": {"cpu": {"duration": 2}, "npu": {"duration": 1}}}],
    ...     "tensors": [{"id": "in", "size": 4, "producer": None, "consumers": ["a"]}]})
    >>> usable_devices(inst)
    {'a': ('cpu',)}
    """
    host = instance.host.id
    why: dict[str, dict[str, str]] = {t.id: {} for t in instance.tasks}
    usable: dict[str, set[str]] = {}
    for task in instance.tasks:
        usable[task.id] = set()
        for dev in task.choices:
            need = running_bytes(instance, task.id, dev)
            if need > instance.device(dev).memory:
                why[task.id][dev] = (f"needs {need} bytes while it runs (weights, workspace, inputs and "
                                     f"outputs), over its memory {instance.device(dev).memory}")
            else:
                usable[task.id].add(dev)

    def reach(a: str, b: str) -> bool:
        return a == b or instance.link(a, b) is not None

    def drop(task_id: str, keep: set[str], reason) -> bool:
        gone = usable[task_id] - keep
        for dev in gone:
            why[task_id][dev] = reason(dev)
        usable[task_id] &= keep
        return bool(gone)

    changed = True
    while changed:
        changed = False
        for tensor in instance.tensors:
            if tensor.size == 0:
                continue
            sources = {host} if tensor.producer is None else usable[tensor.producer]
            src_name = "the host" if tensor.producer is None else f"task {tensor.producer!r}"
            for c in tensor.consumers:
                keep = {b for b in usable[c] if any(reach(a, b) for a in sources)}
                changed |= drop(c, keep, lambda b: f"no link brings tensor {tensor.id!r} from {src_name}")
            if tensor.producer is not None:
                def stranded(a: str) -> list[str]:
                    return [c for c in tensor.consumers if not any(reach(a, b) for b in usable[c])]
                keep = {a for a in usable[tensor.producer] if not stranded(a)}
                changed |= drop(tensor.producer, keep, lambda a: (
                    f"no link takes tensor {tensor.id!r} to task {stranded(a)[0]!r}, which runs only on "
                    + ("/".join(sorted(usable[stranded(a)[0]])) or "no device")))
    for task in instance.tasks:
        if not usable[task.id]:
            detail = "; ".join(f"{d}: {r}" for d, r in why[task.id].items())
            raise Unreachable(f"task {task.id!r} can run on no device ({detail})")
    inputs = sum(t.size for t in instance.tensors if t.producer is None and t.consumers)
    if inputs > instance.host.memory:  # every graph input is live on the host at time 0
        raise Unreachable(f"the graph inputs need {inputs} bytes on the host {host!r} at time 0, "
                          f"over its memory {instance.host.memory}")
    order = [d.id for d in instance.devices]
    return {t: tuple(d for d in order if d in devs) for t, devs in usable.items()}


def running_bytes(instance: Instance, task_id: str, device: str | None = None) -> int:
    """Bytes that are live on a task's device whenever it runs there (``device``; None: wherever).

    Its weights and workspace, every input (produced there or copied there,
    it lives until the task ends) and every output (live from the task's start);
    with named modes, the least of these over the task's modes (on ``device``)
    and its inputs' producers' modes.
    """
    task = instance.task(task_id)
    inputs = sum(instance.size_range[t.id][0] for t in instance.inputs_of[task_id])
    modes = task.choices[device] if device is not None else [m for ms in task.choices.values() for m in ms]
    return inputs + min(task.weights_in(m) + task.workspace_in(m) + sum(m.size(t) for t in instance.outputs_of[task_id])
                        for m in modes)


def bytes_beside_weights(instance: Instance, task_id: str, device: str | None = None) -> int:
    """:func:`running_bytes` less the task's own weights: what is live on its device whenever it
    runs there besides all the weights placed on that device (inputs, outputs, workspace), so
    every schedule keeps a device's weights within its memory minus this (one mode per device)."""
    return running_bytes(instance, task_id, device) - instance.task(task_id).weights


#: latency_lower_bound's values per instance (by identity: instances are immutable) and usable map
_LATENCY_BOUNDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def latency_lower_bound(instance: Instance, usable: Mapping[str, tuple[str, ...]]) -> int:
    """max(the earliest finish of every task, the idle bound), raised by energetic reasoning.

    Remembered per instance and usable map: HEFT, the warm start's
    justification and the engine each ask for it, and on 300 tasks and 16
    processors one computation takes about a second.

    The earliest finish of task ``v`` on device ``d`` is its duration there
    after the latest of its inputs, each arriving at best: from a producer
    on its best device plus the link's transfer time when that device is not
    ``d`` (a graph input from the host).  Each input picks its producer's
    device on its own and contention is dropped, so this relaxes the problem
    and holds for every schedule; it is never below the critical path with
    fastest modes, and above it when the fastest devices must exchange data.
    The idle bound (:func:`_idle_bound`) spreads the total fastest work over
    the devices together with the time each must stand idle, and energetic
    reasoning (:func:`_energetic_bound`) the work that must run inside each
    window of time.
    """
    if not instance.tasks:
        return 0
    known = _LATENCY_BOUNDS.setdefault(instance, {})
    key = tuple(sorted((v, tuple(ds)) for v, ds in usable.items()))
    if key not in known:
        known[key] = _latency_lower_bound(instance, usable)
    return known[key]


def _latency_lower_bound(instance: Instance, usable: Mapping[str, tuple[str, ...]]) -> int:
    finish = _earliest_finish(instance, usable)
    rest: dict[str, dict[str, float]] = {}  # task -> device -> the least time from its start to the makespan
    for v in reversed(instance.topological_order):
        rest[v] = {d: _fastest(instance, v, d) + _after(instance, rest, v, d) for d in usable[v]}
    path = max(min(f.values()) for f in finish.values())
    lower = max(path, _idle_bound(instance, usable, finish, rest, path))
    return _energetic_bound(instance, usable, finish, rest, lower)


def series_lower_bound(instance: Instance, usable: Mapping[str, tuple[str, ...]]) -> int:
    """:func:`latency_lower_bound` of the segments between cut tasks, joined (0: no cut task).

    A graph with cut tasks (:mod:`cpsched.cuts`) splits in time at each: every
    segment between consecutive cuts, bounded for each pair of its cut tasks'
    devices, adds up along the cheapest choice of those devices.  Every device
    idles at every cut, so on series-parallel graphs the sum is the stronger:
    squeezenet's latency bound on ``edge`` goes from 1,399 to its optimum 1,645.
    Relabelling interchangeable devices (:func:`~cpsched.classes.symmetric_groups`)
    maps a segment with its cuts on one pair of devices onto the segment with
    them on another, so each segment is bounded once per pair up to
    relabelling: on 16 identical processors twice (same, different) instead
    of 256 times.  Instances with named modes (PROBLEM.md section 6) get 0.
    """
    if not instance.plain:  # a cut task's mode, counted in both of its segments, is not known
        return 0
    parts = cuts.segments(instance, 0)
    if len(parts) < 2:
        return 0
    path = cuts.cheapest(instance, "latency", parts, _segment_bounds(instance, usable, parts))
    return 0 if path is None else path[0]


def _segment_bounds(instance: Instance, usable: Mapping[str, tuple[str, ...]],
                    parts: Sequence[cuts.Segment]) -> list[dict[tuple[str | None, str | None], int]]:
    """Per segment, (source device, sink device) -> its :func:`latency_lower_bound`, computed once
    per orbit of the pair under relabelling."""
    groups = symmetric_groups(instance, usable)
    values: list[dict[tuple[str | None, str | None], int]] = []
    for k, (a, between, b) in enumerate(parts):
        part = cuts.segment_instance(instance, usable, a, None, between, b, None, k)
        free = {t.id: tuple(t.modes) for t in part.tasks}
        own: dict[tuple[str | None, str | None], int] = {}
        known: dict[tuple[str | None, str | None], int] = {}
        for da in [None] if a is None else usable[a]:
            for db in [None] if b is None else usable[b]:
                key = _relabelled(groups, da, db)
                if key not in known:
                    pinned = {v: (d,) for v, d in zip((a, b), key) if v is not None}
                    known[key] = latency_lower_bound(part, {**free, **pinned})
                own[da, db] = known[key]
        values.append(own)
    return values


def _relabelled(groups: Sequence[tuple[str, ...]], da: str | None, db: str | None) -> tuple[str | None, str | None]:
    """The pair ``(da, db)`` with each device moved to the front of its symmetric group (the
    second member for ``db`` beside ``da`` in one group): one pair per orbit under relabelling."""
    of = {d: g for g in groups for d in g}
    if da in of and db in of and of[da] is of[db]:
        g = of[da]
        return (g[0], g[0]) if da == db else (g[0], g[1])
    return tuple(of[d][0] if d in of else d for d in (da, db))


def _earliest_finish(instance: Instance, usable: dict[str, tuple[str, ...]]) -> dict[str, dict[str, float]]:
    """Task -> usable device -> its earliest finish there (see :func:`latency_lower_bound`)."""
    finish: dict[str, dict[str, float]] = {}
    for v in instance.topological_order:
        finish[v] = {d: _ready(instance, finish, v, d) + _fastest(instance, v, d) for d in usable[v]}
    return finish


def _ready(instance: Instance, finish: Mapping[str, Mapping[str, float]], v: str, d: str,
           elsewhere: dict | None = None) -> float:
    """The earliest every input of ``v`` can be on ``d``, each producer at its earliest finish
    (``finish``), on a device other than ``d`` when ``elsewhere`` (a dict that
    :func:`_without` fills) is given; a graph input from the host."""
    host = instance.host.id
    return max((_arrival(instance, tensor, {host: 0} if tensor.producer is None else
                         finish[tensor.producer] if elsewhere is None else
                         _without(elsewhere, finish, tensor.producer, d), d)
                for tensor in instance.inputs_of[v]), default=0)


def _after(instance: Instance, rest: Mapping[str, Mapping[str, float]], v: str, d: str,
           elsewhere: dict | None = None) -> float:
    """The least time from ``v``'s end on ``d`` to the makespan: every consumer's input moved to it
    and its least time from its start to the makespan (``rest``), on a device other than ``d``
    when ``elsewhere`` (as in :func:`_ready`) is given."""
    return max((_onward(instance, tensor, d, rest[c] if elsewhere is None else _without(elsewhere, rest, c, d))
                for tensor in instance.outputs_of[v] for c in tensor.consumers), default=0)


def _without(known: dict, times: Mapping[str, Mapping[str, float]], v: str, d: str) -> Mapping[str, float]:
    """``times[v]`` less device ``d``'s entry, each built once (in ``known``)."""
    key = (v, d)
    if key not in known:
        known[key] = {a: at for a, at in times[v].items() if a != d}
    return known[key]


def least_delay(instance: Instance, tensor: Tensor, a: str, b: str) -> int | None:
    """The least time ``tensor`` takes from device ``a`` to ``b``: 0 on one device or for a size-0
    tensor, else its transfer at its least size (None: no link)."""
    if a == b or not tensor.size:
        return 0
    link = instance.link(a, b)
    if link is None:
        return None
    size = instance.size_range[tensor.id][0]
    return link.transfer_time(size) if size else 0


def _arrival(instance: Instance, tensor: Tensor, sources: Mapping[str, float], d: str) -> float:
    """The earliest ``tensor`` can be on ``d``, from whichever of ``sources`` (device -> the time
    it is there) reaches ``d`` first (infinity: none does)."""
    if not tensor.size:  # no delay from anywhere (the common case of precedence-only graphs)
        return min(sources.values(), default=math.inf)
    times = [at + delay for a, at in sources.items() if (delay := least_delay(instance, tensor, a, d)) is not None]
    return min(times, default=math.inf)


def _onward(instance: Instance, tensor: Tensor, d: str, after: Mapping[str, float]) -> float:
    """The least time from ``tensor`` on ``d`` to the makespan, through whichever device of
    ``after`` (a consumer's device -> its least time from its start to the makespan) it reaches
    (infinity: none)."""
    if not tensor.size:
        return min(after.values(), default=math.inf)
    times = [delay + rest for b, rest in after.items() if (delay := least_delay(instance, tensor, d, b)) is not None]
    return min(times, default=math.inf)


def _idle_bound(instance: Instance, usable: Mapping[str, tuple[str, ...]], finish: Mapping[str, Mapping[str, float]],
                rest: Mapping[str, Mapping[str, float]], lower: int) -> int:
    """The least makespan ``C >= lower`` with ``m * C >= work + sum_d min(C, head_d + tail_d)``.

    Device ``d``'s time up to the makespan ``C`` is busy (its tasks' durations,
    at least the fastest work in all) or idle.  Its first task ``v`` runs after
    every producer of its inputs, none of them on ``d`` (they would come first):
    ``d`` idles at least ``v``'s earliest start with all its inputs moved to it
    (``head``; a graph input comes from the host).  Its last task's consumers
    all run elsewhere, after their inputs moved there: ``d`` idles at least
    that transfer and the longest path after it (``tail``).  A device without
    tasks idles ``C``.  First tasks of different devices are different tasks,
    as are last tasks, so the ``m`` least heads and the ``m`` least tails,
    sorted alike and paired in order, bound the idle time from below (of all
    pairings that one gives the least sum of the concave ``min(C, .)``).
    On a fork graph (one task feeding all others) every device but the
    source's idles until the source's output reaches it.
    """
    devices = len(instance.devices)
    producers, consumers = {}, {}
    heads = sorted(min(_ready(instance, finish, v, d, producers) for d in usable[v]) for v in usable)
    tails = sorted(min(_after(instance, rest, v, d, consumers) for d in usable[v]) for v in usable)
    idle = [h + t for h, t in zip(heads[:devices], tails[:devices])]
    idle += [math.inf] * (devices - len(idle))
    work = sum(min(_fastest(instance, v, d) for d in usable[v]) for v in usable)
    lo = max(lower, -(-work // devices))
    finite = [s for s in idle if s < math.inf]
    if not finite:  # no device can start or end its work: nothing to add
        return lo

    def enough(c: int) -> bool:
        return devices * c >= work + sum(min(c, s) for s in idle)

    # enough at hi: a finite pair leaves at least hi - sum(finite) >= work beside the idle time
    hi = max(lo, work + int(sum(finite)))
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid + 1, hi)
    return lo


def _energetic_bound(instance: Instance, usable: Mapping[str, tuple[str, ...]],
                     finish: Mapping[str, Mapping[str, float]], rest: Mapping[str, Mapping[str, float]],
                     lower: int) -> int:
    """``lower``, raised past every makespan ``C`` that energetic reasoning rules out.

    Task ``v`` starts at ``r_v`` at the earliest (its earliest finish less its
    duration), ends by ``C - q_v`` at the latest (``q_v``: the least time from
    its end to the makespan) and runs ``p_v`` at least (its fastest mode).
    Whatever its start, ``min(R - L, p_v, r_v + p_v - L, R - (C - q_v) + p_v)``
    of it (if positive) lies inside the window ``[L, R]``; the ``m`` devices
    run ``m * (R - L)`` there at most.  A window that needs more proves that
    no schedule ends by ``C`` (Baptiste, Le Pape and Nuijten's energetic
    reasoning; the windows from each ``r`` to each ``C - q``).  Each ``C``
    ruled out proves the bound ``C + 1``, whether or not the test is monotone
    in ``C``: the search gallops up from ``lower`` and bisects.  On trees of
    Sinnen's graphs at low communication, where the other bounds spread the
    work evenly, the last levels of the tree hold few tasks: the 30-node
    unbalanced in-tree on 4 processors goes from 451 to 482 (best schedule
    489).  Skipped (``lower``) above :data:`ENERGETIC_SIZE` windows times
    tasks.
    """
    import numpy as np

    if lower == math.inf:  # no device reaches some task: nothing to raise
        return lower
    fastest = {v: {d: _fastest(instance, v, d) for d in ds} for v, ds in usable.items()}
    p = np.array([min(f.values()) for f in fastest.values()], dtype=np.int64)
    r = np.array([min(finish[v][d] - t for d, t in f.items()) for v, f in fastest.items()], dtype=np.int64)
    q = np.array([min(rest[v][d] - t for d, t in f.items()) for v, f in fastest.items()], dtype=np.int64)
    starts, ends = np.unique(r), np.unique(q)
    if len(starts) * len(ends) * len(p) > ENERGETIC_SIZE:
        return lower
    devices = len(instance.devices)
    left = np.minimum(p, r + p - starts[:, None, None])  # (start, 1, task): the part after L, left-shifted

    def overflows(c: int) -> bool:
        window = (c - ends)[None, :, None] - starts[:, None, None]  # (start, end, 1): R - L
        right = (c - ends)[None, :, None] - (c - q - p)[None, None, :]  # R - latest start
        need = np.maximum(0, np.minimum(np.minimum(left, right), window)).sum(axis=2)
        return bool(np.any((window[:, :, 0] > 0) & (need > devices * window[:, :, 0])))

    below, step = lower - 1, 1  # below: the highest makespan ruled out so far
    while overflows(below + step):
        below, step = below + step, step * 2
    above = below + step  # passes the test
    while above - below > 1:
        mid = (below + above) // 2
        below, above = (mid, above) if overflows(mid) else (below, mid)
    return max(lower, below + 1)


def _fastest(instance: Instance, task_id: str, device: str) -> int:
    return min(m.duration for m in instance.task(task_id).choices[device])


def relaxation_bounds(instance: Instance, usable: Mapping[str, tuple[str, ...]], series: bool = True) -> dict[str, int]:
    """A lower bound on each objective of PROBLEM.md, valid for every schedule.

    * latency: :func:`latency_lower_bound`, and with ``series`` the higher
      :func:`series_lower_bound` (the series decomposition, which solves the
      segments themselves, asks for its segments' bounds without it);
    * energy: each task's cheapest usable mode, plus every device's static
      power over that latency bound (link energy dropped);
    * memory: the largest peak is at least what any task needs on its device,
      wherever it runs (:func:`running_bytes`), and at least the total weights
      spread evenly over the devices (weights stay resident for the whole
      schedule);
    * error: each task's least error over its usable modes.
    """
    latency = latency_lower_bound(instance, usable)
    if series:
        latency = max(latency, series_lower_bound(instance, usable))
    energy = sum(min(m.energy for d in usable[t.id] for m in t.choices[d]) for t in instance.tasks)
    energy += sum(d.static_power for d in instance.devices) * latency
    need = max((running_bytes(instance, t.id) for t in instance.tasks), default=0)
    weights = sum(min(t.weights_in(m) for ms in t.choices.values() for m in ms) for t in instance.tasks)
    memory = max(need, -(-weights // len(instance.devices)))
    error = sum(min(m.error for d in usable[t.id] for m in t.choices[d]) for t in instance.tasks)
    return {"latency": latency, "energy": energy, "memory": memory, "error": error}


def horizon(instance: Instance, usable: dict[str, tuple[str, ...]]) -> int:
    """An upper bound on the makespan of some optimal schedule, whatever the objective.

    Any schedule can be compressed, without changing the order of any two
    events, until some task or transfer runs at every instant before its
    makespan; that changes no overlap (so no memory peak) and lowers no
    objective's value except through the makespan, which only helps.  So the
    makespan never needs to exceed every task's slowest mode plus every
    possible transfer's slowest link.
    """
    total = sum(max(m.duration for d in devs for m in instance.task(t).choices[d]) for t, devs in usable.items())
    for tensor_id, pairs in routes(instance, usable).items():
        size = instance.size_range[tensor_id][1]
        slowest: dict[str, int] = {}
        for a, b in pairs:
            slowest[b] = max(slowest.get(b, 0), instance.link(a, b).transfer_time(size))
        total += sum(slowest.values())
    return total


def routes(instance: Instance, usable: dict[str, tuple[str, ...]]) -> dict[str, list[tuple[str, str]]]:
    """Tensor id -> every (source, destination) link a transfer of it may use.

    Only tensors of size > 0 move; the source is a usable device of the
    producer (the host for a graph input), the destination one of a consumer.
    """
    host = instance.host.id
    out: dict[str, list[tuple[str, str]]] = {}
    for tensor in instance.tensors:
        if tensor.size == 0:
            continue
        sources = [host] if tensor.producer is None else list(usable[tensor.producer])
        dests = sorted({b for c in tensor.consumers for b in usable[c]})
        pairs = [(a, b) for b in dests for a in sources if a != b and instance.link(a, b) is not None]
        if pairs:
            out[tensor.id] = pairs
    return out


def memory_may_bind(instance: Instance, usable: dict[str, tuple[str, ...]]) -> set[str]:
    """Devices whose capacity some schedule could exceed (an upper bound on live bytes
    if everything that may be there were there at once)."""
    host = instance.host.id
    worst = {d.id: 0 for d in instance.devices}
    for task in instance.tasks:
        for d in usable[task.id]:
            worst[d] += max(task.weights_in(m) + task.workspace_in(m) for m in task.choices[d])
    for tensor in instance.tensors:
        where = {host} if tensor.producer is None else set(usable[tensor.producer])
        where |= {b for c in tensor.consumers for b in usable[c]}
        for d in where:
            worst[d] += instance.size_range[tensor.id][1]
    return {d.id for d in instance.devices if worst[d.id] > d.memory}
