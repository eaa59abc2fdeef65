"""Precision tables (``cpsched-precisions/1``): each quantisable node's int8 time and sensitivity.

:func:`cpsched.quantization.quantize` writes one per model and device; at
import (:func:`cpsched.lowering.to_instance` with ``precisions={device: table}``)
a device that lists ``int8`` among its ``precisions`` gets, for each node the
table covers, a second named mode (PROBLEM.md section 6).  This module only
parses and holds the tables.

The file (JSON, times in us, errors in ppm of 1 - cosine similarity)::

    {"format": "cpsched-precisions/1", "model": "alexnet", "device": "cpu", "precision": "int8",
     "error": {"unit": "ppm", "measure": "...", "proxy": "..."},
     "nodes": {"n0": {"op": "Conv", "fp32_us": 2597.0, "int8_us": 1254.5,
                      "max_abs": 0.024, "one_minus_cos": 0.00114, "error": 1137}},
     "all_int8": {"max_abs": 0.10, "one_minus_cos": 0.0131, "error": 13149}, ...}

>>> t = PrecisionTable.from_dict({"format": FORMAT, "device": "npu", "nodes": {
...     "c": {"fp32_us": 10.0, "int8_us": 4.0, "error": 120}}})
>>> t.int8(["c", "relu"], {"relu": 2.0}), t.int8(["relu"], {})
((Fraction(1, 2), 120), None)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from cpsched.checks import check_format, check_int
from cpsched.costs import device_and_nodes
from cpsched.errors import InputError
from cpsched.files import read_json

FORMAT = "cpsched-precisions/1"
ERROR_UNIT = "ppm"


@dataclass(frozen=True)
class NodePrecision:
    """One node: its fp32 and int8 times (us, same machine) and its error when only it is int8 (ppm)."""

    fp32_us: float
    int8_us: float
    error: int


@dataclass(frozen=True)
class PrecisionTable:
    """Per-node int8 figures of one model on one device (a parsed ``cpsched-precisions/1`` file)."""

    device: str
    nodes: Mapping[str, NodePrecision]
    source: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)

    def int8(self, members: Sequence[str], fp32_us: Mapping[str, float]) -> tuple[Fraction, int] | None:
        """(int8 time / fp32 time, error) of a node made of ``members`` (one name for an unfused
        node), or None when the table covers none of them.  Members it does not cover stay fp32:
        their time comes from ``fp32_us`` (0 when absent) and they add no error."""
        covered = [m for m in members if m in self.nodes]
        if not covered:
            return None
        before = sum(Fraction(repr(self.nodes[m].fp32_us)) for m in covered)
        after = sum(Fraction(repr(self.nodes[m].int8_us)) for m in covered)
        rest = sum(Fraction(repr(float(fp32_us.get(m, 0.0)))) for m in members if m not in self.nodes)
        return (after + rest) / (before + rest), sum(self.nodes[m].error for m in covered)

    @classmethod
    def from_dict(cls, data: Any, source: str = "") -> "PrecisionTable":
        check_format(data, FORMAT, "a precision table")
        device, raw = device_and_nodes(data)
        nodes = {}
        for name, entry in raw.items():
            where = f"nodes.{name}"
            if not isinstance(entry, dict):
                raise InputError(f"{where} must be a JSON object")
            times = {}
            for key in ("fp32_us", "int8_us"):
                value = entry.get(key)
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                    raise InputError(f"{where}.{key} must be a number > 0 (got {value!r})")
                times[key] = float(value)
            nodes[name] = NodePrecision(times["fp32_us"], times["int8_us"],
                                        check_int(entry.get("error"), f"{where}.error"))
        meta = {k: v for k, v in data.items() if k not in ("format", "device", "nodes")}
        return cls(device, nodes, source, meta)


def load_precisions(path: str | Path) -> PrecisionTable:
    """Read and validate a precision table; errors name the file."""
    data = read_json(path)  # its errors name the file already
    try:
        return PrecisionTable.from_dict(data, str(path))
    except InputError as exc:
        raise exc.in_file(path) from None


def int8_nodes(instance, schedule) -> list[str]:
    """The model nodes a schedule runs in int8: the members (a fused task's, else the task itself)
    of every task placed in a mode named ``int8`` or ``int8@...``."""
    out = []
    for task_id, placement in schedule.tasks.items():
        if placement.mode == "int8" or placement.mode.startswith("int8@"):
            out += list(instance.groups.get(task_id, (task_id,)))
    return out
