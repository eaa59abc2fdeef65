"""Execution plans: a schedule cut into subgraphs a runtime can run, and their manifest.

A schedule says where and when each task runs.  A runtime runs whole
subgraphs, one at a time per device, each once all its inputs are there, and
a subgraph's outputs exist only once it has finished.  :func:`cut` turns the
first into the second: each device's tasks, in the order of their starts, stay
in one **part** until the schedule has something leave the part or arrive for
it mid-way (running on would hold that back), or until the next task would
make a part wait, through other devices, for its own output (a cycle between
parts; the order of the parts on a device counts as an edge too).  So a
device's tasks form as few parts as the schedule's timing allows, and the
parts of a valid schedule run without deadlock.

A :class:`Plan` is the parts, the schedule's transfers (each with the part
that makes its tensor and the parts that read it on the destination), the
devices' execution settings and the graph's inputs and outputs: what
``cpsched export`` writes as ``manifest.json`` (format ``cpsched-plan/1``)
beside one ONNX file per part, and what ``cpsched run`` executes.

>>> import cpsched
>>> inst = cpsched.load("squeezenet", platform="cpu2")
>>> sched = cpsched.heuristic("heft", inst)
>>> plan = cut(inst, sched)
>>> sorted({t for p in plan.parts for t in p.tasks}) == sorted(t.id for t in inst.tasks)
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import networkx as nx

from cpsched.checks import check_format, check_int, check_mapping, check_str
from cpsched.errors import InputError
from cpsched.files import load_json, write_json
from cpsched.instance import Instance
from cpsched.schedule import Schedule
from cpsched.validator import objectives

FORMAT = "cpsched-plan/1"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Part:
    """One subgraph: consecutive tasks of one device, run as one unit.

    ``inputs`` are the tensors it reads that it does not make (graph inputs or
    other parts' outputs), ``outputs`` the tensors it makes that something outside
    it reads (or graph outputs); ``after`` the parts whose outputs it reads;
    ``start``/``end`` its span in the schedule.
    """

    id: str
    device: str
    tasks: tuple[str, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    after: tuple[str, ...]
    start: int
    end: int
    file: str = ""
    nodes: tuple[str, ...] = ()  # the model's node names it runs (fused tasks: their members)


@dataclass(frozen=True)
class Copy:
    """One transfer of the schedule: ``tensor`` from ``src`` to ``dst``; ``source`` is the part
    that makes it (None: a graph input on the host), ``readers`` the parts on ``dst`` that read it."""

    tensor: str
    src: str
    dst: str
    start: int
    end: int
    size: int
    source: str | None
    readers: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """Parts, copies and what running them needs (see the module docstring)."""

    instance: str
    instance_hash: str
    parts: tuple[Part, ...]
    copies: tuple[Copy, ...]
    host: str
    devices: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # id -> provider, threads
    inputs: tuple[Mapping[str, Any], ...] = ()  # {name, shape, dtype} of each graph input
    outputs: tuple[str, ...] = ()
    predicted: Mapping[str, int] = field(default_factory=dict)  # the schedule's objectives
    model: Mapping[str, Any] = field(default_factory=dict)  # source, dims, fusion

    def on(self, device: str) -> list[Part]:
        """The parts of ``device``, in the order it runs them."""
        return [p for p in self.parts if p.device == device]


def cut(instance: Instance, schedule: Schedule) -> Plan:
    """The plan of a valid ``schedule`` of ``instance`` (module docstring).

    A device's part ends before its next task ``v`` when (a) something the part made
    leaves it (a transfer starts, or a consumer elsewhere reads a size-0 tensor)
    before ``v`` ends, (b) ``v`` reads something that reaches the device after the
    part began, or (c) keeping ``v`` would close a cycle between parts: a part that
    ran on through such a moment would hold back what the schedule sends or
    receives mid-way.
    """
    order = sorted(schedule.tasks, key=lambda v: (schedule.tasks[v].start, v))
    end = {v: p.start + instance.task(v).mode(p.device, p.mode).duration for v, p in schedule.tasks.items()}
    device = {v: p.device for v, p in schedule.tasks.items()}
    leaves: dict[str, float] = {}  # tensor -> when something outside its producer's device first needs it
    arrives: dict[tuple[str, str], int] = {}  # (tensor, device) -> when it is there
    for x in schedule.transfers:
        leaves[x.tensor] = min(leaves.get(x.tensor, x.start), x.start)
        arrives[x.tensor, x.dst] = x.start + instance.link(x.src, x.dst).transfer_time(instance.tensor(x.tensor).size)
    for t in instance.tensors:
        for c in t.consumers:
            if t.producer is not None and device[c] != device[t.producer]:
                leaves[t.id] = min(leaves.get(t.id, schedule.tasks[c].start), schedule.tasks[c].start)
            if (t.id, device[c]) not in arrives:
                arrives[t.id, device[c]] = 0 if t.producer is None else end[t.producer]
    owner: dict[str, int] = {}  # task -> part number
    members: list[list[str]] = []
    open_part: dict[str, int] = {}  # device -> its current part
    first_out: dict[int, float] = {}  # part -> when the first thing it made leaves it
    g = nx.DiGraph()  # parts; data edges and each device's order
    for v in order:
        d = device[v]
        reads = instance.inputs_of[v]
        sources = {owner[t.producer] for t in reads if t.producer is not None}
        k = open_part.get(d)
        outside = [t.id for t in reads if t.producer is None or owner[t.producer] != k]
        if (k is None or first_out.get(k, float("inf")) < end[v]
                or any(arrives[t, d] > schedule.tasks[members[k][0]].start for t in outside)
                or any(s != k and nx.has_path(g, k, s) for s in sources)):
            new = len(members)
            members.append([])
            g.add_node(new)
            if k is not None:
                g.add_edge(k, new)
            k = open_part[d] = new
        members[k].append(v)
        owner[v] = k
        made = [leaves[t.id] for t in instance.outputs_of[v] if t.id in leaves]
        first_out[k] = min([first_out.get(k, float("inf")), *made])
        g.add_edges_from((s, k) for s in sources if s != k)
    parts = [_part(instance, schedule, end, k, tasks, owner) for k, tasks in enumerate(members)]
    copies = []
    for x in sorted(schedule.transfers, key=lambda x: (x.start, x.tensor, x.dst)):
        tensor = instance.tensor(x.tensor)
        readers = sorted({owner[c] for c in tensor.consumers if device[c] == x.dst})
        copies.append(Copy(x.tensor, x.src, x.dst, x.start, arrives[x.tensor, x.dst], tensor.size,
                           None if tensor.producer is None else _name(owner[tensor.producer]),
                           tuple(map(_name, readers))))
    return Plan(instance.name, instance.content_hash, tuple(parts), tuple(copies), instance.host.id,
                inputs=tuple({"name": t.id} for t in instance.tensors if t.producer is None),
                outputs=tuple(t.id for t in instance.tensors if t.output),
                predicted=objectives(instance, schedule)[0])


def _name(k: int) -> str:
    return f"p{k}"


def _part(instance: Instance, schedule: Schedule, end: Mapping[str, int], k: int, tasks: list[str],
          owner: Mapping[str, int]) -> Part:
    mine = set(tasks)
    inputs = list(dict.fromkeys(t.id for v in tasks for t in instance.inputs_of[v] if t.producer not in mine))
    outputs = [t.id for v in tasks for t in instance.outputs_of[v]
               if t.output or any(c not in mine for c in t.consumers)]
    after = {owner[t.producer] for v in tasks for t in instance.inputs_of[v]
             if t.producer is not None and t.producer not in mine}
    first = schedule.tasks[tasks[0]]
    return Part(_name(k), first.device, tuple(tasks), tuple(inputs), tuple(outputs), tuple(map(_name, sorted(after))),
                first.start, max(end[v] for v in tasks))


# ----- the manifest ---------------------------------------------------------------------------


def to_dict(plan: Plan) -> dict:
    """The manifest JSON object (``cpsched-plan/1``)."""
    return {
        "format": FORMAT, "instance": plan.instance, "instance_hash": plan.instance_hash, "host": plan.host,
        "model": dict(plan.model), "predicted": dict(plan.predicted), "devices": {k: dict(v) for k, v in
                                                                                plan.devices.items()},
        "inputs": [dict(i) for i in plan.inputs], "outputs": list(plan.outputs),
        "subgraphs": [{"id": p.id, "file": p.file, "device": p.device, "tasks": list(p.tasks),
                       "nodes": list(p.nodes), "inputs": list(p.inputs), "outputs": list(p.outputs),
                       "predecessors": list(p.after), "start": p.start, "end": p.end} for p in plan.parts],
        "transfers": [{"tensor": c.tensor, "link": f"{c.src}->{c.dst}", "src": c.src, "dst": c.dst,
                       "start": c.start, "end": c.end, "size": c.size, "from": c.source,
                       "to": list(c.readers)} for c in plan.copies],
    }


def save_plan(plan: Plan, folder: str | Path) -> Path:
    path = Path(folder) / MANIFEST
    write_json(path, to_dict(plan))
    return path


def load_plan(folder: str | Path) -> Plan:
    """Read ``folder/manifest.json``; every problem is one InputError line naming the field."""
    path = Path(folder) / MANIFEST if Path(folder).suffix != ".json" else Path(folder)
    return load_json(path, from_dict)


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise InputError(f"{where} must be a list (got {type(value).__name__})")
    return tuple(check_str(x, f"{where}[{i}]") for i, x in enumerate(value))


def from_dict(data: Any) -> Plan:
    check_format(data, FORMAT, "plan manifest")
    top = check_mapping(data, "the manifest", required=("instance", "host", "subgraphs", "transfers", "devices"))
    devices = check_mapping(top["devices"], "devices")
    parts = []
    if not isinstance(top["subgraphs"], list):
        raise InputError("subgraphs must be a list")
    for i, raw in enumerate(top["subgraphs"]):
        where = f"subgraphs[{i}]"
        s = check_mapping(raw, where, required=("id", "file", "device", "tasks", "inputs", "outputs",
                                                "predecessors", "start", "end"))
        device = check_str(s["device"], f"{where}: device")
        if device not in devices:
            raise InputError(f"{where}: device {device!r} is not in devices")
        parts.append(Part(check_str(s["id"], f"{where}: id"), device, _strings(s["tasks"], f"{where}: tasks"),
                          _strings(s["inputs"], f"{where}: inputs"), _strings(s["outputs"], f"{where}: outputs"),
                          _strings(s["predecessors"], f"{where}: predecessors"),
                          check_int(s["start"], f"{where}: start"), check_int(s["end"], f"{where}: end"),
                          check_str(s["file"], f"{where}: file"), _strings(s.get("nodes", []), f"{where}: nodes")))
    ids = {p.id for p in parts}
    if len(ids) != len(parts):
        raise InputError("subgraphs: two subgraphs share an id")
    copies = []
    if not isinstance(top["transfers"], list):
        raise InputError("transfers must be a list")
    for i, raw in enumerate(top["transfers"]):
        where = f"transfers[{i}]"
        c = check_mapping(raw, where, required=("tensor", "src", "dst", "start", "end", "size", "from", "to"))
        source = None if c["from"] is None else check_str(c["from"], f"{where}: from")
        readers = _strings(c["to"], f"{where}: to")
        for name in (source, *readers):
            if name is not None and name not in ids:
                raise InputError(f"{where}: no subgraph {name!r}")
        copies.append(Copy(check_str(c["tensor"], f"{where}: tensor"), check_str(c["src"], f"{where}: src"),
                           check_str(c["dst"], f"{where}: dst"), check_int(c["start"], f"{where}: start"),
                           check_int(c["end"], f"{where}: end"), check_int(c["size"], f"{where}: size"),
                           source, readers))
    for p in parts:
        for q in p.after:
            if q not in ids:
                raise InputError(f"subgraph {p.id!r}: predecessor {q!r} is not a subgraph")
    return Plan(check_str(top["instance"], "instance"), str(top.get("instance_hash", "")), tuple(parts),
                tuple(copies), check_str(top["host"], "host"),
                devices={k: check_mapping(v, f"devices.{k}") for k, v in devices.items()},
                inputs=tuple(check_mapping(x, f"inputs[{i}]", required=("name",))
                             for i, x in enumerate(top.get("inputs", []))),
                outputs=_strings(top.get("outputs", []), "outputs"),
                predicted=check_mapping(top.get("predicted", {}), "predicted"),
                model=check_mapping(top.get("model", {}), "model"))


def with_files(plan: Plan, files: Mapping[str, tuple[str, Sequence[str]]], devices: Mapping[str, Any],
               inputs: Sequence[Mapping[str, Any]], model: Mapping[str, Any]) -> Plan:
    """``plan`` with each part's file and node names (``files``: part id -> (file, nodes)), the
    devices' execution settings, the graph inputs' specs and the model's description."""
    parts = tuple(replace(p, file=files[p.id][0], nodes=tuple(files[p.id][1])) for p in plan.parts)
    return replace(plan, parts=parts, devices=dict(devices), inputs=tuple(inputs), model=dict(model))
