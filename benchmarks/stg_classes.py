"""The identical-device symmetry on STG (issue 6): one cumulative per class vs a no-overlap per device.

    python benchmarks/stg_classes.py [--limit 10] [--sizes 50,100] [--out benchmarks/results/stg-classes.md]

Every *open* entry of the published STG table at the given sizes (m = 2, 4, 8,
16) is solved twice with the same CP-SAT portfolio (the per-class default, 8
workers) and the same HEFT hint: with the interchangeable devices merged
(``Options.classes``, the default) and without (one no-overlap per device,
every relabelling of the devices a distinct solution).  Reported: entries
proven (closed), median time, and the schedules found below the published
best.  Both variants run in this one process, one after the other per entry.
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
from cpsched.heuristics.heft import heft
from cpsched.io.stg import read_stg
from cpsched.schedule import Status

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "stg"


def open_rows(sizes: list[str]) -> list[dict]:
    with open(DATA / "stg_v2_optimal.csv") as fh:
        return [row for row in csv.DictReader(fh) if row["n_tasks"] in sizes and row["status"] == "open"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=float, default=10.0)
    ap.add_argument("--sizes", default="50,100")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/stg-classes.md"))
    args = ap.parse_args()
    rows = open_rows(args.sizes.split(","))
    results = {True: [], False: []}
    lines = []
    for row in rows:
        inst = read_stg(DATA / row["graph"], int(row["processors"]))
        hint = heft(inst)
        cells = []
        for merged in (True, False):
            t0 = time.monotonic()
            s = solve(inst, ["latency"], Options(time_limit=args.limit, classes=merged), hint=hint)
            dt = time.monotonic() - t0
            results[merged].append((s.status is Status.OPTIMAL, dt, s.objectives["latency"] < int(row["best_found"])))
            cells.append(f"{s.status} {s.objectives['latency']} (bound {s.bounds['latency']}, {dt:.2f} s)")
        lines.append(f"| {row['graph']} | {row['processors']} | {row['lower_bound']}-{row['best_found']} | "
                     + " | ".join(cells) + " |")
        print(lines[-1], file=sys.stderr, flush=True)
    out = [f"# STG open entries ({args.sizes} tasks): merged classes vs per-device no-overlap", "",
           f"{len(rows)} open entries, {args.limit:g} s each, default workers (8), HEFT hint; one run.", "",
           "| variant | closed (proven optimal) | below the published best | median time (s) |",
           "| --- | --- | --- | --- |"]
    for merged, name in ((True, "one cumulative per class"), (False, "no-overlap per device")):
        res = results[merged]
        out.append(f"| {name} | {sum(r[0] for r in res)} / {len(res)} | {sum(r[2] for r in res)} | "
                   f"{statistics.median(r[1] for r in res):.2f} |")
    out += ["", "| graph | m | published | merged | per device |", "| --- | --- | --- | --- | --- |", *lines]
    args.out.write_text("\n".join(out) + "\n")
    print("\n".join(out[:9]))


if __name__ == "__main__":
    main()
