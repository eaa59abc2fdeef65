"""Write the DVFS instances and suites: task graphs with communication delays on identical
processors with discrete speed levels, in the style of Stewart, Raith and Sinnen (Computers &
Operations Research 2023: exact makespan-energy fronts, MIP box method).

    python instances/make_dvfs.py

For 10 and 16 tasks, 288 configurations each: 6 graph shapes x CCR 0.1 / 1 / 10 x 2 or 4
processors x 2 or 3 speed levels x seeds 0-3 (:func:`cpsched.generate.dvfs_instance`; the
published anchor also has 288 configurations per size, its own).  Writes
``dvfs/<n>/<name>.json``, the full suites ``dvfs10.yaml`` / ``dvfs16.yaml`` (600 s per
front) and the seed-0 samples ``dvfs10-s0.yaml`` / ``dvfs16-s0.yaml`` (72 each), every
entry a (latency, energy) front.  The same code gives the same files.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from cpsched.generate import SHAPES, dvfs_instance
from cpsched.instance import save_instance

HERE = Path(__file__).resolve().parent
SIZES = (10, 16)
CCRS = (0.1, 1.0, 10.0)
PROCESSORS = (2, 4)
LEVELS = (2, 3)
SEEDS = range(4)
SUITE = """# Written by make_dvfs.py.
name: {name}
description: >-
  {what}: (latency, energy) fronts of task graphs with communication delays on identical
  processors with speed levels (Stewart, Raith and Sinnen style), {limit} s per front.
time_limit: {limit}
objectives: [latency, energy]
epsilon: auto
entries:
  - instance: {glob}
"""


def main() -> None:
    for n in SIZES:
        folder = HERE / "dvfs" / str(n)
        folder.mkdir(parents=True, exist_ok=True)
        for shape, ccr, m, levels, seed in itertools.product(SHAPES, CCRS, PROCESSORS, LEVELS, SEEDS):
            inst = dvfs_instance(seed, n, shape, ccr, m, levels)
            save_instance(inst, folder / f"{inst.name}.json")
        (HERE / f"dvfs{n}.yaml").write_text(SUITE.format(
            name=f"dvfs{n}", what=f"All 288 DVFS configurations of {n} tasks", limit=600,
            glob=f"dvfs/{n}/*.json"))
        (HERE / f"dvfs{n}-s0.yaml").write_text(SUITE.format(
            name=f"dvfs{n}-s0", what=f"The 72 seed-0 DVFS configurations of {n} tasks", limit=600,
            glob=f"dvfs/{n}/*-s0.json"))


if __name__ == "__main__":
    main()
