"""Symmetry breaking with data movement on Sinnen's 21- and 30-node graphs (issue 21's figure).

    python benchmarks/symmetry.py [--data ../shared/data] [--nodes 21,30] [--processors 2,4,8,16]
        [--time-limit 30] [--out benchmarks/results/symmetry.md]

Every distinct graph of the suite ``sinnen-21-30`` (contention-free) on each processor
count, solved for latency by CP-SAT from HEFT's schedule, once with the identical processors'
symmetry broken (``Options.symmetry``, the default) and once without, in one run: optima proven
within the limit and the time to prove them.  Both runs must agree wherever both prove.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import time
from pathlib import Path

from cpsched.bench import load_suite
from cpsched.engines import Options
from cpsched.heuristics.heft import heft
from cpsched.io.taskgraph import read_dot
from cpsched.lexico import solve

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="21,30")
    ap.add_argument("--processors", default="2,4,8,16")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    nodes = {f"_Nodes_{n}_" for n in args.nodes.split(",")}
    counts = {int(m) for m in args.processors.split(",")}
    entries = [e for e in load_suite(ROOT / "instances" / "sinnen-21-30.yaml").entries
               if e.processors in counts and any(n in e.label for n in nodes)]
    proven = {True: [], False: []}
    for entry in entries:
        inst = read_dot(entry.input, entry.processors)
        start = heft(inst)
        values = {}
        for symmetry in (True, False):
            clock = time.monotonic()
            s = solve(inst, ["latency"], Options(time_limit=args.time_limit, symmetry=symmetry), hint=start)
            seconds = time.monotonic() - clock
            if s.status.value == "optimal":
                proven[symmetry].append(seconds)
                values[symmetry] = s.objectives["latency"]
        if len(values) == 2 and values[True] != values[False]:
            raise SystemExit(f"{entry.label} m={entry.processors}: optima differ {values}")
        print(entry.label, entry.processors, values, file=sys.stderr, flush=True)
    lines = [f"# Symmetry breaking with communication: Sinnen {args.nodes}-node graphs", "",
             f"Run {datetime.datetime.now():%Y-%m-%d %H:%M} on this machine ({os.cpu_count()} cores); "
             f"{args.time_limit:g} s per solve, HEFT warm start, processors {sorted(counts)}.", "",
             "| model | proven | median time to proof (s) | total time of the proven (s) |",
             "| --- | --- | --- | --- |"]
    for symmetry, label in ((True, "symmetry broken (default)"), (False, "per-processor model")):
        times = proven[symmetry]
        lines.append(f"| {label} | {len(times)}/{len(entries)} | "
                     f"{statistics.median(times) if times else 0:.2f} | {sum(times):.1f} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
