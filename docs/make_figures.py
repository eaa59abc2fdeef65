"""Regenerate the README figures: ``python docs/make_figures.py`` (about six minutes on 2 cores).

* ``docs/gantt-alexnet-edge.png``: the latency-optimal schedule of AlexNet on
  the ``edge`` preset, with the memory of each device over time below;
* ``docs/front-alexnet-edge.png``: the exact (latency, memory) front of the
  same instance, with the HEFT schedule overlaid;
* ``docs/front-squeezenet-certified.png``: the (latency, memory) front of
  SqueezeNet after 300 s, not complete: its points, its proven lower bound and
  the certified gap between them.
"""

from __future__ import annotations

from pathlib import Path

import cpsched
from cpsched import lexico, pareto
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
    squeezenet = cpsched.load("squeezenet", platform="edge")
    partial = cpsched.front(squeezenet, ("latency", "memory"), epsilon="latency", time_limit=300)
    print(plot_front(partial, HERE / "front-squeezenet-certified.png"))


if __name__ == "__main__":
    main()
