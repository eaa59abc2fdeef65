"""Precision as modes: squeezenet on `edge` with int8 on the NPU, the (latency, error) front and
the measured error of its points.

    python benchmarks/precision.py [--time-limit 600] [--calibration 8]

One run: ``cpsched quantize squeezenet --device npu`` (the all-int8 error beside the sum of
the per-node errors, the additive proxy), the exact (latency, error) front with those modes,
and for every point the error of the model with exactly its int8 tasks quantised
(``run --front``: the measured error beside the proxy the solver used).  Writes
``benchmarks/results/precision-squeezenet.md``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import cpsched
from cpsched.quantization import quantize

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--time-limit", type=float, default=600)
    ap.add_argument("--calibration", type=int, default=8)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clock = time.monotonic()
        table = quantize("squeezenet", "npu", calibration=args.calibration, threads=1)
        quantised = time.monotonic() - clock
        path = Path(tmp) / "precisions.json"
        path.write_text(json.dumps(table))
        inst = cpsched.load("squeezenet", platform="edge", precisions=[str(path)])
        front = cpsched.front(inst, ["latency", "error"], time_limit=args.time_limit)
        ran = cpsched.run_front(front, "squeezenet", precisions=[str(path)], runs=3, warmup=1)
    lines = [
        "# Precision modes: squeezenet on edge, int8 on the NPU", "",
        f"- quantize: {len(table['nodes'])} Conv nodes in {quantised:.0f} s (calibration {args.calibration}, "
        f"weights {table['weights']}); all int8: error {table['all_int8']['error']:,} ppm (1 - cosine), "
        f"sum of the per-node errors (the proxy) {table['sum_of_errors']:,} ppm",
        f"- instance: {len(inst.tasks)} tasks, {sum(len(t.choices.get('npu', ())) == 2 for t in inst.tasks)} "
        "with an int8 mode on the NPU",
        f"- front (latency, error), {args.time_limit:g} s: {len(front.points)} points, "
        f"{sum(p.status.value == 'optimal' for p in front.points)} proven, "
        + ("complete" if front.complete else f"not complete, certified within {100 * front.gap:.1f} %")
        + f", {front.meta.get('solves')} solves in {front.meta.get('wall_time', 0):.0f} s", "",
        "| # | latency (us) | error proxy (ppm) | int8 tasks | measured error (ppm) | status |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for p, r in zip(front.points, ran["points"]):
        lines.append(f"| {r['point']} | {p.values[0]:,} | {p.values[1]:,} | {r['int8_tasks']} | "
                     f"{r['int8_error']['error']:,} | {p.status.value} |")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "precision-squeezenet.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
