"""Deployment: solve -> export -> run on the `cpu2` platform, predicted against measured.

    python benchmarks/deploy.py [--models alexnet,squeezenet,resnet50] [--time-limit 60]
        [--runs 20] [--warmup 3] [--front squeezenet] [--front-limit 60] [--front-fuse none]
        [--out benchmarks/results/deploy-cpu2.md]

Per model, on this machine's CPU: profile the model with one onnxruntime
thread (``cpsched profile``), read it on ``cpu2`` (two CPU devices, one thread
each) with those measured costs on both devices, solve the latency optimum,
export the schedule (``cpsched export``) and run the plan (``cpsched run``):
p50, p99 and throughput against the schedule's makespan, and the outputs
against the unsplit model.  Beside it, every task on ``cpu0`` (a list schedule),
exported and run the same way, its runs taken in turn with the plan's:
the table shows whether the predicted gain of the second device is real.
Each model is profiled right before its runs: this machine's speed drifts
over minutes.

Then the (latency, memory) front of ``--front`` (``--front-fuse``) on the same
platform, every point run: predicted and measured latency per point and
Kendall's tau between the two orders.
"""

from __future__ import annotations

import argparse
import json
import platform as _platform
import sys
import tempfile
import time
from pathlib import Path

import onnxruntime

import cpsched
from cpsched import profiling
from cpsched.executor import Executor, golden_inputs, measure, reference_outputs, summary
from cpsched.heuristics.heft import list_schedule

DEFAULT_OUT = Path(__file__).parent / "results" / "deploy-cpu2.md"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="alexnet,squeezenet,resnet50")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--profile-runs", type=int, default=10)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--front", default="squeezenet", help="model whose front is run point by point ('' for none)")
    ap.add_argument("--front-limit", type=float, default=60.0)
    ap.add_argument("--front-fuse", default="none", help="the front model's fusion")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args()

    rows, lines = [], []
    with tempfile.TemporaryDirectory(prefix="cpsched-deploy-") as tmp:
        tmp = Path(tmp)
        costs = {}
        for model in [m for m in args.models.split(",") if m]:
            costs[model] = _profile(model, tmp, args.profile_runs)  # right before its runs: the machine drifts
            inst = cpsched.load(model, platform="cpu2", costs=[str(costs[model])])
            t0 = time.perf_counter()
            sched = cpsched.solve(inst, time_limit=args.time_limit)
            solved = time.perf_counter() - t0
            plan = cpsched.export(sched, model, tmp / model, costs=[str(costs[model])])
            alone = list_schedule(inst, {t.id: "cpu0" for t in inst.tasks})
            base = cpsched.export(alone, model, tmp / f"{model}-cpu0", costs=[str(costs[model])])
            with Executor(plan, tmp / model) as a, Executor(base, tmp / f"{model}-cpu0") as b:
                feeds = golden_inputs(plan)
                want = reference_outputs(plan, feeds)
                report, alone_report = (summary(p, m, want, args.warmup)
                                        for p, m in zip((plan, base), measure([a, b], feeds, args.runs, args.warmup)))
            rows.append({
                "model": model, "tasks": len(inst.tasks), "status": str(sched.status), "solve_s": solved,
                "parts": len(plan.parts), "transfers": len(plan.copies),
                "on_cpu1": sum(len(p.tasks) for p in plan.parts if p.device == "cpu1"),
                "predicted": report.predicted_us, "p50": report.p50_us, "error": report.error,
                "p99": report.p99_us, "throughput": report.throughput_per_s,
                "one_predicted": alone_report.predicted_us, "one_p50": alone_report.p50_us,
                "max_abs": max(v["max_abs"] for v in report.outputs.values()),
                "cosine": min(v["cosine"] for v in report.outputs.values())})
            print(rows[-1], flush=True)
        front_result = None
        if args.front:
            costs[args.front] = _profile(args.front, tmp, args.profile_runs)
            inst = cpsched.load(args.front, platform="cpu2", fuse=args.front_fuse, costs=[str(costs[args.front])])
            t0 = time.perf_counter()
            front = cpsched.front(inst, ["latency", "memory"], time_limit=args.front_limit)
            front_s = time.perf_counter() - t0
            front_result = cpsched.run_front(front, args.front, fuse=args.front_fuse, costs=[str(costs[args.front])],
                                             runs=args.runs, warmup=args.warmup)
            print(front_result["kendall_tau"], flush=True)

    lines.append("# Deployment on `cpu2`: predicted vs measured (solve -> export -> run)")
    lines.append("")
    lines.append(f"Run {time.strftime('%Y-%m-%d %H:%M')} on {_platform.processor() or _platform.machine()} "
                 f"({_cpus()} CPUs), onnxruntime {onnxruntime.__version__}, CPUExecutionProvider, one thread "
                 f"per device, graph optimisations off; costs profiled with one thread ({args.profile_runs} runs) "
                 f"right before each model's runs and given to both devices; latency solved with a "
                 f"{args.time_limit:g} s limit; {args.runs} timed runs after {args.warmup} warm-up, the plan's "
                 "and the all-on-cpu0 plan's taken in turn (the front's points likewise). "
                 "Error = (predicted - p50) / p50.")
    lines.append("")
    lines.append("| model | tasks | solve | subgraphs | transfers | tasks on cpu1 | predicted (us) | p50 (us) "
                 "| error | p99 (us) | throughput (/s) | all on cpu0: predicted | all on cpu0: p50 | measured gain "
                 "| max abs err | cosine |")
    lines.append("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
                 "| ---: | ---: | ---: |")
    for r in rows:
        lines.append(f"| {r['model']} | {r['tasks']} | {r['status']} {r['solve_s']:.1f} s | {r['parts']} "
                     f"| {r['transfers']} | {r['on_cpu1']} | {r['predicted']:,} | {r['p50']:,.0f} "
                     f"| {r['error']:+.1%} | {r['p99']:,.0f} | {r['throughput']:,.1f} | {r['one_predicted']:,} "
                     f"| {r['one_p50']:,.0f} | {r['one_p50'] / r['p50']:.2f}x | {r['max_abs']:.2e} "
                     f"| {r['cosine']:.6f} |")
    if front_result is not None:
        lines.append("")
        lines.append(f"Front: {args.front} (fusion {args.front_fuse}), (latency, memory) on `cpu2`, "
                     f"{len(front_result['points'])} points in {front_s:.1f} s "
                     f"({'complete' if front.complete else 'not complete'}); every point exported and run.")
        lines.append("")
        lines.append("| point | latency (us) | memory (B) | p50 (us) | error | p99 (us) | max abs err |")
        lines.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in front_result["points"]:
            lines.append(f"| {r['point']} | {r['values'][0]:,} | {r['values'][1]:,} | {r['p50_us']:,.0f} "
                         f"| {r['error']:+.1%} | {r['p99_us']:,.0f} | {r['max_abs']:.2e} |")
        tau = front_result["kendall_tau"]
        lines.append("")
        lines.append("Kendall tau between predicted and measured latency over the points: "
                     + ("n/a" if tau is None else f"{tau:+.2f}"))
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


def _profile(model: str, tmp: Path, runs: int) -> Path:
    path = tmp / f"{model}.costs.json"
    path.write_text(json.dumps(profiling.profile(model, "cpu0", threads=1, runs=runs)))
    return path


def _cpus() -> int:
    import os

    return os.cpu_count() or 1


if __name__ == "__main__":
    main()
