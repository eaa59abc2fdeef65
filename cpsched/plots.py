"""Plots: Gantt charts, memory over time and Pareto fronts (matplotlib).

Every drawing function takes an optional ``ax`` (or ``axes``) and returns
what it drew into, so that plots compose into a caller's figure; with none
given, a new :class:`matplotlib.figure.Figure` is made (never pyplot, so no
global state changes and no display is needed).  :func:`plot_schedule` and
:func:`plot_front` write a file, PNG or SVG by the path's extension.

* :func:`gantt` -- one lane per device and per link that carries a transfer
  (``cpu→gpu``); tasks coloured by op type (stable colours, keyed by the
  instance's sorted op names); transfers on their link lanes; the makespan marked.
* :func:`memory` / :func:`memory_axes` -- live bytes over time per device
  (PROBLEM.md section 3, from :func:`cpsched.validator.buffers`) against its capacity.
* :func:`front` / :func:`front_projections` -- a 2-objective front as the
  staircase bounding the region it dominates, or the three pairwise
  projections of a 3-objective front, with heuristic fronts overlaid.

>>> from cpsched.generate import random_instance
>>> from cpsched.lexico import solve
>>> inst = random_instance(1, 6, 2)
>>> ax = gantt(inst, solve(inst, ["latency"]))
>>> ax.get_xlabel()
'time (us)'
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib import colormaps, ticker
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.transforms import blended_transform_factory

from cpsched.errors import InputError
from cpsched.instance import Instance
from cpsched.quantities import human, scale
from cpsched.schedule import UNIT_KIND, Front, Schedule, Status, non_dominated
from cpsched.validator import buffers, makespan
from cpsched.validator import objectives as recompute

__all__ = [
    "FORMATS",
    "front",
    "front_figure",
    "front_projections",
    "gantt",
    "memory",
    "memory_axes",
    "memory_profile",
    "op_colors",
    "plot_front",
    "plot_schedule",
    "schedule_figure",
]

#: File formats the plot_* functions write, by extension.
FORMATS = {".png": "png", ".svg": "svg"}
_DPI = 150
_TRANSFER_COLOR = "#d9d9d9"
_LANE = 0.8  # bar height of a lane (lanes are 1 apart)


# ----- axes ---------------------------------------------------------------------------------


def _time_axis(ax: Axes, unit: str) -> None:
    ax.set_xlabel(f"time ({unit})" if unit else "time")
    ax.xaxis.set_major_locator(ticker.MaxNLocator(nbins="auto", integer=True))
    ax.xaxis.set_major_formatter(ticker.StrMethodFormatter("{x:,.0f}"))


def _suffix(path: str | Path) -> str:
    """The matplotlib format of ``path`` by its extension; InputError naming any other suffix."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"{path}: cannot write a plot as {suffix or 'a file without an extension'!r} "
                         f"(use {' or '.join(FORMATS)})")
    return FORMATS[suffix]


def _save(fig: Figure, path: str | Path) -> Path:
    path = Path(path)
    fmt = _suffix(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp, format=fmt, dpi=_DPI, metadata={"Software": "cpsched"} if fmt == "png" else None)
    tmp.replace(path)
    return path


def _new_axes(figsize: tuple[float, float]) -> Axes:
    return Figure(figsize=figsize, layout="tight").add_subplot()


def _check_schedule(instance: Instance, schedule: Schedule) -> None:
    if not schedule.status.has_schedule:
        raise InputError(f"the schedule has no tasks to plot (status {schedule.status}"
                         + (f": {schedule.reason})" if schedule.reason else ")"))
    unknown = [t for t in schedule.tasks if not instance.has_task(t)]
    if unknown:
        raise InputError(f"the schedule places task {unknown[0]!r}, which instance {instance.name!r} does not "
                         f"have (schedule of {schedule.instance!r}: is it the right instance?)")
    for tid, p in schedule.tasks.items():
        if instance.task(tid).mode(p.device, p.mode) is None:
            raise InputError(f"the schedule places task {tid!r} on {p.device!r} in mode {p.mode!r}, which it lacks")


def _title(instance: Instance, schedule: Schedule) -> str:
    values, _ = recompute(instance, schedule)
    parts = [f"{name} {human(values[name], UNIT_KIND[name], instance.units.get(UNIT_KIND[name], ''))}"
             for name in ("latency", "energy", "memory")]
    return f"{instance.name or schedule.instance}: " + ", ".join(parts) + f" ({schedule.status})"


# ----- Gantt ---------------------------------------------------------------------------------
def op_colors(instance: Instance) -> dict[str, tuple]:
    """Op type -> colour: a qualitative colormap indexed by the instance's sorted op names.

    tab10 (without its grey, kept for transfers) up to 9 ops, tab20 (without
    greys) up to 18; beyond that the colours repeat.
    """
    ops = sorted({t.op for t in instance.tasks})
    if len(ops) <= 9:
        palette = [c for i, c in enumerate(colormaps["tab10"].colors) if i != 7]
    else:
        palette = [c for i, c in enumerate(colormaps["tab20"].colors) if i not in (14, 15)]
    return {op: palette[i % len(palette)] for i, op in enumerate(ops)}


def _lanes(instance: Instance, schedule: Schedule) -> list[tuple[str, object, int]]:
    """(label, key, sub-rows) per lane: every device, then every link carrying a transfer."""
    lanes: list[tuple[str, object, int]] = [(d.id, d.id, 1) for d in instance.devices]
    used = {(x.src, x.dst) for x in schedule.transfers}
    rows = _link_rows(instance, schedule)
    for link in instance.links:
        if (link.src, link.dst) in used:
            n = 1 + max(r for (s, d, _), r in rows.items() if (s, d) == (link.src, link.dst))
            lanes.append((f"{link.src}→{link.dst}", (link.src, link.dst), n))
    return lanes


def _link_rows(instance: Instance, schedule: Schedule) -> dict[tuple[str, str, int], int]:
    """(src, dst, transfer index) -> sub-row, so that transfers a link carries at once never overlap."""
    out: dict[tuple[str, str, int], int] = {}
    per_link: dict[tuple[str, str], list[tuple[int, int, int]]] = defaultdict(list)
    for i, x in enumerate(schedule.transfers):
        link = instance.link(x.src, x.dst)
        if link is None or not instance.has_tensor(x.tensor):
            raise InputError(f"transfer of {x.tensor!r} {x.src}->{x.dst}: no such tensor or link in the instance")
        per_link[x.src, x.dst].append((x.start, x.start + link.transfer_time(instance.tensor(x.tensor).size), i))
    for (src, dst), items in per_link.items():
        ends: list[int] = []  # end of the last transfer in each sub-row
        for start, end, i in sorted(items):
            row = next((r for r, e in enumerate(ends) if e <= start), len(ends))
            if row == len(ends):
                ends.append(end)
            else:
                ends[row] = end
            out[src, dst, i] = row
    return out


def _fits(ax: Axes, text: str, width: float, fontsize: float) -> bool:
    """Whether ``text`` fits inside a bar ``width`` data units wide (estimated from the axes' size)."""
    lo, hi = ax.get_xlim()
    px_per_unit = ax.bbox.width / max(hi - lo, 1e-9)
    dpi = ax.figure.dpi if ax.figure is not None else 100
    return width * px_per_unit >= (len(text) * 0.6 + 0.8) * fontsize * dpi / 72


def gantt(instance: Instance, schedule: Schedule, ax: Axes | None = None, *, labels: bool = True,
          legend: bool = True, title: bool = True) -> Axes:
    """Draw ``schedule`` as a Gantt chart into ``ax`` (a new figure when None) and return ``ax``.

    One lane per device (all of them, in instance order) and per link that
    carries at least one transfer (``src→dst``; a link carrying several at
    once gets sub-rows); tasks are bars coloured by op type (:func:`op_colors`)
    with a legend, transfers grey bars on their link lanes; task ids and
    tensor names are written inside bars wide enough; the makespan is a
    dashed line.  The x axis is in the instance's time unit.
    """
    _check_schedule(instance, schedule)
    lanes = _lanes(instance, schedule)
    if ax is None:
        ax = _new_axes(_schedule_figsize(instance, schedule, memory=False))
    span = makespan(instance, schedule)
    unit = instance.units.get("time", "")
    ax.set_xlim(0, max(span, 1) * 1.01)
    ax.set_ylim(len(lanes) - 0.5, -0.5)  # first lane on top
    index = {key: i for i, (_, key, _) in enumerate(lanes)}
    colors = op_colors(instance)
    fontsize = 7

    by_op: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for tid, p in schedule.tasks.items():
        task = instance.task(tid)
        dur = task.mode(p.device, p.mode).duration
        by_op[task.op].append((p.start, dur, index[p.device]))
        if labels and _fits(ax, tid, dur, fontsize):
            ax.text(p.start + dur / 2, index[p.device], tid, ha="center", va="center", fontsize=fontsize,
                    clip_on=True, color=_ink(colors[task.op]))
    for op in sorted(by_op):
        starts, durs, ys = zip(*by_op[op])
        ax.barh(ys, durs, left=starts, height=_LANE, color=colors[op], edgecolor="black", linewidth=0.3,
                label=op)

    rows = _link_rows(instance, schedule)
    for i, x in enumerate(schedule.transfers):
        lane = index[x.src, x.dst]
        n = lanes[lane][2]
        h = _LANE / n
        y = lane - _LANE / 2 + h * (rows[x.src, x.dst, i] + 0.5)
        dur = instance.link(x.src, x.dst).transfer_time(instance.tensor(x.tensor).size)
        ax.barh(y, dur, left=x.start, height=h * 0.92, color=_TRANSFER_COLOR, edgecolor="0.35", linewidth=0.4)
        if labels and _fits(ax, x.tensor, dur, fontsize - 1):
            ax.text(x.start + dur / 2, y, x.tensor, ha="center", va="center", fontsize=fontsize - 1,
                    clip_on=True, color="0.1")

    n_dev = len(instance.devices)
    if len(lanes) > n_dev:
        ax.axhline(n_dev - 0.5, color="0.6", linewidth=0.8)
    ax.set_yticks(range(len(lanes)), [label for label, _, _ in lanes])
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="0.9", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.axvline(span, color="black", linestyle="--", linewidth=1)
    ax.text(span, 1.0, f"makespan {human(span, 'time', unit)}", transform=blended_transform_factory(
        ax.transData, ax.transAxes), ha="right", va="bottom", fontsize=8)
    _time_axis(ax, unit)
    if legend:
        handles = [Patch(facecolor=colors[op], edgecolor="black", linewidth=0.3, label=op) for op in sorted(by_op)]
        if schedule.transfers:
            handles.append(Patch(facecolor=_TRANSFER_COLOR, edgecolor="0.35", linewidth=0.4, label="transfer"))
        ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False, fontsize=8,
                  title="op type", title_fontsize=8, borderaxespad=0)
    if title:
        ax.set_title(_title(instance, schedule), loc="left", fontsize=10)
    return ax


def _ink(color) -> str:
    """Black or white, whichever reads better on ``color``."""
    r, g, b = color[:3]
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


# ----- memory --------------------------------------------------------------------------------
def memory_profile(instance: Instance, schedule: Schedule) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Device -> (times, live bytes from each time on): the step function of PROBLEM.md section 3.

    Times start at 0 and end at the makespan (where the level drops to 0);
    the maximum level of a device is its peak (:func:`cpsched.validator.peak_memory`).
    """
    span = makespan(instance, schedule)
    deltas: dict[str, dict[int, int]] = {d.id: defaultdict(int) for d in instance.devices}
    for b in buffers(instance, schedule):
        if b.end > b.start and b.size:
            deltas[b.device][b.start] += b.size
            deltas[b.device][b.end] -= b.size
    out = {}
    for dev, ev in deltas.items():
        times = sorted(set(ev) | {0, span})
        levels = np.cumsum([ev.get(t, 0) for t in times])
        out[dev] = (np.asarray(times), levels)
    return out


def memory(instance: Instance, schedule: Schedule, ax: Axes | None = None,
           devices: Sequence[str] | None = None, *, title: bool = False) -> Axes:
    """Draw live memory over time of ``devices`` (default: all) into ``ax`` and return ``ax``.

    Each device is a step plot (filled) with its peak marked and its
    capacity as a dashed line of the same colour, in B/KiB/MiB/GiB.  When a
    capacity is far above the peaks it is named in the legend instead of
    being drawn at a scale that would flatten the curve.
    """
    _check_schedule(instance, schedule)
    names = [d.id for d in instance.devices] if devices is None else list(devices)
    for dev in names:
        if not instance.has_device(dev):
            raise InputError(f"no device {dev!r} in instance {instance.name!r}")
    if ax is None:
        ax = _new_axes((9, 2.2 + 0.3 * len(names)))
    profile = memory_profile(instance, schedule)
    span = makespan(instance, schedule)
    unit = instance.units.get("size", "byte")
    peaks = {d: int(profile[d][1].max(initial=0)) for d in names}
    top_peak = max(peaks.values(), default=0)
    caps = {d: instance.device(d).memory for d in names}
    shown = {d for d in names if caps[d] <= 2.5 * max(top_peak, 1)}  # capacities drawn to scale
    top = max([top_peak * 1.15] + [caps[d] * 1.08 for d in shown] + [1])
    factor, shown_unit = scale("size", unit, top)
    palette = colormaps["Dark2"].colors
    handles = []
    for k, dev in enumerate(names):
        color = palette[k % len(palette)] if len(names) > 1 else "tab:blue"
        times, levels = profile[dev]
        y = levels * factor
        ax.step(times, y, where="post", color=color, linewidth=1.2)
        ax.fill_between(times, y, step="post", color=color, alpha=0.25, linewidth=0)
        at = int(times[int(np.argmax(levels))]) if len(levels) else 0
        ax.plot([at], [peaks[dev] * factor], marker="o", markersize=3.5, color=color)
        ax.axhline(caps[dev] * factor, color=color, linestyle="--", linewidth=1,
                   visible=dev in shown)
        cap = human(caps[dev], "size", unit)
        who = f"{dev} " if len(names) > 1 else ""
        handles.append(Line2D([], [], color=color, linewidth=1.2,
                              label=f"{who}peak {human(peaks[dev], 'size', unit)}"))
        handles.append(Line2D([], [], color=color, linestyle="--" if dev in shown else "none", linewidth=1,
                              label=f"{who}capacity {cap}" + ("" if dev in shown else " (off scale)")))
    ax.set_xlim(0, max(span, 1) * 1.01)
    ax.set_ylim(0, top * factor)
    ax.set_ylabel(f"memory ({shown_unit})" if len(names) != 1 else f"{names[0]} memory ({shown_unit})")
    ax.yaxis.set_major_locator(ticker.MaxNLocator(nbins=4, integer=factor == 1.0))
    ax.grid(color="0.92", linewidth=0.6)
    ax.set_axisbelow(True)
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False, fontsize=7,
              borderaxespad=0)
    _time_axis(ax, instance.units.get("time", ""))
    if title:
        ax.set_title(f"{instance.name}: memory over time", loc="left", fontsize=10)
    return ax


def memory_axes(instance: Instance, schedule: Schedule, axes: Sequence[Axes] | None = None) -> list[Axes]:
    """One :func:`memory` panel per device (instance order) into ``axes``; return them.

    With ``axes`` None, a new figure with one row per device sharing the time axis.
    """
    _check_schedule(instance, schedule)
    devs = [d.id for d in instance.devices]
    if axes is None:
        fig = Figure(figsize=(9, 0.6 + 1.5 * len(devs)), layout="tight")
        axes = list(fig.subplots(len(devs), 1, sharex=True, squeeze=False)[:, 0])
    axes = list(axes)
    if len(axes) != len(devs):
        raise ValueError(f"memory_axes needs one Axes per device ({len(devs)}), got {len(axes)}")
    for ax, dev in zip(axes, devs):
        memory(instance, schedule, ax, [dev])
    for ax in axes[:-1]:
        ax.set_xlabel("")
        ax.tick_params(labelbottom=False)
    return axes


def _schedule_figsize(instance: Instance, schedule: Schedule, memory: bool) -> tuple[float, float]:
    n = sum(rows for _, _, rows in _lanes(instance, schedule))
    width = float(np.clip(8 + 0.06 * len(instance.tasks) + 0.2 * n, 9, 16))
    height = 1.4 + 0.42 * n + (1.45 * len(instance.devices) if memory else 0)
    return width, height


def plot_schedule(instance: Instance, schedule: Schedule, path: str | Path, memory: bool = False) -> Path:
    """Write the Gantt chart of ``schedule`` (with ``memory``, a memory panel per device below,
    sharing the time axis) to ``path`` as PNG or SVG, by its extension; return the path."""
    _suffix(path)
    return _save(schedule_figure(instance, schedule, memory), path)


def schedule_figure(instance: Instance, schedule: Schedule, memory: bool = False) -> Figure:
    """The figure :func:`plot_schedule` writes: the Gantt chart, and with ``memory`` one
    :func:`memory` panel per device below it, sharing its time axis."""
    _check_schedule(instance, schedule)
    lanes = _lanes(instance, schedule)
    n = sum(rows for _, _, rows in lanes)
    fig = Figure(figsize=_schedule_figsize(instance, schedule, memory), layout="tight")
    if not memory:
        gantt(instance, schedule, fig.add_subplot())
    else:
        devs = len(instance.devices)
        grid = fig.add_gridspec(1 + devs, 1, height_ratios=[max(n, 1) * 0.42 + 0.6] + [1.3] * devs)
        top = fig.add_subplot(grid[0])
        panels = [fig.add_subplot(grid[1 + k], sharex=top) for k in range(devs)]
        gantt(instance, schedule, top)
        memory_axes(instance, schedule, panels)
        top.set_xlabel("")
        top.tick_params(labelbottom=False)
    return fig


# ----- fronts --------------------------------------------------------------------------------
_OTHER_MARKERS = ("s", "^", "D", "v", "P", "X", "<", ">")


def _front_scales(fronts: Sequence[Front], names: Sequence[str]) -> list[tuple[float, str]]:
    out = []
    for k, name in enumerate(names):
        unit = fronts[0].units.get(name, "")
        top = max((abs(v[k]) for f in fronts for v in _values(f, names)), default=0)
        factor, shown = scale(UNIT_KIND.get(name, ""), unit, top)
        if UNIT_KIND.get(name) == "size" and not unit:
            shown = "B"
        out.append((factor, shown))
    return out


def _values(f: Front, names: Sequence[str]) -> list[tuple[int, ...]]:
    """``f``'s points projected onto ``names`` (InputError when it lacks one of them)."""
    missing = [n for n in names if n not in f.objectives]
    if missing:
        raise InputError(f"front of {f.instance!r} over {', '.join(f.objectives)} has no {missing[0]} to compare")
    idx = [f.objectives.index(n) for n in names]
    return [tuple(p.values[i] for i in idx) for p in f.points]


def _highlights(f: Front, highlight: int | Sequence[int] | None) -> list[int]:
    if highlight is None:
        return []
    chosen = [highlight] if isinstance(highlight, (int, np.integer)) else list(highlight)
    for k in chosen:
        if not 0 <= k < len(f.points):
            raise InputError(f"highlight {k}: the front has {len(f.points)} points (0-based indices "
                             f"0..{len(f.points) - 1})")
    return [int(k) for k in chosen]


def _other_labels(others: Sequence[Front], labels: Sequence[str] | None) -> list[str]:
    if labels is not None and len(labels) != len(others):
        raise ValueError(f"labels: one per other front ({len(others)}), got {len(labels)}")
    return [labels[i] if labels is not None else str(o.meta.get("method") or f"front {i + 1}")
            for i, o in enumerate(others)]


def _staircase(ax: Axes, xs: Sequence[float], ys: Sequence[float], color, *, fill: bool, linestyle="-",
               linewidth=1.4, label=None) -> None:
    """The boundary of the region the points dominate (minimising): post-steps, closed to the axes' edges."""
    order = np.argsort(xs, kind="stable")
    xs, ys = np.asarray(xs, float)[order], np.asarray(ys, float)[order]
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    sx = np.concatenate([[xs[0]], xs, [max(x1, xs[-1])]])
    sy = np.concatenate([[max(y1, ys[0])], ys, [ys[-1]]])
    sy = np.minimum.accumulate(sy)  # a staircase never goes up, even with dominated points given
    ax.step(sx, sy, where="post", color=color, linestyle=linestyle, linewidth=linewidth, label=label, zorder=2)
    if fill:
        ax.fill_between(sx, sy, max(y1, sy.max()), step="post", color=color, alpha=0.08, linewidth=0, zorder=1)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)


def _band(ax: Axes, f: Front, names: Sequence[str], factors: tuple[float, float],
          found: list[tuple[float, float]]) -> None:
    """The certified band of an incomplete front: between the proven lower staircase (dashed) and
    the found points' staircase, where a better schedule may still exist."""
    k = [f.objectives.index(n) for n in names]
    low = [(v[k[0]] * factors[0], v[k[1]] * factors[1]) for v in f.lower]
    if not low:
        return
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    grid = np.linspace(min(x0, min(v[0] for v in low)), x1, 600)

    def level(points):  # the staircase's height over the grid: the lowest y of the points left of x
        return np.array([min([y for x, y in points if x <= g] or [y1]) for g in grid])

    lower, upper = level(low), level(found)
    ax.fill_between(grid, np.minimum(lower, upper), upper, step=None, color="tab:orange", alpha=0.25,
                    linewidth=0, zorder=1, label=f"certified gap ({f.gap:.1%})" if f.gap is not None else "gap")
    _staircase(ax, [v[0] for v in low], [v[1] for v in low], "tab:orange", fill=False, linestyle="--",
               linewidth=1.0, label="proven lower bound")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)


def _limits(values: list[tuple[float, float]]) -> tuple[tuple[float, float], tuple[float, float]]:
    xs, ys = [v[0] for v in values], [v[1] for v in values]

    def pad(lo, hi):
        d = (hi - lo) or max(abs(hi), 1) * 0.1
        return lo - 0.08 * d, hi + 0.12 * d

    return pad(min(xs), max(xs)), pad(min(ys), max(ys))


def _front2(ax: Axes, f: Front, names: Sequence[str], scales, highlight: list[int], others: Sequence[Front],
            other_labels: Sequence[str], projection: bool, legend: bool = True) -> None:
    """Draw ``f`` projected onto two objectives ``names`` (and the overlays) into ``ax``."""
    (fx, ux), (fy, uy) = scales
    main = [(v[0] * fx, v[1] * fy) for v in _values(f, names)]
    other_vals = [[(v[0] * fx, v[1] * fy) for v in _values(o, names)] for o in others]
    every = main + [v for vs in other_vals for v in vs]
    for k, (name, unit, factor) in enumerate(zip(names, (ux, uy), (fx, fy))):
        (ax.set_xlabel if k == 0 else ax.set_ylabel)(f"{name} ({unit})" if unit else name)
        axis = ax.xaxis if k == 0 else ax.yaxis
        axis.set_major_locator(ticker.MaxNLocator(nbins="auto", integer=factor == 1.0))
        if factor == 1.0:
            axis.set_major_formatter(ticker.StrMethodFormatter("{x:,.0f}"))
    if not every:
        ax.text(0.5, 0.5, "no points", transform=ax.transAxes, ha="center", va="center")
        return
    (x0, x1), (y0, y1) = _limits(every)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    color = "tab:blue"
    keep = non_dominated(main) if projection else list(range(len(main)))
    kind = "exact front" if f.complete else "front (not complete)"
    if projection and len(keep) < len(main):
        rest = [main[i] for i in range(len(main)) if i not in keep]
        ax.scatter([v[0] for v in rest], [v[1] for v in rest], s=12, color="0.7", zorder=2,
                   label="dominated in this projection")
    if keep and not f.complete and f.lower and not projection:
        _band(ax, f, names, (fx, fy), [main[i] for i in keep])
    if keep:
        _staircase(ax, [main[i][0] for i in keep], [main[i][1] for i in keep], color, fill=True, label=kind)
        opt = [i for i in keep if f.points[i].status is Status.OPTIMAL]
        feas = [i for i in keep if f.points[i].status is not Status.OPTIMAL]
        if opt:
            ax.scatter([main[i][0] for i in opt], [main[i][1] for i in opt], s=28, color=color, zorder=3,
                       edgecolor=color, label="optimal (proven)")
        if feas:
            ax.scatter([main[i][0] for i in feas], [main[i][1] for i in feas], s=28, facecolor="white",
                       edgecolor=color, linewidth=1.2, zorder=3, label="feasible (not proven)")
    palette = [c for i, c in enumerate(colormaps["tab10"].colors) if i not in (0, 3)]  # not the front's blue, red
    for k, (vals, label) in enumerate(zip(other_vals, other_labels)):
        if not vals:
            continue
        c = palette[k % len(palette)]
        idx = non_dominated(vals) if projection else list(range(len(vals)))
        if len(idx) > 1:
            _staircase(ax, [vals[i][0] for i in idx], [vals[i][1] for i in idx], c, fill=False, linestyle=":",
                       linewidth=1.0)
        ax.scatter([vals[i][0] for i in idx], [vals[i][1] for i in idx], s=70, marker=_OTHER_MARKERS[k % 8],
                   color=c, edgecolor="black", linewidth=0.4, zorder=2.5, label=label)  # under the exact points
    for j, i in enumerate(highlight):
        x, y = main[i]
        ax.scatter([x], [y], s=150, facecolor="none", edgecolor="tab:red", linewidth=1.8, zorder=5,
                   label="highlighted" if j == 0 else None)
        ax.annotate(f"#{i + 1}", (x, y), xytext=(7, 7), textcoords="offset points", fontsize=8,
                    color="tab:red", zorder=5)
    ax.grid(color="0.92", linewidth=0.6)
    ax.set_axisbelow(True)
    if legend:
        ax.legend(fontsize=7, loc="best", framealpha=0.9)


def _front_title(f: Front, names: Sequence[str] | None = None) -> str:
    state = "complete" if f.complete else "not complete" + (f", certified within {f.gap:.1%}"
                                                             if f.gap is not None else "")
    return (f"{f.instance}: {' × '.join(names or f.objectives)} — {len(f.points)} points, {state}"
            + ("" if f.meta.get("method") in (None, "epsilon-constraint", "nested epsilon-constraint")
               else f" ({f.meta['method']})"))


def front(front: Front, ax: Axes | None = None, highlight: int | Sequence[int] | None = None,
          others: Sequence[Front] = (), labels: Sequence[str] | None = None, *, title: bool = True) -> Axes:
    """Draw a 2-objective ``front`` into ``ax`` (a new figure when None) and return ``ax``.

    The front is the staircase bounding the region it dominates (shaded);
    points are filled when proven optimal, hollow when only feasible.
    ``highlight`` (0-based point indices, e.g. a selected point) are ringed and
    numbered 1-based as in ``cpsched solve``'s table; ``others`` (e.g.
    heuristic fronts over the same objectives) are overlaid with their own
    markers, labelled by ``labels`` or their ``meta["method"]``.  Axes are
    labelled with objective and unit (bytes and energies scaled).
    """
    if len(front.objectives) != 2:
        raise InputError(f"front() draws 2 objectives; this front has {len(front.objectives)} "
                         f"({', '.join(front.objectives)}): use front_projections()")
    if ax is None:
        ax = _new_axes((7, 5))
    names = list(front.objectives)
    scales = _front_scales([front, *others], names)
    _front2(ax, front, names, scales, _highlights(front, highlight), others, _other_labels(others, labels),
            projection=False)
    if title:
        ax.set_title(_front_title(front), loc="left", fontsize=10)
    return ax


_front = front  # plot_front's parameter is also called front


def front_projections(front: Front, axes: Sequence[Axes] | None = None,
                      highlight: int | Sequence[int] | None = None, others: Sequence[Front] = (),
                      labels: Sequence[str] | None = None, *, title: bool = True) -> np.ndarray:
    """The three pairwise projections of a 3-objective ``front`` side by side; return the array of Axes.

    Each panel shows, for its pair of objectives, the staircase of the points
    non-dominated in that projection (the others in grey), with the same
    highlighting and overlays as :func:`front`.
    """
    if len(front.objectives) != 3:
        raise InputError(f"front_projections() draws 3 objectives; this front has {len(front.objectives)}")
    if axes is None:
        fig = Figure(figsize=(15, 4.8), layout="tight")
        axes = fig.subplots(1, 3)
    axes = np.asarray(axes, dtype=object).ravel()
    if len(axes) != 3:
        raise ValueError(f"front_projections needs 3 Axes, got {len(axes)}")
    names = list(front.objectives)
    scales = _front_scales([front, *others], names)
    chosen = _highlights(front, highlight)
    other_labels = _other_labels(others, labels)
    for ax, (a, b) in zip(axes, ((0, 1), (0, 2), (1, 2))):
        _front2(ax, front, [names[a], names[b]], [scales[a], scales[b]], chosen, others, other_labels,
                projection=True, legend=ax is axes[0])
        ax.set_title(f"{names[a]} × {names[b]}", fontsize=9)
    if title and axes[0].figure is not None:
        axes[0].figure.suptitle(_front_title(front), fontsize=10, x=0.01, ha="left")
    return axes


def plot_front(front: Front, path: str | Path, highlight: int | Sequence[int] | None = None,
               others: Sequence[Front] = (), labels: Sequence[str] | None = None) -> Path:
    """Write ``front`` (2 objectives: :func:`front`; 3: :func:`front_projections`) to ``path``
    as PNG or SVG, by its extension; return the path."""
    _suffix(path)
    return _save(front_figure(front, highlight, others, labels), path)


def front_figure(front: Front, highlight: int | Sequence[int] | None = None, others: Sequence[Front] = (),
                 labels: Sequence[str] | None = None) -> Figure:
    """The figure :func:`plot_front` writes: :func:`front` for 2 objectives, :func:`front_projections` for 3."""
    n = len(front.objectives)
    if n == 2:
        fig = Figure(figsize=(7.5, 5.2), layout="tight")
        _front(front, fig.add_subplot(), highlight, others, labels)
    elif n == 3:
        fig = Figure(figsize=(15, 4.8), layout="tight")
        front_projections(front, fig.subplots(1, 3), highlight, others, labels)
    else:
        raise InputError(f"cannot plot a front over {n} objectives (2 or 3)")
    return fig
