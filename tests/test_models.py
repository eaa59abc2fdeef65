"""Tests for the ONNX model builders under ``models/``.

The builders generate random weights in memory; the committed ``.onnx`` files
hold only the graph (weights live in the git-ignored ``*.weights`` files) and
are read the way cpsched reads them: ``onnx.load(path, load_external_data=False)``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto

MODELS_DIR = Path(__file__).resolve().parents[1] / "models"
sys.path.insert(0, str(MODELS_DIR))

import make_bert_layer  # noqa: E402
import make_unet  # noqa: E402
import onnx_files  # noqa: E402

BUILDERS = {
    "bert_layer": make_bert_layer,
    "unet_small": make_unet,
}

# One BERT-base encoder layer (hidden 768, FFN 3072):
#   Q, K, V, output projections: 4 * (768*768 + 768)   = 2,362,368
#   FFN in  (768 -> 3072):       768*3072 + 3072       = 2,362,368
#   FFN out (3072 -> 768):       3072*768 + 768        = 2,360,064
#   2 LayerNorms (gamma, beta):  2 * 2 * 768           =     3,072
#   total                                              = 7,087,872
# The graph also starts with an input LayerNorm (the embedding LayerNorm
# of BERT), 2 * 768 = 1,536 more: 7,089,408.
BERT_LAYER_PARAMS = (4 * (768 * 768 + 768) + (768 * 3072 + 3072)
                     + (3072 * 768 + 768) + 2 * 2 * 768)
assert BERT_LAYER_PARAMS == 7_087_872
BERT_MODEL_PARAMS = BERT_LAYER_PARAMS + 2 * 768

# U-Net: encoder/bottleneck convs (no bias) 293,040; 8 BatchNorms
# 4 * (16+16+32+32+64+64+128+128) = 1,920 (running stats included);
# ConvTranspose 43,120; decoder convs 96,880; 1x1 head 34.
UNET_PARAMS = 293_040 + 1_920 + 43_120 + 96_880 + 34


@pytest.fixture(scope="module")
def built() -> dict[str, onnx.ModelProto]:
    return {name: mod.build() for name, mod in BUILDERS.items()}


def _elements(model: onnx.ModelProto, prefix_excluded: str = "const.") -> int:
    return sum(int(np.prod(t.dims, dtype=np.int64))
               for t in model.graph.initializer
               if not t.name.startswith(prefix_excluded))


def _is_static(vi: onnx.ValueInfoProto) -> bool:
    tt = vi.type.tensor_type
    return (vi.type.HasField("tensor_type") and tt.elem_type != TensorProto.UNDEFINED
            and tt.HasField("shape")
            and all(d.HasField("dim_value") and d.dim_value > 0 for d in tt.shape.dim))


def _assert_fully_shaped(model: onnx.ModelProto) -> None:
    g = model.graph
    infos = {vi.name: vi for vi in list(g.value_info) + list(g.output) + list(g.input)}
    for node in g.node:
        for out in node.output:
            assert out in infos, f"no shape inferred for {out} ({node.op_type})"
            assert _is_static(infos[out]), f"non-static shape for {out}: {infos[out]}"
    for vi in g.value_info:
        assert _is_static(vi), vi


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_build_checks_and_infers(built, name):
    model = built[name]
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 8
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    _assert_fully_shaped(inferred)
    _assert_fully_shaped(model)  # build() returns the shape-inferred model


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_committed_file_is_graph_only(built, name):
    path = MODELS_DIR / f"{name}.onnx"
    assert path.stat().st_size < 64 * 1024, "weights must not be inside the .onnx"
    loaded = onnx.load(str(path), load_external_data=False)
    ref = built[name]
    assert len(loaded.graph.node) == len(ref.graph.node)
    assert [n.op_type for n in loaded.graph.node] == [n.op_type for n in ref.graph.node]
    assert ([(t.name, list(t.dims)) for t in loaded.graph.initializer]
            == [(t.name, list(t.dims)) for t in ref.graph.initializer])
    for t in loaded.graph.initializer:
        if not t.name.startswith("const."):
            assert t.data_location == TensorProto.EXTERNAL, t.name
            assert {e.key: e.value for e in t.external_data}["location"] == f"{name}.weights"
    # cpsched's path: shape inference without the weights must still succeed.
    inferred = onnx.shape_inference.infer_shapes(loaded, strict_mode=True)
    _assert_fully_shaped(inferred)


def test_weights_are_git_ignored():
    lines = (MODELS_DIR / ".gitignore").read_text().split()
    assert "*.weights" in lines


def test_bert_layer_structure(built):
    model = built["bert_layer"]
    assert _elements(model) == BERT_MODEL_PARAMS == 7_089_408
    assert onnx_files.parameter_count(model) == BERT_MODEL_PARAMS
    ops = [n.op_type for n in model.graph.node]
    assert len(ops) == 35
    assert ops.count("LayerNormalization") == 3
    assert ops.count("MatMul") == 8       # Q, K, V, QK^T, xV, out, FFN x2
    assert ops.count("Softmax") == 1 and ops.count("Erf") == 1
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in list(model.graph.value_info) + list(model.graph.output)}
    assert shapes["attn.scores"] == [1, 12, 128, 128]
    assert shapes["attn.context"] == [1, 12, 128, 64]
    assert shapes["ffn.in.out"] == [1, 128, 3072]
    assert shapes["out"] == [1, 128, 768]


def test_unet_structure(built):
    model = built["unet_small"]
    assert _elements(model) == UNET_PARAMS == 434_994
    ops = [n.op_type for n in model.graph.node]
    assert len(ops) == 40
    assert ops.count("Conv") == 12 and ops.count("BatchNormalization") == 8
    assert ops.count("ConvTranspose") == 3 and ops.count("Concat") == 3
    assert ops.count("MaxPool") == 3
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
              for vi in list(model.graph.value_info) + list(model.graph.output)}
    assert shapes["bottleneck.1.relu"] == [1, 128, 16, 16]
    assert shapes["dec1.concat"] == [1, 32, 128, 128]
    assert shapes["out"] == [1, 2, 128, 128]
    # Branchy: each skip tensor feeds both a MaxPool and a Concat.
    for level in (1, 2, 3):
        consumers = [n.op_type for n in model.graph.node
                     if f"enc{level}.1.relu" in n.input]
        assert sorted(consumers) == ["Concat", "MaxPool"]
