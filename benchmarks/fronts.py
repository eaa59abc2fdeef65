"""Certified Pareto fronts of the bundled models (issue 17's figures).

    python benchmarks/fronts.py [--platform edge] [--time-limit 600] [--models alexnet,squeezenet,...]
        [--fuse none,standard] [--pairs latency,memory latency,energy] [--three squeezenet]
        [--jobs J] [--workers W] [--out benchmarks/results/fronts-edge.md]

For every model x fusion x pair: the front through the front door
(``cpsched.front``, ``epsilon="auto"``, HEFT warm start, decomposition above 100
tasks) within ``--time-limit`` seconds: points, points proven non-dominated,
complete, the certified gap, the time to complete (or to the limit), sub-solves
per point.  ``--jobs`` and ``--workers`` are the front door's (sub-solves at
once, CP-SAT threads each; default: as many solves as the cores hold).
``--three`` adds the (latency, energy, memory) front of those models.  One run,
on this machine; every front's points are validated by the front door.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import cpsched

MODELS = ("alexnet", "zfnet512", "vgg19", "squeezenet", "inception_v1", "inception_v2", "resnet50", "shufflenet",
          "densenet121")


def row(model: str, fuse: str, platform: str, objectives: tuple[str, ...], limit: float,
        jobs: int | None = None, workers: int | None = None) -> str:
    instance = cpsched.load(model, platform=platform, fuse=fuse)
    clock = time.monotonic()
    front = cpsched.front(instance, objectives, time_limit=limit, jobs=jobs, workers=workers)
    wall = time.monotonic() - clock
    n = len(front.points)
    proven = sum(p.status.value == "optimal" for p in front.points)
    gap = "0" if front.complete else ("-" if front.gap is None else f"{100 * front.gap:.1f} %")
    line = (f"| {model} | {fuse} | {len(instance.tasks)} | {','.join(objectives)} | {front.meta['epsilon']} | {n} | "
            f"{proven} | {'yes' if front.complete else 'no'} | {gap} | {wall:.1f} | "
            f"{front.meta['solves'] / max(n, 1):.2f} |")
    print(line, file=sys.stderr, flush=True)
    return line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="edge")
    ap.add_argument("--time-limit", type=float, default=600)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--fuse", default="none,standard")
    ap.add_argument("--pairs", nargs="+", default=["latency,memory", "latency,energy"])
    ap.add_argument("--three", default="")
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    header = [f"# Certified fronts on `{args.platform}` (`epsilon auto`)", "",
              f"Run {datetime.datetime.now():%Y-%m-%d %H:%M} on this machine ({os.cpu_count()} cores); "
              f"{args.time_limit:g} s per front; time = to complete, or the limit; "
              f"jobs {args.jobs or 'default'}, workers {args.workers or 'default'}.", "",
              "| model | fuse | tasks | objectives | stepped | points | proven | complete | certified gap | "
              "time (s) | solves / point |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    lines = list(header)
    for model in filter(None, args.models.split(",")):
        for fuse in args.fuse.split(","):
            for pair in args.pairs:
                lines.append(row(model, fuse, args.platform, tuple(pair.split(",")), args.time_limit,
                                 args.jobs, args.workers))
    for model in filter(None, args.three.split(",")):
        lines.append(row(model, "none", args.platform, ("latency", "energy", "memory"), args.time_limit,
                         args.jobs, args.workers))
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
