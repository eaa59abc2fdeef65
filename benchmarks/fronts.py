"""Exact Pareto fronts of bundled models on a preset (issue 4's figures).

    python benchmarks/fronts.py [--platform edge] [--time-limit 180] [--point-limit 30]

For alexnet, squeezenet and inception_v1: the (latency, memory) and
(latency, energy) fronts (epsilon on latency): points, complete or not, sweep
time and time per point; then the 3-objective front of alexnet.  Each front
gets ``--time-limit`` seconds, each sub-solve ``--point-limit``.  Measured in
this one run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cpsched.engines import Options
from cpsched.io.onnx import read_onnx
from cpsched.lowering import to_instance
from cpsched.pareto import Budget, sweep
from cpsched.platforms import load_platform


def row(name, instance, objectives, limit, point_limit) -> str:
    t0 = time.monotonic()
    front = sweep(instance, objectives, "latency", Options(), Budget(limit, point_limit))
    wall = time.monotonic() - t0
    n = len(front.points)
    proven = sum(p.status.value == "optimal" for p in front.points)
    line = (f"| {name} | {len(instance.tasks)} | {','.join(objectives)} | {n} | {proven} | "
            f"{'yes' if front.complete else 'no (' + front.meta.get('stopped', '') + ')'} | "
            f"{front.meta['solves']} | {wall:.1f} | {wall / max(n, 1):.2f} |")
    print(line, file=sys.stderr, flush=True)
    return line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="edge")
    ap.add_argument("--time-limit", type=float, default=180.0)
    ap.add_argument("--point-limit", type=float, default=30.0)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/fronts-edge.md"))
    args = ap.parse_args()
    platform = load_platform(args.platform)
    lines = [f"# Exact fronts on `{args.platform}` (epsilon on latency)", "",
             f"Run {time.strftime('%Y-%m-%d %H:%M')} on this machine (2 cores); {args.time_limit:g} s per front, "
             f"{args.point_limit:g} s per sub-solve, default engine settings.", "",
             "| model | tasks | objectives | points | proven points | complete | solves | time (s) | s / point |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in ("alexnet", "squeezenet", "inception_v1"):
        instance = to_instance(read_onnx(name), platform)
        for objectives in (("latency", "memory"), ("latency", "energy")):
            lines.append(row(name, instance, objectives, args.time_limit, args.point_limit))
    alexnet = to_instance(read_onnx("alexnet"), platform)
    lines.append(row("alexnet", alexnet, ("latency", "energy", "memory"), 2 * args.time_limit, args.point_limit))
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
