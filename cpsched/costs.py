"""Measured cost tables (``cpsched-costs/1``): per-node times of one model on one device.

A table is what :func:`cpsched.profiling.profile` writes and what lowering
reads (:func:`cpsched.lowering.to_instance` with ``costs={device: table}``,
or a ``costs:`` field of a platform device): nodes found there take the
measured median, rounded up to whole us.  This module only parses and holds
the tables; running models is :mod:`cpsched.profiling`'s job.

The file (JSON, times in us)::

    {"format": "cpsched-costs/1", "model": "alexnet", "device": "cpu",
     "provider": "CPUExecutionProvider", "threads": 1, "runs": 20, "unit": "us",
     "nodes": {"n0": {"median": 3809.0, "p90": 3901.5, "op": "Conv"},
               "ConstantOfShape_1": {"median": 107.0, "p90": 110.0, "op": "ConstantOfShape",
                                     "folded": true}}}

>>> CostTable.from_dict({"format": FORMAT, "device": "cpu", "nodes": {"n0": {"median": 2.5}}}).duration_us("n0")
3
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cpsched.errors import InputError
from cpsched.files import read_json

FORMAT = "cpsched-costs/1"
UNIT = "us"

@dataclass(frozen=True)
class NodeTime:
    """Measured time of one node, in us: median and 90th percentile over the profiled runs."""

    median: float
    p90: float | None = None
    op: str = ""
    folded: bool = False  # a node cpsched folds into weights: recorded, never a task


@dataclass(frozen=True)
class CostTable:
    """Per-node measured times of one model on one device (a parsed ``cpsched-costs/1`` file)."""

    device: str
    nodes: Mapping[str, NodeTime]
    provider: str = ""
    source: str = ""  # the file it came from ("" when built in memory)
    meta: Mapping[str, Any] = field(default_factory=dict)  # model, threads, runs, machine, date, ...

    def duration_us(self, name: str) -> int | None:
        """The task duration measured for node ``name``: the median rounded up to whole us, >= 1; None if unmeasured."""
        t = self.nodes.get(name)
        return None if t is None else max(1, math.ceil(t.median))

    def node_us(self, node) -> int | None:
        """The measured duration of an :class:`~cpsched.opgraph.OpNode`: :meth:`duration_us` of its name, or
        for a fused node (``members``) not itself listed, the sum of its members' medians rounded up
        when every member is measured; None otherwise."""
        own = self.duration_us(node.name)
        members = getattr(node, "members", ())
        if own is not None or not members or not all(m in self.nodes for m in members):
            return own
        return max(1, math.ceil(sum(self.nodes[m].median for m in members)))

    @property
    def folded_us(self) -> float:
        """Median time per run of the nodes cpsched folds (no prediction contains it)."""
        return sum(t.median for t in self.nodes.values() if t.folded)

    @classmethod
    def from_dict(cls, data: Any, source: str = "") -> "CostTable":
        """Validate a parsed costs file; every error is one line naming the field or the node."""
        if not isinstance(data, dict):
            raise InputError("a costs file must be a JSON object")
        if data.get("format") != FORMAT:
            raise InputError(f"format must be {FORMAT!r} (got {data.get('format')!r})")
        if data.get("unit", UNIT) != UNIT:
            raise InputError(f"unit must be {UNIT!r} (got {data.get('unit')!r})")
        device, raw = device_and_nodes(data)
        nodes = {}
        for name, entry in raw.items():
            where = f"node {name!r}"
            if not isinstance(entry, dict):
                raise InputError(f"{where}: must be an object with a median")
            if "median" not in entry:
                raise InputError(f"{where}: missing field 'median'")
            median = _time(entry["median"], f"{where}: median")
            p90 = None if entry.get("p90") is None else _time(entry["p90"], f"{where}: p90")
            op = entry.get("op", "")
            if not isinstance(op, str):
                raise InputError(f"{where}: op must be a string (got {op!r})")
            nodes[name] = NodeTime(median, p90, op, bool(entry.get("folded", False)))
        provider = data.get("provider", "")
        meta = {k: v for k, v in data.items() if k not in ("format", "unit", "device", "provider", "nodes")}
        return cls(device, nodes, provider if isinstance(provider, str) else "", source, meta)

    def to_dict(self) -> dict:
        nodes = {}
        for name, t in self.nodes.items():
            entry = {"median": t.median, "p90": t.p90, "op": t.op}
            if t.folded:
                entry["folded"] = True
            nodes[name] = entry
        return {"format": FORMAT, **self.meta, "device": self.device, "provider": self.provider,
                "unit": UNIT, "nodes": nodes}


def _time(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{where} must be a positive finite number of us (got {value!r})")
    return float(value)


def device_and_nodes(data: dict) -> tuple[str, dict]:
    """The ``device`` and ``nodes`` fields every per-node table has (costs, precisions), checked."""
    device = data.get("device")
    if not isinstance(device, str) or not device:
        raise InputError(f"device must be a non-empty string (got {device!r})")
    raw = data.get("nodes")
    if not isinstance(raw, dict):
        raise InputError("nodes must be a JSON object mapping node names to figures")
    return device, raw


def load_costs(path: str | Path) -> CostTable:
    """Read and validate a ``cpsched-costs/1`` file; errors are one line naming the file (and the node)."""
    data = read_json(path)
    try:
        return CostTable.from_dict(data, source=str(path))
    except InputError as exc:
        raise exc.in_file(path) from None


def cost_tables(platform, costs: Mapping[str, "CostTable | str | Path"] | None = None) -> dict[str, CostTable]:
    """Device id -> cost table: the ``costs:`` files of ``platform``'s devices, then ``costs`` (which wins).

    Entries of ``costs`` may be tables or paths; a device the platform lacks is an InputError.
    """
    tables: dict[str, CostTable] = {}
    for dev in platform.devices:
        if getattr(dev, "costs", None) is not None:
            tables[dev.id] = load_costs(dev.costs)
    ids = {d.id for d in platform.devices}
    for device, table in (costs or {}).items():
        if device not in ids:
            raise InputError(f"costs for device {device!r}: platform {platform.name} has no such device "
                             f"(it has {', '.join(sorted(ids))})")
        tables[device] = table if isinstance(table, CostTable) else load_costs(table)
    return tables


def matching_devices(platform, table: CostTable) -> list[str]:
    """The devices of ``platform`` that run as ``table`` was measured: the same onnxruntime
    provider and, where both say, the same thread count (two such devices are the same
    hardware, as the two CPUs of the ``cpu2`` preset)."""
    threads = table.meta.get("threads")
    return [d.id for d in platform.devices if d.provider is not None and d.provider == table.provider
            and (threads is None or d.threads is None or d.threads == threads)]


def measured(instance) -> dict[str, int]:
    """Device id -> how many tasks of ``instance`` take a measured duration there ({} if none)."""
    return dict(instance.meta.get("measured", {}))
