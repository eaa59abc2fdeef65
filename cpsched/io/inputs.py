"""One entry point for every input a command accepts, chosen by suffix.

* ``.json`` — a ``cpsched-instance/1`` file;
* ``.stg`` — a Kasahara STG graph on ``processors`` identical processors;
* ``.onnx`` or a bundled model name (``alexnet``, ``resnet50``, ...) — an ONNX
  model, lowered onto ``platform`` (a preset name or a YAML file), with
  ``dims`` pinning symbolic input dims and ``fuse`` naming a fusion mode.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cpsched.errors import InputError
from cpsched.fusion import MODES
from cpsched.fusion import fuse as fuse_graph
from cpsched.instance import Instance, load_instance
from cpsched.io.onnx import BUNDLED, read_onnx
from cpsched.io.stg import read_stg
from cpsched.lowering import to_instance
from cpsched.platforms import PRESETS, load_platform

SUFFIXES = (".json", ".stg", ".onnx")


def is_model(spec: str | Path) -> bool:
    """True for an ONNX file or the name of a bundled model."""
    return Path(spec).suffix.lower() == ".onnx" or (str(spec) in BUNDLED and not Path(spec).exists())


def load_input(spec: str | Path, processors: int | None = None, platform: str | None = None,
               dims: Mapping[str, int] | None = None, fuse: str = "none") -> Instance:
    """Read ``spec`` as an instance; options that do not apply to its kind are usage errors.

    ``fuse`` (a :data:`cpsched.fusion.MODES` name) fuses an ONNX model's operators before lowering.
    """
    path = Path(spec)
    suffix = path.suffix.lower()
    if fuse not in MODES:
        raise InputError(f"--fuse {fuse!r}: expected one of {', '.join(MODES)}")
    if not is_model(spec):
        for option, value in (("--platform", platform), ("--dim", dims), ("--fuse", fuse != "none" and fuse)):
            if value:
                raise InputError(f"{path}: {option} applies only to ONNX models")
    if suffix == ".stg":
        if processors is None:
            raise InputError(f"{path}: an STG graph needs --processors M (the number of identical processors)")
        return read_stg(path, processors)
    if processors is not None:
        raise InputError(f"{path}: --processors applies only to STG input")
    if suffix == ".json":
        return load_instance(path)
    if is_model(spec):
        if platform is None:
            raise InputError(f"{spec}: an ONNX model needs --platform ({', '.join(PRESETS)} or a YAML file)")
        graph = fuse_graph(read_onnx(spec, dims), fuse)
        try:
            return to_instance(graph, load_platform(platform))
        except InputError as exc:
            raise exc.in_file(spec) from None
    raise InputError(f"{path}: unknown input type {suffix or '(no suffix)'!r} (expected {', '.join(SUFFIXES)} "
                     f"or a bundled model: {', '.join(BUNDLED)})")


def parse_dims(items: list[str] | None) -> dict[str, int]:
    """``["N=1", "seq=128"]`` -> ``{"N": 1, "seq": 128}``; a malformed item is an InputError."""
    dims = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit() or int(value) < 1:
            raise InputError(f"--dim {item!r}: expected NAME=VALUE with an integer VALUE >= 1")
        dims[name.strip()] = int(value)
    return dims
