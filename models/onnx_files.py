"""What the model scripts share: writing a model as a graph file plus an external weights file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx.external_data_helper import set_external_data


OPSET = 17  # and IR version 8: onnxruntime releases from 2023 on load the models
IR_VERSION = 8


def finish(graph: onnx.GraphProto, doc: str) -> onnx.ModelProto:
    """The model around ``graph``: checked in full and shape-inferred strictly (every shape known)."""
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", OPSET)],
                                   ir_version=IR_VERSION, producer_name="cpsched-models", doc_string=doc)
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)


def parameter_count(model: onnx.ModelProto) -> int:
    """Elements of the learned initializers (shape/scalar ``const.*`` excluded)."""
    return sum(int(np.prod(t.dims, dtype=np.int64))
               for t in model.graph.initializer if not t.name.startswith("const."))


def save(model: onnx.ModelProto, directory: Path, name: str) -> Path:
    """Write ``<name>.onnx`` (graph) and ``<name>.weights`` (learned tensors)."""
    directory.mkdir(parents=True, exist_ok=True)
    onnx_path = directory / f"{name}.onnx"
    weights_path = directory / f"{name}.weights"
    if weights_path.exists():
        weights_path.unlink()  # external data is appended; start fresh
    # Saving moves tensor data out of the proto in place: work on a copy.
    model = onnx.ModelProto.FromString(model.SerializeToString())
    # Every learned tensor goes to the one weights file (what save_model's
    # save_as_external_data=True, all_tensors_to_one_file=True,
    # size_threshold=0 would do), except the tiny ``const.*`` tensors: Reshape
    # target shapes must stay inline, or shape inference on a model loaded
    # with load_external_data=False cannot resolve the Reshape outputs.
    for tensor in model.graph.initializer:
        if not tensor.name.startswith("const."):
            set_external_data(tensor, location=f"{name}.weights")
    onnx.save_model(model, str(onnx_path))
    return onnx_path


def main(build, name: str, directory: Path) -> None:
    """Build the model, write it next to its script, say what was written."""
    model = build()
    path = save(model, directory, name)
    print(f"wrote {path} ({len(model.graph.node)} nodes, {parameter_count(model)} parameters)")
