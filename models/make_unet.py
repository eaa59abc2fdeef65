"""Build a small U-Net-like branchy CNN as an ONNX graph.

Input ``image`` float32 [1, 3, 128, 128]; output ``out`` float32
[1, 2, 128, 128] (per-pixel logits for 2 classes).  Opset 17, IR version 8.

  encoder (3 levels, channels 16 / 32 / 64):
      (Conv 3x3 pad 1 -> BatchNormalization -> Relu) x 2 -> skip, MaxPool 2x2
  bottleneck (128 channels, 16x16):
      (Conv 3x3 -> BatchNormalization -> Relu) x 2
  decoder (3 levels, channels 64 / 32 / 16):
      ConvTranspose 2x2 stride 2 -> Concat with the encoder skip (axis 1)
      -> Conv 3x3 pad 1 -> Relu
  head: Conv 1x1 to 2 classes.

Convolutions followed by BatchNormalization carry no bias; the others do.
Weights are small deterministic random values (``np.random.default_rng(0)``,
He-scaled) and are saved as ONNX external data (``unet_small.weights``),
which is not committed; run ``python models/make_unet.py`` to regenerate.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import onnx_files


IN_CHANNELS = 3
SIZE = 128
CHANNELS = (16, 32, 64)
BOTTLENECK = 128
CLASSES = 2
BN_EPS = 1e-5

NAME = "unet_small"


def build() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def tensor(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(arr.astype(np.float32), name))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def conv(x: str, prefix: str, c_in: int, c_out: int, k: int,
             bias: bool, out: str | None = None) -> str:
        scale = np.sqrt(2.0 / (c_in * k * k))
        w = tensor(f"{prefix}.weight", rng.standard_normal((c_out, c_in, k, k)) * scale)
        ins = [x, w]
        if bias:
            ins.append(tensor(f"{prefix}.bias", 0.01 * rng.standard_normal(c_out)))
        pad = k // 2
        return node("Conv", ins, out or f"{prefix}.out", kernel_shape=[k, k],
                    pads=[pad, pad, pad, pad], strides=[1, 1])

    def batch_norm(x: str, prefix: str, c: int) -> str:
        ins = [
            x,
            tensor(f"{prefix}.scale", 1.0 + 0.05 * rng.standard_normal(c)),
            tensor(f"{prefix}.bias", 0.05 * rng.standard_normal(c)),
            tensor(f"{prefix}.mean", 0.05 * rng.standard_normal(c)),
            tensor(f"{prefix}.var", 1.0 + 0.1 * rng.random(c)),
        ]
        return node("BatchNormalization", ins, f"{prefix}.out", epsilon=BN_EPS)

    def conv_bn_relu(x: str, prefix: str, c_in: int, c_out: int) -> str:
        c = conv(x, f"{prefix}.conv", c_in, c_out, 3, bias=False)
        b = batch_norm(c, f"{prefix}.bn", c_out)
        return node("Relu", [b], f"{prefix}.relu")

    def double_conv(x: str, prefix: str, c_in: int, c_out: int) -> str:
        x = conv_bn_relu(x, f"{prefix}.0", c_in, c_out)
        return conv_bn_relu(x, f"{prefix}.1", c_out, c_out)

    # Encoder.
    x = "image"
    c_in = IN_CHANNELS
    skips: list[tuple[str, int]] = []
    for level, c in enumerate(CHANNELS, start=1):
        s = double_conv(x, f"enc{level}", c_in, c)
        skips.append((s, c))
        x = node("MaxPool", [s], f"enc{level}.pool", kernel_shape=[2, 2],
                 strides=[2, 2])
        c_in = c

    # Bottleneck.
    x = double_conv(x, "bottleneck", c_in, BOTTLENECK)
    c_in = BOTTLENECK

    # Decoder.
    for level in range(len(CHANNELS), 0, -1):
        skip, c = skips[level - 1]
        w = tensor(f"dec{level}.up.weight",
                   rng.standard_normal((c_in, c, 2, 2)) * np.sqrt(2.0 / (c_in * 4)))
        b = tensor(f"dec{level}.up.bias", 0.01 * rng.standard_normal(c))
        up = node("ConvTranspose", [x, w, b], f"dec{level}.up.out",
                  kernel_shape=[2, 2], strides=[2, 2])
        cat = node("Concat", [up, skip], f"dec{level}.concat", axis=1)
        conv_out = conv(cat, f"dec{level}.conv", 2 * c, c, 3, bias=True)
        x = node("Relu", [conv_out], f"dec{level}.relu")
        c_in = c

    # Head.
    conv(x, "head", c_in, CLASSES, 1, bias=True, out="out")

    graph = helper.make_graph(
        nodes,
        NAME,
        inputs=[helper.make_tensor_value_info(
            "image", TensorProto.FLOAT, [1, IN_CHANNELS, SIZE, SIZE])],
        outputs=[helper.make_tensor_value_info(
            "out", TensorProto.FLOAT, [1, CLASSES, SIZE, SIZE])],
        initializer=inits,
    )
    return onnx_files.finish(graph, "Small U-Net (3 levels, 16/32/64/128 channels, 2 classes).")



if __name__ == "__main__":
    onnx_files.main(build, NAME, Path(__file__).resolve().parent)
