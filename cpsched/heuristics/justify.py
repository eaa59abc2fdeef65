"""Forward-backward improvement (justification) of a schedule's latency.

Valls, Ballestín & Quintanilla, "Justification and RCPSP: a technique that
pays", EJOR 165(2), 2005: schedule the tasks again, latest finish first, each
as late as possible (a backward pass, on the reversed graph), then earliest
start first, each as early as possible (a forward pass).  Each pass is a
list schedule, so it never breaks a precedence; repeating while the makespan
shrinks closes the idle gaps a greedy list schedule such as HEFT leaves.
Restarts from list schedules whose priorities (the longest path to a sink)
carry random noise widen the search.  The passes and restarts are serial
(each task in turn at its earliest fit) first; where those stop above the
lower bound, the same again with parallel ones (non-delay: no unit idle while
a task waits for it), kept only if shorter.  On 300-task STG graphs the
parallel ones reach the bound where the serial ones stop one above it
(rand0051, rand0052, rand0038 and rand0058 on 8 processors).

The passes keep each task's device, or its class of interchangeable devices
(:func:`cpsched.classes.device_classes`, a resource of capacity ``k``), and
change only the start times.  That is exact bookkeeping only when no data moves:
:func:`applies` asks for an instance whose tensors all have size 0, as the
STG graphs and other precedence-only benchmarks are.  For those, HEFT's
schedule justified is a much better warm start for CP-SAT: on the 300-task STG
graphs it often reaches the lower bound itself (``benchmarks/results``).

>>> from cpsched.heuristics.heft import list_schedule
>>> from cpsched.io.stg import parse_stg
>>> inst = parse_stg("5\\n0 0 0\\n1 2 1 0\\n2 3 1 0\\n3 2 1 1\\n4 3 1 1\\n5 4 1 2\\n6 0 3 3 4 5\\n", 2, "fork")
>>> devices = {"t1": "p0", "t2": "p0", "t3": "p1", "t4": "p0", "t5": "p1"}
>>> greedy = checked(inst, list_schedule(inst, devices, ["t2", "t1", "t5", "t3", "t4"]), "list")
>>> greedy.objectives["latency"], improve(inst, greedy, restarts=0).objectives["latency"]
(9, 7)
"""

from __future__ import annotations

import dataclasses
import heapq
import random
import time

import networkx as nx

from cpsched import interrupt
from cpsched.bounds import latency_lower_bound, memory_may_bind, usable_devices
from cpsched.classes import assign_members, device_classes
from cpsched.heuristics.baselines import checked
from cpsched.heuristics.heft import heft_or_none
from cpsched.instance import Instance
from cpsched.schedule import Placement, Schedule, Status

#: restarts from noisy priorities after justifying the given schedule (seeded: the result is reproducible)
RESTARTS = 50
#: a restart scales each task's priority by a factor drawn from [1 - x, 1 + x], x uniform in [0, NOISE]
NOISE = 0.3


def applies(instance: Instance) -> bool:
    """True when no tensor has a size: no transfer ever happens, so re-timing is all there is."""
    return not any(t.size for t in instance.tensors)


@dataclasses.dataclass
class _Timing:
    """The tasks of a fixed placement as integers: task ``i`` is the ``i``-th in topological order."""

    ids: list[str]
    unit: list[str]  # the device, or the representative of its class
    duration: list[int]
    preds: list[list[int]]
    succs: list[list[int]]
    capacity: dict[str, int]

    def serial(self, order: list[int], before: list[list[int]]) -> list[int]:
        """Start times of the serial list schedule that takes tasks in ``order``.

        Each task starts at the first time after the tasks in ``before[i]``
        finish at which its unit has a free slot for its whole duration;
        ``order`` must list ``before[i]`` ahead of ``i`` (forward pass:
        ``preds``; backward pass: ``succs``, on the reversed time axis).
        """
        horizon = sum(self.duration) + 1
        used = {u: [0] * horizon for u in self.capacity}
        full = {u: bytearray(horizon) for u in self.capacity}  # 1 where the unit is at capacity
        start = [0] * len(self.ids)
        for i in order:
            t = max((start[j] + self.duration[j] for j in before[i]), default=0)
            d, u = self.duration[i], self.unit[i]
            busy = full[u].rfind(1, t, t + d)
            while busy >= 0:
                t = busy + 1
                busy = full[u].rfind(1, t, t + d)
            start[i] = t
            level, cap, marks = used[u], self.capacity[u], full[u]
            for x in range(t, t + d):
                level[x] += 1
                if level[x] >= cap:
                    marks[x] = 1
        return start

    def parallel(self, priority: list[float], before: list[list[int]], after: list[list[int]]) -> list[int]:
        """Start times of the parallel (non-delay) list schedule: at each time a unit has a free
        slot, it starts the ready task of highest ``priority`` (``before`` all finished; ``after``
        the reverse relation).  It keeps no unit idle while a task waits for it, where the serial
        schedule may start a later task first in a gap; neither dominates the other.
        """
        n = len(self.ids)
        left = [len(b) for b in before]
        free = dict(self.capacity)
        ready = [(-priority[i], i) for i in range(n) if not left[i]]
        heapq.heapify(ready)
        running: list[tuple[int, int]] = []
        start = [0] * n
        t = finished = 0
        while finished < n:
            blocked = []
            while ready:
                item = heapq.heappop(ready)
                i = item[1]
                if free[self.unit[i]]:
                    free[self.unit[i]] -= 1
                    start[i] = t
                    heapq.heappush(running, (t + self.duration[i], i))
                else:
                    blocked.append(item)
            for item in blocked:
                heapq.heappush(ready, item)
            t = running[0][0]
            while running and running[0][0] == t:
                i = heapq.heappop(running)[1]
                finished += 1
                free[self.unit[i]] += 1
                for k in after[i]:
                    left[k] -= 1
                    if not left[k]:
                        heapq.heappush(ready, (-priority[k], k))
        return start

    def one_pass(self, priority: list[float], forward: bool, parallel: bool) -> list[int]:
        """A list schedule taking tasks by ``priority`` (highest first), on the graph or, when
        not ``forward``, on the reversed time axis; serial or ``parallel``."""
        before, after = (self.preds, self.succs) if forward else (self.succs, self.preds)
        if parallel:
            return self.parallel(priority, before, after)
        tie = 1 if forward else -1
        return self.serial(sorted(range(len(self.ids)), key=lambda i: (-priority[i], tie * i)), before)

    def makespan(self, start: list[int]) -> int:
        return max((s + d for s, d in zip(start, self.duration)), default=0)

    def justify(self, start: list[int], parallel: bool = False) -> list[int]:
        """Backward then forward passes from ``start`` until the makespan stops shrinking:
        serial passes, or with ``parallel`` non-delay ones."""
        span = self.makespan(start)
        while True:
            back = self.one_pass([s + d for s, d in zip(start, self.duration)], False, parallel)
            back_span = self.makespan(back)
            back_finish = [s + d for s, d in zip(back, self.duration)]
            forward = self.one_pass(back_finish, True, parallel)
            best = min((self.makespan(forward), 0, forward), (back_span, 1, [back_span - f for f in back_finish]))
            if best[0] >= span:
                return start
            span, start = best[0], best[2]

    def tails(self) -> list[int]:
        """Each task's longest path to a sink, its own duration included (the restarts' priority)."""
        tail = [0] * len(self.ids)
        for i in reversed(range(len(self.ids))):
            tail[i] = self.duration[i] + max((tail[j] for j in self.succs[i]), default=0)
        return tail

    def restart(self, rng: random.Random, graph: nx.DiGraph, tail: list[int], parallel: bool) -> list[int]:
        """A forward list schedule by ``tail`` priority with noise: parallel, or serial in
        ``graph``'s topological order."""
        noise = rng.uniform(0, NOISE)
        key = [t * (1 + rng.uniform(-noise, noise)) for t in tail]
        if parallel:
            return self.one_pass(key, True, True)
        index = {v: i for i, v in enumerate(self.ids)}
        order = nx.lexicographical_topological_sort(graph, key=lambda v: -key[index[v]])
        return self.serial([index[v] for v in order], self.preds)


def _timing(instance: Instance, schedule: Schedule,
            usable: dict[str, tuple[str, ...]]) -> tuple[_Timing, dict[str, tuple[str, ...]]]:
    """The fixed placement of ``schedule`` (classes merged) and the classes it merged."""
    classes = device_classes(instance, usable, memory_may_bind(instance, usable))
    rep = {m: r for r, members in classes.items() for m in members}
    ids = list(instance.topological_order)
    index = {v: i for i, v in enumerate(ids)}
    devices = [schedule.tasks[v].device for v in ids]
    capacity = {rep.get(d, d): len(classes.get(rep.get(d, d), (d,))) for d in devices}
    g = instance.graph
    return _Timing(ids, [rep.get(d, d) for d in devices],
                   [instance.task(v).mode(d, schedule.tasks[v].mode).duration for v, d in zip(ids, devices)],
                   [[index[u] for u in g.predecessors(v)] for v in ids],
                   [[index[w] for w in g.successors(v)] for v in ids], capacity), classes


def improve(instance: Instance, schedule: Schedule, restarts: int = RESTARTS, seed: int = 0,
            deadline: float | None = None) -> Schedule:
    """``schedule`` justified, or the best of it and ``restarts`` justified noisy list schedules:
    serial passes and restarts, then (where those stop above the lower bound) parallel ones.

    Stops early at the relaxation lower bound (the schedule is then optimal,
    though it claims only ``feasible``: the caller's solver proves it), and
    before a restart once ``time.monotonic()`` passes ``deadline`` or Ctrl-C
    was pressed (:func:`cpsched.interrupt.requested`).
    Returns ``schedule`` itself when :func:`applies` says no or when nothing
    is shorter.  Memory needs no check: with no tensor to hold, a device's
    peak is its weights plus the largest workspace of a task on it, whatever
    the times (merged classes have no memory modelled).  The result is
    validated and its ``solver`` records ``{"engine": "fbi", "from": <the
    input's engine>, "start": <the input's objectives>}``.
    """
    if not applies(instance) or not schedule.status.has_schedule:
        return schedule
    usable = usable_devices(instance)
    timing, classes = _timing(instance, schedule, usable)
    lower = latency_lower_bound(instance, usable)
    tail = timing.tails()
    rng = random.Random(seed)
    index = {v: i for i, v in enumerate(timing.ids)}
    given = [schedule.tasks[v].start for v in timing.ids]
    best = given
    for parallel in (False, True):
        if timing.makespan(best) <= lower:
            break
        best = timing.justify(best, parallel)
        for _ in range(restarts):
            if timing.makespan(best) <= lower or interrupt.requested() \
                    or (deadline is not None and time.monotonic() > deadline):
                break
            candidate = timing.justify(timing.restart(rng, instance.graph, tail, parallel), parallel)
            if timing.makespan(candidate) < timing.makespan(best):
                best = candidate
    if timing.makespan(best) >= timing.makespan(given):
        return schedule
    tasks = {v: Placement(timing.unit[index[v]], best[index[v]], schedule.tasks[v].mode)
             for v in instance.topological_order}
    tasks.update(assign_members(instance, tasks, classes))
    result = Schedule(instance=instance.name, status=Status.FEASIBLE, tasks=tasks, transfers=(),
                      bounds=dict(schedule.bounds),
                      solver={"engine": "fbi", "from": schedule.solver.get("engine"),
                              "start": dict(schedule.objectives)})
    return checked(instance, result, "fbi")


def warm_start(instance: Instance, deadline: float | None = None) -> Schedule | None:
    """HEFT's schedule improved by :func:`improve` until ``deadline`` (``time.monotonic()``);
    None when HEFT finds none (the solver decides)."""
    start = heft_or_none(instance)
    return None if start is None else improve(instance, start, deadline=deadline)
