"""Plots: every function draws into the Axes it is given and returns it; files are PNG or SVG."""

from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from cpsched import pareto, plots
from cpsched import lexico
from cpsched.engines import Options
from cpsched.errors import InputError
from cpsched.generate import random_instance
from cpsched.heuristics.baselines import as_front
from cpsched.heuristics.heft import heft
from cpsched.schedule import Schedule, Status
from cpsched.validator import makespan, peak_memory

OPS = ("Conv", "Relu", "Gemm")


@pytest.fixture(scope="module")
def instance():
    inst = random_instance(3, 6, 3, channels=(1, 2))
    tasks = tuple(dataclasses.replace(t, op=OPS[i % len(OPS)]) for i, t in enumerate(inst.tasks))
    return dataclasses.replace(inst, tasks=tasks)


@pytest.fixture(scope="module")
def schedule(instance):
    s = lexico.solve(instance, ["latency"])
    assert s.status is Status.OPTIMAL and s.transfers
    return s


@pytest.fixture(scope="module")
def front2(instance):
    f = pareto.sweep(instance, ("latency", "memory"))
    assert f.complete and len(f.points) >= 2
    return f


@pytest.fixture(scope="module")
def front3(instance):
    f = pareto.sweep(instance, ("latency", "energy", "memory"))
    assert f.complete and f.points
    return f


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def legend_texts(ax) -> list[str]:
    legend = ax.get_legend()
    assert legend is not None
    return [t.get_text() for t in legend.get_texts()]


# ----- Gantt ----------------------------------------------------------------------------------
def test_gantt_draws_into_the_given_axes(instance, schedule):
    ax = Figure().add_subplot()
    assert plots.gantt(instance, schedule, ax) is ax
    assert len(ax.patches) == len(schedule.tasks) + len(schedule.transfers)
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    used = sorted({f"{x.src}→{x.dst}" for x in schedule.transfers})
    assert lanes[:3] == ["d0", "d1", "d2"] and sorted(lanes[3:]) == used  # only links that carry transfers
    assert ax.get_xlabel() == "time (us)"
    span = makespan(instance, schedule)
    assert any(isinstance(l, Line2D) and list(l.get_xdata()) == [span, span] for l in ax.lines)
    assert any(t.get_text().startswith("makespan") for t in ax.texts)
    ops = sorted({instance.task(t).op for t in schedule.tasks})
    assert legend_texts(ax) == ops + ["transfer"]
    assert instance.name in ax.get_title(loc="left")
    assert str(schedule.objectives["latency"]) in ax.get_title(loc="left")


def test_gantt_bars_sit_at_their_times(instance, schedule):
    ax = plots.gantt(instance, schedule)  # a new figure
    assert isinstance(ax.figure, Figure)
    bars = {(round(p.get_x()), round(p.get_width())) for p in ax.patches}
    for tid, p in schedule.tasks.items():
        assert (p.start, instance.task(tid).modes[p.device].duration) in bars


def test_op_colours_are_stable_and_distinct(instance):
    colours = plots.op_colors(instance)
    assert list(colours) == sorted(OPS)
    assert len(set(colours.values())) == len(OPS)
    shuffled = dataclasses.replace(instance, tasks=tuple(reversed(instance.tasks)))
    assert plots.op_colors(shuffled) == colours


def test_concurrent_transfers_get_sub_rows():
    inst = random_instance(8, 6, 2, channels=(0,))  # an unlimited link: transfers at once
    s = lexico.solve(inst, ["latency"])
    ax = plots.gantt(inst, s, Figure().add_subplot())
    bars = ax.patches[len(s.tasks):]  # tasks first, then one bar per transfer
    assert len(bars) == len(s.transfers)
    overlapping = 0
    for i, a in enumerate(bars):
        for b in bars[i + 1:]:
            if a.get_x() < b.get_x() + b.get_width() and b.get_x() < a.get_x() + a.get_width():
                overlapping += 1
                assert a.get_y() + a.get_height() <= b.get_y() or b.get_y() + b.get_height() <= a.get_y()
    if not overlapping:
        pytest.skip("this optimal schedule has no concurrent transfers")


def test_no_schedule_is_an_input_error(instance):
    empty = Schedule(instance.name, Status.INFEASIBLE, reason="too small")
    with pytest.raises(InputError, match="infeasible"):
        plots.gantt(instance, empty)
    other = Schedule("x", Status.FEASIBLE, tasks={"zz": schedule_placement()})
    with pytest.raises(InputError, match="zz"):
        plots.gantt(instance, other)


def schedule_placement():
    from cpsched.schedule import Placement
    return Placement("d0", 0)


# ----- memory ---------------------------------------------------------------------------------
def test_memory_profile_peaks_are_the_validator_peaks(instance, schedule):
    profile = plots.memory_profile(instance, schedule)
    peaks = peak_memory(instance, schedule)
    for dev, (times, levels) in profile.items():
        assert levels.max() == peaks[dev]
        assert times[0] == 0 and times[-1] == makespan(instance, schedule) and levels[-1] == 0
        assert np.all(np.diff(times) > 0)


def test_memory_draws_into_the_given_axes(instance, schedule):
    ax = Figure().add_subplot()
    assert plots.memory(instance, schedule, ax) is ax
    assert len(ax.lines) >= 3 * len(instance.devices)  # step, peak marker, capacity per device
    assert ax.get_ylabel().startswith("memory (")
    assert any(l.get_linestyle() == "--" for l in ax.lines)  # capacity
    assert any("peak" in t for t in legend_texts(ax))


def test_memory_capacity_within_scale_is_drawn(instance, schedule):
    peak = peak_memory(instance, schedule)["d0"]  # the drawn device's own peak sets the scale
    assert peak > 0
    tight = dataclasses.replace(instance, devices=tuple(dataclasses.replace(d, memory=2 * peak)
                                                        for d in instance.devices))
    ax = plots.memory(tight, schedule, Figure().add_subplot(), devices=["d0"])
    cap = [l for l in ax.lines if l.get_linestyle() == "--"]
    assert cap and cap[0].get_visible() and cap[0].get_ydata()[0] == 2 * peak  # bytes: scale B
    assert ax.get_ylabel() == "d0 memory (B)"
    assert ax.get_ylim()[1] >= 2 * peak


def test_memory_axes_one_panel_per_device(instance, schedule):
    fig = Figure()
    axes = list(fig.subplots(3, 1))
    out = plots.memory_axes(instance, schedule, axes)
    assert out == axes and all(ax.lines for ax in axes)
    assert [ax.get_ylabel().split()[0] for ax in axes] == ["d0", "d1", "d2"]
    assert len(plots.memory_axes(instance, schedule)) == 3
    with pytest.raises(ValueError):
        plots.memory_axes(instance, schedule, axes[:2])


# ----- schedule files -------------------------------------------------------------------------
def test_plot_schedule_png_and_memory_panels(instance, schedule, tmp_path):
    path = plots.plot_schedule(instance, schedule, tmp_path / "g.png")
    assert path == tmp_path / "g.png" and path.stat().st_size > 5_000
    w, h = png_size(path)
    assert 1200 <= w <= 2600 and 400 <= h <= 2000
    with_memory = plots.plot_schedule(instance, schedule, tmp_path / "gm.png", memory=True)
    w2, h2 = png_size(with_memory)
    assert w2 == w and h2 > h + 300
    assert len(plots.schedule_figure(instance, schedule).axes) == 1
    fig = plots.schedule_figure(instance, schedule, memory=True)
    assert len(fig.axes) == 1 + len(instance.devices)
    assert all(ax.get_shared_x_axes().joined(fig.axes[0], ax) for ax in fig.axes[1:])
    assert [p.name for p in tmp_path.iterdir()] and not list(tmp_path.glob(".*"))  # no temp files left


def test_plot_schedule_svg(instance, schedule, tmp_path):
    path = plots.plot_schedule(instance, schedule, tmp_path / "g.svg", memory=True)
    text = path.read_text()
    assert text.startswith("<?xml") or "<svg" in text


@pytest.mark.parametrize("name", ["g.jpg", "g", "g.PDF"])
def test_bad_extension_is_an_input_error(instance, schedule, front2, tmp_path, name):
    suffix = name[name.index("."):].lower() if "." in name else "a file without an extension"
    with pytest.raises(InputError, match=suffix.replace(".", r"\.")):
        plots.plot_schedule(instance, schedule, tmp_path / name)
    with pytest.raises(InputError, match=suffix.replace(".", r"\.")):
        plots.plot_front(front2, tmp_path / name)
    assert not list(tmp_path.iterdir())


# ----- fronts ---------------------------------------------------------------------------------
def test_front_draws_into_the_given_axes(instance, front2):
    ax = Figure().add_subplot()
    heft_front = as_front(instance, heft(instance))
    assert plots.front(front2, ax, highlight=1, others=[heft_front]) is ax
    assert ax.get_xlabel() == "latency (us)" and ax.get_ylabel() == "memory (B)"
    texts = legend_texts(ax)
    assert "exact front" in texts and "optimal (proven)" in texts and "heft" in texts and "highlighted" in texts
    assert any(t.get_text() == "#2" for t in ax.texts)
    # the staircase passes through every point, stepping post (right, then down)
    step = ax.lines[0]
    xs, ys = step.get_xdata(), step.get_ydata()
    for v in front2.points:
        assert any(x == v.values[0] and y == v.values[1] for x, y in zip(xs, ys))
    assert all(np.diff(ys) <= 0)
    assert "complete" in ax.get_title(loc="left")


def test_front_labels_and_hollow_feasible_points(front2):
    unproven = dataclasses.replace(front2, complete=False, points=tuple(
        dataclasses.replace(p, status=Status.FEASIBLE) for p in front2.points))
    ax = plots.front(unproven, Figure().add_subplot(), highlight=[0, 1], others=[front2], labels=["exact"])
    texts = legend_texts(ax)
    assert "feasible (not proven)" in texts and "front (not complete)" in texts and "exact" in texts
    hollow = [c for c in ax.collections if isinstance(c, PathCollection) and len(c.get_offsets()) == len(
        front2.points) and np.allclose(c.get_facecolor()[0], (1, 1, 1, 1))]
    assert hollow
    with pytest.raises(ValueError):
        plots.front(front2, others=[front2], labels=["a", "b"])


def test_an_incomplete_front_draws_its_certified_band(front2):
    part = dataclasses.replace(front2, complete=False, lower=tuple((v[0] - 1, v[1] - 1) for v in front2.lower),
                               gap=0.2)
    ax = plots.front(part, Figure().add_subplot())
    texts = legend_texts(ax)
    assert "proven lower bound" in texts and any(t.startswith("certified gap") for t in texts)


def test_front_errors(front2, front3):
    with pytest.raises(InputError, match="highlight"):
        plots.front(front2, highlight=len(front2.points))
    with pytest.raises(InputError, match="front_projections"):
        plots.front(front3)
    with pytest.raises(InputError, match="3 objectives"):
        plots.front_projections(front2)
    empty = dataclasses.replace(front2, points=())
    ax = plots.front(empty)
    assert any(t.get_text() == "no points" for t in ax.texts)


def test_front_projections_into_given_axes(instance, front3):
    fig = Figure()
    axes = fig.subplots(1, 3)
    heft_front = as_front(instance, heft(instance), ("latency", "energy", "memory"))
    out = plots.front_projections(front3, axes, highlight=0, others=[heft_front])
    assert isinstance(out, np.ndarray) and list(out) == list(axes)
    assert [ax.get_title() for ax in out] == ["latency × energy", "latency × memory", "energy × memory"]
    assert [ax.get_xlabel().split()[0] for ax in out] == ["latency", "latency", "energy"]
    assert all(ax.collections for ax in out)
    assert "heft" in legend_texts(out[0])
    assert len(plots.front_projections(front3)) == 3


def test_plot_front_png_svg_2d_and_3d(front2, front3, tmp_path):
    p2 = plots.plot_front(front2, tmp_path / "f.png", highlight=0)
    assert p2.stat().st_size > 5_000
    w, h = png_size(p2)
    assert 800 <= w <= 1600 and 500 <= h <= 1100
    p3 = plots.plot_front(front3, tmp_path / "f3.png")
    w3, h3 = png_size(p3)
    assert w3 > 1.5 * w and 400 <= h3 <= 1100
    assert len(plots.front_figure(front3).axes) == 3
    svg = plots.plot_front(front2, tmp_path / "f.svg").read_text()
    assert svg.startswith("<?xml") or "<svg" in svg


def test_scaled_units():
    from cpsched.quantities import human
    assert human(220376064, "size", "byte") == "210.2 MiB"
    assert human(31041215552, "energy", "pJ") == "31.04 mJ"
    assert human(7280, "time", "us") == "7.28 ms"
    assert human(999, "time", "us") == "999 us"
    assert human(100, "size", "byte") == "100 B"
    assert human(35, "time", "") == "35"  # an STG graph's unitless time stays as it is


def test_plot_command(tmp_path):
    from typer.testing import CliRunner

    from cpsched.cli import app
    from cpsched.instance import save_instance

    runner = CliRunner()
    inst_path = tmp_path / "inst.json"
    save_instance(random_instance(5, 6, 3, channels=(1,)), inst_path)
    sched, front_path = tmp_path / "s.json", tmp_path / "f.json"
    assert runner.invoke(app, ["solve", str(inst_path), "-o", str(sched), "--no-cache"]).exit_code == 0
    assert runner.invoke(app, ["solve", str(inst_path), "--epsilon", "latency", "-o", str(front_path),
                               "--no-cache"]).exit_code == 0
    gantt = tmp_path / "g.png"
    result = runner.invoke(app, ["plot", str(sched), "--instance", str(inst_path), "--memory", "-o", str(gantt)])
    assert result.exit_code == 0, result.stderr
    assert gantt.stat().st_size > 5000
    picture = tmp_path / "f.svg"
    result = runner.invoke(app, ["plot", str(front_path), "--highlight", "1", "-o", str(picture)])
    assert result.exit_code == 0, result.stderr
    assert "<svg" in picture.read_text()
    assert runner.invoke(app, ["plot", str(sched), "-o", str(gantt)]).exit_code == 2  # no --instance
    assert runner.invoke(app, ["plot", str(inst_path), "-o", str(gantt)]).exit_code == 2  # not a result
