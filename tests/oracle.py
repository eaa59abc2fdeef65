"""Test-side exact oracle: a brute-force latency optimum for tiny instances.

Imported by tests (``from oracle import ...``; pytest puts ``tests/`` on the
path), never by the package.  It shares nothing with the engines but the
instance/schedule types and the validator, so an agreement between the CP-SAT
engine and :func:`brute_force_latency` is independent evidence.

Method (PROBLEM.md sections 1, 2 and 4; memory capacity ignored):

* enumerate every placement (the product of each task's modes), skipping
  placements that need a missing link;
* a placement fixes the activities: the tasks plus one transfer per
  ``(tensor, dst)`` with ``size > 0`` where some consumer runs on
  ``dst != source`` (source: the producer's device, the host for a graph
  input), and their precedences (producer -> transfer -> consumers on ``dst``;
  producer -> consumers on its own device; a size-0 tensor: producer -> every
  consumer) and resources (each device, capacity 1; each link, capacity
  ``channels``, ``0`` meaning no resource at all);
* decode activity lists with the serial schedule generation scheme (SSGS,
  insertion allowed).  SSGS over all precedence-feasible lists yields every
  active schedule, and an active schedule is optimal for the makespan.

:func:`reference_latency` does exactly that, with ``networkx.all_topological_sorts``
and no pruning (only for very small instances).  :func:`brute_force` explores
the same lists as a depth-first search over list prefixes with two exact
prunings, cross-checked against the reference in ``test_oracle.py``:

1. *start-order dominance*: an active schedule is reproduced by SSGS from the
   list of its activities sorted by (start, activity index) (for a unit
   resource no later activity can block the left shift; for a capacity-k
   link the shifted activity stays active over every point it vacates last),
   so only lists whose decoded (start, index) pairs increase are explored;
2. *bounds*: a prefix is abandoned when a lower bound on any completion
   (ends so far, every remaining activity starting no earlier than the last
   start plus its duration and its longest successor chain, and the remaining
   work of each unit-capacity resource) is >= the best makespan found; a
   placement is skipped when its critical-path / resource-load bound is.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import networkx as nx

from cpsched.generate import random_instance  # noqa: F401 - re-exported for the tests
from cpsched.instance import Instance
from cpsched.schedule import Placement, Schedule, Status, Transfer
from cpsched.validator import objectives

# ----------------------------------------------------------------------------------------
# one placement: activities, precedences, resources
# ----------------------------------------------------------------------------------------

@dataclass
class _Problem:
    """The fixed-placement sub-problem: an RCPSP with unit demands."""

    kinds: list[tuple]  # ("task", tid, device) or ("xfer", tensor, src, dst)
    dur: list[int]
    res: list[object]  # resource key, or None (unlimited link)
    cap: dict  # resource key -> capacity
    preds: list[list[int]]

    @property
    def n(self) -> int:
        return len(self.dur)


def _problem(instance: Instance, placement: dict[str, str]) -> _Problem | None:
    """Activities of ``placement`` (task id -> device); None if a needed link is missing."""
    kinds, dur, res, preds = [], [], [], []
    cap: dict = {}
    index: dict[str, int] = {}
    for task in instance.tasks:
        d = placement[task.id]
        index[task.id] = len(kinds)
        kinds.append(("task", task.id, d))
        dur.append(task.modes[d].duration)
        res.append(("dev", d))
        cap[("dev", d)] = 1
        preds.append([])
    host = instance.host.id
    for tensor in instance.tensors:
        src = host if tensor.producer is None else placement[tensor.producer]
        prod = None if tensor.producer is None else index[tensor.producer]
        xfer_of: dict[str, int] = {}
        for c in tensor.consumers:
            dst = placement[c]
            if tensor.size == 0 or dst == src:
                if prod is not None:
                    preds[index[c]].append(prod)
                continue
            if dst not in xfer_of:
                link = instance.link(src, dst)
                if link is None:
                    return None
                xfer_of[dst] = len(kinds)
                kinds.append(("xfer", tensor.id, src, dst))
                dur.append(link.transfer_time(tensor.size))
                if link.channels > 0:
                    key = ("link", src, dst)
                    res.append(key)
                    cap[key] = link.channels
                else:
                    res.append(None)
                preds.append([] if prod is None else [prod])
            preds[index[c]].append(xfer_of[dst])
    return _Problem(kinds, dur, res, cap, preds)


def _earliest(timeline: list[tuple[int, int]], cap: int | None, est: int, dur: int) -> int:
    """Earliest ``t >= est`` at which one more activity of length ``dur`` fits under ``cap``."""
    if cap is None or not timeline:
        return est
    for t in sorted({est} | {e for _, e in timeline if e > est}):
        hi = t + dur
        inside = [(max(s, t), min(e, hi)) for s, e in timeline if s < hi and e > t]
        if len(inside) < cap:
            return t
        events = sorted([(s, 1) for s, _ in inside] + [(e, -1) for _, e in inside])
        level = peak = 0
        for _, delta in events:  # ends sort before starts at equal times: half-open
            level += delta
            peak = max(peak, level)
        if peak < cap:
            return t
    raise AssertionError("unreachable: the last end is always feasible")


def _ssgs(p: _Problem, order) -> list[int]:
    """Decode an activity list (a topological order) into start times."""
    start = [0] * p.n
    timelines: dict = {}
    for a in order:
        est = max((start[q] + p.dur[q] for q in p.preds[a]), default=0)
        key = p.res[a]
        tl = timelines.setdefault(key, []) if key is not None else []
        start[a] = _earliest(tl, p.cap.get(key), est, p.dur[a])
        if key is not None:
            tl.append((start[a], start[a] + p.dur[a]))
    return start


def _tails(p: _Problem) -> list[int]:
    """Longest chain of successor durations after each activity ends."""
    succs: list[list[int]] = [[] for _ in range(p.n)]
    for a, ps in enumerate(p.preds):
        for q in ps:
            succs[q].append(a)
    tail = [0] * p.n
    g = nx.DiGraph()
    g.add_nodes_from(range(p.n))
    g.add_edges_from((q, a) for a, ps in enumerate(p.preds) for q in ps)
    for a in reversed(list(nx.topological_sort(g))):
        tail[a] = max((p.dur[s] + tail[s] for s in succs[a]), default=0)
    return tail


def _lower_bound(p: _Problem, tail: list[int]) -> int:
    """Critical path and unit-resource load of the sub-problem."""
    head = [0] * p.n
    g = nx.DiGraph()
    g.add_nodes_from(range(p.n))
    g.add_edges_from((q, a) for a, ps in enumerate(p.preds) for q in ps)
    for a in nx.topological_sort(g):
        head[a] = max((head[q] + p.dur[q] for q in p.preds[a]), default=0)
    lb = max((head[a] + p.dur[a] + tail[a] for a in range(p.n)), default=0)
    load: dict = {}
    for a in range(p.n):
        if p.res[a] is not None:
            load[p.res[a]] = load.get(p.res[a], 0) + p.dur[a]
    for key, work in load.items():
        lb = max(lb, math.ceil(work / p.cap[key]))
    return lb


def _search(p: _Problem, best: int) -> tuple[int, list[int] | None]:
    """Best makespan < ``best`` over SSGS-decoded lists of ``p`` (pruned DFS), with its starts."""
    n = p.n
    tail = _tails(p)
    unit_work: dict = {}
    for a in range(n):
        if p.res[a] is not None and p.cap[p.res[a]] == 1:
            unit_work[p.res[a]] = unit_work.get(p.res[a], 0) + p.dur[a]
    succs: list[list[int]] = [[] for _ in range(n)]
    for a, ps in enumerate(p.preds):
        for q in ps:
            succs[q].append(a)
    missing = [len(ps) for ps in p.preds]
    start = [0] * n
    done = [False] * n
    timelines: dict = {key: [] for key in p.cap}
    found: list[int] | None = None

    def rec(count: int, last: tuple[int, int], span: int, lb_done: int) -> None:
        nonlocal best, found
        if count == n:
            if span < best:
                best, found = span, list(start)
            return
        for a in range(n):
            if done[a] or missing[a]:
                continue
            est = max((start[q] + p.dur[q] for q in p.preds[a]), default=0)
            key = p.res[a]
            t = _earliest(timelines[key] if key is not None else [],
                          p.cap.get(key), est, p.dur[a])
            if (t, a) < last:  # not the start-sorted list of its schedule: dominated
                continue
            end = t + p.dur[a]
            lb = max(span, end, lb_done, end + tail[a])
            for u in range(n):
                if not done[u] and u != a:
                    lb = max(lb, t + p.dur[u] + tail[u])
            for rkey, work in unit_work.items():
                rest = work - (p.dur[a] if rkey == key else 0)
                if rest:
                    lb = max(lb, t + rest)
            if lb >= best:
                continue
            done[a] = True
            start[a] = t
            for s in succs[a]:
                missing[s] -= 1
            if key is not None:
                timelines[key].append((t, end))
                if p.cap[key] == 1:
                    unit_work[key] -= p.dur[a]
            rec(count + 1, (t, a), max(span, end), max(lb_done, end + tail[a]))
            if key is not None:
                timelines[key].pop()
                if p.cap[key] == 1:
                    unit_work[key] += p.dur[a]
            for s in succs[a]:
                missing[s] += 1
            done[a] = False

    rec(0, (-1, -1), 0, 0)
    return best, found


def _placements(instance: Instance):
    ids = [t.id for t in instance.tasks]
    for devs in itertools.product(*(tuple(t.modes) for t in instance.tasks)):
        yield dict(zip(ids, devs))


def _placement_problems(instance: Instance):
    """(placement, its fixed-placement problem) for every placement whose links all exist."""
    for placement in _placements(instance):
        p = _problem(instance, placement)
        if p is not None:
            yield placement, p


def _active_starts(p: _Problem):
    """SSGS start times of every topological order of ``p``'s activities: every active schedule."""
    g = nx.DiGraph()
    g.add_nodes_from(range(p.n))
    g.add_edges_from((q, a) for a, ps in enumerate(p.preds) for q in ps)
    for order in nx.all_topological_sorts(g):
        yield _ssgs(p, order)


def _draft(instance: Instance, p: _Problem, start: list[int]) -> Schedule:
    """The schedule of ``p``'s activities at ``start`` (objectives not yet filled in)."""
    tasks, transfers = {}, []
    for a, kind in enumerate(p.kinds):
        if kind[0] == "task":
            tasks[kind[1]] = Placement(kind[2], start[a])
        else:
            transfers.append(Transfer(kind[1], kind[2], kind[3], start[a]))
    return Schedule(instance=instance.name, status=Status.FEASIBLE, tasks=tasks, transfers=tuple(transfers))


def _to_schedule(instance: Instance, placement: dict[str, str], p: _Problem,
                 start: list[int], makespan: int) -> Schedule:
    draft = _draft(instance, p, start)
    tasks, transfers = draft.tasks, draft.transfers
    values, _ = objectives(instance, draft)
    assert values["latency"] == makespan, (values, makespan)
    return Schedule(instance=instance.name, status=Status.FEASIBLE, tasks=tasks,
                    transfers=transfers, objectives=values, solver={"engine": "brute-force oracle"})


# ----------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------

def brute_force(instance: Instance) -> tuple[int, Schedule]:
    """The exact minimum makespan and a schedule achieving it (status FEASIBLE).

    Memory capacity is ignored: callers must use instances whose memory never
    binds (e.g. :func:`random_instance` with its default ``memory``).  Raises
    ValueError when no placement is possible (a needed link is missing
    everywhere).  Exact; meant for at most ~6 tasks and 3 devices.
    """
    candidates = []
    for placement, p in _placement_problems(instance):
        candidates.append((_lower_bound(p, _tails(p)), len(candidates), placement, p))
    if not candidates:
        raise ValueError(f"instance {instance.name!r}: no placement has all the links it needs")
    candidates.sort(key=lambda c: (c[0], c[1]))
    best, best_sol = math.inf, None
    for lb, _, placement, p in candidates:
        if lb >= best:
            break  # sorted by bound: no later placement can do better
        value, starts = _search(p, best)
        if starts is not None:
            best, best_sol = value, (placement, p, starts)
    placement, p, starts = best_sol
    return best, _to_schedule(instance, placement, p, starts, best)


def brute_force_latency(instance: Instance) -> int:
    """The exact minimum makespan under PROBLEM.md, ignoring memory capacity.

    Callers must use instances whose memory never binds; see :func:`brute_force`.
    """
    return brute_force(instance)[0]


def reference_latency(instance: Instance) -> int:
    """The same optimum by plain enumeration: every placement x every topological
    order (``networkx.all_topological_sorts``) decoded by SSGS, no pruning at all.
    Exponential; only for cross-checking :func:`brute_force` on tiny instances.
    """
    best = math.inf
    for _, p in _placement_problems(instance):
        for start in _active_starts(p):
            best = min(best, max((start[a] + p.dur[a] for a in range(p.n)), default=0))
    if best == math.inf:
        raise ValueError(f"instance {instance.name!r}: no placement has all the links it needs")
    return best
