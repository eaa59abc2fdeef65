"""Write ``stg-hard.yaml``: the STG entries worth a longer limit.

    python instances/make_stg_hard.py [--open-limit 30] [--limit 10]

An entry is hard when the official table leaves it open, or when the 2 s runs
in ``benchmarks/results/stg{50,100,300}.csv`` (``cpsched bench`` output, read
when present) did not prove it.  Each becomes one ``stg:`` entry on its
processor count, with the table as its known values; open entries get
``--open-limit`` seconds, the others ``--limit``.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

HERE = Path(__file__).resolve().parent
TABLE = HERE.parent.parent / "shared" / "data" / "stg" / "stg_v2_optimal.csv"
RESULTS = HERE.parent / "benchmarks" / "results"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--open-limit", type=float, default=30)
    ap.add_argument("--limit", type=float, default=10)
    args = ap.parse_args()
    hard: dict[tuple[str, int], str] = {}
    with open(TABLE) as fh:
        for row in csv.DictReader(fh):
            if row["n_tasks"] in ("50", "100", "300") and row["status"] == "open":
                hard[row["graph"], int(row["processors"])] = "open in the table"
    for size in (50, 100, 300):
        path = RESULTS / f"stg{size}.csv"
        if path.exists():
            with open(path) as fh:
                for row in csv.DictReader(fh):
                    if row["status"] != "optimal":
                        hard.setdefault((row["input"].removeprefix("stg/"), int(row["processors"])),
                                        f"not proven in {row['time_limit']} s")
    lines = ["# Written by make_stg_hard.py: the STG entries that are open in the official table or",
             "# that the 2 s suite runs (benchmarks/results/stg*.csv) did not prove.",
             "name: stg-hard",
             "description: >-",
             f"  The {len(hard)} hard Kasahara STG entries of 50, 100 and 300 tasks: open in the table",
             f"  ({args.open_limit:g} s each) or not proven by the 2 s runs ({args.limit:g} s each).",
             f"time_limit: {args.limit:g}", "objectives: [latency]", "decompose: off",
             "data: ../../shared/data", "entries:"]
    for (graph, m), why in sorted(hard.items(), key=lambda kv: (int(kv[0][0].split("/")[0]), kv[0])):
        lines += [f"  - stg: stg/{graph}   # {why}", f"    processors: [{m}]",
                  "    known_table: stg/stg_v2_optimal.csv"]
        if why.startswith("open"):
            lines.append(f"    time_limit: {args.open_limit:g}")
    (HERE / "stg-hard.yaml").write_text("\n".join(lines) + "\n")
    print(f"{len(hard)} entries")


if __name__ == "__main__":
    main()
