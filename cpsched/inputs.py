"""One entry point for every input: a file or a bundled model name becomes an Instance.

* ``.json`` — a ``cpsched-instance/1`` file;
* ``.stg`` — a Kasahara STG graph on ``processors`` identical processors;
* ``.dot`` — a Sinnen task graph with communication costs on ``processors``
  identical processors; ``.txt`` / ``.dag`` in the Santiago format and
  ``*_task_exe_time.csv`` (HEFT CSV) — heterogeneous graphs with communication
  costs (:mod:`cpsched.io.taskgraph`); for all three, ``contention`` makes the
  links exclusive (the published values assume none);
* ``.onnx`` or a bundled model name (``alexnet``, ``resnet50``, ...) — an ONNX
  model, fused (``fuse``) and lowered onto ``platform`` (a preset name or a
  YAML file), with ``dims`` pinning symbolic input dims.

Options that do not apply to the input's kind are errors naming the
parameter, so ``load("g.stg", platform="edge")`` is refused, not ignored.
The ONNX reader (and so the onnx package) is imported only for models.

>>> inst = load_input("squeezenet", platform="edge")
>>> len(inst.tasks), inst.name
(66, 'squeezenet@edge')
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path

from cpsched.errors import InputError, ParameterError
from cpsched.files import exists
from cpsched.instance import Instance, load_instance
from cpsched.io.bundled import BUNDLED

SUFFIXES = (".json", ".stg", ".dot", ".txt", ".dag", ".csv", ".onnx")
FUSE_MODES = ("none", "elementwise", "standard")  # cpsched.fusion.MODES, without importing it


def is_model(spec: str | Path) -> bool:
    """True for an ONNX file or the name of a bundled model."""
    return Path(spec).suffix.lower() == ".onnx" or (str(spec) in BUNDLED and not exists(spec))


def load_input(source: str | Path, processors: int | None = None, platform: str | Path | None = None,
               dims: Mapping[str, int] | None = None, fuse: str | None = None,
               contention: bool = False, costs: Sequence[str | Path] | None = None,
               precisions: Sequence[str | Path] | None = None) -> Instance:
    """Read ``source`` as an instance; options that do not apply to its kind are errors.

    ``costs`` (ONNX models only) lists measured cost tables, each ``PATH`` (for every
    device of the platform that runs as the table was measured:
    :func:`cpsched.costs.matching_devices`) or ``DEVICE=PATH``; ``precisions`` lists
    precision tables, ``PATH`` (for the device the table names) or ``DEVICE=PATH``.
    """
    path = Path(source)
    suffix = path.suffix.lower()
    fuse = fuse or "none"
    if fuse not in FUSE_MODES:
        raise ParameterError("fuse", fuse, f"expected one of {', '.join(FUSE_MODES)}")
    if not exists(path) and not is_model(source) and suffix not in SUFFIXES:
        raise InputError(_unknown(str(source)))
    if not is_model(source):
        for param, value in (("platform", platform), ("dims", dims), ("fuse", fuse != "none" and fuse),
                             ("costs", costs), ("precisions", precisions)):
            if value:
                raise ParameterError(param, value, "applies only to ONNX models", where=str(path))
    if contention and suffix not in (".dot", ".txt", ".dag", ".csv"):
        raise ParameterError("contention", contention, "applies only to task graphs with communication costs "
                             "(.dot, Santiago .txt/.dag, HEFT *_task_exe_time.csv)", where=str(path))
    if suffix in (".stg", ".dot"):
        if processors is None:
            raise ParameterError("processors", None, f"a {suffix} graph needs the number of identical processors",
                                 where=str(path))
        if isinstance(processors, bool) or not isinstance(processors, int) or processors < 1:
            raise ParameterError("processors", processors, "must be an integer >= 1")
        if suffix == ".dot":
            from cpsched.io.taskgraph import read_dot

            return read_dot(path, processors, contention)
        from cpsched.io.stg import read_stg

        return read_stg(path, processors)
    if processors is not None:
        raise ParameterError("processors", processors, "applies only to STG and DOT graphs", where=str(path))
    if suffix in (".txt", ".dag", ".csv"):
        from cpsched.io import taskgraph

        if suffix == ".csv":
            return taskgraph.read_heft_csv(path, contention)
        return taskgraph.read_santiago(path, contention)
    if suffix == ".json":
        return load_instance(path)
    if is_model(source):
        return _model(source, platform, dims, fuse, costs or (), precisions or ())
    raise InputError(f"{path}: unknown input type {suffix or '(no suffix)'!r} (expected {', '.join(SUFFIXES)} "
                     f"or a bundled model: {', '.join(BUNDLED)})")


def _model(source: str | Path, platform: str | Path | None, dims: Mapping[str, int] | None, fuse: str,
           costs: Sequence[str | Path] = (), precisions: Sequence[str | Path] = ()) -> Instance:
    from cpsched.fusion import fuse as fuse_graph
    from cpsched.io.onnx import read_onnx
    from cpsched.lowering import to_instance
    from cpsched.platforms import PRESETS, load_platform

    if platform is None:
        raise ParameterError("platform", None, f"an ONNX model needs a platform ({', '.join(PRESETS)} "
                             "or a YAML file)", where=str(source))
    plat = load_platform(platform)
    graph = fuse_graph(read_onnx(source, dims), fuse)
    try:
        return to_instance(graph, plat, costs=device_costs(plat, costs),
                           precisions=device_precisions(plat, precisions))
    except InputError as exc:
        raise exc.in_file(source) from None


def device_costs(platform, costs: Sequence[str | Path]) -> dict:
    """Device id -> cost table for ``--costs`` items ``PATH`` or ``DEVICE=PATH`` (a later item wins)."""
    from cpsched.costs import load_costs, matching_devices

    tables = {}
    for device, path in _device_items(costs):
        table = load_costs(path)
        devices = [device] if device else matching_devices(platform, table)
        if not devices:
            raise InputError(f"{path}: measured with {table.provider or 'an unknown provider'}, "
                             f"{table.meta.get('threads') or 'default'} threads: no device of platform "
                             f"{platform.name} runs that way (name one: --costs DEVICE={path})")
        tables.update((d, table) for d in devices)
    return tables


def device_precisions(platform, precisions: Sequence[str | Path]) -> dict:
    """Device id -> precision table for ``--precisions`` items ``PATH`` (the device the table
    names) or ``DEVICE=PATH`` (a later item wins); lowering checks the devices exist."""
    from cpsched.precisions import load_precisions

    tables = {}
    for device, path in _device_items(precisions):
        table = load_precisions(path)
        tables[device or table.device] = table
    return tables


def _device_items(items: Sequence[str | Path]) -> list[tuple[str, str]]:
    """``DEVICE=PATH`` or ``PATH`` items as (device or "", path)."""
    out = []
    for item in items:
        device, sep, path = str(item).partition("=")
        out.append((device, path) if sep else ("", str(item)))
    return out


def _unknown(name: str) -> str:
    """The message for a name that is neither a file nor a bundled model."""
    close = difflib.get_close_matches(name, list(BUNDLED), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown model {name!r} (no such file; bundled: {', '.join(BUNDLED)}){hint}"


def describe(input: str | Path, processors: int | None, platform: str | None, dims: dict, fuse: str,
             contention: bool = False, costs: Sequence[str | Path] = (), precisions: Sequence[str | Path] = ()) -> dict:
    """The facts ``inspect`` prints, as plain data."""
    from collections import Counter

    from cpsched.costs import measured

    report: dict = {}
    if is_model(input):
        from cpsched.fusion import fuse as fuse_graph
        from cpsched.fusion import group_patterns
        from cpsched.io.onnx import read_onnx
        from cpsched.lowering import to_instance
        from cpsched.platforms import load_platform

        original = read_onnx(input, dims)
        graph = fuse_graph(original, fuse)
        if fuse != "none":
            report.update(fusion=fuse, tasks_unfused=len(original.nodes), groups=group_patterns(graph))
        report.update(name=graph.name, tasks=len(graph.nodes), tensors=len(graph.tensors),
                      macs=sum(n.macs for n in graph.nodes), flops=sum(n.flops for n in graph.nodes),
                      weight_bytes=sum(n.weights for n in graph.nodes),
                      activation_bytes=sum(t.size for t in graph.tensors),
                      ops=dict(Counter(n.op for n in graph.nodes).most_common()),
                      unknown_ops=dict(graph.unknown_ops))
        if platform is None:
            return report
        plat = load_platform(platform)
        instance = to_instance(graph, plat, costs=device_costs(plat, costs or ()),
                               precisions=device_precisions(plat, precisions or ()))
        report["platform"] = platform
    else:
        instance = load_input(input, processors, fuse=fuse, contention=contention, costs=costs,
                              precisions=precisions)
        if instance.groups:
            report["groups"] = dict(Counter(instance.task(k).op for k in instance.groups).most_common())
        report.update(name=instance.name, tasks=len(instance.tasks), tensors=len(instance.tensors),
                      weight_bytes=sum(t.weights for t in instance.tasks),
                      activation_bytes=sum(t.size for t in instance.tensors),
                      ops=dict(Counter(t.op for t in instance.tasks).most_common()))
    report["devices"] = {d.id: sum(d.id in t.choices for t in instance.tasks) for d in instance.devices}
    named = {d.id: sum(len(t.choices.get(d.id, ())) > 1 for t in instance.tasks) for d in instance.devices}
    if any(named.values()):
        report["modes"] = {d: n for d, n in named.items() if n}
    if measured(instance):
        report["measured"] = measured(instance)
    return report


def parse_dims(items: list[str] | None) -> dict[str, int]:
    """``["N=1", "seq=128"]`` -> ``{"N": 1, "seq": 128}``; a malformed item is an error naming it."""
    dims = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            raise ParameterError("dims", item, "expected NAME=VALUE with an integer VALUE >= 1")
        dims[name.strip()] = int(value)
    return dims
