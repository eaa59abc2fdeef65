"""Write ``README.md`` here: one row per record (a schedule that closes or improves an open STG entry).

    python instances/records/index.py

Each record is a ``cpsched-schedule/1`` file saved by ``cpsched bench --records``;
its ``solver.bench`` says which suite entry it answers and the table's range.
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    rows = []
    for path in sorted(HERE.glob("*.json")):
        record = json.loads(path.read_text())
        bench = record["solver"]["bench"]
        size = bench["input"].split("/")[-2]
        rows.append((int(size), record["instance"], bench["known"], record["status"],
                     record["objectives"]["latency"],
                     record["bounds"].get("latency", record["objectives"]["latency"]),
                     record["solver"]["wall_time"] + record["solver"].get("warm_start", {}).get("wall_time", 0.0),
                     record["solver"]["time_limit"], bench["suite"], path.name))
    rows.sort()
    closed = sum(r[3] == "optimal" for r in rows)
    lines = ["# STG records", "",
             "Schedules of open Kasahara STG entries (the official table gives only a range) that cpsched",
             "proved optimal (**closed**) or beat without a proof (**improved**), saved by",
             "`cpsched bench SUITE --records instances/records`. Each file is a `cpsched-schedule/1`",
             "schedule; check one with `cpsched validate ../shared/data/stg/50/rand0117.stg",
             "instances/records/stg_50_rand0117-m4.json -m 4`. `solver` holds the settings, the time",
             "(the warm start's, in `solver.warm_start`, counted in the table's time) and the proven bound.",
             "This table is written by `python instances/records/index.py`.", "",
             f"{closed} closed, {len(rows) - closed} improved.", "",
             "| tasks | entry | table range | status | latency | bound | time s | limit s | suite | file |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for size, name, known, status, value, bound, wall, limit, suite, file in rows:
        word = "closed" if status == "optimal" else "improved"
        lines.append(f"| {size} | {name} | {known} | {word} | {value} | {bound} | {wall:.2f} | {limit:g} | "
                     f"{suite} | [{file}]({file}) |")
    (HERE / "README.md").write_text("\n".join(lines) + "\n")
    print(f"{len(rows)} records")


if __name__ == "__main__":
    main()
