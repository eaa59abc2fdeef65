"""Build one BERT-base transformer encoder layer as an ONNX graph.

Shapes: batch 1, sequence 128, hidden 768, 12 heads of dim 64, FFN 3072.
Opset 17, IR version 8.  GELU is written as its exact Erf decomposition
``x * 0.5 * (1 + erf(x / sqrt(2)))`` so that runtimes without the opset-20
``Gelu`` operator can run it.

Graph inputs:
  * ``hidden``    float32 [1, 128, 768]
  * ``attn_mask`` float32 [1, 1, 1, 128], an additive attention mask
    (0 for kept positions, large negative for masked ones), broadcast over
    heads and query positions as in BERT.
Graph output:
  * ``out``       float32 [1, 128, 768]

The layer follows the post-LN BERT layout, preceded by an input
LayerNormalization (as the embedding LayerNorm in BERT):
  LN -> Q/K/V projections -> split heads -> QK^T / 8 + mask -> Softmax
  -> x V -> merge heads -> output projection -> residual -> LN
  -> FFN (768 -> 3072, GELU, 3072 -> 768) -> residual -> LN.

Weights are small deterministic random values (``np.random.default_rng(0)``)
and are saved as ONNX external data (``bert_layer.weights``), which is not
committed; run ``python models/make_bert_layer.py`` to regenerate both files.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_files


BATCH = 1
SEQ = 128
HIDDEN = 768
HEADS = 12
HEAD_DIM = 64
FFN = 3072
LN_EPS = 1e-12

NAME = "bert_layer"


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def weight(name: str, shape: tuple[int, ...], scale: float = 0.02) -> str:
        arr = (rng.standard_normal(shape) * scale).astype(np.float32)
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(arr, name))
        return name

    def ln_params(prefix: str) -> tuple[str, str]:
        g = const(f"{prefix}.gamma",
                  (1.0 + 0.02 * rng.standard_normal(HIDDEN)).astype(np.float32))
        b = const(f"{prefix}.beta",
                  (0.02 * rng.standard_normal(HIDDEN)).astype(np.float32))
        return g, b

    def node(op: str, inputs: list[str], output: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def layer_norm(x: str, prefix: str) -> str:
        g, b = ln_params(prefix)
        return node("LayerNormalization", [x, g, b], f"{prefix}.out",
                    axis=-1, epsilon=LN_EPS)

    def linear(x: str, prefix: str, d_in: int, d_out: int) -> str:
        w = weight(f"{prefix}.weight", (d_in, d_out))
        b = weight(f"{prefix}.bias", (d_out,))
        mm = node("MatMul", [x, w], f"{prefix}.matmul")
        return node("Add", [mm, b], f"{prefix}.out")

    # Shape / scalar constants (int64 shapes and float scalars).
    heads_shape = const("const.heads_shape",
                        np.array([BATCH, SEQ, HEADS, HEAD_DIM], dtype=np.int64))
    merge_shape = const("const.merge_shape",
                        np.array([BATCH, SEQ, HIDDEN], dtype=np.int64))
    sqrt_hd = const("const.sqrt_head_dim",
                    np.array(math.sqrt(HEAD_DIM), dtype=np.float32))
    sqrt2 = const("const.sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    one = const("const.one", np.array(1.0, dtype=np.float32))
    half = const("const.half", np.array(0.5, dtype=np.float32))

    # Input LayerNorm.
    x0 = layer_norm("hidden", "ln_in")

    # Attention.
    def heads(prefix: str, perm: list[int]) -> str:
        p = linear(x0, prefix, HIDDEN, HIDDEN)
        r = node("Reshape", [p, heads_shape], f"{prefix}.reshape")
        return node("Transpose", [r], f"{prefix}.transpose", perm=perm)

    q = heads("attn.q", [0, 2, 1, 3])   # [1, 12, 128, 64]
    k = heads("attn.k", [0, 2, 3, 1])   # [1, 12, 64, 128]  (K^T)
    v = heads("attn.v", [0, 2, 1, 3])   # [1, 12, 128, 64]
    scores = node("MatMul", [q, k], "attn.scores")            # [1,12,128,128]
    scaled = node("Div", [scores, sqrt_hd], "attn.scaled")
    masked = node("Add", [scaled, "attn_mask"], "attn.masked")
    probs = node("Softmax", [masked], "attn.probs", axis=-1)
    ctx = node("MatMul", [probs, v], "attn.context")           # [1,12,128,64]
    ctx_t = node("Transpose", [ctx], "attn.context_t", perm=[0, 2, 1, 3])
    ctx_m = node("Reshape", [ctx_t, merge_shape], "attn.context_merged")
    attn_out = linear(ctx_m, "attn.out", HIDDEN, HIDDEN)
    res1 = node("Add", [attn_out, x0], "attn.residual")
    x1 = layer_norm(res1, "ln_attn")

    # Feed-forward network with Erf-based GELU.
    h = linear(x1, "ffn.in", HIDDEN, FFN)                      # [1,128,3072]
    g_div = node("Div", [h, sqrt2], "ffn.gelu.div")
    g_erf = node("Erf", [g_div], "ffn.gelu.erf")
    g_add = node("Add", [g_erf, one], "ffn.gelu.add")
    g_mul = node("Mul", [h, g_add], "ffn.gelu.mul")
    g_out = node("Mul", [g_mul, half], "ffn.gelu.out")
    f = linear(g_out, "ffn.out", FFN, HIDDEN)
    res2 = node("Add", [f, x1], "ffn.residual")
    g, b = ln_params("ln_ffn")
    node("LayerNormalization", [res2, g, b], "out", axis=-1, epsilon=LN_EPS)

    graph = helper.make_graph(
        nodes,
        NAME,
        inputs=[
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT,
                                          [BATCH, SEQ, HIDDEN]),
            helper.make_tensor_value_info("attn_mask", TensorProto.FLOAT,
                                          [BATCH, 1, 1, SEQ]),
        ],
        outputs=[helper.make_tensor_value_info("out", TensorProto.FLOAT,
                                               [BATCH, SEQ, HIDDEN])],
        initializer=inits,
    )
    return onnx_files.finish(graph, "One BERT-base encoder layer (seq 128, hidden 768, 12 heads).")



if __name__ == "__main__":
    onnx_files.main(build, NAME, Path(__file__).resolve().parent)
