"""The problem: devices, links, tasks and tensors, in integers (PROBLEM.md section 1).

An :class:`Instance` is built once, validated at construction and never
mutated; engines, heuristics and the validator see nothing else.  Every check
raises :class:`~cpsched.errors.InputError` with a message naming the entity and
the field, so that a bad file is reported in one line.

>>> inst = Instance.from_dict({
...     "format": "cpsched-instance/1", "name": "tiny",
...     "devices": [{"id": "cpu", "memory": 100, "static_power": 0, "host": True}],
...     "links": [],
...     "tasks": [{"id": "a", "op": "Relu", "modes": {"cpu": {"duration": 3, "energy": 5}}}],
...     "tensors": [{"id": "x", "size": 4, "producer": None, "consumers": ["a"]}]})
>>> inst.host.id, inst.task("a").modes["cpu"].duration
('cpu', 3)
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

import networkx as nx

from cpsched.checks import check_bool, check_format, check_int, check_str
from cpsched.errors import InputError, ModesUnsupported
from cpsched.files import load_json, write_json

FORMAT = "cpsched-instance/1"
#: The largest makespan, energy or memory total an instance may reach (see Instance._check_totals):
#: 2^60 leaves CP-SAT's int64 arithmetic headroom for sums of such totals.
MAX_TOTAL = 2**60
DEFAULT_UNITS = {"time": "us", "size": "byte", "energy": "pJ", "power": "pJ/us"}


@dataclass(frozen=True)
class Device:
    """A processor with its own memory; ``static_power`` is drawn for the whole makespan."""

    id: str
    memory: int
    static_power: int = 0
    host: bool = False

    def __post_init__(self):
        check_int(self.memory, f"device {self.id!r}: memory")
        check_int(self.static_power, f"device {self.id!r}: static_power")


@dataclass(frozen=True)
class Link:
    """A directed link; ``channels`` transfers at once, 0 meaning unlimited."""

    src: str
    dst: str
    latency: int
    bandwidth: int
    energy_per_byte: int = 0
    channels: int = 1

    def __post_init__(self):
        where = f"link {self.src}->{self.dst}"
        check_int(self.latency, f"{where}: latency")
        check_int(self.bandwidth, f"{where}: bandwidth", minimum=1)
        check_int(self.energy_per_byte, f"{where}: energy_per_byte")
        check_int(self.channels, f"{where}: channels")
        if self.src == self.dst:
            raise InputError(f"{where}: a link must join two different devices")

    def transfer_time(self, size: int) -> int:
        """Duration of a transfer of ``size`` bytes: latency + ceil(size / bandwidth)."""
        return self.latency + -(-size // self.bandwidth)


DEFAULT_MODE = "default"


@dataclass(frozen=True)
class Mode:
    """One way to run a task on one device (PROBLEM.md sections 1 and 6).

    ``duration`` >= 1 and ``energy`` >= 0 always; a named mode (precision,
    frequency) may also carry an ``error`` cost and replace the task's
    ``weights`` / ``workspace`` (None: the task's own) and the sizes of the
    tensors it produces (``outputs``, tensor id -> bytes).
    """

    duration: int
    energy: int = 0
    name: str = DEFAULT_MODE
    error: int = 0
    weights: int | None = None
    workspace: int | None = None
    outputs: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self):
        check_int(self.duration, "duration", minimum=1)
        check_int(self.energy, "energy")
        check_int(self.error, "error")
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"a mode name must be a non-empty string (got {self.name!r})")
        for key in ("weights", "workspace"):
            if getattr(self, key) is not None:
                check_int(getattr(self, key), key)
        object.__setattr__(self, "outputs", MappingProxyType(dict(self.outputs)))

    @property
    def plain(self) -> bool:
        """The mode of section 1: named ``default``, no error, nothing replaced."""
        return (self.name == DEFAULT_MODE and not self.error and self.weights is None
                and self.workspace is None and not self.outputs)

    @property
    def key(self) -> tuple:
        """Every field, hashable (``outputs`` as sorted pairs)."""
        return (self.name, self.duration, self.energy, self.error, self.weights, self.workspace,
                tuple(sorted(self.outputs.items())))

    def size(self, tensor: "Tensor") -> int:
        """The size of ``tensor`` (one the task produces) when the task runs in this mode."""
        return self.outputs.get(tensor.id, tensor.size)


@dataclass(frozen=True, init=False)
class Task:
    """One operator; ``choices`` maps each supporting device to its modes (read-only).

    Built as ``Task(id, op, modes={device: Mode or [Mode, ...]})``.  ``modes``
    (device -> its one :class:`Mode`) is what every method written for
    PROBLEM.md section 1 reads; it raises :class:`ModesUnsupported` on a task
    with named modes (section 6), so a method that does not know them refuses
    such an instance instead of silently using one of its modes.
    """

    id: str
    op: str
    choices: Mapping[str, tuple[Mode, ...]] = field(default_factory=dict)
    weights: int = 0
    workspace: int = 0

    def __init__(self, id: str, op: str, modes: Mapping[str, "Mode | Sequence[Mode]"] | None = None,
                 weights: int = 0, workspace: int = 0, choices: Mapping[str, Sequence[Mode]] | None = None):
        # ``choices`` is for dataclasses.replace, which passes the current ones; ``modes`` wins
        modes = modes if modes is not None else choices
        where = f"task {id!r}"
        object.__setattr__(self, "id", id)
        object.__setattr__(self, "op", op)
        object.__setattr__(self, "weights", check_int(weights, f"{where}: weights"))
        object.__setattr__(self, "workspace", check_int(workspace, f"{where}: workspace"))
        if not modes:
            raise InputError(f"{where}: modes is empty (the task runs on no device)")
        choices = {}
        for dev, given in modes.items():
            listed = (given,) if isinstance(given, Mode) else tuple(given)
            if not listed or not all(isinstance(m, Mode) for m in listed):
                raise InputError(f"{where}: modes.{dev} must be a Mode or a non-empty list of Modes")
            names = [m.name for m in listed]
            if len(set(names)) != len(names):
                raise InputError(f"{where}: modes.{dev} names a mode twice ({names})")
            choices[dev] = listed
        object.__setattr__(self, "choices", MappingProxyType(choices))

    @cached_property
    def plain(self) -> bool:
        """One plain mode per device (PROBLEM.md section 1)."""
        return all(len(ms) == 1 and ms[0].plain for ms in self.choices.values())

    @property
    def modes(self) -> Mapping[str, Mode]:
        """Device -> the task's one mode there; only for a :attr:`plain` task."""
        if not self.plain:
            raise ModesUnsupported(f"task {self.id!r} has named modes (PROBLEM.md section 6), which this "
                                   "method does not support")
        return MappingProxyType({d: ms[0] for d, ms in self.choices.items()})

    def mode(self, device: str, name: str = DEFAULT_MODE) -> Mode | None:
        """The mode ``name`` on ``device`` (None when the task has none)."""
        return next((m for m in self.choices.get(device, ()) if m.name == name), None)

    def weights_in(self, mode: Mode) -> int:
        return self.weights if mode.weights is None else mode.weights

    def workspace_in(self, mode: Mode) -> int:
        return self.workspace if mode.workspace is None else mode.workspace


@dataclass(frozen=True)
class Tensor:
    """Data from ``producer`` (None: a graph input on the host) to ``consumers``."""

    id: str
    size: int
    producer: str | None
    consumers: tuple[str, ...] = ()
    output: bool = False

    def __post_init__(self):
        check_int(self.size, f"tensor {self.id!r}: size")
        if self.output and self.producer is None:
            raise InputError(f"tensor {self.id!r}: a graph input cannot be a graph output")
        if len(set(self.consumers)) != len(self.consumers):
            raise InputError(f"tensor {self.id!r}: consumers lists a task twice")
        if self.producer is not None and self.producer in self.consumers:
            raise InputError(f"tensor {self.id!r}: task {self.producer!r} consumes its own output")


@dataclass(frozen=True, eq=False)
class Instance:
    """A validated scheduling problem (PROBLEM.md section 1)."""

    name: str
    devices: tuple[Device, ...]
    links: tuple[Link, ...]
    tasks: tuple[Task, ...]
    tensors: tuple[Tensor, ...]
    units: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_UNITS))
    meta: Mapping[str, Any] = field(default_factory=dict)
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # fused task id -> original node names

    def __post_init__(self):
        object.__setattr__(self, "units", MappingProxyType(dict(self.units)))
        object.__setattr__(self, "meta", _frozen(self.meta))
        object.__setattr__(self, "groups", MappingProxyType({k: tuple(v) for k, v in self.groups.items()}))
        for kind, items in (("device", self.devices), ("task", self.tasks), ("tensor", self.tensors)):
            seen = set()
            for item in items:
                if item.id in seen:
                    raise InputError(f"duplicate {kind} id {item.id!r}")
                seen.add(item.id)
        hosts = [d.id for d in self.devices if d.host]
        if len(hosts) != 1:
            raise InputError(f"exactly one device must have host: true (found {len(hosts)}: {hosts})")
        devices = {d.id for d in self.devices}
        pairs = set()
        for link in self.links:
            for end in (link.src, link.dst):
                if end not in devices:
                    raise InputError(f"link {link.src}->{link.dst}: unknown device {end!r}")
            if (link.src, link.dst) in pairs:
                raise InputError(f"duplicate link {link.src}->{link.dst}")
            pairs.add((link.src, link.dst))
        for task in self.tasks:
            for dev in task.choices:
                if dev not in devices:
                    raise InputError(f"task {task.id!r}: modes names unknown device {dev!r}")
        tasks = {t.id for t in self.tasks}
        for tensor in self.tensors:
            for ref in ([tensor.producer] if tensor.producer is not None else []) + list(tensor.consumers):
                if ref not in tasks:
                    raise InputError(f"tensor {tensor.id!r}: unknown task {ref!r}")
        self._check_outputs()
        owner: dict[str, str] = {}
        for task_id, members in self.groups.items():
            if task_id not in tasks:
                raise InputError(f"groups: {task_id!r} is not a task id")
            if not members or not all(isinstance(m, str) and m for m in members):
                raise InputError(f"groups.{task_id}: must be a non-empty list of node names")
            for m in members:
                if m in owner:
                    where = f"twice in group {task_id!r}" if owner[m] == task_id else \
                        f"in two groups, {owner[m]!r} and {task_id!r}"
                    raise InputError(f"groups: node {m!r} is {where}")
                owner[m] = task_id
        graph = self.graph
        if not nx.is_directed_acyclic_graph(graph):
            cycle = [u for u, _ in nx.find_cycle(graph)]
            raise InputError(f"the task graph has a cycle: {' -> '.join(cycle + cycle[:1])}")
        self._check_totals()

    def _check_outputs(self) -> None:
        """A mode's ``outputs`` name tensors its task produces and keep size 0 exactly where it is."""
        for task in self.tasks:
            for dev, modes in task.choices.items():
                for mode in modes:
                    where = f"task {task.id!r}: modes.{dev}.{mode.name}.outputs"
                    for tid, size in mode.outputs.items():
                        if not self.has_tensor(tid) or self.tensor(tid).producer != task.id:
                            raise InputError(f"{where}: {tid!r} is not a tensor the task produces")
                        if (size == 0) != (self.tensor(tid).size == 0):
                            raise InputError(f"{where}: {tid!r} may not change between size 0 and a positive "
                                             f"size (it has {self.tensor(tid).size}, the mode says {size})")

    def _check_totals(self) -> None:
        """Refuse an instance whose largest possible makespan, energy or memory exceeds
        :data:`MAX_TOTAL`: every engine model then stays exact in 64-bit integers."""
        n = len(self.devices)
        size = {t.id: self.size_range[t.id][1] for t in self.tensors}
        slowest_link = {t: max((l.transfer_time(s) for l in self.links), default=0) for t, s in size.items()}
        horizon = sum(max(m.duration for m in _all_modes(t)) for t in self.tasks) \
            + (n - 1) * sum(slowest_link.values())
        epb = max((l.energy_per_byte for l in self.links), default=0)
        totals = {
            "makespan": horizon,
            "energy": sum(max(m.energy for m in _all_modes(t)) for t in self.tasks)
            + (n - 1) * epb * sum(size.values()) + sum(d.static_power for d in self.devices) * horizon,
            "memory": sum(max(t.weights_in(m) + t.workspace_in(m) for m in _all_modes(t)) for t in self.tasks)
            + n * sum(size.values()),
            "error": sum(max(m.error for m in _all_modes(t)) for t in self.tasks),
        }
        for what, total in totals.items():
            if total > MAX_TOTAL:
                raise InputError(f"the instance's largest possible {what} is about 2^{total.bit_length() - 1}, over "
                                 f"the 2^{MAX_TOTAL.bit_length() - 1} the engines compute exactly: use coarser units")

    # ----- modes (PROBLEM.md section 6) ------------------------------------------------
    @cached_property
    def plain(self) -> bool:
        """Every task has one plain mode per device: the problem of PROBLEM.md sections 1-5."""
        return all(t.plain for t in self.tasks)

    @cached_property
    def size_range(self) -> dict[str, tuple[int, int]]:
        """Tensor id -> (smallest, largest) size over its producer's modes (a graph input: its size)."""
        out = {}
        for tensor in self.tensors:
            sizes = [tensor.size] if tensor.producer is None else \
                [m.size(tensor) for m in _all_modes(self.task(tensor.producer))]
            out[tensor.id] = (min(sizes), max(sizes))
        return out

    def resolved(self, choice: Mapping[str, tuple[str, str]]) -> "Instance":
        """The plain instance of one mode choice (task id -> (device, mode name)).

        A chosen task keeps only its chosen device, with that mode's duration
        and energy, weights and workspace; a tensor takes the size of its
        producer's chosen mode.  Tasks absent from ``choice``, or whose choice
        names no mode of theirs, keep every device (with its first mode) so
        that a checker still sees where they may run.  On this instance every
        rule and objective of sections 2-4 reads as section 6 defines it.
        """
        picked = {v: mode for v, (d, name) in choice.items()
                  if self.has_task(v) and (mode := self.task(v).mode(d, name)) is not None}
        tasks = []
        for task in self.tasks:
            mode = picked.get(task.id)
            if mode is None:
                first = {d: ms[0] for d, ms in task.choices.items()}
                tasks.append(Task(task.id, task.op, {d: Mode(m.duration, m.energy) for d, m in first.items()},
                                  task.weights, task.workspace))
            else:
                tasks.append(Task(task.id, task.op, {choice[task.id][0]: Mode(mode.duration, mode.energy)},
                                  task.weights_in(mode), task.workspace_in(mode)))
        tensors = tuple(
            dataclasses.replace(t, size=picked[t.producer].size(t)) if t.producer in picked else t
            for t in self.tensors)
        return Instance(self.name, self.devices, self.links, tuple(tasks), tensors, self.units, self.meta,
                        self.groups)

    # ----- lookups ---------------------------------------------------------------------
    @cached_property
    def _task_index(self) -> dict[str, Task]:
        return {t.id: t for t in self.tasks}

    @cached_property
    def _device_index(self) -> dict[str, Device]:
        return {d.id: d for d in self.devices}

    @cached_property
    def _link_index(self) -> dict[tuple[str, str], Link]:
        return {(l.src, l.dst): l for l in self.links}

    @cached_property
    def _tensor_index(self) -> dict[str, Tensor]:
        return {t.id: t for t in self.tensors}

    def task(self, task_id: str) -> Task:
        return self._task_index[task_id]

    def device(self, device_id: str) -> Device:
        return self._device_index[device_id]

    def tensor(self, tensor_id: str) -> Tensor:
        return self._tensor_index[tensor_id]

    def link(self, src: str, dst: str) -> Link | None:
        """The link ``src -> dst``, or None when the devices are not connected."""
        return self._link_index.get((src, dst))

    def has_task(self, task_id: str) -> bool:
        return task_id in self._task_index

    def has_device(self, device_id: str) -> bool:
        return device_id in self._device_index

    def has_tensor(self, tensor_id: str) -> bool:
        return tensor_id in self._tensor_index

    @cached_property
    def host(self) -> Device:
        return next(d for d in self.devices if d.host)

    @cached_property
    def inputs_of(self) -> dict[str, tuple[Tensor, ...]]:
        """Task id -> the tensors it consumes."""
        acc: dict[str, list[Tensor]] = {t.id: [] for t in self.tasks}
        for tensor in self.tensors:
            for c in tensor.consumers:
                acc[c].append(tensor)
        return {k: tuple(v) for k, v in acc.items()}

    @cached_property
    def outputs_of(self) -> dict[str, tuple[Tensor, ...]]:
        """Task id -> the tensors it produces."""
        acc: dict[str, list[Tensor]] = {t.id: [] for t in self.tasks}
        for tensor in self.tensors:
            if tensor.producer is not None:
                acc[tensor.producer].append(tensor)
        return {k: tuple(v) for k, v in acc.items()}

    @cached_property
    def graph(self) -> nx.DiGraph:
        """Task precedence graph: an edge producer -> consumer for every tensor."""
        g = nx.DiGraph()
        g.add_nodes_from(t.id for t in self.tasks)
        for tensor in self.tensors:
            if tensor.producer is not None:
                g.add_edges_from((tensor.producer, c) for c in tensor.consumers)
        return g

    @cached_property
    def topological_order(self) -> tuple[str, ...]:
        """Task ids in a topological order, ties broken by file order (deterministic)."""
        position = {t.id: i for i, t in enumerate(self.tasks)}
        return tuple(nx.lexicographical_topological_sort(self.graph, key=position.__getitem__))

    @cached_property
    def content_hash(self) -> str:
        """``sha256:<hex>`` of everything that defines the problem (``meta`` left out: it records
        where the instance came from, not what it is); fronts carry it (PROBLEM.md section 5)."""
        data = {k: v for k, v in self.to_dict().items() if k != "meta"}
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()

    def __reduce__(self):
        """Pickle through the JSON form (read-only mappings do not pickle)."""
        return (Instance.from_dict, (self.to_dict(),))

    # ----- (de)serialisation -----------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any) -> "Instance":
        """Build from the JSON object of PROBLEM.md section 5; raises InputError."""
        check_format(data, FORMAT, "an instance")
        return cls(
            name=_text(data.get("name", ""), "name"),
            units={**DEFAULT_UNITS, **{k: _text(v, f"units.{k}") for k, v in _obj(data.get("units", {}), "units").items()}},
            meta=_obj(data.get("meta", {}), "meta"),
            devices=tuple(_device(d, i) for i, d in enumerate(_list(data, "devices"))),
            links=tuple(_link(d, i) for i, d in enumerate(_list(data, "links", required=False))),
            tasks=tuple(_task(d, i) for i, d in enumerate(_list(data, "tasks"))),
            tensors=tuple(_tensor(d, i) for i, d in enumerate(_list(data, "tensors"))),
            groups=_groups(data.get("groups", {})),
        )

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"format": FORMAT, "name": self.name, "units": dict(self.units)}
        if self.meta:
            out["meta"] = _thawed(self.meta)
        out["devices"] = [
            {"id": d.id, "memory": d.memory, "static_power": d.static_power, **({"host": True} if d.host else {})}
            for d in self.devices
        ]
        out["links"] = [
            {"src": l.src, "dst": l.dst, "latency": l.latency, "bandwidth": l.bandwidth,
             "energy_per_byte": l.energy_per_byte, "channels": l.channels}
            for l in self.links
        ]
        out["tasks"] = [
            {"id": t.id, "op": t.op, "weights": t.weights, "workspace": t.workspace,
             "modes": {d: _modes_json(ms) for d, ms in t.choices.items()}}
            for t in self.tasks
        ]
        out["tensors"] = [
            {"id": t.id, "size": t.size, "producer": t.producer, "consumers": list(t.consumers),
             **({"output": True} if t.output else {})}
            for t in self.tensors
        ]
        if self.groups:
            out["groups"] = {k: list(v) for k, v in self.groups.items()}
        return out


def _all_modes(task: Task) -> list[Mode]:
    return [m for ms in task.choices.values() for m in ms]


def _modes_json(modes: tuple[Mode, ...]) -> dict | list:
    """One device's modes as JSON: an object for one plain mode, else a list of named modes."""
    if len(modes) == 1 and modes[0].plain:
        return {"duration": modes[0].duration, "energy": modes[0].energy}
    out = []
    for m in modes:
        item: dict[str, Any] = {"name": m.name, "duration": m.duration, "energy": m.energy}
        if m.error:
            item["error"] = m.error
        for key in ("weights", "workspace"):
            if getattr(m, key) is not None:
                item[key] = getattr(m, key)
        if m.outputs:
            item["outputs"] = dict(m.outputs)
        out.append(item)
    return out


def _frozen(value: Any) -> Any:
    """A read-only deep copy: mappings become read-only mappings, lists tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    return value


def _thawed(value: Any) -> Any:
    """The JSON form of a :func:`_frozen` value."""
    if isinstance(value, Mapping):
        return {k: _thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thawed(v) for v in value]
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"{where} must be a string (got {value!r})")
    return value


def _obj(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise InputError(f"{where} must be a JSON object")
    return value


def _list(data: dict, key: str, required: bool = True) -> list:
    if key not in data:
        if required:
            raise InputError(f"missing field {key!r}")
        return []
    value = data[key]
    if not isinstance(value, list):
        raise InputError(f"{key} must be a list")
    return value


def _field(d: Any, key: str, where: str, default: Any = ...) -> Any:
    if not isinstance(d, dict):
        raise InputError(f"{where} must be a JSON object")
    if key not in d:
        if default is ...:
            raise InputError(f"{where}: missing field {key!r}")
        return default
    return d[key]


def _id(d: Any, where: str) -> str:
    value = _field(d, "id", where)
    if not isinstance(value, str) or not value:
        raise InputError(f"{where}: id must be a non-empty string (got {value!r})")
    return value


def _device(d: Any, i: int) -> Device:
    where = f"devices[{i}]"
    dev_id = _id(d, where)
    where = f"device {dev_id!r}"
    return Device(
        id=dev_id,
        memory=check_int(_field(d, "memory", where), f"{where}: memory"),
        static_power=check_int(_field(d, "static_power", where, 0), f"{where}: static_power"),
        host=check_bool(_field(d, "host", where, False), f"{where}: host"),
    )


def _link(d: Any, i: int) -> Link:
    where = f"links[{i}]"
    src, dst = check_str(_field(d, "src", where), f"{where}.src"), check_str(_field(d, "dst", where), f"{where}.dst")
    where = f"link {src}->{dst}"
    return Link(
        src=src,
        dst=dst,
        latency=check_int(_field(d, "latency", where, 0), f"{where}: latency"),
        bandwidth=check_int(_field(d, "bandwidth", where), f"{where}: bandwidth", minimum=1),
        energy_per_byte=check_int(_field(d, "energy_per_byte", where, 0), f"{where}: energy_per_byte"),
        channels=check_int(_field(d, "channels", where, 1), f"{where}: channels"),
    )


def _task(d: Any, i: int) -> Task:
    task_id = _id(d, f"tasks[{i}]")
    where = f"task {task_id!r}"
    modes_raw = _obj(_field(d, "modes", where), f"{where}: modes")
    modes = {}
    for dev, m in modes_raw.items():
        mw = f"{where}: modes.{dev}"
        if isinstance(m, list):
            if not m:
                raise InputError(f"{mw}: an empty list of modes")
            modes[dev] = [_mode(item, f"{mw}[{i}]", named=True) for i, item in enumerate(m)]
        else:
            modes[dev] = _mode(m, mw, named=False)
    return Task(
        id=task_id,
        op=_text(_field(d, "op", where, ""), f"{where}: op"),
        modes=modes,
        weights=check_int(_field(d, "weights", where, 0), f"{where}: weights"),
        workspace=check_int(_field(d, "workspace", where, 0), f"{where}: workspace"),
    )


def _mode(m: Any, where: str, named: bool) -> Mode:
    """One mode object: section 1's ``{duration, energy}``, or a named mode of section 6."""
    name = _field(m, "name", where) if named else DEFAULT_MODE
    if not isinstance(name, str) or not name:
        raise InputError(f"{where}: name must be a non-empty string (got {name!r})")
    if named:
        where = f"{where} ({name})"
    optional = {k: check_int(m[k], f"{where}.{k}") for k in ("weights", "workspace") if k in m}
    outputs = _obj(m.get("outputs", {}), f"{where}.outputs")
    return Mode(
        duration=check_int(_field(m, "duration", where), f"{where}.duration", minimum=1),
        energy=check_int(_field(m, "energy", where, 0), f"{where}.energy"),
        name=name,
        error=check_int(m.get("error", 0), f"{where}.error"),
        outputs={t: check_int(v, f"{where}.outputs.{t}") for t, v in outputs.items()},
        **optional,
    )


def _tensor(d: Any, i: int) -> Tensor:
    tensor_id = _id(d, f"tensors[{i}]")
    where = f"tensor {tensor_id!r}"
    consumers = _field(d, "consumers", where)
    if not isinstance(consumers, list) or not all(isinstance(c, str) for c in consumers):
        raise InputError(f"{where}: consumers must be a list of task ids")
    producer = _field(d, "producer", where)
    if producer is not None and not isinstance(producer, str):
        raise InputError(f"{where}: producer must be a task id or null (got {producer!r})")
    return Tensor(
        id=tensor_id,
        size=check_int(_field(d, "size", where), f"{where}: size"),
        producer=producer,
        consumers=tuple(consumers),
        output=check_bool(_field(d, "output", where, False), f"{where}: output"),
    )


def _groups(value: Any) -> dict[str, tuple[str, ...]]:
    groups = _obj(value, "groups")
    for task_id, members in groups.items():
        if not isinstance(members, list):
            raise InputError(f"groups.{task_id}: must be a list of node names (got {members!r})")
    return {k: tuple(v) for k, v in groups.items()}


def load_instance(path: str | Path) -> Instance:
    """Read and validate an instance JSON file; errors name the file."""
    return load_json(path, Instance.from_dict)


def save_instance(instance: Instance, path: str | Path) -> None:
    write_json(path, instance.to_dict())
