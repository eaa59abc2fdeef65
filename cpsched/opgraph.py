"""A device-independent operator graph: what a model reader produces, before any platform.

The ONNX reader (:mod:`cpsched.io.onnx`) turns a model into an :class:`OpGraph`
(constants folded into weights, every activation tensor sized in bytes, every
node costed in FLOPs and bytes moved); :mod:`cpsched.lowering` then prices it
on a platform to make an :class:`~cpsched.instance.Instance`.  Keeping the two
apart lets ``inspect`` report a model without a platform and lets one graph be
lowered onto several platforms.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class OpNode:
    """One operator: a future task.

    ``weights`` is the byte size of the constants it reads (folded
    initializers and constant subgraphs, counted in full for each consumer);
    ``flops`` and ``bytes`` (activations read and written plus weights read)
    feed the roofline; ``macs`` is reported for Conv/Gemm/MatMul-like ops (0 else).
    A node made by :func:`cpsched.fusion.fuse` lists the original nodes it
    stands for in ``members`` and their op types in ``member_ops`` (both empty
    for an unfused node); it runs only where every member op is supported.
    """

    name: str
    op: str
    inputs: tuple[str, ...]  # activation tensors consumed (no constants)
    outputs: tuple[str, ...]  # activation tensors produced
    weights: int = 0
    flops: int = 0
    bytes: int = 0
    macs: int = 0
    workspace: int = 0
    members: tuple[str, ...] = ()  # original node names of a fused node, in chain order
    member_ops: tuple[str, ...] = ()  # their op types

    @property
    def ops(self) -> tuple[str, ...]:
        """The op types a device must support to run this node: the member ops, else ``op``."""
        return self.member_ops or (self.op,)


@dataclass(frozen=True)
class OpTensor:
    """An activation tensor: a graph input (no producer) or some node's output."""

    name: str
    size: int  # bytes
    producer: str | None
    consumers: tuple[str, ...] = ()
    output: bool = False
    shape: tuple[int, ...] = ()
    dtype: str = ""


@dataclass(frozen=True)
class OpGraph:
    """Nodes in a topological order, their tensors, and what the reader could not cost."""

    name: str
    nodes: tuple[OpNode, ...]
    tensors: tuple[OpTensor, ...]
    unknown_ops: Mapping[str, int] = field(default_factory=dict)  # op type -> count (bytes-only cost)
    meta: Mapping[str, object] = field(default_factory=dict)  # e.g. source path, dims pinned
