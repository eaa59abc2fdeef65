"""Operator cost model, part 1: what one ONNX operator computes and moves.

:func:`node_cost` maps an operator (its type, attributes and the shapes of its
inputs and outputs) to a :class:`Cost`: FLOPs, multiply-accumulates and bytes
moved.  These device-independent counts feed a roofline when a graph is priced
on a platform.  A MAC counts as 2 FLOPs; ``bytes`` is every input read (weights
included) plus every output written, once.  Counts are estimates of the
arithmetic a straightforward kernel performs, not of any library's tricks.

Operands are ``(shape, element size in bytes)`` pairs, in ONNX input order with
the constant inputs (weights) included, so that a Conv sees its kernel shape.

>>> conv = node_cost("Conv", {}, [((1, 3, 8, 8), 4), ((16, 3, 3, 3), 4)], [((1, 16, 6, 6), 4)], 0)
>>> conv.macs, conv.flops   # 16*6*6 outputs, each 3*3*3 MACs
(15552, 31104)
>>> node_cost("NoSuchOp", {}, [], [], 0) is None
True
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

Shape = tuple[int, ...]
Operand = tuple[Shape, int]  # (shape, element size in bytes)
Rule = Callable[[Mapping, list[Shape], list[Shape]], tuple[int, int]]  # -> (flops, macs)


@dataclass(frozen=True)
class Cost:
    """Work of one operator: ``flops`` (a MAC is 2), ``macs`` (Conv/Gemm/MatMul-like, else 0), ``bytes`` moved."""

    flops: int
    macs: int
    bytes: int


def numel(shape: Sequence[int]) -> int:
    """Number of elements of a tensor of this shape (1 for a scalar)."""
    return math.prod(shape)


def bytes_only(inputs: Sequence[Operand], outputs: Sequence[Operand], weights: int = 0) -> Cost:
    """The cost of an operator whose arithmetic is not modelled: only the bytes it moves."""
    moved = sum(numel(shape) * size for shape, size in (*inputs, *outputs))
    return Cost(0, 0, moved + weights)


def node_cost(
    op: str, attrs: Mapping, inputs: Sequence[Operand], outputs: Sequence[Operand], weights: int = 0
) -> Cost | None:
    """FLOPs, MACs and bytes of one operator, or None when ``op`` has no rule.

    ``weights`` is the byte size of constants the operator reads that are not
    among ``inputs`` (outer-scope constants of a control-flow body); it only
    adds to ``bytes``.
    """
    rule = _RULES.get(op)
    if rule is None:
        return None
    flops, macs = rule(attrs, [tuple(s) for s, _ in inputs], [tuple(s) for s, _ in outputs])
    return Cost(flops, macs, bytes_only(inputs, outputs, weights).bytes)


# ----- rules: (attrs, input shapes, output shapes) -> (flops, macs) --------------------------


def _conv(weight: int, bias: int | None) -> Rule:
    """Conv-like, with the weight and bias at these input positions: each output element takes
    (C_in/group) * prod(kernel) MACs (one filter: the weight shape without its output-channel
    dim), plus one add when a bias is given."""

    def rule(attrs, ins, outs):
        out = numel(outs[0])
        macs = out * numel(ins[weight][1:])
        has_bias = bias is not None and len(ins) > bias
        return 2 * macs + (out if has_bias else 0), macs

    return rule


def _conv_transpose(attrs, ins, outs):
    """Each input element scatters into (C_out/group) * prod(kernel) outputs: W is (C_in, C_out/group, k...)."""
    macs = numel(ins[0]) * numel(ins[1][1:])
    bias = numel(outs[0]) if len(ins) > 2 else 0
    return 2 * macs + bias, macs


def _gemm(attrs, ins, outs):
    """Y = alpha * A' B' + beta * C: M*N*K MACs, plus one add per output for C."""
    a = ins[0]
    k = a[0] if attrs.get("transA", 0) else a[1]
    out = numel(outs[0])
    macs = out * k
    return 2 * macs + (out if len(ins) > 2 else 0), macs


def _matmul(a_index: int) -> Rule:
    """Batched, broadcasting matrix product: each output element is a dot product over A's last dim
    (also for 1-D operands, whose dims numpy drops from the output)."""

    def rule(attrs, ins, outs):
        macs = numel(outs[0]) * ins[a_index][-1]
        return 2 * macs, macs

    return rule


def _recurrent(attrs, ins, outs):
    """RNN/GRU/LSTM: per time step and batch row, every direction multiplies its gate weights
    W (gates*H x I) and R (gates*H x H) by a vector; X is (seq, batch, I) or (batch, seq, I)."""
    x, w, r = ins[0], ins[1], ins[2]
    macs = x[0] * x[1] * (numel(w) + numel(r))
    return 2 * macs, macs


def _pool(attrs, ins, outs):
    """Windowed pooling: one operation per kernel element per output element."""
    return numel(outs[0]) * numel(attrs.get("kernel_shape", ())), 0


def _lrn(attrs, ins, outs):
    """LRN: a sum of ``size`` squares per element, then scale, bias, power and divide."""
    return numel(outs[0]) * (2 * attrs.get("size", 1) + 4), 0


def _per_output(factor: int) -> Rule:
    """``factor`` FLOPs per element of the first output (element-wise and normalisation ops)."""
    return lambda attrs, ins, outs: (factor * numel(outs[0]), 0)


def _per_input(factor: int) -> Rule:
    """``factor`` FLOPs per element of the first input (reductions, global pooling)."""
    return lambda attrs, ins, outs: (factor * numel(ins[0]), 0)


def _variadic(extra: int) -> Rule:
    """Sum/Max/Min (extra=-1: n-1 ops per output) and Mean (extra=0: n adds and a divide)."""
    return lambda attrs, ins, outs: (max(0, len(ins) + extra) * numel(outs[0]), 0)


def _resize(attrs, ins, outs):
    """Resize/Upsample: nearest copies; (bi)linear weighs 4 taps, cubic 16 (2-D images)."""
    mode = attrs.get("mode", b"nearest")
    mode = mode.decode() if isinstance(mode, bytes) else str(mode)
    taps = {"linear": 4, "bilinear": 4, "cubic": 16}.get(mode, 0)
    return 2 * taps * numel(outs[0]), 0


def _data_movement(attrs, ins, outs):
    """Copies, views and index computations: no arithmetic, only bytes."""
    return 0, 0


_CHEAP = (
    "Add Sub Mul Div Relu Abs Neg Floor Ceil Round Sign Clip Reciprocal Mod Not And Or Xor "
    "Equal Less LessOrEqual Greater GreaterOrEqual Where BitShift BitwiseAnd BitwiseOr BitwiseXor "
    "BitwiseNot IsNaN IsInf ThresholdedRelu Shrink Hardmax ArgMax ArgMin CumSum"
).split()
_TWO = "LeakyRelu PRelu QuantizeLinear DequantizeLinear".split()
_TRANSCENDENTAL = (
    "Sigmoid Tanh Exp Log Sqrt Pow Erf Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh "
    "Softplus Softsign Elu Selu Celu HardSigmoid HardSwish"
).split()
_DATA = (
    "Concat Split Reshape Transpose Flatten Squeeze Unsqueeze Gather GatherElements GatherND "
    "Dropout Identity Cast CastLike Pad Slice Shape Size Expand Tile DepthToSpace SpaceToDepth "
    "Scatter ScatterElements ScatterND NonZero Range OneHot ReverseSequence Trilu Compress "
    "ConstantOfShape EyeLike"
).split()

_RULES: dict[str, Rule] = {
    "Conv": _conv(1, 2),
    "ConvInteger": _conv(1, None),
    "QLinearConv": _conv(3, 8),
    "ConvTranspose": _conv_transpose,
    "Gemm": _gemm,
    "MatMul": _matmul(0),
    "MatMulInteger": _matmul(0),
    "QLinearMatMul": _matmul(0),
    "RNN": _recurrent,
    "GRU": _recurrent,
    "LSTM": _recurrent,
    "BatchNormalization": _per_output(2),  # inference: one scale and one shift per element
    "InstanceNormalization": _per_output(8),  # mean, variance, normalise, scale, shift
    "LayerNormalization": _per_output(8),
    "GroupNormalization": _per_output(8),
    "MeanVarianceNormalization": _per_output(8),
    "LpNormalization": _per_output(3),
    "LRN": _lrn,
    "MaxPool": _pool,
    "AveragePool": _pool,
    "LpPool": _pool,
    "GlobalAveragePool": _per_input(1),
    "GlobalMaxPool": _per_input(1),
    "GlobalLpPool": _per_input(2),
    "Softmax": _per_output(5),  # max, subtract, exp, sum, divide
    "LogSoftmax": _per_output(5),
    "Gelu": _per_output(8),
    "Mish": _per_output(8),
    "Sum": _variadic(-1),
    "Max": _variadic(-1),
    "Min": _variadic(-1),
    "Mean": _variadic(0),
    "Resize": _resize,
    "Upsample": _resize,
    **{op: _per_input(1) for op in "ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL1".split()},
    **{op: _per_input(2) for op in "ReduceL2 ReduceSumSquare ReduceLogSum ReduceLogSumExp".split()},
    **{op: _per_output(1) for op in _CHEAP},
    **{op: _per_output(2) for op in _TWO},
    **{op: _per_output(4) for op in _TRANSCENDENTAL},
    **{op: _data_movement for op in _DATA},
}

