"""Precision from real quantisation: ``cpsched quantize`` measures each node's int8 time and sensitivity.

For one model and one platform device, :func:`quantize` writes a
``cpsched-precisions/1`` table (:mod:`cpsched.precisions`):

1. the model with its weights, nodes named as cpsched names its tasks
   (:func:`cpsched.subgraphs` preparation), its opset raised to 13 where lower
   (per-channel Q/DQ needs it).  The bundled ``light_*`` models carry constant
   placeholder weights, under which every output is the same and every error 0;
   their weights are replaced by seeded He-normal ones (biases 0), recorded as
   ``"weights": "random"``;
2. onnxruntime static quantisation (QDQ format, int8 weights per channel,
   int8 activations, MinMax calibration on ``calibration`` seeded random
   inputs) of every Conv, Gemm and MatMul;
3. times: the fp32 model profiled as ``cpsched profile`` does (optimisations
   off, one kernel per node) and the all-int8 model profiled with onnxruntime's
   extended optimisations, which fuse each node's Q/DQ pairs into one int8
   kernel (QLinearConv, QGemm, ...) under the node's name; the (de)quantisation
   of activations at precision boundaries is not attributed to any node;
4. sensitivity: for each node, the model with only that node quantised, run
   on ``golden`` fixed random inputs and compared with fp32 over every output
   value: the max absolute error and ``1 - cosine similarity``; its ``error``
   is the latter in ppm, rounded up.  The ``error`` objective (PROBLEM.md
   section 6) sums these: an additive **proxy** for the error of a mixed
   precision model.  The table records the all-int8 model's measured error
   beside the sum of the sensitivities, to show how far the proxy is off.

:func:`measured_error` quantises exactly a schedule's int8 nodes and measures
the real end-to-end error, to set beside the proxy the solver used.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import math
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from cpsched.errors import InputError
from cpsched.precisions import ERROR_UNIT, FORMAT

QUANTISABLE = ("Conv", "Gemm", "MatMul")
"""Op types quantised to int8 (the compute-bound ones onnxruntime has int8 kernels for)."""
OPSET = 13
GOLDEN = 4
METHOD = ("onnxruntime static quantisation: QDQ format, int8 weights per channel, int8 activations, "
          "MinMax calibration on seeded random inputs")
PROXY = ("sum over the int8 nodes of each node's error measured with only that node quantised "
         "(an additive proxy for the error of the mixed-precision model)")
MEASURE = "1 - cosine similarity of all output values against fp32 on fixed random inputs, in ppm, rounded up"


def quantize(model_spec: str | Path, device: str, calibration: int = 8, seed: int = 0, runs: int = 10,
             threads: int | None = None, dims: Mapping[str, int] | None = None,
             progress: Callable[[str], None] | None = None) -> dict:
    """The ``cpsched-precisions/1`` dict of ``model_spec`` for platform device ``device`` (module docstring).

    ``runs`` profiled runs per model (after one warm-up), ``threads`` intra-op
    threads (None: onnxruntime's default), ``progress`` gets a line per node.
    """
    from cpsched import profiling

    if isinstance(calibration, bool) or not isinstance(calibration, int) or calibration < 1:
        raise InputError(f"calibration must be an integer >= 1 (got {calibration!r})")
    say = progress or (lambda line: None)
    with tempfile.TemporaryDirectory(prefix="cpsched-quantize-") as tmp:
        folder = Path(tmp)
        model, weights, dims = _prepared(model_spec, dims or {}, seed)
        fp32 = folder / "fp32.onnx"
        onnx.save(model, fp32)
        nodes = [n for n in model.graph.node if n.op_type in QUANTISABLE]
        if not nodes:
            raise InputError(f"{model_spec}: no node to quantise (none of {', '.join(QUANTISABLE)})")
        golden = [profiling.random_inputs(model, dims, seed + 1 + k) for k in range(GOLDEN)]
        calibrate = [profiling.random_inputs(model, dims, seed + 1000 + k) for k in range(calibration)]
        reference = _outputs(fp32, golden, dims)
        int8 = folder / "int8.onnx"
        _quantised(fp32, int8, calibrate, [n.name for n in nodes])
        say(f"quantised {len(nodes)} nodes; profiling fp32 and int8")
        fp32_us = _times(fp32, runs, threads, dims, "ORT_DISABLE_ALL")
        int8_us = _times(int8, runs, threads, dims, "ORT_ENABLE_EXTENDED")
        whole = _error(reference, _outputs(int8, golden, dims))
        table = {}
        for k, node in enumerate(nodes, 1):
            if node.name not in fp32_us or node.name not in int8_us:
                say(f"{node.name}: no time measured in both precisions, left out")
                continue
            one = folder / "one.onnx"
            _quantised(fp32, one, calibrate, [node.name])
            err = _error(reference, _outputs(one, golden, dims))
            table[node.name] = {"op": node.op_type, "fp32_us": fp32_us[node.name], "int8_us": int8_us[node.name],
                                **err}
            say(f"[{k}/{len(nodes)}] {node.name} ({node.op_type}): {fp32_us[node.name]:.0f} -> "
                f"{int8_us[node.name]:.0f} us, error {err['error']} ppm")
    from cpsched.profiling import _machine, _model_name, _ort
    from cpsched.io.onnx import resolve_model

    return {"format": FORMAT, "model": _model_name(model_spec, resolve_model(model_spec)), "device": device,
            "precision": "int8", "provider": "CPUExecutionProvider", "threads": threads, "runs": runs,
            "calibration": calibration, "golden": GOLDEN, "seed": seed, "weights": weights, "method": METHOD,
            "error": {"unit": ERROR_UNIT, "measure": MEASURE, "proxy": PROXY},
            "machine": _machine(), "onnxruntime": _ort().__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "nodes": table, "all_int8": whole,
            "sum_of_errors": sum(e["error"] for e in table.values())}


def measured_error(model_spec: str | Path, int8_nodes: Iterable[str], calibration: int = 8, seed: int = 0,
                   dims: Mapping[str, int] | None = None) -> dict:
    """The real error of the model with exactly ``int8_nodes`` quantised (the rest fp32), measured
    as :func:`quantize` measures sensitivities (same weights, inputs and calibration for the same
    ``seed`` and ``calibration``): ``{"max_abs", "one_minus_cos", "error"}``, ``error`` in ppm."""
    from cpsched import profiling

    nodes = sorted(set(int8_nodes))
    with tempfile.TemporaryDirectory(prefix="cpsched-quantize-") as tmp:
        model, _, dims = _prepared(model_spec, dims or {}, seed)
        fp32 = Path(tmp) / "fp32.onnx"
        onnx.save(model, fp32)
        known = {n.name for n in model.graph.node}
        missing = [n for n in nodes if n not in known]
        if missing:
            raise InputError(f"{model_spec}: no node {missing[0]!r} to quantise")
        golden = [profiling.random_inputs(model, dims, seed + 1 + k) for k in range(GOLDEN)]
        reference = _outputs(fp32, golden, dims)
        if not nodes:
            return {"max_abs": 0.0, "one_minus_cos": 0.0, "error": 0}
        mixed = Path(tmp) / "mixed.onnx"
        calibrate = [profiling.random_inputs(model, dims, seed + 1000 + k) for k in range(calibration)]
        _quantised(fp32, mixed, calibrate, nodes)
        return _error(reference, _outputs(mixed, golden, dims))


def save_precisions(table: dict, path: str | Path) -> None:
    from cpsched.files import write_json

    write_json(path, table)


# ----- steps ----------------------------------------------------------------------------------


def _prepared(model_spec: str | Path, dims: Mapping[str, int], seed: int) -> tuple[onnx.ModelProto, str, dict]:
    """The model as exported plans hold it, opset >= :data:`OPSET`, and whose weights it runs with."""
    from cpsched.io.onnx import resolve_model
    from cpsched.subgraphs import with_weights

    path = resolve_model(model_spec)
    model = with_weights(path, dims)
    weights = "model"
    if _placeholders(model):
        _randomise(model, seed)
        weights = "random"
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), OPSET)
    if opset < OPSET:
        from onnx import version_converter

        try:
            model = version_converter.convert_version(model, OPSET)
        except Exception as exc:  # noqa: BLE001 -- the converter raises many types
            raise InputError(f"{path}: cannot convert opset {opset} to {OPSET} for quantisation "
                             f"({' '.join(str(exc).split())[:200]})") from None
    return model, weights, dict(dims)


def _weight_inputs(model: onnx.ModelProto) -> dict[str, str]:
    """Initializer name -> the op type of the quantisable node reading it as weights (input 1)."""
    return {n.input[1]: n.op_type for n in model.graph.node if n.op_type in QUANTISABLE and len(n.input) > 1}


def _placeholders(model: onnx.ModelProto) -> bool:
    """True when every weight of a quantisable node is one value repeated (the light models)."""
    names = _weight_inputs(model)
    arrays = [numpy_helper.to_array(t) for t in model.graph.initializer if t.name in names]
    return bool(arrays) and all(a.size > 1 and np.all(a == a.flat[0]) for a in arrays)


def _randomise(model: onnx.ModelProto, seed: int) -> None:
    """He-normal weights (std sqrt(2 / fan_in)) for the quantisable nodes, zero biases; seeded."""
    rng = np.random.default_rng(seed)
    weights = _weight_inputs(model)
    biases = {n.input[2] for n in model.graph.node if n.op_type in QUANTISABLE and len(n.input) > 2}
    for k, t in enumerate(model.graph.initializer):
        a = numpy_helper.to_array(t)
        if a.dtype.kind != "f":
            continue
        if t.name in weights:
            fan_in = int(np.prod(a.shape[1:])) if weights[t.name] == "Conv" else int(a.shape[-1] if a.ndim else 1)
            a = rng.standard_normal(a.shape) * math.sqrt(2.0 / max(1, fan_in))
        elif t.name in biases:
            a = np.zeros_like(a)
        else:
            continue
        model.graph.initializer[k].CopyFrom(numpy_helper.from_array(a.astype(np.float32), t.name))


def _quantised(src: Path, dst: Path, calibrate: Sequence[dict], nodes: Sequence[str]) -> None:
    """Static QDQ int8 quantisation of ``nodes`` (the others stay fp32)."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class _Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter(calibrate)

        def get_next(self):
            return next(self.feeds, None)

    with _quiet():
        quantize_static(str(src), str(dst), _Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                        op_types_to_quantize=list(QUANTISABLE), nodes_to_quantize=list(nodes))


@contextlib.contextmanager
def _quiet():
    """onnxruntime's quantisation tools advise through the root logger: not the user's concern here."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _outputs(path: Path, feeds: Sequence[dict], dims: Mapping[str, int]) -> np.ndarray:
    """Every output value of the model on every feed, flattened into one float64 vector."""
    from cpsched.profiling import session

    sess = session(path, "CPUExecutionProvider", None, dims, optimisation="ORT_ENABLE_EXTENDED")
    wanted = {i.name for i in sess.get_inputs()}
    values = []
    for feed in feeds:
        values += [np.asarray(v, np.float64).ravel() for v in sess.run(None, {k: x for k, x in feed.items()
                                                                               if k in wanted})]
    return np.concatenate(values)


def _error(reference: np.ndarray, got: np.ndarray) -> dict:
    norms = float(np.linalg.norm(reference) * np.linalg.norm(got))
    cosine = float(reference @ got) / norms if norms else float(np.array_equal(reference, got))
    gap = max(0.0, 1.0 - cosine)
    return {"max_abs": float(np.max(np.abs(reference - got))), "one_minus_cos": gap,
            "error": math.ceil(gap * 1e6 - 1e-9)}


def _times(path: Path, runs: int, threads: int | None, dims: Mapping[str, int], optimisation: str) -> dict[str, float]:
    """Node name -> median time (us) over ``runs`` profiled runs; an int8 kernel fused from a
    node's Q/DQ pairs is profiled under the node's name."""
    from cpsched import profiling

    model = onnx.load(path)
    feeds = profiling.random_inputs(model, dims, 0)
    with tempfile.TemporaryDirectory(prefix="cpsched-profile-") as tmp:
        sess = profiling.session(path, "CPUExecutionProvider", threads, dims, tmp, optimisation=optimisation)
        for _ in range(profiling.WARMUP + runs):
            profiling._run(sess, feeds)
        with open(sess.end_profiling(), encoding="utf-8") as fh:
            events = json.load(fh)
    runs_at = sorted(e["ts"] for e in events if e.get("cat") == "Session" and e.get("name") == "model_run")
    first = runs_at[profiling.WARMUP] if len(runs_at) > profiling.WARMUP else 0
    samples: dict[str, list[float]] = {}
    for e in events:
        name = str(e.get("name", ""))
        if e.get("cat") == "Node" and name.endswith("_kernel_time") and e["ts"] >= first:
            samples.setdefault(name[: -len("_kernel_time")], []).append(float(e["dur"]))
    return {name: max(float(np.median(v)), 1e-3) for name, v in samples.items()}
