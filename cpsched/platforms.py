"""Hardware platforms: devices with roofline figures and the links between them.

A platform is what :mod:`cpsched.lowering` needs to price an
:class:`~cpsched.opgraph.OpGraph`: per device a peak compute rate, a memory
bandwidth, a per-kernel launch overhead, active and static power, a memory
capacity and the op types it runs; per directed link a latency, a bandwidth,
an energy per byte and a number of channels.  Figures are in SI units
(seconds, bytes, FLOP/s, bytes/s, watts, joules per byte); the lowering, not
the platform, chooses the integer units of the instance.

Platforms come from YAML files, either a packaged preset (:data:`PRESETS`,
stored in ``cpsched/presets/``) or any file a user passes as ``--platform PATH``::

    name: tiny
    devices:
      - {id: cpu, host: true, peak_flops: 1.0e+11, mem_bandwidth: 2.0e+10,
         launch_overhead: 5.0e-6, active_power: 3.0, static_power: 0.5,
         memory: 4000000000, ops: all}
    links: []

Every problem in a file is reported as one :class:`~cpsched.errors.InputError`
line naming the file, the device or link, and the field.

>>> edge = load_platform("edge")
>>> edge.host.id, [d.id for d in edge.devices]
('cpu', ['cpu', 'gpu', 'npu'])
>>> edge.device("npu").supports("Conv"), edge.device("npu").supports("Softmax")
(True, False)
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cpsched.errors import InputError
from cpsched.checks import check_int, check_mapping
from cpsched.files import is_file, read_yaml

PRESETS = ("edge", "server", "multigpu", "cpu2")
"""Names of the platform presets shipped in ``cpsched/presets/<name>.yaml``."""

PRESET_DIR = Path(__file__).with_name("presets")

_DEVICE_KEYS = ("id", "host", "peak_flops", "mem_bandwidth", "launch_overhead",
                "active_power", "static_power", "memory", "ops", "exclude", "costs", "provider", "threads",
                "levels", "precisions")
PRECISIONS = ("fp32", "int8")
"""Precisions a device may list (``precisions:``); fp32 is what the roofline and cost tables price."""
_DEVICE_REQUIRED = ("id", "peak_flops", "mem_bandwidth", "launch_overhead",
                    "active_power", "static_power", "memory")
_LINK_KEYS = ("src", "dst", "latency", "bandwidth", "energy_per_byte", "channels")
_LINK_REQUIRED = ("src", "dst", "latency", "bandwidth", "energy_per_byte")
_TOP_KEYS = ("name", "description", "devices", "links")


def _check_rate(value: float, where: str, positive: bool) -> None:
    """Raise unless ``value`` is finite and > 0 (``positive``) or >= 0."""
    bound_ok = value > 0 if positive else value >= 0
    if not math.isfinite(value) or not bound_ok:
        raise InputError(f"{where} must be a finite number {'>' if positive else '>='} 0 (got {value!r})")


@dataclass(frozen=True)
class DeviceSpec:
    """One processor, in SI units: FLOP/s, bytes/s, seconds, watts, bytes.

    ``ops`` is the set of op types it runs (None: every op), less ``exclude``.
    ``active_power`` is drawn while a task runs, on top of ``static_power``,
    which is drawn for the whole makespan.  ``costs`` is an optional
    ``cpsched-costs/1`` file of measured node times (:mod:`cpsched.profiling`):
    the lowering takes them instead of the roofline for the nodes it lists.
    ``provider`` and ``threads`` say how ``cpsched run`` executes the device's
    subgraphs: an onnxruntime execution provider (None: the platform models a
    device this machine may not have; its subgraphs run on the CPU provider)
    and its intra-op threads (None: onnxruntime's default).

    ``levels`` are DVFS levels, (frequency in Hz, active power in W) each; the
    other figures are those of the fastest level.  ``precisions`` are the
    precisions its kernels run in (:data:`PRECISIONS`); int8 takes its times and
    errors from a ``cpsched quantize`` table at import.  Both become named
    modes (PROBLEM.md section 6, :mod:`cpsched.lowering`).
    """

    id: str
    peak_flops: float
    mem_bandwidth: float
    launch_overhead: float
    active_power: float
    static_power: float
    memory: int
    host: bool = False
    ops: frozenset[str] | None = None
    exclude: frozenset[str] = frozenset()
    costs: Path | None = None
    provider: str | None = None
    threads: int | None = None
    levels: tuple[tuple[float, float], ...] = ()
    precisions: tuple[str, ...] = ("fp32",)

    def __post_init__(self):
        where = f"device {self.id!r}"
        for i, (frequency, power) in enumerate(self.levels):
            _check_rate(frequency, f"{where}: levels[{i}].frequency", positive=True)
            _check_rate(power, f"{where}: levels[{i}].power", positive=False)
        if len({f for f, _ in self.levels}) != len(self.levels):
            raise InputError(f"{where}: levels lists a frequency twice")
        if not self.precisions or "fp32" not in self.precisions or len(set(self.precisions)) != len(self.precisions) \
                or any(p not in PRECISIONS for p in self.precisions):
            raise InputError(f"{where}: precisions must list fp32 and optionally int8, each once "
                             f"(got {list(self.precisions)})")
        if self.threads is not None:
            check_int(self.threads, f"{where}: threads", minimum=1)
        _check_rate(self.peak_flops, f"{where}: peak_flops", positive=True)
        _check_rate(self.mem_bandwidth, f"{where}: mem_bandwidth", positive=True)
        _check_rate(self.launch_overhead, f"{where}: launch_overhead", positive=False)
        _check_rate(self.active_power, f"{where}: active_power", positive=False)
        _check_rate(self.static_power, f"{where}: static_power", positive=False)
        check_int(self.memory, f"{where}: memory")

    def supports(self, op: str) -> bool:
        """Whether this device can run an operator of type ``op``."""
        return (self.ops is None or op in self.ops) and op not in self.exclude


@dataclass(frozen=True)
class LinkSpec:
    """A directed link, in SI units: seconds, bytes/s, joules per byte.

    ``channels`` is how many transfers it carries at once (0: unlimited).
    """

    src: str
    dst: str
    latency: float
    bandwidth: float
    energy_per_byte: float
    channels: int = 1

    def __post_init__(self):
        where = f"link {self.src}->{self.dst}"
        if self.src == self.dst:
            raise InputError(f"{where}: a link must join two different devices")
        _check_rate(self.latency, f"{where}: latency", positive=False)
        _check_rate(self.bandwidth, f"{where}: bandwidth", positive=True)
        _check_rate(self.energy_per_byte, f"{where}: energy_per_byte", positive=False)
        check_int(self.channels, f"{where}: channels")


@dataclass(frozen=True)
class Platform:
    """Devices (exactly one host, where graph inputs start) and the directed links between them."""

    name: str
    devices: tuple[DeviceSpec, ...]
    links: tuple[LinkSpec, ...] = ()
    description: str = ""

    def __post_init__(self):
        if not self.devices:
            raise InputError("devices: a platform needs at least one device")
        ids = set()
        for dev in self.devices:
            if dev.id in ids:
                raise InputError(f"duplicate device id {dev.id!r}")
            ids.add(dev.id)
        hosts = [d.id for d in self.devices if d.host]
        if len(hosts) != 1:
            raise InputError(f"exactly one device must have host: true (found {len(hosts)}: {hosts})")
        pairs = set()
        for link in self.links:
            for end in (link.src, link.dst):
                if end not in ids:
                    raise InputError(f"link {link.src}->{link.dst}: unknown device {end!r}")
            if (link.src, link.dst) in pairs:
                raise InputError(f"duplicate link {link.src}->{link.dst}")
            pairs.add((link.src, link.dst))

    @property
    def host(self) -> DeviceSpec:
        return next(d for d in self.devices if d.host)

    def device(self, device_id: str) -> DeviceSpec:
        """The device named ``device_id``; KeyError if there is none."""
        for dev in self.devices:
            if dev.id == device_id:
                return dev
        raise KeyError(device_id)

    def with_costs(self, device_id: str, path: str | Path | None) -> "Platform":
        """The same platform with ``device_id``'s cost table set to the file ``path`` (None: removed)."""
        if device_id not in {d.id for d in self.devices}:
            raise InputError(f"platform {self.name}: no device {device_id!r} "
                             f"(it has {', '.join(d.id for d in self.devices)})")
        return dataclasses.replace(self, devices=tuple(
            dataclasses.replace(d, costs=None if path is None else Path(path)) if d.id == device_id else d
            for d in self.devices))


# ----- YAML ---------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``4.0e9`` and ``1e9`` as floats.

    PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent
    (``4.0e+9``); the unsigned forms would otherwise arrive as strings.
    """


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where} must be a number (got {value!r})")
    return float(value)


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(f"{where} must be a non-empty string (got {value!r})")
    return value


def _op_set(value: Any, where: str, expected: str = "a list of op types") -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(op, str) and op for op in value):
        raise InputError(f"{where} must be {expected} (got {value!r})")
    return frozenset(value)


def _device(raw: Any, i: int, base: Path | None = None) -> DeviceSpec:
    dev_id = _name(check_mapping(raw, f"devices[{i}]", (), ("id",))["id"], f"devices[{i}]: id")
    where = f"device {dev_id!r}"
    d = check_mapping(raw, where, _DEVICE_KEYS, _DEVICE_REQUIRED)
    host = d.get("host", False)
    if not isinstance(host, bool):
        raise InputError(f"{where}: host must be true or false (got {host!r})")
    ops = d.get("ops", "all")
    costs = None
    if d.get("costs") is not None:
        costs = Path(_name(d["costs"], f"{where}: costs"))
        if not costs.is_absolute() and base is not None:
            costs = base / costs  # relative to the platform file's folder
    return DeviceSpec(
        id=dev_id,
        host=host,
        peak_flops=_number(d["peak_flops"], f"{where}: peak_flops"),
        mem_bandwidth=_number(d["mem_bandwidth"], f"{where}: mem_bandwidth"),
        launch_overhead=_number(d["launch_overhead"], f"{where}: launch_overhead"),
        active_power=_number(d["active_power"], f"{where}: active_power"),
        static_power=_number(d["static_power"], f"{where}: static_power"),
        memory=check_int(d["memory"], f"{where}: memory"),
        ops=None if ops == "all" else _op_set(ops, f"{where}: ops", "'all' or a list of op types"),
        exclude=_op_set(d.get("exclude", []), f"{where}: exclude"),
        costs=costs,
        provider=None if d.get("provider") is None else _name(d["provider"], f"{where}: provider"),
        threads=None if d.get("threads") is None else check_int(d["threads"], f"{where}: threads", minimum=1),
        levels=_levels(d.get("levels", []), f"{where}: levels"),
        precisions=_precisions(d.get("precisions", ["fp32"]), f"{where}: precisions"),
    )


def _precisions(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise InputError(f"{where} must be a list of {', '.join(PRECISIONS)} (got {value!r})")
    return tuple(value)


def _levels(value: Any, where: str) -> tuple[tuple[float, float], ...]:
    """DVFS levels: a list of ``{frequency: Hz, power: W}``."""
    if not isinstance(value, list):
        raise InputError(f"{where} must be a list of {{frequency, power}} (got {value!r})")
    out = []
    for i, level in enumerate(value):
        entry = check_mapping(level, f"{where}[{i}]", ("frequency", "power"), ("frequency", "power"))
        out.append((_number(entry["frequency"], f"{where}[{i}].frequency"),
                    _number(entry["power"], f"{where}[{i}].power")))
    return tuple(out)


def _link(raw: Any, i: int) -> LinkSpec:
    ends = check_mapping(raw, f"links[{i}]", (), ("src", "dst"))
    src, dst = _name(ends["src"], f"links[{i}]: src"), _name(ends["dst"], f"links[{i}]: dst")
    where = f"link {src}->{dst}"
    d = check_mapping(raw, where, _LINK_KEYS, _LINK_REQUIRED)
    return LinkSpec(
        src=src,
        dst=dst,
        latency=_number(d["latency"], f"{where}: latency"),
        bandwidth=_number(d["bandwidth"], f"{where}: bandwidth"),
        energy_per_byte=_number(d["energy_per_byte"], f"{where}: energy_per_byte"),
        channels=check_int(d.get("channels", 1), f"{where}: channels"),
    )


def platform_from_dict(data: Any, base: Path | None = None) -> Platform:
    """Build a :class:`Platform` from the parsed YAML mapping; raises a one-line InputError.

    ``base`` is the folder relative ``costs:`` paths start from (the YAML file's; default the working directory).
    """
    top = check_mapping(data, "the platform", _TOP_KEYS, ("name", "devices"))
    devices, links = top["devices"], top.get("links", [])
    if not isinstance(devices, list):
        raise InputError("devices must be a list")
    if not isinstance(links, list):
        raise InputError("links must be a list")
    description = top.get("description", "")
    if not isinstance(description, str):
        raise InputError(f"description must be a string (got {description!r})")
    return Platform(
        name=_name(top["name"], "name"),
        devices=tuple(_device(d, i, base) for i, d in enumerate(devices)),
        links=tuple(_link(d, i) for i, d in enumerate(links)),
        description=description.strip(),
    )


def load_platform(spec: str | Path) -> Platform:
    """Load a preset by name (one of :data:`PRESETS`) or a platform YAML file by path.

    A string that names a preset is the preset, even if a file of that name
    exists (write ``./edge`` for the file).  Every error names the file.
    """
    if isinstance(spec, str) and spec in PRESETS:
        path = PRESET_DIR / f"{spec}.yaml"
    else:
        path = Path(spec)
        if not is_file(path):
            raise InputError(f"unknown platform {str(spec)!r}: neither a preset "
                             f"({', '.join(PRESETS)}) nor a YAML file")
    data = read_yaml(path, _Loader)
    try:
        return platform_from_dict(data, path.parent)
    except InputError as exc:
        raise exc.in_file(path) from None
