"""Operator fusion: a named graph pass from :class:`~cpsched.opgraph.OpGraph` to OpGraph.

In the spirit of TVM's ``FuseOps``, chains of operators that a runtime would
run as one kernel become one node, so that the scheduler places them together
and the intermediate tensors are neither stored nor moved.  Modes:

* ``none`` — the graph unchanged;
* ``elementwise`` — chains of element-wise ops (:data:`ELEMENTWISE`) merge;
* ``standard`` — as ``elementwise`` (with ``BatchNormalization`` counted as
  element-wise, an inference-time per-channel scale and shift), and an anchor
  (:data:`ANCHORS`: Conv, ConvTranspose, Gemm, MatMul) absorbs the chain of
  element-wise ops after it (batch norm, bias or residual Add, activation);
  a Softmax (or LogSoftmax) fuses into its producer whatever that is (a
  trailing softmax), and closes the group.

The merge rule: the last member ``u`` of a group and a node ``v`` fuse when
``u`` has exactly one output, that output is consumed by ``v`` alone and is not
a graph output, the pattern of the mode allows it, and the contracted graph
stays acyclic (checked on every merge).  ``v``'s other activation inputs (a
residual's shortcut) simply become inputs of the group.  Every group is thus
a chain whose intermediates are internal; only its last member's outputs
leave it.

A fused node (two members or more) is named after its first member, its
``op`` is the member ops joined by ``+`` (``Conv+BatchNormalization+Relu``),
``members`` and ``member_ops`` list the originals, and its cost is that of the
group: FLOPs, MACs and weights summed, workspace the largest, and bytes the
group's external inputs and outputs plus the weights it reads (internal
tensors are not moved).  Lowering gives it a mode only on devices that
support every member op.  Unfused nodes are kept as they are.

>>> from cpsched.io.onnx import read_onnx
>>> g = read_onnx("squeezenet")
>>> f = fuse(g, "standard")
>>> len(g.nodes), len(f.nodes), f.nodes[0].op, f.nodes[0].members
(66, 39, 'Conv+Relu', ('n0', 'n1'))
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import networkx as nx

from cpsched.errors import InputError, ParameterError
from cpsched.opgraph import OpGraph, OpNode

MODES = ("none", "elementwise", "standard")
"""The fusion modes, from none to the most aggressive."""

ELEMENTWISE = frozenset((
    "Relu LeakyRelu PRelu Sigmoid Tanh Clip HardSigmoid HardSwish Gelu Mish Elu Selu Celu Softplus "
    "Softsign ThresholdedRelu Shrink "
    "Add Sub Mul Div Pow Sum Max Min Mean Mod Where "
    "Erf Sqrt Exp Log Neg Abs Reciprocal Floor Ceil Round Sign Sin Cos Tan Asin Acos Atan Sinh Cosh "
    "Asinh Acosh Atanh Not And Or Xor Equal Less LessOrEqual Greater GreaterOrEqual IsNaN IsInf "
    "Dropout Identity Cast CastLike QuantizeLinear DequantizeLinear"
).split())
"""Element-wise (and broadcasting element-wise) op types: one output element from the same
position of each input, so a chain of them runs as one loop."""

ANCHORS = frozenset(("Conv", "ConvTranspose", "Gemm", "MatMul"))
"""Op types that, in ``standard`` mode, absorb the element-wise chain after them."""

STANDARD_EPILOGUE = ELEMENTWISE | {"BatchNormalization"}
"""What ``standard`` mode treats as element-wise: after an anchor, or chained with each other."""

TRAILING = frozenset(("Softmax", "LogSoftmax"))
"""Op types that, in ``standard`` mode, fuse into their producer and close the group."""

# group kinds
_ANCHOR, _ELEMENTWISE, _CLOSED, _OPAQUE = "anchor", "elementwise", "closed", "opaque"


def fuse(graph: OpGraph, mode: str) -> OpGraph:
    """The graph with the operator groups of ``mode`` (:data:`MODES`) fused into single nodes.

    ``"none"`` returns ``graph`` itself; an unknown mode is an InputError.  The
    result keeps the graph inputs and outputs, the tensors except the internal
    ones, and a topological node order; ``meta["fusion"]`` records the mode.
    """
    if mode not in MODES:
        raise ParameterError("fuse", mode, f"expected one of {', '.join(MODES)}")
    if mode == "none":
        return graph
    groups = _groups(graph, mode)
    return _contract(graph, groups, mode)


def group_patterns(graph: OpGraph) -> dict[str, int]:
    """Fused op pattern -> how many nodes have it (nodes of two members or more), most common first.

    What ``inspect`` shows for a fused graph, e.g. ``{"Conv+Relu": 26, "GlobalAveragePool+Softmax": 1}``.
    """
    return dict(Counter(n.op for n in graph.nodes if len(n.members) >= 2).most_common())


# ----- grouping -----------------------------------------------------------------------------


def _kind(op: str, mode: str) -> str:
    if mode == "standard":
        if op in ANCHORS:
            return _ANCHOR
        if op in STANDARD_EPILOGUE:
            return _ELEMENTWISE
        if op in TRAILING:
            return _CLOSED
        return _OPAQUE
    return _ELEMENTWISE if op in ELEMENTWISE else _OPAQUE


def _merged_kind(group_kind: str, op: str, mode: str) -> str | None:
    """The kind of a group of ``group_kind`` after ``op`` joins it, or None if the mode forbids it."""
    if mode == "standard":
        if op in TRAILING and group_kind != _CLOSED:
            return _CLOSED
        if group_kind in (_ANCHOR, _ELEMENTWISE) and op in STANDARD_EPILOGUE:
            return group_kind
        return None
    if group_kind == _ELEMENTWISE and op in ELEMENTWISE:
        return _ELEMENTWISE
    return None


def _groups(graph: OpGraph, mode: str) -> list[list[int]]:
    """The groups, as lists of node indices in chain order; every node in exactly one."""
    nodes = graph.nodes
    index = {n.name: i for i, n in enumerate(nodes)}
    tensors = {t.name: t for t in graph.tensors}
    group_of = list(range(len(nodes)))  # node -> group id (the index of the group's first member)
    members: dict[int, list[int]] = {i: [i] for i in range(len(nodes))}
    kind = {i: _kind(n.op, mode) for i, n in enumerate(nodes)}
    # contracted graph over group ids, with the node-position span of each group for pruned searches
    h = nx.DiGraph()
    h.add_nodes_from(range(len(nodes)))
    for t in graph.tensors:
        if t.producer is not None:
            h.add_edges_from((index[t.producer], index[c]) for c in t.consumers)
    lo, hi = list(range(len(nodes))), list(range(len(nodes)))
    for v, node in enumerate(nodes):
        for name in node.inputs:
            t = tensors[name]
            if t.producer is None or t.output or tuple(t.consumers) != (node.name,):
                continue
            u = index[t.producer]
            if nodes[u].outputs != (name,):
                continue
            g = group_of[u]
            if g == group_of[v] or members[g][-1] != u:
                continue
            new_kind = _merged_kind(kind[g], node.op, mode)
            if new_kind is None or _would_cycle(h, g, group_of[v], lo, hi):
                continue
            gv = group_of[v]
            for m in members.pop(gv):
                group_of[m] = g
                members[g].append(m)
            kind[g] = new_kind
            lo[g], hi[g] = min(lo[g], lo[gv]), max(hi[g], hi[gv])
            nx.contracted_nodes(h, g, gv, self_loops=False, copy=False)
            break
    return sorted(members.values(), key=lambda ms: max(ms))


def _would_cycle(h: nx.DiGraph, a: int, b: int, lo: list[int], hi: list[int]) -> bool:
    """Whether contracting groups ``a`` and ``b`` of the DAG ``h`` makes a cycle.

    It does iff a path of two edges or more joins them (either way).  A path from
    ``x`` to ``y`` needs a member of ``x`` before a member of ``y`` in the
    topological node order, so the search skips groups starting after ``y`` ends.
    """
    for src, dst in ((a, b), (b, a)):
        seen = set()
        stack = [s for s in h.successors(src) if s != dst]
        while stack:
            x = stack.pop()
            if x == dst:
                return True
            if x in seen or lo[x] > hi[dst]:
                continue
            seen.add(x)
            stack.extend(h.successors(x))
    return False


# ----- contraction --------------------------------------------------------------------------


def _contract(graph: OpGraph, groups: list[list[int]], mode: str) -> OpGraph:
    nodes = graph.nodes
    owner: dict[str, str] = {}  # original node name -> fused node name
    internal: set[str] = set()
    for ms in groups:
        names = {nodes[i].name for i in ms}
        for n in names:
            owner[n] = nodes[ms[0]].name
        for i in ms[:-1]:
            internal.update(nodes[i].outputs)  # a non-last member's output feeds the next member only
    sizes = {t.name: t.size for t in graph.tensors}
    fused_nodes = []
    for ms in groups:
        if len(ms) == 1:
            fused_nodes.append(nodes[ms[0]])
            continue
        group = [nodes[i] for i in ms]
        inputs = tuple(dict.fromkeys(x for n in group for x in n.inputs if x not in internal))
        outputs = tuple(dict.fromkeys(x for n in group for x in n.outputs if x not in internal))
        weights = sum(n.weights for n in group)
        fused_nodes.append(OpNode(
            name=group[0].name,
            op="+".join(n.op for n in group),
            inputs=inputs,
            outputs=outputs,
            weights=weights,
            flops=sum(n.flops for n in group),
            bytes=sum(sizes[x] for x in (*inputs, *outputs)) + weights,
            macs=sum(n.macs for n in group),
            workspace=max(n.workspace for n in group),
            members=tuple(n.name for n in group),
            member_ops=tuple(n.op for n in group),
        ))
    tensors = []
    for t in graph.tensors:
        if t.name in internal:
            continue
        consumers = tuple(dict.fromkeys(owner[c] for c in t.consumers))
        producer = owner[t.producer] if t.producer is not None else None
        tensors.append(replace(t, producer=producer, consumers=consumers))
    return OpGraph(graph.name, tuple(fused_nodes), tuple(tensors), dict(graph.unknown_ops),
                   {**graph.meta, "fusion": mode})
