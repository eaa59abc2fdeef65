"""Operator fusion (cpsched.fusion): semantics kept, costs of groups, device support, groups in instances."""

import json
import warnings

import networkx as nx
import pytest

from cpsched import lexico
from cpsched.engines import Options
from cpsched.errors import InputError
from cpsched.fusion import MODES, fuse, group_patterns
from cpsched.instance import Instance
from cpsched.io.onnx import read_onnx
from cpsched.lowering import to_instance
from cpsched.opgraph import OpGraph, OpNode, OpTensor
from cpsched.platforms import load_platform
from cpsched.validator import validate

MODELS = ("squeezenet", "resnet50", "inception_v1", "alexnet")


@pytest.fixture(scope="module")
def graphs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {m: read_onnx(m) for m in MODELS}


def dag(g: OpGraph) -> nx.DiGraph:
    d = nx.DiGraph()
    d.add_nodes_from(n.name for n in g.nodes)
    for t in g.tensors:
        if t.producer is not None:
            d.add_edges_from((t.producer, c) for c in t.consumers)
    return d


def check_semantics(g: OpGraph, f: OpGraph) -> None:
    """Same graph inputs and outputs; every node in one group; acyclic; internal tensors gone."""
    inputs = lambda h: {t.name for t in h.tensors if t.producer is None}
    outputs = lambda h: {t.name for t in h.tensors if t.output}
    assert inputs(f) == inputs(g) and outputs(f) == outputs(g)
    members = [m for n in f.nodes for m in (n.members or (n.name,))]
    assert sorted(members) == sorted(n.name for n in g.nodes)
    names = [n.name for n in f.nodes]
    assert len(set(names)) == len(names)
    d = dag(f)
    assert nx.is_directed_acyclic_graph(d)
    position = {n: i for i, n in enumerate(names)}
    assert all(position[u] < position[v] for u, v in d.edges)  # nodes stay in a topological order
    owner = {m: n.name for n in f.nodes for m in (n.members or (n.name,))}
    internal = {t.name for t in g.tensors
                if t.producer is not None and not t.output
                and {owner[c] for c in t.consumers} == {owner[t.producer]}}
    assert {t.name for t in f.tensors} == {t.name for t in g.tensors} - internal
    for t in f.tensors:  # producers and consumers renamed to the groups
        assert t.producer is None or t.producer in position
        assert all(c in position for c in t.consumers) and t.producer not in t.consumers
        assert set(t.consumers) == {owner[c] for c in next(o for o in g.tensors if o.name == t.name).consumers}
    for n in f.nodes:  # the node's tensors agree with the tensor table
        assert all(n.name in next(t for t in f.tensors if t.name == x).consumers for x in n.inputs)
        assert all(next(t for t in f.tensors if t.name == x).producer == n.name for x in n.outputs)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("mode", ["elementwise", "standard"])
def test_fusion_preserves_semantics_and_conserves_costs(graphs, model, mode):
    g = graphs[model]
    f = fuse(g, mode)
    check_semantics(g, f)
    assert len(f.nodes) <= len(g.nodes)
    assert sum(n.flops for n in f.nodes) == sum(n.flops for n in g.nodes)
    assert sum(n.macs for n in f.nodes) == sum(n.macs for n in g.nodes)
    assert sum(n.weights for n in f.nodes) == sum(n.weights for n in g.nodes)
    assert sum(n.bytes for n in f.nodes) <= sum(n.bytes for n in g.nodes)
    by_name = {n.name: n for n in g.nodes}
    sizes = {t.name: t.size for t in g.tensors}
    for n in f.nodes:
        if len(n.members) < 2:
            assert n == by_name[n.name]
            continue
        group = [by_name[m] for m in n.members]
        assert n.name == n.members[0] and n.op == "+".join(n.member_ops)
        assert n.member_ops == tuple(m.op for m in group)
        assert n.workspace == max(m.workspace for m in group)
        assert n.bytes == sum(sizes[x] for x in (*n.inputs, *n.outputs)) + n.weights
        assert n.bytes <= sum(m.bytes for m in group)
    assert f.meta["fusion"] == mode


def test_none_is_identity_and_bad_mode_is_an_input_error(graphs):
    g = graphs["squeezenet"]
    assert fuse(g, "none") is g
    with pytest.raises(InputError, match="fuse='aggressive'"):
        fuse(g, "aggressive")
    assert MODES == ("none", "elementwise", "standard")


def test_task_counts_and_patterns(graphs):
    counts = {m: [len(fuse(graphs[m], mode).nodes) for mode in MODES] for m in MODELS}
    assert counts["squeezenet"] == [66, 66, 39]
    assert counts["resnet50"] == [176, 160, 57]  # elementwise: Sum+Relu
    assert counts["inception_v1"] == [143, 143, 85]
    resnet = group_patterns(fuse(graphs["resnet50"], "standard"))
    assert resnet["Conv+BatchNormalization+Relu"] == 33
    assert resnet["Conv+BatchNormalization+Sum+Relu"] == 16  # residual Add joins the block's last conv
    assert resnet["Gemm+Softmax"] == 1  # trailing softmax
    squeeze = group_patterns(fuse(graphs["squeezenet"], "standard"))
    assert squeeze == {"Conv+Relu": 26, "GlobalAveragePool+Softmax": 1}
    assert group_patterns(fuse(graphs["resnet50"], "elementwise")) == {"Sum+Relu": 16}


@pytest.mark.parametrize("model", ["squeezenet", "inception_v1", "resnet50"])
def test_groups_only_on_devices_supporting_every_member(graphs, model):
    edge = load_platform("edge")
    f = fuse(graphs[model], "standard")
    inst = to_instance(f, edge)
    fused = [n for n in f.nodes if len(n.members) >= 2]
    assert inst.groups == {n.name: n.members for n in fused}
    for n in f.nodes:
        allowed = {d.id for d in edge.devices if all(d.supports(op) for op in n.ops)}
        assert set(inst.task(n.name).modes) == allowed
    softmax = next(n for n in fused if "Softmax" in n.member_ops)
    assert "npu" not in inst.task(softmax.name).modes  # the NPU lacks Softmax, so the group too
    assert any("npu" in inst.task(n.name).modes for n in fused)


def test_fused_schedule_validates_against_the_fused_instance(graphs):
    inst = to_instance(fuse(graphs["alexnet"], "standard"), load_platform("edge"))
    schedule = lexico.solve(inst, ["latency"], Options(time_limit=20, workers=2))
    assert schedule.status.has_schedule
    assert set(schedule.tasks) == {t.id for t in inst.tasks}
    assert validate(inst, schedule).valid


def test_residual_join_and_external_inputs():
    """a -> b -> add(b_out, s) with s from a second branch: add fuses, s becomes a group input."""
    nodes = (OpNode("c", "Conv", ("x",), ("y",), flops=100, bytes=30, weights=10),
             OpNode("s", "Relu", ("x",), ("z",), flops=4, bytes=8),
             OpNode("r", "Relu", ("y",), ("w",), flops=4, bytes=8),
             OpNode("a", "Add", ("w", "z"), ("o",), flops=4, bytes=12))
    tensors = (OpTensor("x", 4, None, ("c", "s")), OpTensor("y", 4, "c", ("r",)),
               OpTensor("z", 4, "s", ("a",)), OpTensor("w", 4, "r", ("a",)),
               OpTensor("o", 4, "a", (), output=True))
    g = OpGraph("toy", nodes, tensors)
    f = fuse(g, "standard")
    check_semantics(g, f)
    conv = next(n for n in f.nodes if n.name == "c")
    assert conv.members == ("c", "r", "a") and conv.inputs == ("x", "z") and conv.outputs == ("o",)
    assert conv.bytes == 4 + 4 + 4 + 10 and conv.flops == 108
    # elementwise mode: Relu r + Add a (s also feeds a, but stays its own producer)
    e = fuse(g, "elementwise")
    check_semantics(g, e)
    assert [n.members for n in e.nodes if n.members] == [("r", "a")]


def test_no_fusion_through_shared_or_output_tensors():
    nodes = (OpNode("a", "Relu", ("x",), ("y",)), OpNode("b", "Relu", ("y",), ("z",)),
             OpNode("c", "Relu", ("y",), ("u",)), OpNode("d", "Relu", ("z",), ("v",)))
    tensors = (OpTensor("x", 4, None, ("a",)), OpTensor("y", 4, "a", ("b", "c")),
               OpTensor("z", 4, "b", ("d",), output=True), OpTensor("u", 4, "c", (), output=True),
               OpTensor("v", 4, "d", (), output=True))
    g = OpGraph("toy", nodes, tensors)
    assert fuse(g, "elementwise").nodes == g.nodes  # y has two consumers, z is a graph output


def test_instance_groups_round_trip_and_checks(graphs):
    inst = to_instance(fuse(graphs["squeezenet"], "standard"), load_platform("server"))
    data = json.loads(json.dumps(inst.to_dict()))
    assert data["groups"]["n0"] == ["n0", "n1"]
    again = Instance.from_dict(data)
    assert again.groups == inst.groups and again.to_dict() == inst.to_dict()
    plain = to_instance(graphs["squeezenet"], load_platform("server"))
    assert plain.groups == {} and "groups" not in plain.to_dict()
    bad = dict(data, groups={"nope": ["n0"]})
    with pytest.raises(InputError, match="'nope' is not a task id"):
        Instance.from_dict(bad)
    bad = dict(data, groups={"n0": ["n0", "n1"], "n3": ["n3", "n1"]})
    with pytest.raises(InputError, match="node 'n1' is in two groups, 'n0' and 'n3'"):
        Instance.from_dict(bad)
    with pytest.raises(InputError, match="groups.n0"):
        Instance.from_dict(dict(data, groups={"n0": "n0"}))


def test_merge_that_would_close_a_cycle_is_refused():
    """Groups 0 -> 1 -> 2 and 0 -> 2: contracting 0 and 2 would make 1 both before and after them."""
    from cpsched.fusion import _would_cycle
    h = nx.DiGraph([(0, 1), (1, 2), (0, 2)])
    lo = hi = [0, 1, 2]
    assert _would_cycle(h, 0, 2, lo, hi)
    assert not _would_cycle(h, 0, 1, lo, hi) and not _would_cycle(h, 1, 2, lo, hi)


def test_load_input_fuses_models_only():
    from cpsched.inputs import load_input
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inst = load_input("squeezenet", platform="edge", fuse="standard")
    assert len(inst.tasks) == 39 and inst.groups["n0"] == ("n0", "n1")
    with pytest.raises(InputError, match="fuse='x'"):
        load_input("squeezenet", platform="edge", fuse="x")
    with pytest.raises(InputError, match="fuse='elementwise': applies only to ONNX models"):
        load_input("some.json", fuse="elementwise")
