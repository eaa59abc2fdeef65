"""Schedules, their statuses and Pareto fronts (PROBLEM.md sections 2, 4 and 5), with JSON I/O.

A :class:`Schedule` is plain data: where and when each task runs, which
transfers cross which link, the objective values claimed for it, and how sure
the engine is (:class:`Status`).  Whether it is *valid* is the validator's job
(:mod:`cpsched.validator`), which trusts nothing written here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from cpsched.errors import InputError
from cpsched.checks import check_format, check_int
from cpsched.files import load_json, write_json, write_text
from cpsched.instance import DEFAULT_MODE

FORMAT = "cpsched-schedule/1"
OBJECTIVES = ("latency", "energy", "memory")  # defined for every schedule
PLAN_OBJECTIVES = ("arena",)  # defined only for a schedule with a memory plan (PROBLEM.md section 4)
MODE_OBJECTIVES = ("error",)  # defined only on an instance with named modes (PROBLEM.md section 6)
ALL_OBJECTIVES = OBJECTIVES + PLAN_OBJECTIVES + MODE_OBJECTIVES
UNIT_KIND = {"latency": "time", "energy": "energy", "memory": "size",
             "arena": "size", "error": "error"}  # objective -> Instance.units key
PLAN_KINDS = ("weights", "workspace", "tensor")


class Status(str, Enum):
    """What an engine can say about its answer; each word means exactly one thing."""

    OPTIMAL = "optimal"  # proven optimal for the objective(s) minimised
    FEASIBLE = "feasible"  # a schedule, not proven optimal; bounds given
    INFEASIBLE = "infeasible"  # proven: no schedule satisfies the instance
    UNKNOWN = "unknown"  # nothing found within the limit

    @property
    def has_schedule(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)

    @property
    def proven(self) -> bool:
        return self in (Status.OPTIMAL, Status.INFEASIBLE)

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Placement:
    """Where and when a task runs, and in which of the device's modes (PROBLEM.md section 6)."""

    device: str
    start: int
    mode: str = DEFAULT_MODE


@dataclass(frozen=True)
class Transfer:
    tensor: str
    src: str
    dst: str
    start: int


@dataclass(frozen=True)
class PlanEntry:
    """One buffer's address in a memory plan: ``kind`` weights / workspace (``id`` the task)
    or tensor (``id`` the tensor, or its copy on that device)."""

    kind: str
    id: str
    offset: int


@dataclass(frozen=True)
class Schedule:
    """A (possibly empty) answer for one instance.

    ``tasks`` is empty exactly when ``status`` is infeasible or unknown, and
    then ``reason`` says why.  ``bounds`` holds the best proven lower bound of
    each minimised objective; ``solver`` records settings and timings.
    ``memory_plan`` (optional) maps a device to the offsets of its buffers and
    ``arena`` a device to its arena size; then ``objectives`` has ``arena``.
    """

    instance: str
    status: Status
    tasks: Mapping[str, Placement] = field(default_factory=dict)
    transfers: tuple[Transfer, ...] = ()
    objectives: Mapping[str, int] = field(default_factory=dict)
    bounds: Mapping[str, int] = field(default_factory=dict)
    reason: str | None = None
    solver: Mapping[str, Any] = field(default_factory=dict)
    memory_plan: Mapping[str, tuple[PlanEntry, ...]] = field(default_factory=dict)
    arena: Mapping[str, int] = field(default_factory=dict)
    #: other valid schedules the solve met on its way (Options.archive), none dominated by
    #: another or by this one: a sweep's candidate points; never written
    archive: tuple["Schedule", ...] = field(default=(), compare=False, repr=False)

    def within(self, limits: Mapping[str, int] | None) -> bool:
        """Whether each objective named in ``limits`` is at most its limit."""
        return all(self.objectives[name] <= value for name, value in (limits or {}).items())

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"format": FORMAT, "instance": self.instance}
        if self.status.has_schedule:
            out["tasks"] = {t: {"device": p.device, "start": p.start,
                                **({"mode": p.mode} if p.mode != DEFAULT_MODE else {})}
                            for t, p in self.tasks.items()}
            out["transfers"] = [
                {"tensor": x.tensor, "src": x.src, "dst": x.dst, "start": x.start} for x in self.transfers
            ]
            out["objectives"] = dict(self.objectives)
            if self.memory_plan:
                out["memory_plan"] = {d: [{"kind": e.kind, "id": e.id, "offset": e.offset} for e in entries]
                                      for d, entries in self.memory_plan.items()}
                out["arena"] = dict(self.arena)
        out["status"] = self.status.value
        if self.bounds:
            out["bounds"] = dict(self.bounds)
        if self.reason:
            out["reason"] = self.reason
        if self.solver:
            out["solver"] = dict(self.solver)
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "Schedule":
        """Parse the JSON object; structural problems raise a one-line InputError."""
        check_format(data, FORMAT, "a schedule")
        try:
            status = Status(data.get("status"))
        except ValueError:
            words = ", ".join(s.value for s in Status)
            raise InputError(f"status must be one of {words} (got {data.get('status')!r})") from None
        tasks_raw = data.get("tasks", {})
        if not isinstance(tasks_raw, dict):
            raise InputError("tasks must be a JSON object mapping task id -> {device, start}")
        tasks = {}
        for tid, p in tasks_raw.items():
            if not isinstance(p, dict) or "device" not in p or "start" not in p:
                raise InputError(f"tasks.{tid} must be an object with device and start")
            mode = p.get("mode", DEFAULT_MODE)
            if not isinstance(mode, str) or not mode:
                raise InputError(f"tasks.{tid}.mode must be a mode name (got {mode!r})")
            tasks[tid] = Placement(str(p["device"]), check_int(p["start"], f"tasks.{tid}.start"), mode)
        transfers_raw = data.get("transfers", [])
        if not isinstance(transfers_raw, list):
            raise InputError("transfers must be a list")
        transfers = []
        for i, x in enumerate(transfers_raw):
            if not isinstance(x, dict) or not {"tensor", "src", "dst", "start"} <= x.keys():
                raise InputError(f"transfers[{i}] must be an object with tensor, src, dst and start")
            transfers.append(Transfer(str(x["tensor"]), str(x["src"]), str(x["dst"]),
                                      check_int(x["start"], f"transfers[{i}].start")))
        plan = _plan(data.get("memory_plan", {}))
        return cls(
            instance=str(data.get("instance", "")),
            status=status,
            tasks=tasks,
            transfers=tuple(transfers),
            objectives=_int_map(data.get("objectives", {}), "objectives"),
            bounds=_int_map(data.get("bounds", {}), "bounds"),
            reason=data.get("reason"),
            solver=data.get("solver", {}) if isinstance(data.get("solver", {}), dict) else {},
            memory_plan=plan,
            arena=_int_map(data.get("arena", {}), "arena"),
        )


def _plan(value: Any) -> dict[str, tuple[PlanEntry, ...]]:
    if not isinstance(value, dict):
        raise InputError("memory_plan must be a JSON object mapping device -> list of {kind, id, offset}")
    plan = {}
    for dev, entries in value.items():
        if not isinstance(entries, list):
            raise InputError(f"memory_plan.{dev} must be a list")
        out = []
        for i, e in enumerate(entries):
            where = f"memory_plan.{dev}[{i}]"
            if not isinstance(e, dict) or not {"kind", "id", "offset"} <= e.keys():
                raise InputError(f"{where} must be an object with kind, id and offset")
            if e["kind"] not in PLAN_KINDS:
                raise InputError(f"{where}.kind must be one of {', '.join(PLAN_KINDS)} (got {e['kind']!r})")
            out.append(PlanEntry(e["kind"], str(e["id"]), check_int(e["offset"], f"{where}.offset")))
        plan[str(dev)] = tuple(out)
    return plan


def _int_map(value: Any, where: str) -> dict[str, int]:
    if not isinstance(value, dict):
        raise InputError(f"{where} must be a JSON object")
    return {k: check_int(v, f"{where}.{k}") for k, v in value.items()}


def load_schedule(path: str | Path) -> Schedule:
    return load_json(path, Schedule.from_dict)


def save_schedule(schedule: Schedule, path: str | Path) -> None:
    write_json(path, schedule.to_dict())


FRONT_FORMAT = "cpsched-front/1"


def dominates(a: Sequence[int], b: Sequence[int]) -> bool:
    """True when ``a`` is no worse than ``b`` in every objective and better in one (minimising)."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def non_dominated(points: Sequence[Sequence[int]]) -> list[int]:
    """Indices of the points no other point dominates (duplicates keep their first)."""
    keep = []
    for i, p in enumerate(points):
        if any(dominates(q, p) or (tuple(q) == tuple(p) and j < i) for j, q in enumerate(points)):
            continue
        keep.append(i)
    return keep


@dataclass(frozen=True)
class Point:
    """One point of a front: its objective vector and the schedule that achieves it."""

    values: tuple[int, ...]
    status: Status  # optimal (proven non-dominated) or feasible (not proven; bounds given)
    schedule: Schedule
    bounds: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Front:
    """A set of points over ``objectives`` (PROBLEM.md section 5, ``cpsched-front/1``).

    ``complete`` is true only when every point is proven non-dominated and the
    method proved that no other point exists.
    """

    instance: str
    objectives: tuple[str, ...]
    points: tuple[Point, ...]
    complete: bool
    units: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, Any] = field(default_factory=dict)
    instance_hash: str | None = None  # Instance.content_hash of the instance the front belongs to
    #: a proven lower set: every feasible vector is >= one of these (cpsched.certify); None: not known
    lower: tuple[tuple[int, ...], ...] | None = None
    gap: float | None = None  # the certified gap (PROBLEM.md section 5): 0 exactly when complete

    @property
    def ideal(self) -> list[int]:
        return [min(p.values[k] for p in self.points) for k in range(len(self.objectives))] if self.points else []

    @property
    def nadir(self) -> list[int]:
        return [max(p.values[k] for p in self.points) for k in range(len(self.objectives))] if self.points else []

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"format": FRONT_FORMAT, "instance": self.instance,
                               **({"instance_hash": self.instance_hash} if self.instance_hash else {}),
                               "objectives": list(self.objectives), "units": dict(self.units),
                               "complete": self.complete, "ideal": self.ideal, "nadir": self.nadir,
                               "points": []}
        if self.lower is not None:
            out["lower"] = [list(v) for v in self.lower]
        if self.gap is not None:
            out["gap"] = self.gap
        for p in self.points:
            point: dict[str, Any] = {"values": list(p.values), "status": p.status.value}
            if p.bounds:
                point["bounds"] = dict(p.bounds)
            point["schedule"] = p.schedule.to_dict()
            out["points"].append(point)
        if self.meta:
            out["meta"] = dict(self.meta)
        return out

    def to_text(self) -> str:
        """One point per line, values in objective order: what pymoo and moocore read as-is."""
        return "".join(" ".join(str(v) for v in p.values) + "\n" for p in self.points)

    @classmethod
    def from_dict(cls, data: Any) -> "Front":
        check_format(data, FRONT_FORMAT, "a front")
        names = data.get("objectives")
        if not isinstance(names, list) or not names or any(n not in ALL_OBJECTIVES for n in names):
            raise InputError(f"objectives must be a list of names from {', '.join(ALL_OBJECTIVES)}")
        raw = data.get("points", [])
        if not isinstance(raw, list):
            raise InputError("points must be a list")
        points = []
        for i, p in enumerate(raw):
            if not isinstance(p, dict) or not isinstance(p.get("values"), list) or len(p["values"]) != len(names):
                raise InputError(f"points[{i}]: values must list one integer per objective")
            values = tuple(check_int(v, f"points[{i}].values") for v in p["values"])
            try:
                status = Status(p.get("status"))
            except ValueError:
                raise InputError(f"points[{i}]: status must be optimal or feasible") from None
            try:
                schedule = Schedule.from_dict(p.get("schedule"))
            except InputError as exc:
                raise InputError(f"points[{i}].schedule: {exc}") from None
            claimed = tuple(schedule.objectives.get(n) for n in names)
            if claimed != values:
                raise InputError(f"points[{i}]: values {list(values)} differ from its schedule's objectives "
                                 f"{list(claimed)}")
            points.append(Point(values, status, schedule, _int_map(p.get("bounds", {}), f"points[{i}].bounds")))
        complete = data.get("complete", False)
        if not isinstance(complete, bool):
            raise InputError(f"complete must be true or false (got {complete!r})")
        digest = data.get("instance_hash")
        if digest is not None and not isinstance(digest, str):
            raise InputError(f"instance_hash must be a string (got {digest!r})")
        lower = data.get("lower")
        if lower is not None:
            if not isinstance(lower, list) or not all(isinstance(v, list) and len(v) == len(names) for v in lower):
                raise InputError("lower must be a list of objective vectors")
            lower = tuple(tuple(check_int(x, f"lower[{i}]") for x in v) for i, v in enumerate(lower))
        certified = data.get("gap")
        if certified is not None and (isinstance(certified, bool) or not isinstance(certified, (int, float))
                                      or not 0 <= certified < 1):
            raise InputError(f"gap must be a number in [0, 1) (got {certified!r})")
        return cls(str(data.get("instance", "")), tuple(names), tuple(points), complete,
                   data.get("units", {}) if isinstance(data.get("units"), dict) else {},
                   data.get("meta", {}) if isinstance(data.get("meta"), dict) else {}, digest, lower, certified)


def load_front(path: str | Path) -> Front:
    return load_json(path, Front.from_dict)


def save_front(front: Front, path: str | Path) -> Path:
    """Write ``front`` as JSON at ``path`` and its whitespace text beside it (``.txt``); return the latter."""
    path = Path(path)
    write_json(path, front.to_dict())
    text = path.with_suffix(".txt")
    write_text(text, front.to_text())
    return text
