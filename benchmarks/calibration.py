"""Calibration: cpsched's predicted latency against a real onnxruntime run, roofline vs measured costs.

    python benchmarks/calibration.py [--models alexnet,squeezenet,resnet50] [--threads 1,all]
        [--profile-runs 10] [--measure-runs 20] [--runs N] [--platform edge] [--device cpu]
        [--out benchmarks/results/calibration.md]

Per model and thread count, on this machine's CPU (onnxruntime's
CPUExecutionProvider, graph optimisations off, sequential): profile the model
(``cpsched.profiling.profile``), time whole-model inference
(``cpsched.profiling.measure``), and predict the latency of "every task on
the CPU" twice: with the roofline costs of the ``--platform`` preset's
``--device`` (the edge preset's phone CPU by default: its figures are not this
machine's, which is the point of calibrating) and with the measured costs.
Errors are (predicted - measured) / measured against the measured p50.

The bundled models are the onnx package's ``light_*`` models, whose weights are
ConstantOfShape nodes that onnxruntime evaluates on every run while cpsched
folds them into weights: the "folded" column is their median time per run
(from the profile), and the last column compares the calibrated prediction
with the p50 minus that time.  Profile and measurement are separate runs, so
on a busy machine they can disagree; run it on a quiet one.
"""

from __future__ import annotations

import argparse
import os
import platform as _platform
import sys
import time
from pathlib import Path

import onnxruntime

from cpsched import profiling
from cpsched.costs import CostTable
from cpsched.io.onnx import read_onnx
from cpsched.lowering import to_instance
from cpsched.platforms import load_platform

DEFAULT_OUT = Path(__file__).parent / "results" / "calibration.md"


def thread_counts(text: str) -> list[int]:
    counts = []
    for item in text.split(","):
        item = item.strip()
        counts.append(os.cpu_count() or 1 if item == "all" else int(item))
    return list(dict.fromkeys(counts))


def pct(x: float) -> str:
    return f"{x:+.1%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="alexnet,squeezenet,resnet50")
    ap.add_argument("--threads", default="1,all", help="comma-separated counts; 'all' is os.cpu_count()")
    ap.add_argument("--profile-runs", type=int, default=10)
    ap.add_argument("--measure-runs", type=int, default=20)
    ap.add_argument("--runs", type=int, help="set both --profile-runs and --measure-runs (a quick check)")
    ap.add_argument("--platform", default="edge", help="the roofline platform (preset or YAML)")
    ap.add_argument("--device", default="cpu", help="its device standing for this machine's CPU")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()
    if args.runs is not None:
        args.profile_runs = args.measure_runs = args.runs
    platform = load_platform(args.platform)
    machine = profiling._machine()
    lines = [
        "# Calibration: predicted vs measured latency (onnxruntime, CPU)", "",
        f"Run {time.strftime('%Y-%m-%d %H:%M')} on {machine['processor']} ({machine['cpu_count']} CPUs, "
        f"{_platform.system()}), onnxruntime {onnxruntime.__version__}, CPUExecutionProvider, graph "
        f"optimisations off (ORT_DISABLE_ALL), sequential execution; profile {args.profile_runs} runs, "
        f"measure {args.measure_runs} runs (one warm-up each).", "",
        f"Everything on one device: the roofline uses the `{args.platform}` preset's `{args.device}` "
        "(not this machine's figures); the calibrated instance replaces every measured node's duration by "
        "its profiled median. Errors are (predicted - measured p50) / measured p50. *Folded* is the "
        "median time per run of the ConstantOfShape nodes that stand for the light models' weights: "
        "onnxruntime runs them, cpsched folds them, so no prediction contains them; the last column "
        "compares the calibrated prediction with p50 minus that time.", "",
        "| model | threads | tasks (measured) | p50 (us) | p99 (us) | folded (us) | roofline (us) | error "
        "| calibrated (us) | error | error vs p50 - folded |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        graph = read_onnx(name)
        roofline = profiling.predict(to_instance(graph, platform), args.device)
        for threads in thread_counts(args.threads):
            print(f"{name}, {threads} threads: profiling ...", file=sys.stderr, flush=True)
            table = CostTable.from_dict(profiling.profile(name, args.device, runs=args.profile_runs,
                                                                    threads=threads))
            print(f"{name}, {threads} threads: measuring ...", file=sys.stderr, flush=True)
            run = profiling.measure(name, runs=args.measure_runs, threads=threads)
            instance = to_instance(graph, platform, costs={args.device: table})
            calibrated = profiling.predict(instance, args.device)
            p50, folded = run["p50_us"], table.folded_us
            lines.append(
                f"| {name} | {threads} | {len(instance.tasks)} ({instance.meta['measured'][args.device]}) "
                f"| {p50:,.0f} | {run['p99_us']:,.0f} | {folded:,.0f} "
                f"| {roofline:,} | {pct(profiling.relative_error(roofline, p50))} "
                f"| {calibrated:,} | {pct(profiling.relative_error(calibrated, p50))} "
                f"| {pct(profiling.relative_error(calibrated, p50 - folded))} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
