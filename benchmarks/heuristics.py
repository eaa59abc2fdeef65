"""Heuristics against exact (latency, memory) fronts on a preset (issue: heuristics and indicators).

    python benchmarks/heuristics.py [--platform edge] [--front-time-limit 300] [--point-limit 60]
                                    [--population 100] [--generations 200] [--seed 0]

For alexnet and squeezenet: the exact front (epsilon on latency, the sweep
stopped after ``--front-time-limit`` seconds, each sub-solve after
``--point-limit``; an incomplete front is said so) against NSGA-II and against
the single points of host, fastest and HEFT (each as a one-point front):
hypervolume ratio (normalised by the exact front's ideal and nadir, reference
point 1.1), IGD+, additive epsilon, exact points found, wall time.  Measured in
this one run; the table goes to ``--out`` and stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cpsched.engines import Options
from cpsched.errors import NoSchedule
from cpsched.heuristics.baselines import as_front, fastest, host
from cpsched.heuristics.heft import heft
from cpsched.heuristics.nsga2 import nsga2
from cpsched.indicators import compare
from cpsched.io.onnx import read_onnx
from cpsched.lowering import to_instance
from cpsched.pareto import Budget, sweep
from cpsched.platforms import load_platform
from cpsched.schedule import dominates

OBJECTIVES = ("latency", "memory")


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def fmt(x, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def method_row(model: str, method: str, exact, other, wall: float) -> str:
    if not exact.points:  # nothing to compare with: the values alone
        values = " ".join(f"({', '.join(map(str, p.values))})" for p in other.points[:3])
        line = f"| {model} | {method} | {len(other.points)} | - | - | - | - | - | {wall:.1f} | {values} |"
        log(line)
        return line
    c = compare(exact, other)
    beats = sum(any(dominates(p.values, q.values) for p in other.points) for q in exact.points)
    line = (f"| {model} | {method} | {len(other.points)} | {c['found_exactly']} / {c['reference_points']} | "
            f"{fmt(c['hypervolume_ratio'])} | {fmt(c['igd_plus'])} | {fmt(c['epsilon_additive'])} | "
            f"{beats} | {wall:.1f} | |")
    log(line)
    return line


def model_rows(model: str, platform, args) -> tuple[list[str], str]:
    instance = to_instance(read_onnx(model), platform)
    log(f"{model}: {len(instance.tasks)} tasks, exact front...")
    t0 = time.monotonic()
    exact = sweep(instance, OBJECTIVES, "latency", Options(), Budget(args.front_time_limit, args.point_limit))
    exact_wall = time.monotonic() - t0
    status = "complete" if exact.complete else f"incomplete ({exact.meta.get('stopped', 'not proven')})"
    note = (f"- {model} ({len(instance.tasks)} tasks): exact front {len(exact.points)} points, {status}, "
            f"{exact_wall:.1f} s, {exact.meta['solves']} solves")
    log(note)
    if not exact.points:
        note += "; nothing to compare with (heuristic values shown instead)"
    rows = []
    t0 = time.monotonic()
    front = nsga2(instance, OBJECTIVES, args.population, args.generations, args.seed)
    rows.append(method_row(model, f"nsga2 ({args.population}x{args.generations}, "
                                  f"{front.meta['evaluations']} evals)", exact, front, time.monotonic() - t0))
    for name, fn in (("host", host), ("fastest", fastest), ("heft", heft)):
        t0 = time.monotonic()
        try:
            schedule = fn(instance)
        except NoSchedule as exc:
            rows.append(f"| {model} | {name} | 0 | - | - | - | - | - | {time.monotonic() - t0:.1f} | "
                        f"no schedule: {exc} |")
            log(rows[-1])
            continue
        rows.append(method_row(model, name, exact, as_front(instance, schedule, OBJECTIVES), time.monotonic() - t0))
    return rows, note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="edge")
    ap.add_argument("--models", nargs="+", default=["alexnet", "squeezenet"])
    ap.add_argument("--front-time-limit", type=float, default=300.0)
    ap.add_argument("--point-limit", type=float, default=60.0)
    ap.add_argument("--population", type=int, default=100)
    ap.add_argument("--generations", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None,
                    help="default: benchmarks/results/heuristics-<platform>.md")
    args = ap.parse_args()
    out = args.out or Path(f"benchmarks/results/heuristics-{args.platform}.md")
    platform = load_platform(args.platform)
    rows, notes = [], []
    for model in args.models:
        r, note = model_rows(model, platform, args)
        rows += r
        notes.append(note)
    lines = [f"# Heuristics vs exact (latency, memory) fronts on `{args.platform}`", "",
             (f"Run {time.strftime('%Y-%m-%d %H:%M')} on this machine; exact front: epsilon on latency, "
              f"{args.front_time_limit:g} s per front, {args.point_limit:g} s per sub-solve, default engine "
              f"settings; NSGA-II population {args.population}, {args.generations} generations, seed {args.seed}."),
             ("Indicators normalise by the exact front's ideal and nadir (a zero range counts as 1); hypervolume "
              "reference point 1.1 per objective. *beats exact* counts exact points a heuristic point "
              "dominates (possible only when the exact front is incomplete)."), "", *notes, "",
             "| model | method | points | found exactly | HV ratio | IGD+ | eps+ | beats exact | time (s) | note |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |", *rows]
    text = "\n".join(lines) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
