"""Regenerate the README figures: ``python docs/make_figures.py`` (about half a minute on 2 cores).

* ``docs/gantt-alexnet-edge.png``: the latency-optimal schedule of AlexNet on
  the ``edge`` preset, with the memory of each device over time below;
* ``docs/front-alexnet-edge.png``: the exact (latency, memory) front of the
  same instance, with the HEFT schedule overlaid.
"""

from __future__ import annotations

from pathlib import Path

from cpsched import pareto
from cpsched import lexico
from cpsched.engines import Options
from cpsched.heuristics.baselines import as_front
from cpsched.heuristics.heft import heft
from cpsched.io.onnx import read_onnx
from cpsched.lowering import to_instance
from cpsched.platforms import load_platform
from cpsched.plots import plot_front, plot_schedule

HERE = Path(__file__).resolve().parent


def main() -> None:
    instance = to_instance(read_onnx("alexnet"), load_platform("edge"))
    schedule = lexico.solve(instance, ["latency"])
    print(plot_schedule(instance, schedule, HERE / "gantt-alexnet-edge.png", memory=True))
    front = pareto.sweep(instance, ("latency", "memory"), "latency")
    print(plot_front(front, HERE / "front-alexnet-edge.png", others=[as_front(instance, heft(instance))],
                     labels=["HEFT"]))


if __name__ == "__main__":
    main()
