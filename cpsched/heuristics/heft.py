"""HEFT (Topcuoglu, Hariri & Wu 2002) for cpsched's problem (PROBLEM.md).

Tasks are taken in decreasing upward rank and each goes to the device on which
it finishes earliest, inserted into the first gap of that device's timeline
that is long enough.  The transfers a task needs are inserted the same way into
the gaps of their links, never carrying more than a link's ``channels`` at once.
A tensor crosses to a device at most once: the transfer is shared by every
consumer there, as PROBLEM.md section 2 requires.

The schedule is checked by :func:`cpsched.validator.validate`; one that needs
more memory than a device has raises :class:`~cpsched.errors.NoSchedule`.

>>> from cpsched.instance import Instance
>>> inst = Instance.from_dict({
...     "format": "cpsched-instance/1", "name": "pair",
...     "devices": [{"id": "cpu", "memory": 100, "host": True}, {"id": "gpu", "memory": 100}],
...     "links": [{"src": "cpu", "dst": "gpu", "latency": 1, "bandwidth": 4}],
...     "tasks": [{"id": "a", "op": "Conv", "modes": {"cpu": {"duration": 9}, "gpu": {"duration": 2}}}],
...     "tensors": [{"id": "x", "size": 8, "producer": None, "consumers": ["a"]}]})
>>> s = heft(inst)
>>> s.tasks["a"], s.transfers[0].dst, s.objectives["latency"]
(Placement(device='gpu', start=3, mode='default'), 'gpu', 5)
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from cpsched.bounds import latency_lower_bound, usable_devices
from cpsched.errors import NoSchedule
from cpsched.instance import Instance, Mode, Task, Tensor
from cpsched.schedule import Placement, Schedule, Status, Transfer
from cpsched.validator import validate

Span = tuple[int, int]


def upward_ranks(instance: Instance) -> dict[str, Fraction]:
    """rank(v) = mean duration of v + max over successors s of (mean edge cost + rank(s)).

    Exact fractions, so that equal ranks compare equal and the tie-break is
    deterministic.  The mean duration is over v's modes (every device's); the cost of an edge is
    the sum, over the tensors v sends to s, of the mean over all links of the
    tensor's transfer time (0 for a size-0 tensor or when there are no links):
    the paper's average communication cost.
    """
    edge_cost: dict[tuple[str, str], Fraction] = defaultdict(Fraction)
    for tensor in instance.tensors:
        if tensor.producer is not None:
            cost = _mean_transfer_time(instance, tensor.size)
            for consumer in tensor.consumers:
                edge_cost[tensor.producer, consumer] += cost
    rank: dict[str, Fraction] = {}
    for v in reversed(instance.topological_order):
        modes = [m for ms in instance.task(v).choices.values() for m in ms]
        mean = Fraction(sum(m.duration for m in modes), len(modes))
        tail = max((edge_cost[v, s] + rank[s] for s in instance.graph.successors(v)), default=0)
        rank[v] = mean + tail
    return rank


def _mean_transfer_time(instance: Instance, size: int) -> Fraction:
    if size == 0 or not instance.links:
        return Fraction(0)
    return Fraction(sum(link.transfer_time(size) for link in instance.links), len(instance.links))


def priority_order(instance: Instance) -> list[str]:
    """Task ids by decreasing upward rank, ties by position in the topological order.

    This is itself a topological order: durations are >= 1, so a task's rank
    is strictly greater than that of each of its successors.
    """
    rank = upward_ranks(instance)
    position = {v: i for i, v in enumerate(instance.topological_order)}
    return sorted(position, key=lambda v: (-rank[v], position[v]))


class _Timeline:
    """Busy intervals of a device or a link that carries ``capacity`` at once (0: unlimited)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.spans: list[Span] = []

    def earliest_fit(self, ready: int, length: int, extra: Iterable[Span] = ()) -> int:
        """Earliest start >= ``ready`` of a ``length``-long interval that keeps the load within capacity.

        ``extra`` are intervals not committed yet (transfers planned for the
        same task) that count as busy.  A sweep over the load's breakpoints
        after ``ready`` finds the first free run that is long enough.
        """
        if self.capacity == 0:
            return ready
        delta: Counter[int] = Counter()
        for start, end in (*self.spans, *extra):
            if end > ready:
                delta[max(start, ready)] += 1
                delta[end] -= 1
        level, free_since = 0, ready
        for x in sorted(delta):
            if free_since is not None and x - free_since >= length:
                return free_since
            level += delta[x]
            if level >= self.capacity:
                free_since = None
            elif free_since is None:
                free_since = x
        return free_since  # after the last breakpoint the load is 0

    def add(self, span: Span) -> None:
        self.spans.append(span)


@dataclasses.dataclass(frozen=True)
class _Option:
    """A task on one device: its start, its end and the transfers it would add."""

    device: str
    mode: Mode
    start: int
    end: int
    transfers: tuple[tuple[Transfer, int], ...]  # (transfer, its end)


class _Builder:
    """The partial schedule HEFT grows one task at a time."""

    def __init__(self, instance: Instance, usable: dict[str, tuple[str, ...]]):
        self.instance = instance
        self.usable = usable
        self.placed: dict[str, Placement] = {}
        self.end: dict[str, int] = {}
        self.devices = {d.id: _Timeline(1) for d in instance.devices}
        self.links = {(l.src, l.dst): _Timeline(l.channels) for l in instance.links}
        self.weights: Counter[str] = Counter()
        self.arrival: dict[tuple[str, str], int] = {}  # (tensor, dst) -> end of its transfer
        self.transfers: list[Transfer] = []
        self.size = {t.id: t.size for t in instance.tensors}  # set by its producer's mode when placed

    def source(self, tensor: Tensor) -> tuple[str, int]:
        """Device the tensor is produced on (the host for a graph input) and when it is ready."""
        if tensor.producer is None:
            return self.instance.host.id, 0
        return self.placed[tensor.producer].device, self.end[tensor.producer]

    def unreachable(self, task: Task, device: str) -> str | None:
        """Why no link can bring ``task``'s inputs to ``device`` (None when every input can get there)."""
        for tensor in self.instance.inputs_of[task.id]:
            src, _ = self.source(tensor)
            if self.size[tensor.id] and src != device and self.instance.link(src, device) is None:
                return f"no link {src}->{device} for its input {tensor.id!r}"
        return None

    def obstacle(self, task: Task, device: str, mode: Mode) -> str | None:
        """Why ``task`` cannot go on ``device`` now (None if it can): an unreachable input or memory."""
        why = self.unreachable(task, device)
        if why is not None:
            return why
        weights, workspace = task.weights_in(mode), task.workspace_in(mode)
        need = self.weights[device] + weights + workspace
        memory = self.instance.device(device).memory
        if need > memory:
            return (f"{self.weights[device]} bytes of weights already there + {weights} weights "
                    f"+ {workspace} workspace exceed its memory {memory}")
        return None

    def option(self, task: Task, device: str, mode: Mode) -> _Option:
        """Earliest finish of ``task`` on ``device`` in ``mode``, inserting any missing transfer into its link."""
        ready, planned = 0, []
        inputs = sorted(self.instance.inputs_of[task.id], key=lambda t: self.source(t)[1])
        for tensor in inputs:
            src, produced = self.source(tensor)
            if self.size[tensor.id] == 0 or src == device:
                ready = max(ready, produced)
            elif (tensor.id, device) in self.arrival:
                ready = max(ready, self.arrival[tensor.id, device])
            else:
                link = self.instance.link(src, device)
                length = link.transfer_time(self.size[tensor.id])
                same_link = [(x.start, end) for x, end in planned if x.src == src]
                start = self.links[src, device].earliest_fit(produced, length, same_link)
                planned.append((Transfer(tensor.id, src, device, start), start + length))
                ready = max(ready, start + length)
        start = self.devices[device].earliest_fit(ready, mode.duration)
        return _Option(device, mode, start, start + mode.duration, tuple(planned))

    def place(self, task: Task) -> None:
        """Commit ``task`` on the device where it finishes first, in its fastest mode there
        (ties: instance device order, then mode order)."""
        best, reasons = None, []
        for device in self.usable[task.id]:
            mode = fastest(task, device)
            why = self.obstacle(task, device, mode)
            if why is not None:
                reasons.append(f"{device}: {why}")
                continue
            candidate = self.option(task, device, mode)
            if best is None or candidate.end < best.end:
                best = candidate
        if best is None:
            raise NoSchedule(f"HEFT can place task {task.id!r} on no device ({'; '.join(reasons)})")
        self.commit(task, best)

    def place_on(self, task: Task, device: str, mode: Mode) -> None:
        """Commit ``task`` on ``device`` in ``mode`` at its earliest finish there; NoSchedule when an
        input cannot get there."""
        why = self.unreachable(task, device)
        if why is not None:
            raise NoSchedule(f"task {task.id!r} cannot run on {device!r}: {why}")
        self.commit(task, self.option(task, device, mode))

    def commit(self, task: Task, option: _Option) -> None:
        self.placed[task.id] = Placement(option.device, option.start, option.mode.name)
        self.end[task.id] = option.end
        self.devices[option.device].add((option.start, option.end))
        self.weights[option.device] += task.weights_in(option.mode)
        for tensor in self.instance.outputs_of[task.id]:
            self.size[tensor.id] = option.mode.size(tensor)
        for transfer, end in option.transfers:
            self.links[transfer.src, transfer.dst].add((transfer.start, end))
            self.arrival[transfer.tensor, transfer.dst] = end
            self.transfers.append(transfer)


def fastest(task: Task, device: str) -> Mode:
    """The task's fastest mode on ``device`` (ties: the first listed)."""
    return min(task.choices[device], key=lambda m: m.duration)


def list_schedule(instance: Instance, devices: Mapping[str, str], order: Sequence[str] | None = None,
                  *, modes: Mapping[str, str] | None = None, solver: Mapping[str, Any] | None = None,
                  bounds: Mapping[str, int] | None = None) -> Schedule:
    """Schedule each task on ``devices[task]`` in mode ``modes[task]`` (default: its fastest there),
    taking tasks in ``order`` (default :func:`priority_order`).

    Each task starts as early as its inputs and its device allow, inserted into
    the first gap of the device's timeline that is long enough, and each
    transfer it needs is inserted the same way into its link (HEFT's machinery
    with the device choice fixed).  ``order`` must be a topological order.
    Raises :class:`NoSchedule` naming the task when a link its input needs is
    missing.  The schedule is status feasible, *not* validated and claims no
    objectives: memory capacity is the caller's to check.

    >>> from cpsched.generate import random_instance
    >>> inst = random_instance(0, 4, 2)
    >>> s = list_schedule(inst, {t.id: "d0" for t in inst.tasks})
    >>> {p.device for p in s.tasks.values()}, s.transfers
    ({'d0'}, ())
    """
    builder = _Builder(instance, {})
    for task_id in (priority_order(instance) if order is None else order):
        task, device = instance.task(task_id), devices[task_id]
        builder.place_on(task, device, fastest(task, device) if modes is None or task_id not in modes
                         else task.mode(device, modes[task_id]))
    return Schedule(instance=instance.name, status=Status.FEASIBLE, tasks=builder.placed,
                    transfers=tuple(builder.transfers), bounds=dict(bounds or {}),
                    solver=dict(solver or {"engine": "list"}))


def heft(instance: Instance) -> Schedule:
    """A HEFT schedule of ``instance``, status feasible, checked by the validator.

    Only devices that :func:`~cpsched.bounds.usable_devices` keeps are tried
    (it raises :class:`~cpsched.bounds.Unreachable` when a task has none: the
    instance is infeasible).  HEFT ignores tensor lifetimes while it places
    tasks, so when the finished schedule exceeds a device's memory the device
    with the largest excess is left out and HEFT runs again (recorded in
    ``solver.left_out``).  Raises :class:`NoSchedule` when that leaves some task
    no device, or when the greedy choices strand a task.  ``bounds`` holds the
    relaxation lower bound on latency.
    """
    usable = usable_devices(instance)
    bounds = {"latency": latency_lower_bound(instance, usable)}
    left_out: list[str] = []
    while True:
        allowed = {t: tuple(d for d in devs if d not in left_out) for t, devs in usable.items()}
        schedule = _build(instance, allowed, bounds, left_out)
        report = validate(instance, schedule, check_claims=False)
        bugs = [str(v) for v in report.violations if v.kind != "capacity"]
        if bugs:
            raise AssertionError(f"HEFT built an invalid schedule: {'; '.join(bugs)}")
        if not report.violations:
            return dataclasses.replace(schedule, objectives=report.objectives)
        worst = max(instance.devices, key=lambda d: report.peaks[d.id] - d.memory)
        excess = (f"HEFT's schedule needs {report.peaks[worst.id]} bytes on device {worst.id!r}, "
                  f"over its memory {worst.memory}")
        if worst.id in left_out:  # nothing of HEFT's runs there any more: what overflows is not its choice
            raise NoSchedule(f"{excess}, with no task of HEFT's placed there")
        stranded = [t for t, devs in allowed.items() if devs == (worst.id,)]
        if stranded:
            raise NoSchedule(f"{excess}, and task {stranded[0]!r} can run nowhere else")
        left_out.append(worst.id)


def _build(instance: Instance, allowed: dict[str, tuple[str, ...]], bounds: dict[str, int],
           left_out: list[str]) -> Schedule:
    """One HEFT pass over the devices in ``allowed``."""
    builder = _Builder(instance, allowed)
    for task_id in priority_order(instance):
        builder.place(instance.task(task_id))
    return Schedule(
        instance=instance.name,
        status=Status.FEASIBLE,
        tasks=builder.placed,
        transfers=tuple(builder.transfers),
        bounds=bounds,
        solver={"engine": "heft", **({"left_out": list(left_out)} if left_out else {})},
    )


def heft_or_none(instance: Instance) -> Schedule | None:
    """HEFT's schedule as a warm start, or None when HEFT finds none (the solver decides)."""
    try:
        return heft(instance)
    except NoSchedule:
        return None
