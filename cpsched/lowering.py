"""Price an :class:`~cpsched.opgraph.OpGraph` on a :class:`~cpsched.platforms.Platform`.

This is the one place where real-valued hardware figures become the integers
of an :class:`~cpsched.instance.Instance` (PROBLEM.md units: time in us, size
in bytes, energy in pJ, power in pJ/us = uW).  Each number is quantised once,
in the direction that never flatters a schedule:

* task duration on a device that supports its op, by the roofline
  ``launch_overhead + max(flops / peak_flops, bytes / mem_bandwidth)``,
  rounded **up** to whole us, at least 1 (PROBLEM.md requires duration >= 1);
* task energy ``active_power * duration`` over the rounded duration (the
  device is busy for all of it), W * us = 1e6 pJ, rounded to the nearest pJ;
* static power W -> pJ/us (x 1e6), rounded to the nearest integer;
* link latency rounded **up** to whole us; bandwidth bytes/s -> bytes/us
  rounded **down** (so a transfer is never shorter than the platform says);
  energy per byte J -> pJ rounded to the nearest integer.

The arithmetic is exact: every float is read as the decimal it prints as
(``5e-06`` s is exactly 5 us, not 5.000000000000001 rounded up to 6).  Halves
round up.

>>> from cpsched.opgraph import OpGraph, OpNode, OpTensor
>>> from cpsched.platforms import load_platform
>>> g = OpGraph("toy", nodes=(OpNode("c", "Conv", ("x",), ("y",), flops=2 * 10**9, bytes=10**6),),
...             tensors=(OpTensor("x", 1000, None, ("c",)), OpTensor("y", 1000, "c", output=True)))
>>> inst = to_instance(g, load_platform("server"))
>>> inst.name, {d: m.duration for d, m in inst.task("c").modes.items()}
('toy@server', {'cpu': 1003, 'gpu': 108})
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path

from cpsched.errors import InputError
from cpsched.instance import DEFAULT_UNITS, Device, Instance, Link, Mode, Task, Tensor
from cpsched.opgraph import OpGraph, OpNode
from cpsched.platforms import DeviceSpec, LinkSpec, Platform
from cpsched.costs import CostTable, cost_tables
from cpsched.precisions import ERROR_UNIT, PrecisionTable

US_PER_S = 10**6
PJ_PER_J = 10**12

QUANTISATION = (
    "durations: launch_overhead + max(flops/peak_flops, bytes/mem_bandwidth), rounded up to whole us, >= 1; "
    "task energy: active_power x rounded duration, nearest pJ; static_power: W x 1e6, nearest pJ/us; "
    "link latency rounded up to whole us; bandwidth rounded down to whole bytes/us; "
    "energy_per_byte: nearest pJ; exact decimal arithmetic, halves up"
)


def _exact(x: float | int) -> Fraction:
    """The decimal value ``x`` prints as, exactly (so 5e-06 is 1/200000, not its binary neighbour)."""
    return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)


def _nearest(x: Fraction) -> int:
    """Round to the nearest integer, halves up."""
    return math.floor(x + Fraction(1, 2))


def duration_us(node: OpNode, dev: DeviceSpec) -> int:
    """Roofline time of ``node`` on ``dev`` plus the launch overhead, in whole us rounded up, >= 1."""
    seconds = _exact(dev.launch_overhead) + max(Fraction(node.flops) / _exact(dev.peak_flops),
                                                 Fraction(node.bytes) / _exact(dev.mem_bandwidth))
    return max(1, math.ceil(seconds * US_PER_S))


def energy_pj(duration: int, dev: DeviceSpec) -> int:
    """Active energy of ``duration`` us on ``dev``: W x us = 1e6 pJ, to the nearest pJ."""
    return _nearest(_exact(dev.active_power) * duration * (PJ_PER_J // US_PER_S))


def _device(dev: DeviceSpec) -> Device:
    return Device(id=dev.id, memory=dev.memory, host=dev.host,
                  static_power=_nearest(_exact(dev.static_power) * (PJ_PER_J // US_PER_S)))


def _link(link: LinkSpec) -> Link:
    bandwidth = math.floor(_exact(link.bandwidth) / US_PER_S)
    if bandwidth < 1:
        raise InputError(f"link {link.src}->{link.dst}: bandwidth {link.bandwidth!r} bytes/s is below "
                         f"1 byte/us, the resolution of the instance")
    return Link(src=link.src, dst=link.dst, bandwidth=bandwidth,
                latency=math.ceil(_exact(link.latency) * US_PER_S),
                energy_per_byte=_nearest(_exact(link.energy_per_byte) * PJ_PER_J),
                channels=link.channels)


def _task(node: OpNode, platform: Platform, sizes: Mapping[str, int],
          tables: Mapping[str, CostTable] | None = None,
          precisions: Mapping[str, PrecisionTable] | None = None) -> Task:
    modes = {}
    for dev in platform.devices:
        if all(dev.supports(op) for op in node.ops):  # a fused node: every member op
            table = tables.get(dev.id) if tables else None
            measured = table.node_us(node) if table is not None else None
            duration = duration_us(node, dev) if measured is None else measured
            int8 = None
            if precisions and dev.id in precisions and "int8" in dev.precisions:
                fp32 = {m: t.median for m, t in table.nodes.items()} if table is not None else {}
                int8 = precisions[dev.id].int8(node.members or (node.name,), fp32)
            modes[dev.id] = _modes(node, dev, duration, int8, sizes)
    if not modes:
        raise InputError(f"node {node.name!r} (op {node.op}) is supported by no device of platform {platform.name}")
    return Task(id=node.name, op=node.op, modes=modes, weights=node.weights, workspace=node.workspace)


def _modes(node: OpNode, dev: DeviceSpec, duration: int, int8: tuple[Fraction, int] | None,
           sizes: Mapping[str, int]) -> Mode | list[Mode]:
    """A node's modes on ``dev`` (PROBLEM.md section 6): one plain mode, or a named mode per
    precision (fp32; int8 when ``int8`` = (time ratio, error) is known) and DVFS level.

    int8: duration x ratio rounded up, weights and outputs a quarter (rounded up, >= 1 byte
    where positive), the table's error.  A level of frequency ``f`` (the device's figures
    are those of its fastest, ``f_max``): duration x f_max / f rounded up, energy = the
    level's power x that duration.  Names: ``fp32``/``int8``, ``<f>MHz``, or ``int8@<f>MHz``.
    """
    if int8 is None and not dev.levels:
        return Mode(duration=duration, energy=energy_pj(duration, dev))
    variants = [("fp32", duration, 0, {})]
    if int8 is not None:
        ratio, error = int8
        quarter = {"weights": -(-node.weights // 4),
                   "outputs": {t: max(1, -(-sizes[t] // 4)) for t in node.outputs if sizes[t]}}
        variants.append(("int8", max(1, math.ceil(duration * ratio)), error, quarter))
    levels = [(_exact(f), _exact(w)) for f, w in dev.levels] or [(None, _exact(dev.active_power))]
    fastest = max((f for f, _ in levels if f is not None), default=None)
    out = []
    for precision, base, error, smaller in variants:
        for frequency, power in levels:
            length = base if frequency is None else max(1, math.ceil(base * fastest / frequency))
            label = precision if frequency is None else f"{float(frequency) / 1e6:g}MHz" if int8 is None \
                else f"{precision}@{float(frequency) / 1e6:g}MHz"
            out.append(Mode(duration=length, energy=_nearest(power * length * (PJ_PER_J // US_PER_S)),
                            name=label, error=error, **smaller))
    return out


def to_instance(graph: OpGraph, platform: Platform, name: str | None = None,
                costs: Mapping[str, CostTable | str | Path] | None = None,
                precisions: Mapping[str, PrecisionTable] | None = None) -> Instance:
    """The scheduling instance of ``graph`` on ``platform``, named ``graph@platform`` by default.

    Tasks are the graph's nodes (a mode on every device that supports the op, or
    for a fused node every member op; ``groups`` maps each fused node to its members),
    tensors its tensors.  ``meta`` keeps the graph's meta and adds the
    platform name, the quantisation rules and, if any, the ops the reader
    could only cost by bytes moved.  Raises InputError for a node that no
    device supports, or a link slower than 1 byte/us.

    Measured costs (:mod:`cpsched.profiling`): a device's ``costs:`` file, or
    ``costs={device: CostTable or path}`` (which wins), gives the nodes it
    lists their measured duration on that device (median rounded up to whole
    us, >= 1; energy = active power x duration as for the roofline); the other
    nodes keep the roofline.  ``meta["measured"]`` then maps each such device
    to its number of measured tasks, ``meta["costs"]`` to the table's file.

    Named modes (PROBLEM.md section 6, :func:`_modes`): a device with DVFS
    ``levels`` gets one mode per level; one that lists ``int8`` among its
    ``precisions`` and has a table in ``precisions`` (device -> table of
    ``cpsched quantize``) gets fp32 and int8 modes for the nodes the table
    covers.  ``meta["precisions"]`` records each table's file and node count,
    ``units["error"]`` the error unit.
    """
    meta = {**graph.meta, "platform": platform.name, "quantisation": QUANTISATION}
    if graph.unknown_ops:
        meta["unknown_ops"] = dict(graph.unknown_ops)
    tables = cost_tables(platform, costs)
    ids = {d.id for d in platform.devices}
    for device in precisions or {}:
        if device not in ids:
            raise InputError(f"precisions for device {device!r}: platform {platform.name} has no such device "
                             f"(it has {', '.join(sorted(ids))})")
        if "int8" not in platform.device(device).precisions:
            raise InputError(f"precisions for device {device!r}: its platform entry does not list int8 "
                             f"(precisions: {list(platform.device(device).precisions)})")
    sizes = {t.name: t.size for t in graph.tensors}
    tasks = tuple(_task(n, platform, sizes, tables, precisions) for n in graph.nodes)
    units = dict(DEFAULT_UNITS)
    if precisions:
        meta["precisions"] = {d: {"file": t.source or "(in memory)", "nodes": len(t.nodes),
                                  **{k: t.meta[k] for k in ("model", "calibration", "seed") if k in t.meta}}
                              for d, t in precisions.items()}
        units["error"] = ERROR_UNIT
    if tables:
        meta["measured"] = {d: sum(d in t.choices and table.node_us(n) is not None
                                   for n, t in zip(graph.nodes, tasks))
                            for d, table in tables.items()}
        meta["costs"] = {d: table.source or "(in memory)" for d, table in tables.items()}
    return Instance(
        name=name if name is not None else f"{graph.name}@{platform.name}",
        devices=tuple(_device(d) for d in platform.devices),
        links=tuple(_link(l) for l in platform.links),
        tasks=tasks,
        tensors=tuple(Tensor(id=t.name, size=t.size, producer=t.producer, consumers=tuple(t.consumers),
                             output=t.output) for t in graph.tensors),
        units=units,
        meta=meta,
        groups={n.name: tuple(n.members) for n in graph.nodes if len(n.members) >= 2},
    )
