"""Core benchmark (issue 2's figures): STG 50-task graphs and random heterogeneous DAGs.

    python benchmarks/core.py [--stg-limit 10] [--random-limit 60] [--out benchmarks/results/core.md]

Part 1: the 180 STG 50-task graphs on 4 processors, ``--stg-limit`` seconds each:
how many match the published optimum, how many open entries cpsched proves,
median solve time.  Part 2: 20 random instances of 20-30 tasks on 3
heterogeneous devices (``cpsched.generate``, one-channel links): median time
to a proven optimum with and without the redundant load constraints, and
HEFT's median gap to the optimum.  Everything is measured in this one run.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

from cpsched.engines import Options
from cpsched.lexico import solve
from cpsched.generate import random_instance
from cpsched.heuristics.heft import heft
from cpsched.io.stg import read_stg
from cpsched.schedule import Status

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "stg"


def stg_part(limit: float, processors: int = 4) -> list[str]:
    with open(DATA / "stg_v2_optimal.csv") as fh:
        table = {row["graph"]: row for row in csv.DictReader(fh)
                 if row["n_tasks"] == "50" and int(row["processors"]) == processors}
    matched = known = proven_open = open_rows = 0
    times, rows = [], []
    for k in range(180):
        graph = f"50/rand{k:04d}.stg"
        row = table[graph]
        inst = read_stg(DATA / graph, processors)
        t0 = time.monotonic()
        s = solve(inst, ["latency"], Options(time_limit=limit), hint=heft(inst))
        dt = time.monotonic() - t0
        times.append(dt)
        value = s.objectives["latency"]
        if row["status"] == "optimal":
            known += 1
            matched += s.status is Status.OPTIMAL and value == int(row["optimal"])
            assert value >= int(row["optimal"]), (graph, value)  # would mean a wrong schedule or table
        else:
            open_rows += 1
            proven_open += s.status is Status.OPTIMAL
            rows.append(f"| {graph} | {row['lower_bound']}-{row['best_found']} | {s.status} | {value} | "
                        f"{s.bounds['latency']} | {dt:.2f} |")
        print(f"{graph} {s.status} {value} ({dt:.2f} s)", file=sys.stderr, flush=True)
    return [
        f"## STG 50 tasks, {processors} processors, {limit:g} s limit each",
        "",
        f"- published optima matched (proven): **{matched} / {known}**",
        f"- open entries proven optimal: **{proven_open} / {open_rows}**",
        f"- median time: {statistics.median(times):.3f} s, max {max(times):.2f} s, total {sum(times):.0f} s",
        "",
        "| open entry | published | cpsched status | value | bound | time (s) |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
        "",
    ]


def random_part(limit: float, count: int = 20) -> list[str]:
    lines = ["## Random heterogeneous DAGs, 20-30 tasks, 3 devices, one-channel links", "",
             "| seed | tasks | optimum | HEFT | HEFT gap | time (s) | time without load constraints (s) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    times, plain, gaps, proven = [], [], [], 0
    for seed in range(count):
        n = 20 + (seed * 7) % 11
        inst = random_instance(1000 + seed, n, 3, channels=(1,))
        h = heft(inst)
        t0 = time.monotonic()
        s = solve(inst, ["latency"], Options(time_limit=limit), hint=h)
        dt = time.monotonic() - t0
        t0 = time.monotonic()
        s0 = solve(inst, ["latency"], Options(time_limit=limit, redundant=False), hint=h)
        dt0 = time.monotonic() - t0
        opt = s.objectives["latency"]
        gap = (h.objectives["latency"] - opt) / opt
        proven += s.status is Status.OPTIMAL
        times.append(dt)
        plain.append(dt0 if s0.status is Status.OPTIMAL else float("inf"))
        gaps.append(gap)
        lines.append(f"| {1000 + seed} | {n} | {opt} ({s.status}) | {h.objectives['latency']} | {gap:.1%} | "
                     f"{dt:.2f} | {dt0:.2f} ({s0.status}) |")
        print(f"random {seed}: {s.status} {opt} heft {h.objectives['latency']} ({dt:.2f} s / {dt0:.2f} s)",
              file=sys.stderr, flush=True)
    med, med0 = statistics.median(times), statistics.median(plain)
    lines += ["",
              f"- proven optimal: **{proven} / {count}** within {limit:g} s",
              f"- median time to proven optimum: **{med:.3f} s** (without the load constraints: {med0:.3f} s, "
              f"ratio {med0 / med:.1f}x)",
              f"- HEFT median gap to the optimum: **{statistics.median(gaps):.1%}** "
              f"(max {max(gaps):.1%})", ""]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stg-limit", type=float, default=10.0)
    ap.add_argument("--random-limit", type=float, default=60.0)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/core.md"))
    args = ap.parse_args()
    lines = ["# cpsched core benchmark", "", f"Run {time.strftime('%Y-%m-%d %H:%M')} on this machine "
             "(2 cores), default engine settings.", ""]
    lines += random_part(args.random_limit)
    lines += stg_part(args.stg_limit)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
