"""The independent checker: every rule of PROBLEM.md, every objective recomputed.

It knows nothing of how a schedule was found.  :func:`validate` lists every
violation it can see and recomputes latency, energy, memory and per-device
peaks from the instance and the schedule alone; engines and heuristics call
it on everything they write.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from cpsched.instance import Instance
from cpsched.schedule import Placement, Schedule, Status

#: Every kind of violation the checker reports, with what it means.
KINDS = {
    "missing-task": "a task of the instance has no placement",
    "unknown-task": "the schedule places a task the instance does not have",
    "unsupported-device": "a task is placed on a device absent from its modes",
    "unsupported-mode": "a task's placement names a mode its device does not list for it",
    "precedence": "a task starts before one of its inputs is on its device",
    "device-overlap": "two tasks overlap on one device",
    "link-channels": "a link carries more transfers at once than its channels",
    "missing-transfer": "a consumer runs away from its input and no transfer brings it",
    "superfluous-transfer": "a transfer nothing needs (duplicate, size 0, no consumer there, unknown tensor)",
    "no-link": "a transfer uses a link that does not exist",
    "transfer-source": "a transfer does not leave from the tensor's device",
    "transfer-early": "a transfer starts before its tensor is produced",
    "capacity": "a device's peak memory (or memory-plan arena) exceeds its capacity",
    "objective": "a claimed objective differs from the recomputed value",
    "memory-plan": "a memory plan misses or invents a buffer, or two buffers overlap in time and address",
    "arena": "a claimed arena differs from its plan's max(offset + size), or is missing",
}


@dataclass(frozen=True)
class Violation:
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"


@dataclass(frozen=True)
class Buffer:
    """Bytes held on a device during ``[start, end)`` (PROBLEM.md section 3).

    ``kind`` is ``weights`` or ``workspace`` (``id`` is the task) or ``tensor``
    (``id`` is the tensor; on a transfer's destination it is the copy).
    """

    device: str
    kind: str
    id: str
    start: int
    end: int
    size: int


@dataclass(frozen=True)
class Report:
    """What the checker found: violations and the recomputed objectives."""

    violations: tuple[Violation, ...]
    objectives: dict[str, int] = field(default_factory=dict)
    peaks: dict[str, int] = field(default_factory=dict)
    arenas: dict[str, int] = field(default_factory=dict)  # recomputed from the memory plan, if any

    @property
    def valid(self) -> bool:
        return not self.violations


def effective(instance: Instance, schedule: Schedule) -> Instance:
    """The instance whose sections 2-4 the schedule is read against: ``instance`` itself,
    or, with named modes (PROBLEM.md section 6), its resolution by the schedule's modes
    (:meth:`~cpsched.instance.Instance.resolved`).  Every function below goes through it."""
    if instance.plain:
        return instance
    return instance.resolved({v: (p.device, p.mode) for v, p in schedule.tasks.items()})


def error(instance: Instance, schedule: Schedule) -> int:
    """The ``error`` objective: the sum of the chosen modes' error (an additive proxy)."""
    total = 0
    for tid, p in schedule.tasks.items():
        if instance.has_task(tid) and (mode := instance.task(tid).mode(p.device, p.mode)) is not None:
            total += mode.error
    return total


def makespan(instance: Instance, schedule: Schedule) -> int:
    """Latest end of any task or transfer, 0 for an empty schedule."""
    instance = effective(instance, schedule)
    ends = [0]
    for tid, p in schedule.tasks.items():
        if instance.has_task(tid) and p.device in instance.task(tid).modes:
            ends.append(p.start + instance.task(tid).modes[p.device].duration)
    for x in schedule.transfers:
        link = instance.link(x.src, x.dst)
        if link is not None and instance.has_tensor(x.tensor):
            ends.append(x.start + link.transfer_time(instance.tensor(x.tensor).size))
    return max(ends)


def buffers(instance: Instance, schedule: Schedule) -> list[Buffer]:
    """Every buffer of the schedule with its lifetime, as PROBLEM.md section 3 defines them.

    Tasks that are unplaced or on an unsupported device are skipped, so this
    also works (partially) on invalid schedules.
    """
    instance = effective(instance, schedule)
    span = makespan(instance, schedule)
    placed = {
        tid: p for tid, p in schedule.tasks.items()
        if instance.has_task(tid) and p.device in instance.task(tid).modes
    }

    def end_of(tid: str) -> int:
        return placed[tid].start + instance.task(tid).modes[placed[tid].device].duration

    xfer_end: dict[tuple[str, str], list[int]] = defaultdict(list)  # (tensor, src) -> ends
    copies = []
    for x in schedule.transfers:
        link = instance.link(x.src, x.dst)
        if link is None or not instance.has_tensor(x.tensor):
            continue
        end = x.start + link.transfer_time(instance.tensor(x.tensor).size)
        xfer_end[x.tensor, x.src].append(end)
        copies.append((x, end))

    out: list[Buffer] = []
    for tid, p in placed.items():
        task = instance.task(tid)
        if task.weights:
            out.append(Buffer(p.device, "weights", tid, 0, span, task.weights))
        if task.workspace:
            out.append(Buffer(p.device, "workspace", tid, p.start, end_of(tid), task.workspace))
    host = instance.host.id
    for tensor in instance.tensors:
        if tensor.size == 0:
            continue
        if tensor.producer is None:
            dev, start, ends = host, 0, []
        elif tensor.producer in placed:
            dev, start = placed[tensor.producer].device, placed[tensor.producer].start
            ends = [end_of(tensor.producer)]
        else:
            continue
        ends += [end_of(c) for c in tensor.consumers if c in placed and placed[c].device == dev]
        ends += xfer_end.get((tensor.id, dev), [])
        end = span if tensor.output else max(ends, default=start)
        out.append(Buffer(dev, "tensor", tensor.id, start, end, tensor.size))
    for x, xend in copies:
        tensor = instance.tensor(x.tensor)
        if tensor.size == 0:
            continue
        ends = [end_of(c) for c in tensor.consumers if c in placed and placed[c].device == x.dst]
        out.append(Buffer(x.dst, "tensor", x.tensor, x.start, max(ends, default=xend), tensor.size))
    return out


def peak_memory(instance: Instance, schedule: Schedule) -> dict[str, int]:
    """Peak live bytes per device (every device listed, 0 when unused)."""
    instance = effective(instance, schedule)
    events: dict[str, list[tuple[int, int]]] = {d.id: [] for d in instance.devices}
    for b in buffers(instance, schedule):
        if b.end > b.start and b.size:
            events[b.device] += [(b.start, b.size), (b.end, -b.size)]
    peaks = {}
    for dev, evs in events.items():
        level = best = 0
        for _, delta in sorted(evs):  # at equal times, frees (negative) come first: half-open
            level += delta
            best = max(best, level)
        peaks[dev] = best
    return peaks


def energy(instance: Instance, schedule: Schedule) -> int:
    """Mode energies + transfer bytes x energy per byte + static power x makespan."""
    instance = effective(instance, schedule)
    total = 0
    for tid, p in schedule.tasks.items():
        if instance.has_task(tid) and p.device in instance.task(tid).modes:
            total += instance.task(tid).modes[p.device].energy
    for x in schedule.transfers:
        link = instance.link(x.src, x.dst)
        if link is not None and instance.has_tensor(x.tensor):
            total += instance.tensor(x.tensor).size * link.energy_per_byte
    return total + makespan(instance, schedule) * sum(d.static_power for d in instance.devices)


def entry_size(instance: Instance, kind: str, id: str) -> int | None:
    """The bytes of a memory-plan entry (None when the id is not in the instance)."""
    if kind in ("weights", "workspace"):
        return getattr(instance.task(id), kind) if instance.has_task(id) else None
    if kind == "tensor":
        return instance.tensor(id).size if instance.has_tensor(id) else None
    return None


def plan_arenas(instance: Instance, schedule: Schedule) -> dict[str, int]:
    """Per device of the memory plan, max(offset + size) over its entries of size > 0 (0 if none)."""
    instance = effective(instance, schedule)
    arenas = {}
    for dev, entries in schedule.memory_plan.items():
        tops = [e.offset + size for e in entries if (size := entry_size(instance, e.kind, e.id))]
        arenas[dev] = max(tops, default=0)
    return arenas


def objectives(instance: Instance, schedule: Schedule) -> tuple[dict[str, int], dict[str, int]]:
    """(objectives, per-device peaks) recomputed from the instance alone; ``arena`` is
    included when the schedule has a memory plan, ``error`` when the instance has named modes."""
    given = instance
    instance = effective(instance, schedule)
    peaks = peak_memory(instance, schedule)
    values = {
        "latency": makespan(instance, schedule),
        "energy": energy(instance, schedule),
        "memory": max(peaks.values(), default=0),
    }
    if not given.plain:
        values["error"] = error(given, schedule)
    if schedule.memory_plan:
        values["arena"] = max(plan_arenas(instance, schedule).values(), default=0)
    return values, peaks


def scored(instance: Instance, tasks: dict[str, Placement], transfers, status: Status = Status.FEASIBLE,
           bounds: dict | None = None, solver: dict | None = None) -> Schedule:
    """A schedule of ``tasks`` and ``transfers`` whose objectives are recomputed from the instance."""
    draft = Schedule(instance.name, status, tasks, tuple(transfers))
    values, _ = objectives(instance, draft)
    return Schedule(instance.name, status, tasks, tuple(transfers), values, bounds or {}, None, solver or {})


def _check_plan(instance: Instance, schedule: Schedule, add, check_claims: bool) -> dict[str, int]:
    """The memory-plan rules of PROBLEM.md sections 3 and 5; returns the recomputed arenas.
    ``instance`` is already :func:`effective`."""
    live = {(b.device, b.kind, b.id): b for b in buffers(instance, schedule) if b.size > 0}
    devices = {d.id for d in instance.devices}
    placed: dict[str, list[tuple[Buffer, int]]] = defaultdict(list)
    seen = set()
    for dev, entries in schedule.memory_plan.items():
        if dev not in devices:
            add("memory-plan", f"the plan names device {dev!r}, which the instance does not have")
            continue
        for e in entries:
            key = (dev, e.kind, e.id)
            name = f"{e.kind} {e.id!r} on {dev!r}"
            if key in seen:
                add("memory-plan", f"{name} has two entries")
                continue
            seen.add(key)
            size = entry_size(instance, e.kind, e.id)
            if key in live:
                placed[dev].append((live[key], e.offset))
            elif size is None or size > 0:
                add("memory-plan", f"{name} is in the plan but is no buffer of the schedule")
    for key, buf in live.items():
        if key not in seen:
            add("memory-plan", f"{buf.kind} {buf.id!r} on {buf.device!r} ({buf.size} bytes) has no offset")
    for dev, items in placed.items():
        items.sort(key=lambda item: item[0].start)
        active: list[tuple[Buffer, int]] = []
        for buf, off in items:
            if buf.end <= buf.start:
                continue
            active = [(b, o) for b, o in active if b.end > buf.start]
            for other, o in active:
                if o < off + buf.size and off < o + other.size:
                    add("memory-plan", f"{other.kind} {other.id!r} [{o}, {o + other.size}) and {buf.kind} "
                                       f"{buf.id!r} [{off}, {off + buf.size}) overlap in memory on {dev!r} "
                                       f"at time {buf.start}")
            active.append((buf, off))
    arenas = {dev: a for dev, a in plan_arenas(instance, schedule).items() if dev in devices}
    for dev, arena in arenas.items():
        if arena > instance.device(dev).memory:
            add("capacity", f"device {dev!r}: the memory plan's arena {arena} exceeds its memory "
                            f"{instance.device(dev).memory}")
        if check_claims:
            if dev not in schedule.arena:
                if arena:
                    add("arena", f"device {dev!r} has a memory plan but no arena")
            elif schedule.arena[dev] != arena:
                add("arena", f"device {dev!r}: arena is claimed {schedule.arena[dev]} but its plan's "
                             f"max(offset + size) is {arena}")
    if check_claims:
        for dev, claimed in schedule.arena.items():
            if dev not in arenas and claimed:
                add("arena", f"arena {claimed} is claimed for device {dev!r}, which has no plan")
    return arenas


def validate(instance: Instance, schedule: Schedule, check_claims: bool = True) -> Report:
    """Check ``schedule`` against every rule of PROBLEM.md; see :data:`KINDS`.

    A schedule without tasks (status infeasible or unknown) has nothing to
    check and is reported valid with no objectives.
    """
    if not schedule.status.has_schedule:
        return Report(())
    v: list[Violation] = []

    def add(kind: str, message: str) -> None:
        v.append(Violation(kind, message))

    placed = {}
    for tid, p in schedule.tasks.items():
        if not instance.has_task(tid):
            add("unknown-task", f"task {tid!r} is not in the instance")
        elif p.device not in instance.task(tid).choices:
            add("unsupported-device", f"task {tid!r} placed on {p.device!r}, which does not support it")
        elif instance.task(tid).mode(p.device, p.mode) is None:
            names = ", ".join(m.name for m in instance.task(tid).choices[p.device])
            add("unsupported-mode", f"task {tid!r} placed on {p.device!r} in mode {p.mode!r}, which it lacks "
                                    f"there (its modes: {names})")
        else:
            placed[tid] = p
    given, instance = instance, effective(instance, schedule)
    for task in instance.tasks:
        if task.id not in schedule.tasks:
            add("missing-task", f"task {task.id!r} has no placement")

    def end_of(tid: str) -> int:
        return placed[tid].start + instance.task(tid).modes[placed[tid].device].duration

    host = instance.host.id
    arrival: dict[tuple[str, str], int] = {}  # (tensor, dst) -> transfer end
    for i, x in enumerate(schedule.transfers):
        what = f"transfer of {x.tensor!r} {x.src}->{x.dst}"
        if not instance.has_tensor(x.tensor):
            add("superfluous-transfer", f"{what}: unknown tensor")
            continue
        tensor = instance.tensor(x.tensor)
        if (x.tensor, x.dst) in arrival:
            add("superfluous-transfer", f"{what}: a second transfer of this tensor to {x.dst!r}")
            continue
        if tensor.size == 0:
            add("superfluous-transfer", f"{what}: the tensor has size 0 and needs no transfer")
        if not any(c in placed and placed[c].device == x.dst for c in tensor.consumers):
            add("superfluous-transfer", f"{what}: no consumer of the tensor runs on {x.dst!r}")
        if tensor.producer is None:
            src, ready = host, 0
        elif tensor.producer in placed:
            src, ready = placed[tensor.producer].device, end_of(tensor.producer)
        else:
            src, ready = None, 0
        if src is not None and x.src != src:
            add("transfer-source", f"{what}: the tensor is on {src!r}, not {x.src!r}")
        if src is not None and x.dst == src:
            add("superfluous-transfer", f"{what}: the tensor is already on {x.dst!r}")
        if x.start < ready:
            add("transfer-early", f"{what}: starts at {x.start}, before the tensor is ready at {ready}")
        link = instance.link(x.src, x.dst)
        if link is None:
            add("no-link", f"{what}: there is no link {x.src}->{x.dst}")
            arrival[x.tensor, x.dst] = x.start
        else:
            arrival[x.tensor, x.dst] = x.start + link.transfer_time(tensor.size)

    for tensor in instance.tensors:
        if tensor.producer is not None and tensor.producer not in placed:
            continue
        src = host if tensor.producer is None else placed[tensor.producer].device
        ready = 0 if tensor.producer is None else end_of(tensor.producer)
        for c in tensor.consumers:
            if c not in placed:
                continue
            dev, start = placed[c].device, placed[c].start
            if tensor.size == 0 or dev == src:
                avail = ready
            elif (tensor.id, dev) in arrival:
                avail = arrival[tensor.id, dev]
            else:
                add("missing-transfer", f"task {c!r} on {dev!r} needs tensor {tensor.id!r} from {src!r}, "
                                        "but no transfer brings it")
                continue
            if start < avail:
                add("precedence", f"task {c!r} starts at {start}, before tensor {tensor.id!r} "
                                  f"is on {dev!r} at {avail}")

    by_device: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for tid, p in placed.items():
        by_device[p.device].append((p.start, end_of(tid), tid))
    for dev, items in by_device.items():
        items.sort()
        last_end, last_id = None, None
        for start, end, tid in items:
            if last_end is not None and start < last_end:
                add("device-overlap", f"tasks {last_id!r} and {tid!r} overlap on {dev!r} at time {start}")
            if last_end is None or end > last_end:
                last_end, last_id = end, tid

    on_link: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for x in schedule.transfers:
        link = instance.link(x.src, x.dst)
        if link is not None and link.channels > 0 and instance.has_tensor(x.tensor):
            on_link[x.src, x.dst].append((x.start, x.start + link.transfer_time(instance.tensor(x.tensor).size)))
    for (src, dst), spans in on_link.items():
        channels = instance.link(src, dst).channels
        events = sorted([(s, 1) for s, e in spans if e > s] + [(e, -1) for s, e in spans if e > s])
        level = 0
        for t, delta in events:
            level += delta
            if level > channels:
                add("link-channels", f"link {src}->{dst} carries {level} transfers at time {t} "
                                     f"(channels {channels})")
                break

    arenas = _check_plan(instance, schedule, add, check_claims) if schedule.memory_plan else {}
    if check_claims and not schedule.memory_plan and "arena" in schedule.objectives:
        add("objective", "arena is claimed but the schedule has no memory plan")
    values, peaks = objectives(given, schedule)
    for dev in instance.devices:
        if peaks[dev.id] > dev.memory:
            add("capacity", f"device {dev.id!r} peaks at {peaks[dev.id]} bytes, over its memory {dev.memory}")
    if check_claims:
        for name, claimed in schedule.objectives.items():
            if name in values and claimed != values[name]:
                add("objective", f"{name} is claimed {claimed} but recomputes to {values[name]}")
    return Report(tuple(v), values, peaks, arenas)
