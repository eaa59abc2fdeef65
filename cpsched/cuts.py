"""Cut tasks and the segments between them: the series structure of a task graph.

A **cut task** ``c`` is one that every other task precedes or follows (it is
an ancestor or a descendant of each) and that no tensor of nonzero size jumps
over (no producer before ``c`` with a consumer after it, no graph input read
after it).  In every schedule, everything before ``c`` (tasks and transfers)
ends before ``c`` starts and everything after it starts after ``c`` ends, so
the schedule splits in time at ``c``.  DNNs are full of them: the concat
closing an inception module, the add closing a residual block, every layer of
a chain.

Between two kept cuts ``a`` and ``b`` lies a **segment**: the tasks strictly
between them, with ``a`` as its source and ``b`` as its sink, each pinned to
one device (:func:`segment_instance`).  Any schedule of the whole, cut at ``a``
and ``b``, is a schedule of that segment instance, so a lower bound on each
segment's objective for each pair of cut devices, joined over the cut tasks'
devices by :func:`cheapest`, bounds the whole: the relaxation bound
(:func:`cpsched.bounds.latency_lower_bound`) and the series decomposition
(:mod:`cpsched.series`) both do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from cpsched.instance import Instance

#: one segment: (source cut or None at the graph's start, the tasks between, sink cut or None at its end)
Segment = tuple[str | None, tuple[str, ...], str | None]


def cut_tasks(instance: Instance) -> list[str]:
    """The cut tasks, in topological order.

    In a topological order a task is a cut exactly when no precedence edge or
    graph input jumps over it, no task before it is a sink and none after it a
    source (then every earlier task reaches it and it reaches every later one).
    """
    order = instance.topological_order
    pos = {v: i for i, v in enumerate(order)}
    n = len(order)
    reach = [-1] * (n + 1)  # reach[i]: the furthest position an edge from before position i lands on
    for tensor in instance.tensors:
        if not tensor.consumers or (tensor.producer is None and tensor.size == 0):
            continue
        start = -1 if tensor.producer is None else pos[tensor.producer]
        far = max(pos[c] for c in tensor.consumers)
        reach[start + 1] = max(reach[start + 1], far)
    g = instance.graph
    out = []
    furthest, sink_before = -1, False
    sources_after = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        sources_after[i] = sources_after[i + 1] + (g.in_degree(order[i]) == 0)
    for i, v in enumerate(order):
        furthest = max(furthest, reach[i])
        if furthest <= i and not sink_before and sources_after[i + 1] == 0:
            out.append(v)
        sink_before |= g.out_degree(v) == 0
    return out


def segments(instance: Instance, least: int) -> list[Segment]:
    """(source cut, tasks between, sink cut) from the graph's start to its end, keeping a cut
    task only when at least ``least`` tasks lie between it and the previous kept one."""
    order = instance.topological_order
    pos = {v: i for i, v in enumerate(order)}
    kept: list[str] = []
    last = -1
    for c in cut_tasks(instance):
        if pos[c] - last - 1 >= least:
            kept.append(c)
            last = pos[c]
    ends = [None, *kept, None]
    out = []
    for a, b in zip(ends, ends[1:]):
        lo = -1 if a is None else pos[a]
        hi = len(order) if b is None else pos[b]
        out.append((a, order[lo + 1:hi], b))
    return out


def segment_instance(instance: Instance, usable: Mapping[str, tuple[str, ...]], source: str | None,
                     source_device: str | None, between: Sequence[str], sink: str | None,
                     sink_device: str | None, index: int) -> Instance:
    """The segment's own instance: its tasks on their usable devices, the cut tasks pinned (a
    device of None leaves that cut task on its usable devices).

    The source keeps its outputs (its inputs are before it), the sink its
    inputs (its outputs are after it); graph inputs belong to the first
    segment only, since a cut task has none jumping over it.
    """
    keep = set(between) | {v for v in (source, sink) if v is not None}
    pinned = {source: source_device, sink: sink_device}
    tasks = []
    for task in instance.tasks:
        if task.id in keep:
            devices = (pinned[task.id],) if pinned.get(task.id) is not None else usable[task.id]
            if len(devices) < len(task.modes):
                task = dataclasses.replace(task, modes={d: task.modes[d] for d in devices})
            tasks.append(task)
    tensors = []
    for tensor in instance.tensors:
        inside = tensor.producer in keep and tensor.producer != sink
        if tensor.producer is None and source is None and tensor.consumers:
            inside = True
        if inside:
            consumers = tuple(c for c in tensor.consumers if c in keep)
            tensors.append(tensor if len(consumers) == len(tensor.consumers) else
                           dataclasses.replace(tensor, consumers=consumers))
    return dataclasses.replace(instance, name=f"{instance.name or 'instance'}#segment{index}", tasks=tuple(tasks),
                               tensors=tuple(tensors), groups={})


def overlap(instance: Instance, objective: str, task: str, device: str) -> int:
    """What a cut task adds to both segments it closes and opens: subtracted once when they join."""
    mode = instance.task(task).modes[device]
    if objective == "latency":
        return mode.duration
    if objective == "energy":
        return mode.energy + sum(d.static_power for d in instance.devices) * mode.duration
    return 0


def cheapest(instance: Instance, objective: str, parts: Sequence[Segment],
             values: Sequence[Mapping[tuple[str | None, str | None], int | None]]) -> tuple[int, list] | None:
    """(the least value of the whole over the cut tasks' devices, each segment's pair on that
    path): the dynamic programme over ``values`` (per segment, (source device, sink device) ->
    its value, None: infeasible).  Latency and energy add along the path, each cut task's
    :func:`overlap` counted once; memory takes the largest.  None when no path is feasible."""
    best: dict[str | None, tuple[int, list]] = {None: (0, [])}
    for (a, _, _), found in zip(parts, values):
        step: dict[str | None, tuple[int, list]] = {}
        for (da, db), own in found.items():
            if own is None or da not in best:
                continue
            value = own - (overlap(instance, objective, a, da) if a is not None else 0)
            joined = max(best[da][0], value) if objective == "memory" else best[da][0] + value
            if db not in step or joined < step[db][0]:
                step[db] = (joined, best[da][1] + [(da, db)])
        if not step:
            return None
        best = step
    return best[None]
