"""The ONNX front end (cpsched.io.onnx) and the operator cost model (cpsched.costmodel)."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from onnx import TensorProto, helper

import cpsched.io.onnx as onnx_io
from cpsched.costmodel import node_cost
from cpsched.errors import InputError
from cpsched.instance import Device, Instance, Mode, Task, Tensor
from cpsched.io.onnx import BUNDLED, read_onnx, resolve_model

F = TensorProto.FLOAT
OPSET = [helper.make_opsetid("", 17)]


@functools.cache
def bundled(name: str):
    return read_onnx(name)


def to_instance(graph) -> Instance:
    """A trivial one-device Instance: the OpGraph must satisfy every Instance check."""
    tasks = tuple(Task(n.name, n.op, {"host": Mode(max(1, n.flops // 10**6))}, n.weights, n.workspace)
                  for n in graph.nodes)
    tensors = tuple(Tensor(t.name, t.size, t.producer, t.consumers, t.output) for t in graph.tensors)
    return Instance(graph.name, (Device("host", 10**15, host=True),), (), tasks, tensors)


def save(tmp_path, graph, name="m.onnx", **kwargs):
    model = helper.make_model(graph, opset_imports=kwargs.pop("opsets", OPSET), **kwargs)
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())
    return path


def node_named(graph, name):
    return next(n for n in graph.nodes if n.name == name)


# ----- the bundled models -------------------------------------------------------------------

# Conv + Gemm MACs from the literature; AlexNet as bundled (224x224, group=2 in conv2/4/5).
PUBLISHED_MACS = {"resnet50": 4.1e9, "vgg19": 19.6e9, "alexnet": 0.65e9}
NODES = {"resnet50": 176, "densenet121": 668}


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_bundled_model_imports(name):
    graph = bundled(name)
    assert graph.name == name and graph.nodes
    assert not graph.unknown_ops
    assert all(t.size > 0 for t in graph.tensors)
    assert [t.name for t in graph.tensors if t.producer is None] == [graph.tensors[0].name]  # one image input
    assert any(t.output for t in graph.tensors)
    assert all(n.op not in ("Constant", "ConstantOfShape") for n in graph.nodes)
    assert graph.meta["source"].endswith(BUNDLED[name]) and graph.meta["opset"] == 9
    if name in NODES:
        assert len(graph.nodes) == NODES[name]
    to_instance(graph)  # validates: ids unique, references known, acyclic


@pytest.mark.parametrize("name", sorted(PUBLISHED_MACS))
def test_bundled_macs_match_published(name):
    macs = sum(n.macs for n in bundled(name).nodes if n.op in ("Conv", "Gemm", "MatMul"))
    assert macs == pytest.approx(PUBLISHED_MACS[name], rel=0.03)


def test_resolve_model():
    assert resolve_model("resnet50").name == BUNDLED["resnet50"]
    with pytest.raises(InputError, match="densenet121"):
        resolve_model("no-such-model")


def test_path_based_shape_inference_gives_the_same_graph(monkeypatch):
    monkeypatch.setattr(onnx_io, "PROTO_LIMIT", 0)
    graph = read_onnx("squeezenet")
    assert graph.nodes == bundled("squeezenet").nodes and graph.tensors == bundled("squeezenet").tensors


# ----- symbolic dims ------------------------------------------------------------------------


def symbolic_model(tmp_path):
    x = helper.make_tensor_value_info("X", F, ["N", 3, 4])
    y = helper.make_tensor_value_info("Y", F, ["N", 3, 4])
    return save(tmp_path, helper.make_graph([helper.make_node("Relu", ["X"], ["Y"], name="relu")], "g", [x], [y]))


def test_symbolic_dim_without_dims_names_the_tensor(tmp_path):
    with pytest.raises(InputError, match=r"tensor 'X'.*--dim N=") as info:
        read_onnx(symbolic_model(tmp_path))
    assert "\n" not in str(info.value)


def test_dims_pin_symbolic_dims(tmp_path):
    path = symbolic_model(tmp_path)
    one, two = read_onnx(path, {"N": 1}), read_onnx(path, {"N": 2})
    assert [t.size for t in one.tensors] == [48, 48]
    assert [t.size for t in two.tensors] == [96, 96]
    assert two.tensors[1].shape == (2, 3, 4) and two.tensors[1].output
    assert two.meta["dims"] == {"N": 2}
    assert node_named(two, "relu").flops == 2 * node_named(one, "relu").flops


def test_unknown_dim_name(tmp_path):
    with pytest.raises(InputError, match=r"'M'.*N"):
        read_onnx(symbolic_model(tmp_path), {"M": 2})


# ----- constants and weights ----------------------------------------------------------------


def test_external_data_is_never_followed(tmp_path, monkeypatch):
    """Weights pointing outside the model folder are sized from their dims, never read."""
    (tmp_path / "model").mkdir()
    for location in ("../../etc/passwd", str(tmp_path / "absent.bin")):
        w = TensorProto(name="W", data_type=F, dims=[4, 3])
        w.data_location = TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", "0"), ("length", "48")):
            w.external_data.add(key=key, value=value)
        x = helper.make_tensor_value_info("X", F, [2, 4])
        y = helper.make_tensor_value_info("Y", F, [2, 3])
        graph = helper.make_graph([helper.make_node("MatMul", ["X", "W"], ["Y"], name="mm")], "g", [x], [y], [w])
        path = save(tmp_path / "model", graph)
        for limit in (onnx_io.PROTO_LIMIT, 0):  # in memory, and through files
            monkeypatch.setattr(onnx_io, "PROTO_LIMIT", limit)
            mm = node_named(read_onnx(path), "mm")
            assert mm.weights == 48 and mm.macs == 2 * 3 * 4
            monkeypatch.undo()


def test_initializers_listed_as_inputs_are_not_graph_inputs(tmp_path):
    """IR version 3 lists every initializer again as a graph input."""
    w = helper.make_tensor("W", F, [3], np.ones(3, np.float32))
    x = helper.make_tensor_value_info("X", F, [2, 3])
    y = helper.make_tensor_value_info("Y", F, [2, 3])
    graph = helper.make_graph([helper.make_node("Add", ["X", "W"], ["Y"], name="add")], "g",
                              [x, helper.make_tensor_value_info("W", F, [3])], [y], [w])
    result = read_onnx(save(tmp_path, graph, opsets=[helper.make_opsetid("", 7)], ir_version=3))
    assert [t.name for t in result.tensors] == ["X", "Y"]
    assert node_named(result, "add").inputs == ("X",) and node_named(result, "add").weights == 12


def folding_model(tmp_path):
    """Constant, ConstantOfShape and a chain of constant ops feed four tasks; 'a' is an output and consumed."""
    const = helper.make_tensor("c", F, [4], np.arange(4, dtype=np.float32))
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], np.array([1, 4], np.int64))
    nodes = [
        helper.make_node("Constant", [], ["c1"], value=const),
        helper.make_node("Add", ["X", "c1"], ["a"], name="dup"),
        helper.make_node("ConstantOfShape", ["shape"], ["ones"], value=helper.make_tensor("v", F, [1], [1.0])),
        helper.make_node("Mul", ["a", "ones"], ["m"], name="dup"),
        helper.make_node("Constant", [], ["k"], value=const),
        helper.make_node("Neg", ["k"], ["k_neg"]),
        helper.make_node("Identity", ["k_neg"], ["chain"]),
        helper.make_node("Sub", ["m", "chain"], ["s"]),
        helper.make_node("Div", ["a", "chain"], ["d"]),
    ]
    x = helper.make_tensor_value_info("X", F, [1, 4])
    outs = [helper.make_tensor_value_info(n, F, [1, 4]) for n in ("a", "s", "d")]
    return save(tmp_path, helper.make_graph(nodes, "g", [x], outs, [shape]))


def test_constants_fold_into_weights(tmp_path):
    graph = read_onnx(folding_model(tmp_path))
    assert [(n.name, n.op, n.weights) for n in graph.nodes] == [
        ("dup", "Add", 16), ("dup_2", "Mul", 16), ("Sub_7", "Sub", 16), ("Div_8", "Div", 16)]
    assert [n.inputs for n in graph.nodes] == [("X",), ("a",), ("m",), ("a",)]
    tensors = {t.name: t for t in graph.tensors}
    assert sorted(tensors) == ["X", "a", "d", "m", "s"]
    assert tensors["a"].output and tensors["a"].consumers == ("dup_2", "Div_8")
    assert tensors["X"].producer is None and not tensors["X"].output
    assert tensors["m"].size == 16 and tensors["m"].dtype == "float32" and not tensors["m"].output
    to_instance(graph)


def test_subgraph_outer_names_are_inputs_and_weights(tmp_path):
    """An If whose branches read an outer activation and an outer constant depends on both."""
    w = helper.make_tensor("W", F, [3], np.ones(3, np.float32))
    out = [helper.make_tensor_value_info("b", F, [3])]
    then = helper.make_graph([helper.make_node("Relu", ["X"], ["b"])], "then", [], out)
    other = helper.make_graph([helper.make_node("Neg", ["W"], ["b"])], "else", [], out)
    nodes = [helper.make_node("Relu", ["X0"], ["X"], name="pre"),
             helper.make_node("If", ["cond"], ["Y"], name="if", then_branch=then, else_branch=other)]
    inputs = [helper.make_tensor_value_info("cond", TensorProto.BOOL, []), helper.make_tensor_value_info("X0", F, [3])]
    outputs = [helper.make_tensor_value_info("Y", F, [3])]
    with pytest.warns(UserWarning, match="If x1"):
        graph = read_onnx(save(tmp_path, helper.make_graph(nodes, "g", inputs, outputs, [w])))
    node = node_named(graph, "if")
    assert node.inputs == ("cond", "X") and node.weights == 12
    assert graph.unknown_ops == {"If": 1}
    to_instance(graph)


def test_unknown_op_costs_bytes_only_and_warns_once(tmp_path):
    nodes = [helper.make_node("Foo", ["X"], ["f1"], domain="my.custom"),
             helper.make_node("Foo", ["f1"], ["f2"], domain="my.custom"),
             helper.make_node("Relu", ["f2"], ["Y"])]
    x = helper.make_tensor_value_info("X", F, [2, 3])
    y = helper.make_tensor_value_info("Y", F, [2, 3])
    vi = [helper.make_tensor_value_info(n, F, [2, 3]) for n in ("f1", "f2")]
    path = save(tmp_path, helper.make_graph(nodes, "g", [x], [y], value_info=vi),
                opsets=OPSET + [helper.make_opsetid("my.custom", 1)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        graph = read_onnx(path)
    assert [str(w.message).split(": ", 1)[1] for w in caught] == [
        "no cost model for 1 op types (bytes only): my.custom.Foo x2"]
    assert graph.unknown_ops == {"my.custom.Foo": 2}
    foo = graph.nodes[0]
    assert (foo.op, foo.flops, foo.macs, foo.bytes) == ("my.custom.Foo", 0, 0, 48)


# ----- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"", b"hello world\n", b"\x08\x07\x12\xff\xff\xff"])
def test_not_an_onnx_model(tmp_path, content):
    path = tmp_path / "bad.onnx"
    path.write_bytes(content)
    with pytest.raises(InputError, match="not an ONNX model") as info:
        read_onnx(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file") as info:
        read_onnx(tmp_path / "absent.onnx")
    assert "\n" not in str(info.value)


def test_graph_not_topologically_sorted(tmp_path):
    nodes = [helper.make_node("Relu", ["h"], ["Y"], name="second"), helper.make_node("Relu", ["X"], ["h"])]
    io = [helper.make_tensor_value_info(n, F, [2]) for n in ("X", "Y")]
    with pytest.raises(InputError, match="'second'.*'h'"):
        read_onnx(save(tmp_path, helper.make_graph(nodes, "g", io[:1], io[1:])))


# ----- the cost model by hand ---------------------------------------------------------------


def test_conv_with_groups_and_stride():
    # X 1x8x10x10, W 16x4x3x3, group 2, stride 2, pad 1 -> Y 1x16x5x5.
    # MACs = N * M * out spatial * (C/group) * kernel = 1 * 16 * 25 * 4 * 9 = 14400; bias adds 400.
    ins = [((1, 8, 10, 10), 4), ((16, 4, 3, 3), 4), ((16,), 4)]
    cost = node_cost("Conv", {"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1]}, ins, [((1, 16, 5, 5), 4)], 0)
    assert (cost.macs, cost.flops) == (14400, 2 * 14400 + 400)
    assert cost.bytes == 4 * (800 + 576 + 16 + 400)


def test_conv_transpose():
    # X 1x4x5x5, W 4x3x2x2 (C_in x C_out/group x k), stride 2 -> Y 1x3x10x10: 100 * 12 MACs.
    cost = node_cost("ConvTranspose", {"strides": [2, 2]}, [((1, 4, 5, 5), 4), ((4, 3, 2, 2), 4)],
                     [((1, 3, 10, 10), 4)], 0)
    assert cost.macs == 1200 and cost.flops == 2400


def test_batched_matmul_with_broadcasting():
    # A 2x1x3x4 @ B 5x4x6 -> 2x5x3x6, each a dot product of length 4: 180 * 4 MACs.
    cost = node_cost("MatMul", {}, [((2, 1, 3, 4), 4), ((5, 4, 6), 4)], [((2, 5, 3, 6), 4)], 0)
    assert (cost.macs, cost.flops) == (720, 1440)
    # 1-D A (length 4) @ B 3x4x6 -> 3x6.
    assert node_cost("MatMul", {}, [((4,), 4), ((3, 4, 6), 4)], [((3, 6), 4)], 0).macs == 72


def test_gemm_with_trans_b():
    # A 2x8, B 5x8 (transB) -> 2x5, K = 8: 80 MACs, plus 10 bias adds.
    cost = node_cost("Gemm", {"transB": 1}, [((2, 8), 4), ((5, 8), 4), ((5,), 4)], [((2, 5), 4)], 0)
    assert (cost.macs, cost.flops) == (80, 170)
    assert node_cost("Gemm", {"transA": 1}, [((8, 2), 4), ((8, 5), 4)], [((2, 5), 4)], 0).macs == 80


def test_elementwise_and_data_movement():
    assert node_cost("Relu", {}, [((2, 3), 4)], [((2, 3), 4)], 0).flops == 6
    assert node_cost("Reshape", {}, [((2, 3), 4), ((1,), 8)], [((6,), 4)], 0).flops == 0
    assert node_cost("Sum", {}, [((4,), 4)] * 3, [((4,), 4)], 0).flops == 8
    assert node_cost("MaxPool", {"kernel_shape": [3, 3]}, [((1, 1, 4, 4), 4)], [((1, 1, 2, 2), 4)], 0).flops == 36
