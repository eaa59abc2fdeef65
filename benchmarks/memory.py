"""Memory plans and fusion on bundled models (issue 7's figures).

    python benchmarks/memory.py [--platform edge] [--time-limit 60] [--out benchmarks/results/memory-edge.md]

For squeezenet, resnet50 and inception_v1 on the preset:

* fusion: latency and peak memory of the latency solve with ``--fuse none``,
  ``elementwise`` and ``standard`` (tasks, status, latency, bound, peak);
* memory plans, on the unfused model: the peak of the latency solve, the
  arena of its ``after`` plan (schedule fixed, offsets packed), and the arena
  of the ``joint`` solve (latency first, then arena inside the model).

Each solve gets ``--time-limit`` seconds; statuses say what was proven.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from cpsched.engines import Options
from cpsched.lexico import solve
from cpsched.fusion import fuse
from cpsched.heuristics.heft import heft
from cpsched.io.onnx import read_onnx
from cpsched.lowering import to_instance
from cpsched.platforms import load_platform

MODELS = ("squeezenet", "resnet50", "inception_v1")


def timed(fn):
    t0 = time.monotonic()
    out = fn()
    return out, time.monotonic() - t0


def hint_for(instance):
    try:
        return heft(instance)
    except Exception:  # noqa: BLE001 - no hint is fine
        return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="edge")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    platform = load_platform(args.platform)
    out = args.out or Path(f"benchmarks/results/memory-{args.platform}.md")
    lines = [f"# Memory plans and fusion on `{args.platform}`", "",
             f"Run {time.strftime('%Y-%m-%d %H:%M')} on this machine (2 cores); {args.time_limit:g} s per solve, "
             "default engine settings. Bytes in MiB.", "",
             "## Fusion: latency solve per mode", "",
             "| model | fuse | tasks | status | latency (us) | bound (us) | peak memory (MiB) | time (s) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    mib = 2 ** 20
    for name in args.models:
        graph = read_onnx(name)
        for mode in ("none", "elementwise", "standard"):
            inst = to_instance(fuse(graph, mode), platform)
            s, dt = timed(lambda: solve(inst, ["latency"], Options(time_limit=args.time_limit), hint=hint_for(inst)))
            row = (f"| {name} | {mode} | {len(inst.tasks)} | {s.status} | {s.objectives['latency']:,} | "
                   f"{s.bounds['latency']:,} | {s.objectives['memory'] / mib:.2f} | {dt:.1f} |")
            lines.append(row)
            print(row, file=sys.stderr, flush=True)
    lines += ["", "## Memory plans (unfused): peak vs arena", "",
              "| model | latency solve | peak (MiB) | arena after (MiB) | after time (s) | joint status | "
              "joint latency (us) | joint arena (MiB) | joint time (s) |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in args.models:
        inst = to_instance(read_onnx(name), platform)
        h = hint_for(inst)
        after, dt_a = timed(lambda: solve(inst, ["latency"], Options(time_limit=args.time_limit,
                                                                     memory_plan="after"), hint=h))
        joint, dt_j = timed(lambda: solve(inst, ["latency", "arena"], Options(time_limit=args.time_limit,
                                                                              memory_plan="joint"), hint=h))
        jl = f"{joint.objectives['latency']:,}" if joint.status.has_schedule else "-"
        ja = f"{joint.objectives['arena'] / mib:.2f}" if joint.status.has_schedule else "-"
        row = (f"| {name} | {after.status} {after.objectives['latency']:,} us | {after.objectives['memory'] / mib:.2f} "
               f"| {after.objectives['arena'] / mib:.2f} | {dt_a:.1f} | {joint.status} | {jl} | {ja} | {dt_j:.1f} |")
        lines.append(row)
        print(row, file=sys.stderr, flush=True)
    text = "\n".join(lines) + "\n"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
