"""ONNX front end: a model file becomes an :class:`~cpsched.opgraph.OpGraph`.

The steps, each a function of its own:

1. :func:`resolve_model` finds the file (a path, or the name of a model bundled
   with the ``onnx`` package's backend tests);
2. :func:`load_model` reads the graph without its weights: external data is
   never followed, so a model naming ``../../etc/passwd`` is harmless;
3. :func:`pin_dims` fixes symbolic input dims (``dims={'N': 1}``) and
   :func:`infer_shapes` runs ONNX shape inference with data propagation, so
   every activation gets a static shape;
4. :func:`fold_constants` folds constants: initializers, ``Constant`` and
   every deterministic standard op whose inputs are all constant (transitively:
   ``ConstantOfShape``, shape arithmetic on constants, ``Identity`` of a weight);
   they become ``weights`` of the nodes that read them, never tasks;
5. :func:`build_graph` makes one :class:`~cpsched.opgraph.OpNode` per remaining
   node, sizes every activation tensor in bytes and costs every node with
   :func:`cpsched.costmodel.node_cost`.

>>> g = read_onnx("squeezenet")
>>> len(g.nodes), g.nodes[0].op
(66, 'Conv')
"""

from __future__ import annotations

import tempfile
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import onnx
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TypeProto

from cpsched.costmodel import Cost, Operand, bytes_only, node_cost, numel
from cpsched.errors import InputError, ParameterError
from cpsched.files import exists
from cpsched.io.bundled import BUNDLED, bundled_dir
from cpsched.opgraph import OpGraph, OpNode, OpTensor

PROTO_LIMIT = onnx.checker.MAXIMUM_PROTOBUF
"""Models larger than this (2 GiB) cannot be serialised in memory: shape inference goes through files."""

_STANDARD_DOMAINS = ("", "ai.onnx")
_RANDOM_OPS = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                         "Multinomial", "Bernoulli"})


def resolve_model(spec: str | Path) -> Path:
    """The model file ``spec`` names: an existing path, else a :data:`BUNDLED` name."""
    path = Path(spec)
    if exists(path):
        return path
    if str(spec) in BUNDLED:
        bundled = bundled_dir() / BUNDLED[str(spec)]
        if not bundled.exists():
            raise InputError(f"{spec}: bundled model missing from the onnx package ({bundled})")
        return bundled
    raise InputError(f"{spec}: no such file, nor a bundled model ({', '.join(BUNDLED)})")


def read_onnx(spec: str | Path, dims: Mapping[str, int] | None = None) -> OpGraph:
    """Read an ONNX model (a path or a bundled name) into an OpGraph.

    ``dims`` pins symbolic input dims by name.  Errors are one-line
    :class:`InputError` messages naming the file; op types without a cost rule
    are costed by bytes only, listed in ``unknown_ops`` and reported in one
    warning.
    """
    path = resolve_model(spec)
    dims = dict(dims or {})
    try:
        model = load_model(path)
        pin_dims(model, dims)
        graph = build_graph(infer_shapes(model))
    except InputError as exc:
        raise exc.in_file(path) from None
    name = str(spec) if str(spec) in BUNDLED and path.parent == bundled_dir() else path.stem
    opset = next((o.version for o in model.opset_import if o.domain in _STANDARD_DOMAINS), None)
    if graph.unknown_ops:
        listed = ", ".join(f"{op} x{n}" for op, n in graph.unknown_ops.items())
        warnings.warn(f"{path}: no cost model for {len(graph.unknown_ops)} op types (bytes only): {listed}",
                      stacklevel=2)
    return OpGraph(name, graph.nodes, graph.tensors, graph.unknown_ops,
                   {"source": str(path), "dims": dims, "opset": opset})


# ----- loading and shapes -------------------------------------------------------------------


def load_model(path: Path) -> ModelProto:
    """Parse the model's protobuf, leaving external data (weights) unread."""
    try:
        model = onnx.load(path, load_external_data=False)
    except Exception as exc:  # noqa: BLE001 -- DecodeError, OSError, ...: all "not a model" to the user
        raise InputError(f"not an ONNX model ({_one_line(exc)})") from None
    if model.ir_version < 1 or not model.HasField("graph"):
        raise InputError("not an ONNX model (no IR version or no graph)")
    return model


def graph_inputs(graph: GraphProto) -> list[onnx.ValueInfoProto]:
    """The real inputs: older IR versions also list every initializer as an input."""
    constants = _initializer_names(graph)
    return [vi for vi in graph.input if vi.name not in constants]


def pin_dims(model: ModelProto, dims: Mapping[str, int]) -> None:
    """Give every dim whose ``dim_param`` is a key of ``dims`` that value (inputs, outputs, value_info)."""
    symbolic = sorted({d.dim_param for vi in graph_inputs(model.graph) for d in _dims(vi.type) if d.dim_param})
    for name, value in dims.items():
        if name not in symbolic:
            have = ", ".join(symbolic) if symbolic else "none"
            raise ParameterError("dims", {name: value}, f"the model has no symbolic input dim {name!r} "
                                 f"(it has: {have})")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ParameterError("dims", {name: value}, "the value must be an integer >= 1")
    graph = model.graph
    for vi in (*graph.input, *graph.output, *graph.value_info):
        for d in _dims(vi.type):
            if d.dim_param in dims:
                d.dim_value = dims[d.dim_param]  # clears dim_param (a oneof)


def infer_shapes(model: ModelProto) -> ModelProto:
    """ONNX shape inference with data propagation, non-strict (what it cannot infer stays unknown).

    Models over :data:`PROTO_LIMIT` go through files: the weights of ``model`` move out to
    external data in a temporary folder (they are not needed afterwards) and
    :func:`onnx.shape_inference.infer_shapes_path` reads the model from there.
    """
    options = {"strict_mode": False, "data_prop": True}
    try:
        if model.ByteSize() <= PROTO_LIMIT:
            return onnx.shape_inference.infer_shapes(model, **options)
        with tempfile.TemporaryDirectory(prefix="cpsched-onnx-") as tmp:
            src, dst = Path(tmp) / "model.onnx", Path(tmp) / "inferred.onnx"
            onnx.save_model(model, src, save_as_external_data=True, location="weights.bin")
            onnx.shape_inference.infer_shapes_path(src, dst, **options)
            return onnx.load(dst, load_external_data=False)
    except Exception as exc:  # noqa: BLE001 -- onnx C++ errors share no Python base class
        raise InputError(f"shape inference failed ({_one_line(exc)})") from None


# ----- constants ----------------------------------------------------------------------------


def fold_constants(graph: GraphProto) -> tuple[set[str], set[int]]:
    """The constant values (initializers and outputs of folded nodes) and the folded node indices.

    A node folds when it is a ``Constant``, or a deterministic op of the standard
    domain with at least one input and only constant inputs (outer-scope names
    of its subgraphs included).  Nodes are visited in file order, which ONNX
    requires to be topological; an input defined nowhere before is an error.
    """
    constant = _initializer_names(graph)
    defined = constant | {vi.name for vi in graph.input}
    folded = set()
    for index, node in enumerate(graph.node):
        inputs = _node_inputs(node)
        for name in inputs:
            if name not in defined:
                raise InputError(f"node {_label(node, index)}: input {name!r} is not defined before it "
                                 "(the graph is not topologically sorted)")
        if _folds(node, inputs, constant):
            constant.update(o for o in node.output if o)
            folded.add(index)
        defined.update(o for o in node.output if o)
    return constant, folded


def _folds(node: NodeProto, inputs: list[str], constant: set[str]) -> bool:
    if node.domain not in _STANDARD_DOMAINS or node.op_type in _RANDOM_OPS:
        return False
    if node.op_type == "Constant":
        return True
    return bool(inputs) and all(name in constant for name in inputs)


def _node_inputs(node: NodeProto) -> list[str]:
    """Every value a node reads, without duplicates: its inputs ('' optional slots skipped),
    then the outer-scope names its subgraphs (If/Loop/Scan bodies) refer to."""
    return list(dict.fromkeys([*(x for x in node.input if x), *_outer_names(node)]))


def _outer_names(node: NodeProto) -> dict[str, None]:
    names: dict[str, None] = {}
    for attr in node.attribute:
        subgraphs = [attr.g] if attr.type == AttributeProto.GRAPH else attr.graphs
        for sub in subgraphs:
            names.update(_free_names(sub))
    return names


def _free_names(graph: GraphProto) -> dict[str, None]:
    """Names a subgraph uses but does not define."""
    defined = _initializer_names(graph) | {vi.name for vi in graph.input}
    free: dict[str, None] = {}
    for node in graph.node:
        free.update((x, None) for x in _node_inputs(node) if x not in defined)
        defined.update(node.output)
    free.update((vi.name, None) for vi in graph.output if vi.name not in defined)
    return free


def _initializer_names(graph: GraphProto) -> set[str]:
    return {t.name for t in graph.initializer} | {s.values.name for s in graph.sparse_initializer}


# ----- the OpGraph --------------------------------------------------------------------------


def build_graph(model: ModelProto) -> OpGraph:
    """One OpNode per node that does not fold; every activation tensor sized; nodes costed.

    The result's name and meta are left empty for :func:`read_onnx` to fill.
    """
    graph = model.graph
    constant, folded = fold_constants(graph)
    types = _value_types(graph)
    tasks = [(i, node) for i, node in enumerate(graph.node) if i not in folded]
    names = _unique_names(tasks)
    outputs = {vi.name for vi in graph.output}
    used = outputs | {x for i, node in tasks for x in _node_inputs(node)}
    producer = {o: names[i] for i, node in tasks for o in node.output if o in used}
    consumers: dict[str, list[str]] = {}
    nodes, unknown = [], Counter()
    for i, node in tasks:
        op_node, known = _op_node(names[i], node, constant, used, types)
        nodes.append(op_node)
        if not known:
            unknown[op_node.op] += 1
        for name in op_node.inputs:
            consumers.setdefault(name, []).append(op_node.name)
    activations = [vi.name for vi in graph_inputs(graph) if vi.name in consumers]
    activations += [o for o in producer]
    tensors = []
    for name in activations:
        shape, itemsize, dtype = _tensor_type(name, types)
        tensors.append(OpTensor(name, itemsize * numel(shape), producer.get(name),
                                tuple(consumers.get(name, ())), name in outputs and name in producer,
                                shape, dtype))
    return OpGraph("", tuple(nodes), tuple(tensors), dict(unknown.most_common()))


def _op_node(name: str, node: NodeProto, constant: set[str], used: set[str], types: dict) -> tuple[OpNode, bool]:
    """The OpNode of a task node, and whether the cost model knew its op type.

    Outputs nothing reads (and that are not graph outputs, e.g. Dropout's mask) are dropped:
    runtimes skip them and shape inference often leaves them unsized.
    """
    reads = _node_inputs(node)
    explicit = [x for x in node.input if x]
    weights = sum(_nbytes(_tensor_type(x, types)) for x in reads if x in constant)
    outer_weights = sum(_nbytes(_tensor_type(x, types)) for x in reads if x in constant and x not in explicit)
    ins = [_operand(x, types) for x in explicit]
    produced = [x for x in node.output if x in used]
    outs = [_operand(x, types) for x in produced]
    op = node.op_type if node.domain in _STANDARD_DOMAINS else f"{node.domain}.{node.op_type}"
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    cost: Cost | None = node_cost(op, attrs, ins, outs, outer_weights)
    known = cost is not None
    if cost is None:
        cost = bytes_only(ins, outs, outer_weights)
    activations = tuple(x for x in reads if x not in constant)
    return OpNode(name, op, activations, tuple(produced), weights=weights,
                  flops=cost.flops, bytes=cost.bytes, macs=cost.macs), known


def _unique_names(tasks: Iterable[tuple[int, NodeProto]], taken: set[str] | None = None) -> dict[int, str]:
    """Node index -> a unique task name: the node's name, else ``{op_type}_{index}``; repeats get ``_2``, ``_3``...

    Names in ``taken`` are avoided too (and the new ones added to it).
    """
    wanted = {i: node.name or f"{node.op_type}_{i}" for i, node in tasks}
    taken = set() if taken is None else taken
    names = {}
    for i, base in wanted.items():
        name, k = base, 1
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        names[i] = name
    return names


def _label(node: NodeProto, index: int) -> str:
    return repr(node.name) if node.name else f"#{index} ({node.op_type})"


# ----- types and sizes ----------------------------------------------------------------------


def _value_types(graph: GraphProto) -> dict[str, tuple[list | None, int]]:
    """Value name -> (dims or None, ONNX element type); a dim is an int, a ``dim_param`` str or None."""
    types = {}
    for vi in (*graph.input, *graph.value_info, *graph.output):
        types[vi.name] = (_shape(vi.type), vi.type.tensor_type.elem_type)
    for t in graph.initializer:
        types[t.name] = (list(t.dims), t.data_type)
    for s in graph.sparse_initializer:
        types[s.values.name] = (list(s.dims), s.values.data_type)
    return types


def _shape(tp: TypeProto) -> list | None:
    if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
        return None
    return [d.dim_value if d.WhichOneof("value") == "dim_value" else (d.dim_param or None)
            for d in tp.tensor_type.shape.dim]


def _dims(tp: TypeProto):
    return tp.tensor_type.shape.dim if tp.WhichOneof("value") == "tensor_type" else ()


def _tensor_type(name: str, types: dict) -> tuple[tuple[int, ...], int, str]:
    """(static shape, element size in bytes, dtype name) of a value, or an InputError naming it."""
    dims, elem = types.get(name, (None, 0))
    if dims is None or elem == 0:
        raise InputError(f"tensor {name!r}: type or shape unknown (shape inference could not infer it)")
    if not all(isinstance(d, int) for d in dims):
        shown = "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"
        symbolic = [d for d in dims if isinstance(d, str)]
        hint = f"; pin it: dims={{{symbolic[0]!r}: VALUE}} (CLI: --dim {symbolic[0]}=VALUE)" if symbolic else ""
        raise InputError(f"tensor {name!r}: size unknown (shape {shown}){hint}")
    dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem))
    return tuple(dims), dtype.itemsize, dtype.name


def _operand(name: str, types: dict) -> Operand:
    shape, itemsize, _ = _tensor_type(name, types)
    return shape, itemsize


def _nbytes(spec: tuple[tuple[int, ...], int, str]) -> int:
    shape, itemsize, _ = spec
    return itemsize * numel(shape)


def _one_line(exc: Exception) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
