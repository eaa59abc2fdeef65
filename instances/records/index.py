"""Write ``README.md`` here: one row per record (a schedule that closes or improves an open STG
entry, or proves an optimum where none is published, as for Sinnen's larger graphs).

    python instances/records/index.py

Each record is a ``cpsched-schedule/1`` file saved by ``cpsched bench --records``;
its ``solver.bench`` says which suite entry it answers, the table's range (STG) and, where the
suite asked for it, whether the MILP engine confirmed the optimum (``milp``).
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    stg, new = [], []
    for path in sorted(HERE.glob("*.json")):
        record = json.loads(path.read_text())
        bench = record["solver"]["bench"]
        row = (len(record["tasks"]), record["instance"], bench["known"], record["status"],
               record["objectives"]["latency"], record["bounds"].get("latency", record["objectives"]["latency"]),
               record["solver"]["wall_time"] + record["solver"].get("warm_start", {}).get("wall_time", 0.0),
               record["solver"]["time_limit"], bench["suite"], path.name, bench.get("milp", ""))
        (new if bench["match"] == "new" else stg).append(row)
    stg.sort()
    new.sort()
    closed = sum(r[3] == "optimal" for r in stg)
    confirmed = sum(r[10] == "yes" for r in new)
    lines = ["# Records", "",
             "Schedules that answer open questions of the benchmark sets, saved by",
             "`cpsched bench SUITE --records instances/records`. Each file is a `cpsched-schedule/1`",
             "schedule; check one with `cpsched validate ../shared/data/stg/50/rand0117.stg",
             "instances/records/stg_50_rand0117-m4.json -m 4` (a Sinnen graph: its `.dot` file, the same",
             "`-m P`). `solver` holds the settings, the time (the warm start's, in `solver.warm_start`,",
             "counted in the tables' time) and the proven bound.",
             "This file is written by `python instances/records/index.py`.", "",
             "## STG: open entries", "",
             "Open Kasahara STG entries (the official table gives only a range) that cpsched proved",
             f"optimal (**closed**) or beat without a proof (**improved**): {closed} closed, "
             f"{len(stg) - closed} improved.", "",
             "| tasks | entry | table range | status | latency | bound | time s | limit s | suite | file |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for size, name, known, status, value, bound, wall, limit, suite, file, _ in stg:
        word = "closed" if status == "optimal" else "improved"
        lines.append(f"| {size} | {name} | {known} | {word} | {value} | {bound} | {wall:.2f} | {limit:g} | "
                     f"{suite} | [{file}]({file}) |")
    lines += ["", "## Optima where none is published", "",
              "Entries with no known value (Sinnen's 21- and 30-node graphs, P|prec,c_ij|Cmax,",
              "contention-free) whose optimum cpsched proved. **MILP**: `yes` when the MILP engine's own formulation",
              "(`--engine milp`, hinted with the optimum) proved the same value within the suite's",
              f"`confirm` time, `not in time` when it did not finish, `MILP failed` when its solver stopped "
              f"with an error: {len(new)} optima, "
              f"{confirmed} confirmed.", "",
              "| tasks | graph | latency | time s | limit s | MILP | file |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for size, name, _, _, value, _, wall, limit, _, file, milp in new:
        lines.append(f"| {size} | {name} | {value} | {wall:.2f} | {limit:g} | {milp} | [{file}]({file}) |")
    (HERE / "README.md").write_text("\n".join(lines) + "\n")
    print(f"{len(stg)} STG records, {len(new)} new optima")


if __name__ == "__main__":
    main()
