"""Bundled ONNX models on a platform preset (issue 3's figures).

    python benchmarks/models.py [--platform edge] [--time-limit 60] [--out benchmarks/results/models-edge.md]

Per model: tasks, MACs, import time (ONNX read + lowering), then the exact
solve of latency with the given time limit (status, latency, bound, time) beside
HEFT's latency.  Measured in this one run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cpsched.engines import Options
from cpsched.lexico import solve
from cpsched.heuristics.heft import heft
from cpsched.io.onnx import BUNDLED, read_onnx
from cpsched.lowering import to_instance
from cpsched.platforms import load_platform


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="edge")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    platform = load_platform(args.platform)
    lines = [f"# Bundled models on `{args.platform}`, latency, {args.time_limit:g} s limit", "",
             f"Run {time.strftime('%Y-%m-%d %H:%M')} on this machine (2 cores), default engine settings.", "",
             "| model | tasks | GMACs | import (s) | status | latency (us) | bound (us) | gap | solve (s) "
             "| HEFT latency (us) | HEFT / best |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in BUNDLED:
        t0 = time.monotonic()
        graph = read_onnx(name)
        instance = to_instance(graph, platform)
        t_import = time.monotonic() - t0
        h = heft(instance)
        t0 = time.monotonic()
        s = solve(instance, ["latency"], Options(time_limit=args.time_limit), hint=h)
        t_solve = time.monotonic() - t0
        value, bound = s.objectives["latency"], s.bounds["latency"]
        macs = sum(n.macs for n in graph.nodes) / 1e9
        row = (f"| {name} | {len(instance.tasks)} | {macs:.3f} | {t_import:.2f} | {s.status} | {value:,} | "
               f"{bound:,} | {(value - bound) / value:.1%} | {t_solve:.1f} | {h.objectives['latency']:,} | "
               f"{h.objectives['latency'] / value:.3f} |")
        lines.append(row)
        print(row, file=sys.stderr, flush=True)
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
