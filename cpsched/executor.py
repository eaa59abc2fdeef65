"""Run an exported plan with onnxruntime, time it, and check it against the unsplit model.

:class:`Executor` loads one onnxruntime session per subgraph of a plan
(:mod:`cpsched.subgraphs`), on its device's execution provider with the device's
thread count, graph optimisations off as in :mod:`cpsched.profiling` (so
that measured node times and the run compare like for like).  One run:

* one worker thread per device (kept across runs) runs that device's
  subgraphs in the plan's order, each as soon as all its inputs are on the
  device;
* one worker thread per link makes the plan's transfers, each a copy of the
  tensor (a new array), in the order the tensors become ready;
* graph inputs start on the host; every subgraph and copy is recorded as an
  :class:`Event` (its span from the run's start), so a run can be checked
  against the plan.

:func:`run_plan` times ``runs`` runs after ``warmup`` (:func:`measure`: p50, p99,
throughput of back-to-back runs), sets the predicted makespan beside them, and
compares each graph output with the unsplit model run on the same inputs (max
absolute error, cosine similarity; :func:`summary`).  :func:`run_front` does this for every point of a front
(the points' runs interleaved) and says whether the measured order of the
points agrees with the predicted one (Kendall's tau).
"""

from __future__ import annotations

import contextlib
import queue
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from cpsched.errors import InputError
from cpsched.files import exists
from cpsched.plan import Plan, load_plan
from cpsched.profiling import random_input, relative_error, session

ATOL = 1e-4
"""Default tolerance on the max absolute error of a plan's outputs (fp32)."""


@dataclass(frozen=True)
class Event:
    """A subgraph (``kind`` "subgraph", ``id`` the part, ``where`` its device) or a copy
    (``kind`` "transfer", ``id`` the tensor, ``where`` "src->dst"), in us from the run's start."""

    kind: str
    id: str
    where: str
    start_us: float
    end_us: float


@dataclass
class Report:
    """What :func:`run_plan` measured (times in us)."""

    runs: int
    warmup: int
    p50_us: float
    p99_us: float
    mean_us: float
    throughput_per_s: float
    predicted_us: int | None
    error: float | None  # (predicted - p50) / p50
    outputs: dict[str, dict[str, float]] = field(default_factory=dict)  # name -> max_abs, cosine
    trace: list[Event] = field(default_factory=list)  # the last run's
    atol: float = ATOL
    modelled: list[str] = field(default_factory=list)  # devices without a provider: run on the CPU
    #: a mixed-precision plan: its int8 nodes, the error proxy the solver used and the measured error
    precision: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> list[str]:
        """The outputs whose max absolute error is above ``atol``."""
        return [k for k, v in self.outputs.items() if not v["max_abs"] <= self.atol]

    def to_dict(self) -> dict:
        return {"runs": self.runs, "warmup": self.warmup, "p50_us": self.p50_us, "p99_us": self.p99_us,
                "mean_us": self.mean_us, "throughput_per_s": self.throughput_per_s,
                "predicted_us": self.predicted_us, "error": self.error, "atol": self.atol,
                "outputs": self.outputs, "failed": self.failed, "modelled": self.modelled,
                **({"precision": self.precision} if self.precision else {}),
                "trace": [vars(e) for e in self.trace]}


@dataclass
class _Run:
    """One run's state, shared by the workers: the tensors on each device, the events, a failure."""

    plan: Plan
    store: dict[tuple[str, str], np.ndarray]
    links: dict[tuple[str, str], queue.Queue]
    origin: int = field(default_factory=time.perf_counter_ns)
    ready: threading.Condition = field(default_factory=threading.Condition)
    events: list[Event] = field(default_factory=list)
    failure: list[BaseException] = field(default_factory=list)
    finished: int = 0

    def now(self) -> float:
        return (time.perf_counter_ns() - self.origin) / 1000

    def send(self, source: str | None) -> None:
        """Queue the copies of what ``source`` (a part; None: the graph inputs) made."""
        for c in self.plan.copies:
            if c.source == source:
                self.links[c.src, c.dst].put(c)

    def wait_for(self, names: Sequence[str], device: str) -> dict[str, np.ndarray] | None:
        """The tensors ``names`` on ``device`` once all are there (None: the run failed)."""
        with self.ready:
            self.ready.wait_for(lambda: self.failure or all((n, device) in self.store for n in names))
            return None if self.failure else {n: self.store[n, device] for n in names}

    def put(self, values: Mapping[str, np.ndarray], device: str, event: Event) -> None:
        with self.ready:
            self.store.update(((n, device), v) for n, v in values.items())
            self.events.append(event)
            self.ready.notify_all()

    def fail(self, exc: BaseException) -> None:
        with self.ready:
            self.failure.append(exc)
            self.ready.notify_all()
        for q in self.links.values():
            q.put(None)

    def done(self) -> None:
        with self.ready:
            self.finished += 1
            self.ready.notify_all()


class Executor:
    """The sessions of a plan's subgraphs and one worker thread per device and per link, kept
    across runs (a fresh thread per run would pay its start and fresh memory in every run)."""

    def __init__(self, plan: Plan, folder: str | Path):
        self.plan = plan
        folder = Path(folder)
        self.sessions = {}
        for part in plan.parts:
            path = folder / part.file
            if not exists(path):
                raise InputError(f"{folder}: subgraph file {part.file!r} of {part.id} is missing")
            settings = plan.devices[part.device]
            self.sessions[part.id] = session(path, settings.get("provider") or "CPUExecutionProvider",
                                             settings.get("threads"), {})
        self.links = sorted({(c.src, c.dst) for c in plan.copies})
        self.devices = list(dict.fromkeys(p.device for p in plan.parts))
        self._inbox: dict[Any, queue.Queue] = {}
        for worker, body in [*((d, self._device) for d in self.devices), *((l, self._link) for l in self.links)]:
            self._inbox[worker] = queue.Queue()
            threading.Thread(target=self._serve, args=(worker, body), daemon=True).start()

    def close(self) -> None:
        """Stop the worker threads."""
        for inbox in self._inbox.values():
            inbox.put(None)

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, feeds: Mapping[str, np.ndarray], everything: bool = False
            ) -> tuple[dict[str, np.ndarray], list[Event], float]:
        """One run: the graph outputs (``everything``: every tensor a subgraph made), the events,
        and the wall time (us)."""
        plan = self.plan
        run = _Run(plan, {(name, plan.host): feeds[name] for name in feeds},
                   {link: queue.Queue() for link in self.links})
        for inbox in self._inbox.values():
            inbox.put(run)
        run.send(None)
        with run.ready:
            run.ready.wait_for(lambda: run.finished == len(self._inbox))
        wall = run.now()
        if run.failure:
            exc = run.failure[0]
            raise InputError(f"the plan failed to run: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}")
        made = {o: p.device for p in plan.parts for o in p.outputs}
        names = list(made) if everything else plan.outputs
        outputs = {name: run.store[name, made.get(name, plan.host)] for name in names}
        return outputs, sorted(run.events, key=lambda e: (e.start_us, e.kind, e.id)), wall

    def _serve(self, worker, body) -> None:
        while True:
            run = self._inbox[worker].get()
            if run is None:
                return
            try:
                body(run, worker)
            except BaseException as exc:  # noqa: BLE001 -- handed to the caller
                run.fail(exc)
            finally:
                run.done()

    def _device(self, run: _Run, device: str) -> None:
        """Run ``device``'s parts in order, each once its inputs are on the device."""
        for part in self.plan.on(device):
            feed = run.wait_for(part.inputs, device)
            if feed is None:
                return
            start = run.now()
            outs = self.sessions[part.id].run(list(part.outputs), feed)
            run.put(dict(zip(part.outputs, outs)), device, Event("subgraph", part.id, device, start, run.now()))
            run.send(part.id)

    def _link(self, run: _Run, link: tuple[str, str]) -> None:
        """Make the link's copies in the order their tensors become ready."""
        src, dst = link
        for _ in range(sum(1 for c in self.plan.copies if (c.src, c.dst) == link)):
            copy = run.links[link].get()
            if copy is None:
                return
            value = run.wait_for([copy.tensor], src)
            if value is None:
                return
            start = run.now()
            moved = np.array(value[copy.tensor], copy=True)
            run.put({copy.tensor: moved}, dst, Event("transfer", copy.tensor, f"{src}->{dst}", start, run.now()))


def golden_inputs(plan: Plan, path: str | Path | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    """The plan's graph inputs: from an ``.npz`` file (every input, of its shape and dtype), else
    random data with a fixed seed (:func:`cpsched.profiling.random_input`)."""
    specs = {s["name"]: s for s in plan.inputs}
    if path is None:
        rng = np.random.default_rng(seed)
        feeds = {}
        for name, spec in specs.items():
            shape = spec.get("shape") or []
            if not all(isinstance(d, int) for d in shape):
                raise InputError(f"input {name!r}: shape {shape} is not static (export with --dim)")
            feeds[name] = random_input(name, shape, np.dtype(spec.get("dtype", "float32")), rng)
        return feeds
    try:
        with np.load(path, allow_pickle=False) as data:
            given = {k: data[k] for k in data.files}
    except Exception as exc:  # noqa: BLE001 -- any unreadable file is one error line
        raise InputError(f"{path}: not a readable .npz file ({' '.join(str(exc).split())[:200]})") from None
    for name, spec in specs.items():
        if name not in given:
            raise InputError(f"{path}: no array for input {name!r}")
        shape, dtype = spec.get("shape"), spec.get("dtype")
        if shape and all(isinstance(d, int) for d in shape) and list(given[name].shape) != list(shape):
            raise InputError(f"{path}: input {name!r} has shape {list(given[name].shape)}, the model wants {shape}")
        if dtype and str(given[name].dtype) != dtype:
            raise InputError(f"{path}: input {name!r} is {given[name].dtype}, the model wants {dtype}")
    return {name: given[name] for name in specs}


def reference_outputs(plan: Plan, feeds: Mapping[str, np.ndarray], model: str | Path | None = None,
                      names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """The unsplit model's values of ``names`` (default: the graph outputs) on ``feeds``, on the
    CPU, graph optimisations off; ``model`` defaults to the plan's source model."""
    from cpsched.io.onnx import resolve_model

    source = model or plan.model.get("source")
    if not source:
        raise InputError("the plan names no model to compare with (give --reference MODEL)")
    path = resolve_model(source)
    names = list(names or plan.outputs)
    dims = dict(plan.model.get("dims", {}))
    with tempfile.TemporaryDirectory(prefix="cpsched-reference-") as tmp:
        if set(names) - set(plan.outputs):
            path = _exposing(path, names, dims, Path(tmp))
        sess = session(path, "CPUExecutionProvider", None, dims)  # the session holds the model: tmp may go
    wanted = {i.name for i in sess.get_inputs()}
    return dict(zip(names, sess.run(names, {k: v for k, v in feeds.items() if k in wanted})))


def _exposing(path: Path, names: Sequence[str], dims: Mapping[str, int], folder: Path) -> Path:
    """A copy of the model in ``folder`` whose graph outputs are ``names``."""
    import onnx

    from cpsched.io.onnx import infer_shapes, pin_dims

    model = onnx.load(path)
    pin_dims(model, dims)
    model = infer_shapes(model)
    infos = {vi.name: vi for vi in (*model.graph.value_info, *model.graph.output)}
    del model.graph.output[:]
    model.graph.output.extend(infos[n] if n in infos else onnx.helper.make_empty_tensor_value_info(n) for n in names)
    out = folder / path.name
    onnx.save(model, out)
    return out


def compare(got: Mapping[str, np.ndarray], want: Mapping[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """Per name: the max absolute error and the cosine similarity (1 for two zero tensors)."""
    out = {}
    for name, ref in want.items():
        a, b = np.asarray(got[name], np.float64).ravel(), np.asarray(ref, np.float64).ravel()
        if a.shape != b.shape:
            out[name] = {"max_abs": float("inf"), "cosine": 0.0}
            continue
        na, nb = np.linalg.norm(a), np.linalg.norm(b)
        cosine = 1.0 if na == nb == 0 else float(a @ b / (na * nb)) if na and nb else 0.0
        out[name] = {"max_abs": float(np.max(np.abs(a - b), initial=0.0)), "cosine": cosine}
    return out


def measure(executors: Sequence[Executor], feeds: Mapping[str, np.ndarray], runs: int, warmup: int
            ) -> list[tuple[list[float], dict[str, np.ndarray], list[Event]]]:
    """Per executor: the wall times (us) of ``runs`` runs after ``warmup``, the last run's outputs
    and events.  The runs are interleaved, one run of each executor in turn, so that a drift of
    the machine's speed during the measurement does not order the plans."""
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise InputError(f"runs must be an integer >= 1 (got {runs!r})")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise InputError(f"warmup must be an integer >= 0 (got {warmup!r})")
    for executor in executors:
        for _ in range(warmup):
            executor.run(feeds)
    results: list[tuple[list[float], dict, list[Event]]] = [([], {}, []) for _ in executors]
    for _ in range(runs):
        for k, executor in enumerate(executors):
            outputs, trace, wall = executor.run(feeds)
            results[k] = (results[k][0] + [wall], outputs, trace)
    return results


def summary(plan: Plan, measured: tuple[list[float], dict[str, np.ndarray], list[Event]],
            want: Mapping[str, np.ndarray], warmup: int, atol: float = ATOL) -> Report:
    """The :class:`Report` of one plan's measurement (:func:`measure`) against the reference
    outputs ``want``."""
    times, outputs, trace = measured
    mean = float(np.mean(times))
    p50 = float(np.percentile(times, 50))
    predicted = plan.predicted.get("latency")
    return Report(len(times), warmup, p50, float(np.percentile(times, 99)), mean, 1e6 / mean, predicted,
                  None if predicted is None else relative_error(predicted, p50), compare(outputs, want), trace,
                  atol, [d for d, settings in plan.devices.items() if not settings.get("provider")])


def run_plan(folder: str | Path, runs: int = 20, warmup: int = 3, golden: str | Path | None = None,
             atol: float = ATOL, reference: str | Path | None = None) -> Report:
    """Execute the plan in ``folder`` (module docstring); ``reference`` overrides the model that the
    outputs are compared with."""
    plan = load_plan(folder)
    feeds = golden_inputs(plan, golden)
    with Executor(plan, folder) as executor:
        measured = measure([executor], feeds, runs, warmup)[0]
    report = summary(plan, measured, reference_outputs(plan, feeds, reference), warmup, atol)
    chosen = plan.model.get("precision")
    if chosen:
        from cpsched.quantization import measured_error

        error = measured_error(plan.model["source"], chosen["int8"], chosen.get("calibration", 8),
                               chosen.get("seed", 0), dict(plan.model.get("dims", {})))
        report = replace(report, precision={"int8": len(chosen["int8"]), "proxy": chosen.get("error"),
                                            "measured": error})
    return report


def kendall_tau(predicted: Sequence[float], measured: Sequence[float]) -> float | None:
    """Kendall's tau-b between two orders (None for fewer than two points or a constant one)."""
    from scipy.stats import kendalltau

    if len(predicted) < 2:
        return None
    tau = kendalltau(predicted, measured).statistic
    return None if tau is None or np.isnan(tau) else float(tau)


def run_front(front, instance, runs: int = 20, warmup: int = 3, golden: str | Path | None = None,
              atol: float = ATOL, reference: str | Path | None = None, platform=None) -> dict[str, Any]:
    """Every point of ``front`` exported (to a temporary folder) and run, the points' runs
    interleaved (:func:`measure`): the predicted and measured latency per point and Kendall's
    tau between the two orders (``platform``: the instance's, when it is not the preset its
    name says)."""
    from cpsched.subgraphs import export

    with tempfile.TemporaryDirectory(prefix="cpsched-front-") as tmp, contextlib.ExitStack() as stack:
        plans, executors = [], []
        for k, point in enumerate(front.points, 1):
            folder = Path(tmp) / f"point{k}"
            plans.append(export(point.schedule, instance, folder, platform))
            executors.append(stack.enter_context(Executor(plans[-1], folder)))
        feeds = golden_inputs(plans[0], golden)
        want = reference_outputs(plans[0], feeds, reference)
        measured = measure(executors, feeds, runs, warmup)
    rows = []
    for k, (point, plan, m) in enumerate(zip(front.points, plans, measured), 1):
        report = summary(plan, m, want, warmup, atol)
        rows.append({"point": k, "values": list(point.values), "predicted_us": report.predicted_us,
                     "p50_us": report.p50_us, "p99_us": report.p99_us, "error": report.error,
                     "max_abs": max((v["max_abs"] for v in report.outputs.values()), default=0.0),
                     "failed": report.failed})
    tau = kendall_tau([r["predicted_us"] for r in rows], [r["p50_us"] for r in rows])
    return {"objectives": list(front.objectives), "points": rows, "kendall_tau": tau}
