"""Measured operator costs: profile a model with onnxruntime, use the times, check predictions.

Four jobs, each a function:

* :func:`profile` runs an ONNX model with onnxruntime (graph optimisations off,
  ``ORT_DISABLE_ALL``, so every ONNX node stays one kernel; one warm-up run,
  then ``runs`` profiled runs) and returns a ``cpsched-costs/1`` table: the
  median and 90th-percentile time of every node, keyed by the node names
  :func:`cpsched.io.onnx.read_onnx` gives the tasks;
* :func:`cpsched.costs.load_costs` reads such a file back into a validated
  :class:`~cpsched.costs.CostTable`; :func:`cpsched.lowering.to_instance`
  (``costs={device: table}``, or a ``costs:`` field of a platform device) then
  takes the measured durations for the nodes it finds;
* :func:`measure` times whole-model inference with the same settings as
  :func:`profile`, so the two compare like for like;
* :func:`predict` is cpsched's latency for "every task on one device"
  (:func:`~cpsched.heuristics.heft.list_schedule`, then
  :func:`~cpsched.validator.objectives`).

The costs file (JSON, times in us)::

    {"format": "cpsched-costs/1", "model": "alexnet", "device": "cpu",
     "provider": "CPUExecutionProvider", "threads": 1, "runs": 20,
     "machine": {...}, "onnxruntime": "1.32.0", "date": "2025-...", "unit": "us",
     "nodes": {"n0": {"median": 3809.0, "p90": 3901.5, "op": "Conv"},
               "ConstantOfShape_1": {"median": 107.0, "p90": 110.0, "op": "ConstantOfShape",
                                     "folded": true}}}

``threads`` is null for onnxruntime's default.  ``nodes`` holds every node onnxruntime
ran.  Nodes that cpsched folds into
weights (the ``ConstantOfShape`` nodes that stand for the weights of the
bundled ``light_*`` models) are marked ``"folded": true``: their times are
recorded but match no task.  Their total, :attr:`~cpsched.costs.CostTable.folded_us`, is time
onnxruntime spends in every run that no cpsched prediction contains.

onnxruntime is imported only when a model is run.  With the CUDA provider the
``_kernel_time`` events time the host side of each (asynchronous) kernel
launch, not the kernel on the device; treat such tables with care.
"""

from __future__ import annotations

import datetime
import json
import os
import platform as _platform
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx

from cpsched.costs import FORMAT, UNIT
from cpsched.errors import InputError, NoSchedule
from cpsched.heuristics.heft import list_schedule
from cpsched.instance import Instance
from cpsched.io.onnx import (BUNDLED, _unique_names, bundled_dir, fold_constants, graph_inputs, load_model,
                             pin_dims, read_onnx, resolve_model)
from cpsched.validator import objectives

WARMUP = 1
"""Runs before the timed (or profiled) ones: the first run allocates the memory arena."""


# ----- running a model ------------------------------------------------------------------------


def _ort():
    try:
        import onnxruntime
    except ImportError:  # pragma: no cover - a runtime dependency
        raise InputError("onnxruntime is not installed (pip install onnxruntime)") from None
    return onnxruntime


def _model_name(spec: str | Path, path: Path) -> str:
    return str(spec) if str(spec) in BUNDLED and path.parent == bundled_dir() else path.stem


def random_inputs(model: onnx.ModelProto, dims: Mapping[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    """Random data for every graph input, of its (dim-pinned) shape and dtype; InputError for a free dim."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for vi in graph_inputs(model.graph):
        tt = vi.type.tensor_type
        if vi.type.WhichOneof("value") != "tensor_type" or not tt.HasField("shape"):
            raise InputError(f"input {vi.name!r}: not a tensor of known rank")
        shape = []
        for k, d in enumerate(tt.shape.dim):
            if d.WhichOneof("value") == "dim_value":
                shape.append(d.dim_value)
            elif d.dim_param:
                raise InputError(f"input {vi.name!r}: dim {d.dim_param!r} is symbolic; "
                                 f"pin it: dims={{{d.dim_param!r}: VALUE}} (CLI: --dim {d.dim_param}=VALUE)")
            else:
                raise InputError(f"input {vi.name!r}: dim {k} is unknown")
        dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type))
        feeds[vi.name] = random_input(vi.name, shape, dtype, rng)
    return feeds


def random_input(name: str, shape: list[int], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Random data for one input: standard normal floats, zeros for integers and booleans
    (valid as indices too)."""
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    if dtype.kind in "iub":
        return np.zeros(shape, dtype)
    raise InputError(f"input {name!r}: no random data for element type {dtype}")


def session(path: Path, provider: str, threads: int | None, dims: Mapping[str, int], profile_dir: str | None = None,
            optimisation: str = "ORT_DISABLE_ALL"):
    """An onnxruntime session, sequential, on ``provider`` only, graph optimisations off (or at the
    ``GraphOptimizationLevel`` named ``optimisation``: a quantised model needs its Q/DQ pairs fused)."""
    ort = _ort()
    available = ort.get_available_providers()
    if provider not in available:
        raise InputError(f"provider {provider!r} is not available here (available: {', '.join(available)})")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise InputError(f"threads must be an integer >= 1 (got {threads!r})")
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, optimisation)
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = threads or 0  # 0: onnxruntime's default
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    for name, value in dims.items():
        so.add_free_dimension_override_by_name(name, value)
    if profile_dir is not None:
        so.enable_profiling = True
        so.profile_file_prefix = str(Path(profile_dir) / "ort")
    providers = [provider] if provider == "CPUExecutionProvider" else [provider, "CPUExecutionProvider"]
    try:
        sess = ort.InferenceSession(str(path), so, providers=providers)
    except Exception as exc:  # noqa: BLE001 -- onnxruntime raises its own exception types
        raise InputError(f"{path}: onnxruntime cannot load the model ({' '.join(str(exc).split())[:300]})") from None
    if sess.get_providers()[0] != provider:
        raise InputError(f"provider {provider!r} failed to initialise (session uses {sess.get_providers()})")
    return sess


def _prepare(spec: str | Path, dims: Mapping[str, int] | None):
    path = resolve_model(spec)
    dims = dict(dims or {})
    try:
        model = load_model(path)
        pin_dims(model, dims)
        feeds = random_inputs(model, dims)
    except InputError as exc:
        raise exc.in_file(path) from None
    return path, model, dims, feeds


def _run(sess, feeds: dict) -> None:
    wanted = {i.name for i in sess.get_inputs()}
    try:
        sess.run(None, {k: v for k, v in feeds.items() if k in wanted})
    except Exception as exc:  # noqa: BLE001 -- onnxruntime raises its own exception types
        raise InputError(f"onnxruntime failed to run the model on random inputs "
                         f"({' '.join(str(exc).split())[:300]})") from None


def _machine() -> dict:
    uname = _platform.uname()
    cpu = _platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"processor": cpu or uname.machine, "system": uname.system, "release": uname.release,
            "machine": uname.machine, "cpu_count": os.cpu_count()}


def node_names(model: onnx.ModelProto) -> tuple[dict[int, str], set[int]]:
    """Node index -> name, the names :func:`~cpsched.io.onnx.read_onnx` gives tasks, and the folded indices.

    Task nodes are named exactly as ``build_graph`` names them (the same
    functions); folded nodes get ``name or {op_type}_{index}`` made unique
    against every other name.
    """
    graph = model.graph
    _, folded = fold_constants(graph)
    names = _unique_names((i, n) for i, n in enumerate(graph.node) if i not in folded)
    names.update(_unique_names(((i, graph.node[i]) for i in sorted(folded)), taken=set(names.values())))
    return names, folded


def _node_times(events: list, model: onnx.ModelProto) -> dict[int, list[float]]:
    """Node index -> its time (us) in each profiled run, from the profile's ``_kernel_time`` events.

    Runs are the ``model_run`` spans; the first :data:`WARMUP` are dropped.  An
    event belongs to top-level node ``i`` when its ``node_index`` is ``i``, its
    ``op_name`` is the node's op type and, for a named node, its name is
    ``{name}_kernel_time`` (nodes inside subgraphs fail these checks).
    """
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e.get("cat") == "Session" and e.get("name") == "model_run")[WARMUP:]
    graph = model.graph
    per_run: list[dict[int, float]] = [{} for _ in runs]
    starts = [a for a, _ in runs]
    for e in events:
        if e.get("cat") != "Node" or not str(e.get("name", "")).endswith("_kernel_time"):
            continue
        args = e.get("args", {})
        try:
            i = int(args.get("node_index"))
        except (TypeError, ValueError):
            continue
        if not 0 <= i < len(graph.node):
            continue
        node = graph.node[i]
        if args.get("op_name") != node.op_type or (node.name and e["name"] != f"{node.name}_kernel_time"):
            continue
        r = int(np.searchsorted(starts, e["ts"], side="right")) - 1
        if r < 0 or e["ts"] > runs[r][1]:
            continue  # the warm-up, or outside any run
        per_run[r][i] = per_run[r].get(i, 0.0) + float(e["dur"])
    times: dict[int, list[float]] = {}
    for run in per_run:
        for i, us in run.items():
            times.setdefault(i, []).append(us)
    return times


def profile(model_spec: str | Path, device: str, provider: str = "CPUExecutionProvider", runs: int = 20,
            threads: int | None = None, dims: Mapping[str, int] | None = None) -> dict:
    """Per-node times of a model under onnxruntime: the ``cpsched-costs/1`` dict for ``device``.

    Graph optimisations are off (nodes stay one-to-one with the ONNX nodes),
    execution is sequential with ``threads`` intra-op threads (None:
    onnxruntime's default), inputs are random data of the model's input
    shapes (``dims`` pins symbolic dims as for ``read_onnx``; a free one is an
    InputError).  One warm-up run, then ``runs`` profiled runs; each node gets
    the median and p90 of its per-run time.  ``device`` only labels the
    table: it is the platform device the times stand for.

    >>> table = profile("squeezenet", "cpu", runs=2, threads=1)  # doctest: +SKIP
    >>> table["nodes"]["conv1"]["median"] > 0                      # doctest: +SKIP
    True
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise InputError(f"runs must be an integer >= 1 (got {runs!r})")
    path, model, dims, feeds = _prepare(model_spec, dims)
    names, folded = node_names(model)
    with tempfile.TemporaryDirectory(prefix="cpsched-profile-") as tmp:
        sess = session(path, provider, threads, dims, tmp)
        for _ in range(WARMUP + runs):
            _run(sess, feeds)
        trace = sess.end_profiling()
        with open(trace, encoding="utf-8") as fh:
            events = json.load(fh)
    nodes = {}
    for i, samples in sorted(_node_times(events, model).items()):
        median = max(float(np.median(samples)), 1e-3)  # a 0 us event is below the profiler's resolution
        p90 = max(float(np.percentile(samples, 90)), median)
        entry = {"median": median, "p90": p90, "op": model.graph.node[i].op_type}
        if i in folded:
            entry["folded"] = True
        nodes[names[i]] = entry
    return {"format": FORMAT, "model": _model_name(model_spec, path), "device": device, "provider": provider,
            "threads": threads, "runs": runs, "machine": _machine(), "onnxruntime": _ort().__version__,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "optimisation": "ORT_DISABLE_ALL", "unit": UNIT, "nodes": nodes}


def measure(model_spec: str | Path, runs: int = 20, threads: int | None = None,
            provider: str = "CPUExecutionProvider", dims: Mapping[str, int] | None = None) -> dict:
    """Whole-model inference latency under onnxruntime, with :func:`profile`'s settings (optimisations off).

    One warm-up run, then ``runs`` timed runs (wall clock around ``run``,
    profiling off).  Returns ``p50_us``, ``p99_us``, ``mean_us``,
    ``throughput_per_s`` (inferences per second, sequential, 1e6 / mean) and
    ``runs``, plus the settings (``provider``, ``threads``, ``optimisation``,
    ``onnxruntime``).
    """
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise InputError(f"runs must be an integer >= 1 (got {runs!r})")
    path, _, dims, feeds = _prepare(model_spec, dims)
    sess = session(path, provider, threads, dims, None)
    for _ in range(WARMUP):
        _run(sess, feeds)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        _run(sess, feeds)
        times.append((time.perf_counter_ns() - t0) / 1000)
    mean = float(np.mean(times))
    return {"p50_us": float(np.percentile(times, 50)), "p99_us": float(np.percentile(times, 99)),
            "mean_us": mean, "throughput_per_s": 1e6 / mean, "runs": runs, "provider": provider,
            "threads": threads, "optimisation": "ORT_DISABLE_ALL", "onnxruntime": _ort().__version__}


# ----- predictions ----------------------------------------------------------------------------


def predict(instance: Instance, device: str) -> int:
    """cpsched's latency (us) with every task on ``device``: list scheduling, objectives recomputed.

    Graph inputs still start on the host, so a non-host device pays their
    transfer.  InputError when the device is unknown or does not run some task.
    """
    if not instance.has_device(device):
        raise InputError(f"instance {instance.name}: no device {device!r} "
                         f"(it has {', '.join(d.id for d in instance.devices)})")
    unsupported = [t for t in instance.tasks if device not in t.choices]
    if unsupported:
        t = unsupported[0]
        raise InputError(f"device {device!r} does not run {len(unsupported)} tasks of {instance.name} "
                         f"(e.g. {t.id!r}, op {t.op})")
    try:
        schedule = list_schedule(instance, {t.id: device for t in instance.tasks})
    except NoSchedule as exc:
        raise InputError(f"everything on {device!r}: {exc}") from None
    return objectives(instance, schedule)[0]["latency"]


def against_predictions(model_spec: str | Path, device: str, platform: str | Path = "edge",
                        costs: str | Path | None = None, runs: int = 20, threads: int | None = None,
                        provider: str = "CPUExecutionProvider", dims: Mapping[str, int] | None = None) -> dict:
    """:func:`measure` beside cpsched's predicted latency for everything on ``device`` of
    ``platform``: with the roofline, and (``costs``: a cost table) with measured node times.

    The result is :func:`measure`'s with ``device``, ``platform``, ``predicted`` (per kind: the
    latency and its relative error against p50) and, with ``costs``, ``folded_us``: the time
    per run in nodes cpsched folds, inside the measurement and outside every prediction.
    """
    from cpsched.costs import load_costs
    from cpsched.lowering import to_instance
    from cpsched.platforms import load_platform

    plat = load_platform(platform)
    graph = read_onnx(model_spec, dims)
    predicted = {"roofline": predict(to_instance(graph, plat.with_costs(device, None)), device)}
    table = load_costs(costs) if costs is not None else None
    if table is not None:
        predicted["calibrated"] = predict(to_instance(graph, plat, costs={device: table}), device)
    run = measure(model_spec, runs=runs, threads=threads, provider=provider, dims=dims)
    return {**run, "device": device, "platform": plat.name,
            "predicted": {k: {"latency_us": v, "error": relative_error(v, run["p50_us"])}
                          for k, v in predicted.items()},
            **({"folded_us": table.folded_us} if table is not None else {})}


def relative_error(predicted: float, measured_us: float) -> float:
    """(predicted - measured) / measured."""
    return (predicted - measured_us) / measured_us
