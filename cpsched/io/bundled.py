"""The models bundled with the ``onnx`` wheel, by name, found without importing onnx.

>>> "squeezenet" in BUNDLED, bundled_path("squeezenet").name
(True, 'light_squeezenet.onnx')
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

BUNDLED = {
    "alexnet": "light_bvlc_alexnet.onnx",
    "zfnet512": "light_zfnet512.onnx",
    "vgg19": "light_vgg19.onnx",
    "squeezenet": "light_squeezenet.onnx",
    "inception_v1": "light_inception_v1.onnx",
    "inception_v2": "light_inception_v2.onnx",
    "resnet50": "light_resnet50.onnx",
    "shufflenet": "light_shufflenet.onnx",
    "densenet121": "light_densenet121.onnx",
}
"""Models shipped with the ``onnx`` package ("light": weights replaced by ConstantOfShape)."""


def bundled_dir() -> Path:
    """Where the installed ``onnx`` package keeps the bundled models."""
    spec = importlib.util.find_spec("onnx")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the onnx package is not installed")
    return Path(spec.submodule_search_locations[0]) / "backend" / "test" / "data" / "light"


def bundled_path(name: str) -> Path:
    """The file of the bundled model ``name`` (a key of :data:`BUNDLED`)."""
    return bundled_dir() / BUNDLED[name]
