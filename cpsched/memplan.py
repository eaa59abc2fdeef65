"""Memory plans: an offset for every buffer whose lifetime is fixed (PROBLEM.md section 3).

One job: given blocks ``[lower, upper)`` x ``size``, give each an ``offset`` so
that blocks live at the same time never share an address, within a capacity,
and optionally with the smallest arena ``max(offset + size)``.

:func:`pack` works in three steps, cheapest first:

1. bounds: the arena is at least the peak of live bytes (and the largest
   block); a capacity below that is proven infeasible at once;
2. greedy-by-size (TFLite's best-fit in decreasing size order, over a few
   orders): often already at the peak, then proven optimal;
3. an exact depth-first search over *canonical* packings (MiniMalloc,
   Moffitt, ASPLOS 2023): pushing every block down as far as it goes turns
   any packing into one where each block sits on top of a block below it
   (or at 0), so placing blocks in non-decreasing offset order, each at the
   lowest offset its placed neighbours allow, reaches every packing worth
   having.  Inference and pruning: per time section, the unplaced bytes must
   fit between the lowest offset any of them can still take and the capacity
   (a watched "witness" block per section keeps this cheap); no block is
   placed at or above the lowest top of another (dominance: that one fills
   the gap first); identical blocks are placed in index order (symmetry);
   the problem splits into independent parts wherever no unplaced block
   spans a section boundary; the next offset is at most capacity minus the
   largest section total (the lowest block of that section lies below it),
   so a higher candidate must cover every section it would starve; a state
   (unplaced blocks and their lowest offsets) that failed once is not
   searched again.  Searches under several static orders (width / area /
   section-total keys, MiniMalloc's) run interleaved, a slice of nodes each
   in turn, and the first to finish decides.  Like MiniMalloc, each
   independent part is ordered afresh, its section totals counting only the
   bytes still unplaced: on MiniMalloc's E and I that finds a packing in
   about 18,000 and 1,800 nodes, where the order of the whole problem kept
   for its parts found none in 500,000.

A search that runs out of blocks to try proves that nothing fits.  To minimise, the
search probes capacities: the peak first, then halfway between the highest refuted
capacity and the best arena, and closer to the best arena after a probe that ran out of time.
:func:`cpsat_pack` is the plain CP-SAT ``NoOverlap2D`` model, kept for
comparison (``benchmarks/minimalloc.py``).  :func:`plan_schedule` packs every
device of a schedule (the ``after`` mode of ``solve --memory-plan``).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import os
import sys
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cpsched.checks import parse_int
from cpsched.errors import InputError
from cpsched.files import read_text
from cpsched.instance import Instance
from cpsched.schedule import PlanEntry, Schedule, Status

#: The static block orders the search takes turns with (MiniMalloc's defaults):
#: W = lifetime width, A = area (size x width), T = largest section total, Z = size; all descending.
ORDERS = ("WAT", "TAW", "TWA")


@dataclass(frozen=True)
class Block:
    """A buffer of ``size`` bytes live during ``[lower, upper)``."""

    id: Hashable
    lower: int
    upper: int
    size: int


@dataclass(frozen=True)
class PackResult:
    """What :func:`pack` found.

    ``status``: ``optimal`` (packed, arena proven minimal; only when asked to
    minimise), ``feasible`` (packed within the capacity), ``infeasible``
    (proven: nothing fits), ``unknown`` (nothing found in the time limit).
    ``offsets`` and ``arena`` are empty / 0 without a packing; ``bound`` is a
    proven lower bound on the arena of any packing.
    """

    status: Status
    offsets: dict[Hashable, int]
    arena: int
    bound: int
    info: Mapping[str, Any] = field(default_factory=dict)


class NoPlan(Exception):
    """No memory plan fits a device's capacity (proven, or none found in the time limit)."""


# ----- bounds and the greedy packer -----------------------------------------------------------

def live_peak(blocks: Iterable[Block]) -> int:
    """Max over time of the bytes live (half-open lifetimes)."""
    events = []
    for b in blocks:
        if b.upper > b.lower and b.size:
            events += [(b.lower, b.size), (b.upper, -b.size)]
    level = best = 0
    for _, delta in sorted(events):  # frees first at equal times
        level += delta
        best = max(best, level)
    return best


def lower_bound(blocks: Sequence[Block]) -> int:
    """A proven lower bound on the arena: the live peak, and the largest block."""
    return max([live_peak(blocks)] + [b.size for b in blocks])


def arena_of(blocks: Iterable[Block], offsets: Mapping[Hashable, int]) -> int:
    return max((offsets[b.id] + b.size for b in blocks if b.size), default=0)


def check_packing(blocks: Sequence[Block], offsets: Mapping[Hashable, int], capacity: int | None = None) -> None:
    """Raise AssertionError if two live-together blocks share an address (or exceed ``capacity``)."""
    items = sorted((b for b in blocks if b.size and b.upper > b.lower), key=lambda b: b.lower)
    active: list[Block] = []
    for b in items:
        o = offsets[b.id]
        assert o >= 0, f"block {b.id!r} has a negative offset"
        assert capacity is None or o + b.size <= capacity, f"block {b.id!r} exceeds the capacity {capacity}"
        active = [a for a in active if a.upper > b.lower]
        for a in active:
            p = offsets[a.id]
            assert p + a.size <= o or o + b.size <= p, f"blocks {a.id!r} and {b.id!r} overlap"
        active.append(b)


def greedy_by_size(blocks: Sequence[Block], key=None) -> dict[Hashable, int]:
    """TFLite's greedy-by-size: in decreasing size order (or ``key``), each block takes the
    smallest gap among the placed blocks live with it that fits it, else the top."""
    order = sorted(blocks, key=key or (lambda b: (-b.size, -(b.upper - b.lower), b.lower)))
    placed: list[tuple[int, int, int, int]] = []  # lower, upper, offset, top
    offsets = {}
    for b in order:
        if not b.size or b.upper <= b.lower:
            offsets[b.id] = 0
            continue
        lo, up, size = b.lower, b.upper, b.size
        busy = sorted((o, t) for (l, u, o, t) in placed if l < up and lo < u)
        best, best_gap, floor = None, None, 0
        for o, t in busy:
            gap = o - floor
            if gap >= size and (best_gap is None or gap < best_gap):
                best, best_gap = floor, gap
            floor = max(floor, t)
        offset = floor if best is None else best
        offsets[b.id] = offset
        placed.append((lo, up, offset, offset + size))
    return offsets


def _greedy_best(blocks: Sequence[Block]) -> tuple[dict[Hashable, int], int]:
    """The lowest arena of greedy-by-size over a few orders."""
    keys = [
        None,
        lambda b: (-(b.size * (b.upper - b.lower)), -b.size, b.lower),
        lambda b: (-(b.upper - b.lower), -b.size, b.lower),
    ]
    best, best_arena = None, None
    for key in keys:
        offsets = greedy_by_size(blocks, key)
        arena = arena_of(blocks, offsets)
        if best_arena is None or arena < best_arena:
            best, best_arena = offsets, arena
    return best, best_arena


# ----- the canonical depth-first search ------------------------------------------------------

class _OutOfTime(Exception):
    pass


def _search(lowers: list[int], uppers: list[int], sizes: list[int], capacity: int, order: str,
            slice_nodes: int, stats: dict):
    """One complete DFS with one static order, as a generator that pauses every
    ``slice_nodes`` nodes; its return value is the offsets, or None when nothing fits.

    Blocks have ``upper > lower`` and ``size > 0``.
    """
    n = len(sizes)
    points = sorted(set(lowers) | set(uppers))
    at = {t: k for k, t in enumerate(points)}
    lo = [at[t] for t in lowers]
    hi = [at[t] for t in uppers]
    S = len(points) - 1
    members: list[list[int]] = [[] for _ in range(S)]
    for i in range(n):
        for s in range(lo[i], hi[i]):
            members[s].append(i)
    total = [sum(sizes[i] for i in m) for m in members]
    if any(t > capacity for t in total) or any(s > capacity for s in sizes):
        return None
    secs = [range(lo[i], hi[i]) for i in range(n)]
    over = []
    for i in range(n):
        near = set()
        for s in secs[i]:
            near.update(members[s])
        near.discard(i)
        over.append(sorted(near))
    cuts = [0] * max(S, 1)  # cuts[k]: unplaced blocks spanning sections k and k + 1
    for i in range(n):
        for k in range(lo[i], hi[i] - 1):
            cuts[k] += 1
    width = [u - l for l, u in zip(lowers, uppers)]
    fixed = {"W": width, "A": [sizes[i] * width[i] for i in range(n)], "Z": sizes}

    def order_key(i: int) -> tuple:
        """Block i's place in the static order; T is its largest section total as it stands
        (unplaced bytes only), so each independent part is ordered afresh (as MiniMalloc does)."""
        return tuple(-(max([total[s] for s in secs[i]]) if c == "T" else fixed[c][i]) for c in order) + (i,)

    rank = [0] * n  # each block's place in the order of the part being searched
    for r, i in enumerate(sorted(range(n), key=order_key)):
        rank[i] = r
    # identical blocks go in index order (symmetry); they are adjacent in every static order
    twin = [-1] * n
    last: dict[tuple[int, int, int], int] = {}
    for i in range(n):
        sig = (lowers[i], uppers[i], sizes[i])
        twin[i] = last.get(sig, -1)
        last[sig] = i
    for m in members:  # witnesses are sought among the blocks placed last first
        m.sort(key=rank.__getitem__, reverse=True)

    minoff = [0] * n  # lowest offset a block can take: the top of its placed neighbours
    off = [-1] * n
    thr = [capacity - t for t in total]  # a section is dead when every unplaced block in it lies above thr
    wit = [m[0] if m else -1 for m in members]  # an unplaced block with minoff <= thr, per section
    watch: list[set[int]] = [set() for _ in range(n)]
    for s, w in enumerate(wit):
        if w >= 0:
            watch[w].add(s)
    solution = [-1] * n
    nodes = [0]
    pause = [slice_nodes]
    # failed states: hash of (the part's order, its unplaced blocks, their lowest offsets) -> the
    # least (last offset, last rank) it failed under; a state with no more freedom than that fails too
    failed: dict[int, tuple[int, int]] = {}
    memo_size = 1 << 20

    def witness(s: int) -> int:
        t = thr[s]
        for j in members[s]:
            if off[j] < 0 and minoff[j] <= t:
                return j
        return -1

    def rewatch(j: int, moved: list, lost) -> bool:
        """Sections watched by block ``j`` for which ``lost(s)``: move each to a new witness
        (recorded in ``moved`` for undo); True when one has bytes left and no witness (dead end)."""
        ws = watch[j]
        for s in list(ws):
            if lost(s):
                k = witness(s)
                moved.append((s, j))
                ws.discard(s)
                wit[s] = k
                if k >= 0:
                    watch[k].add(s)
                elif total[s]:
                    return True
        return False

    def solve_part(bufs: list[int], slo: int, shi: int):
        bufs = sorted(bufs, key=order_key)
        saved = [rank[i] for i in bufs]
        for r, i in enumerate(bufs):
            rank[i] = r
        try:  # failed states are remembered per order: their last ranks are ranks in it
            return (yield from search(bufs, slo, shi, 0, -1, hash(tuple(bufs))))
        finally:
            for i, r in zip(bufs, saved):
                rank[i] = r

    def search(part: list[int], slo: int, shi: int, last_off: int, last_rank: int, ctx: int):
        nodes[0] += 1
        if nodes[0] >= pause[0]:
            pause[0] += slice_nodes
            yield
        un = [b for b in part if off[b] < 0]
        if not un:
            for b in part:
                solution[b] = off[b]
            return True
        # every section's unplaced bytes lie at or above last_off, and the lowest of them at or
        # below its thr (= capacity - its total): the next offset is at most min(thr)
        low = capacity - max(total[slo:shi])
        if last_off > low:
            return False
        key = hash((ctx, tuple(un), tuple([minoff[b] for b in un])))
        seen = failed.get(key)
        if seen is not None and seen <= (last_off, last_rank):
            return False  # this very state failed before, with no more freedom than now
        min_top = min([minoff[b] + sizes[b] for b in un])
        cands = sorted([(minoff[b], rank[b], b) for b in un if last_off <= minoff[b] < min_top])
        tight = None  # (thr, section) ascending, built when a candidate lies above low
        for o, r, b in cands:
            if o == last_off and r < last_rank:
                continue  # canonical: equal offsets in static order only
            if twin[b] >= 0 and off[twin[b]] < 0:
                continue
            size = sizes[b]
            top = o + size
            if top > capacity:
                continue
            if o > low:  # then b must cover every section whose thr is below o
                if tight is None:
                    tight = sorted([(thr[s], s) for s in range(slo, shi) if total[s]])
                    at, first, final = 0, shi, -1
                while at < len(tight) and tight[at][0] < o:
                    k = tight[at][1]
                    first, final = min(first, k), max(final, k)
                    at += 1
                if lo[b] > first or hi[b] <= final:
                    continue
            off[b] = o
            changed = []
            moved = []  # (section, its previous witness)
            dead = False
            for s in secs[b]:
                total[s] -= size
                thr[s] += size
            for j in over[b]:
                m = minoff[j]
                if m < top and off[j] < 0:
                    changed.append((j, m))
                    minoff[j] = top
                    if not dead and watch[j]:
                        dead = rewatch(j, moved, lambda s: top > thr[s])
            if not dead and watch[b]:
                dead = rewatch(b, moved, lambda s: True)
            found = False
            if not dead:
                found = yield from split(part, slo, shi, o, r, b, ctx)
            for s in secs[b]:
                total[s] += size
                thr[s] -= size
            for j, m in reversed(changed):
                minoff[j] = m
            off[b] = -1
            for s, w in reversed(moved):
                k = wit[s]
                if k >= 0:
                    watch[k].discard(s)
                wit[s] = w
                watch[w].add(s)
            for s in secs[b]:  # thr fell back: re-check the witnesses of b's sections
                k = wit[s]
                if k >= 0 and (off[k] >= 0 or minoff[k] > thr[s]):
                    watch[k].discard(s)
                    k = wit[s] = witness(s)
                    if k >= 0:
                        watch[k].add(s)
            if found:
                return True
        stats["backtracks"] = stats.get("backtracks", 0) + 1
        if seen is None or (last_off, last_rank) < seen:
            if len(failed) >= memo_size:
                failed.clear()
            failed[key] = (last_off, last_rank)
        return False

    def split(part: list[int], slo: int, shi: int, o: int, r: int, b: int, ctx: int):
        """Recurse; where b was the last block across a section boundary, solve the sides apart."""
        solution[b] = off[b]
        cut_at = []
        for k in range(lo[b], hi[b] - 1):
            cuts[k] -= 1
            if cuts[k] == 0 and slo <= k < shi - 1:
                cut_at.append(k + 1)
        try:
            if not cut_at:
                return (yield from search(part, slo, shi, o, r, ctx))
            bounds = [slo] + cut_at + [shi]
            for a, z in zip(bounds, bounds[1:]):
                bufs = [j for j in part if off[j] < 0 and lo[j] < z and a < hi[j]]
                if bufs and not (yield from solve_part(bufs, a, z)):
                    return False
            return True
        finally:
            for k in range(lo[b], hi[b] - 1):
                cuts[k] += 1

    try:
        start = 0
        for k in range(S):
            if k == S - 1 or cuts[k] == 0:
                bufs = [j for j in range(n) if lo[j] <= k and start < hi[j]]
                if bufs and not (yield from solve_part(bufs, start, k + 1)):
                    return None
                start = k + 1
        return solution
    finally:
        stats["nodes"] = stats.get("nodes", 0) + nodes[0]


def _dfs(blocks: Sequence[Block], capacity: int, deadline: float | None, stats: dict,
         orders: Sequence[str] = ORDERS, slice_nodes: int = 500):
    """The searches of ``orders`` interleaved, ``slice_nodes`` nodes at a time (deterministic);
    the first to finish decides.  Returns offsets (dict), None (proven: nothing fits), or
    raises _OutOfTime."""
    lowers = [b.lower for b in blocks]
    uppers = [b.upper for b in blocks]
    sizes = [b.size for b in blocks]
    runs = [(order, _search(lowers, uppers, sizes, capacity, order, slice_nodes, stats)) for order in orders]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(blocks) + 1000))
    try:
        return _interleave(blocks, runs, deadline, stats)
    finally:
        for _, run in runs:
            run.close()
        sys.setrecursionlimit(limit)


def _interleave(blocks, runs, deadline, stats):
    while True:
        for order, run in runs:
            try:
                next(run)
            except StopIteration as stop:
                stats["order"] = order
                if stop.value is None:
                    return None
                return {b.id: o for b, o in zip(blocks, stop.value)}
            if deadline is not None and time.monotonic() > deadline:
                raise _OutOfTime


# ----- pack -----------------------------------------------------------------------------------

def pack(blocks: Sequence[Block], capacity: int, time_limit: float | None = None,
         minimise: bool = False) -> PackResult:
    """Offsets for ``blocks`` within ``capacity`` (and, with ``minimise``, the smallest arena).

    See the module docstring for the method.  ``time_limit`` (seconds, None:
    until proven) bounds the search; statuses as :class:`PackResult`.
    """
    clock = time.monotonic()
    deadline = None if time_limit is None else clock + time_limit
    ids = [b.id for b in blocks]
    if len(set(ids)) != len(ids):
        raise ValueError("block ids must be unique")
    for b in blocks:
        if b.size < 0:
            raise ValueError(f"block {b.id!r} has a negative size")
    bound = lower_bound(blocks)
    info: dict[str, Any] = {"lower_bound": bound}

    def done(status: Status, offsets: dict | None, lb: int, method: str) -> PackResult:
        info.update(method=method, wall_time=round(time.monotonic() - clock, 3))
        if offsets is None:
            return PackResult(status, {}, 0, lb, info)
        return PackResult(status, offsets, arena_of(blocks, offsets), lb, info)

    if bound > capacity:
        return done(Status.INFEASIBLE, None, bound, "bound")
    # blocks live for the whole span sit at the bottom, stacked: no loss (push the rest up)
    live = [b for b in blocks if b.size and b.upper > b.lower]
    base_offsets = {b.id: 0 for b in blocks if not (b.size and b.upper > b.lower)}
    if live:
        first, end = min(b.lower for b in live), max(b.upper for b in live)
        whole = [b for b in live if b.lower == first and b.upper == end]
        rest = [b for b in live if not (b.lower == first and b.upper == end)]
    else:
        whole, rest = [], []
    base = 0
    for b in whole:
        base_offsets[b.id] = base
        base += b.size

    def lift(offsets: Mapping[Hashable, int]) -> dict:
        return {**base_offsets, **{k: v + base for k, v in offsets.items()}}

    greedy, greedy_arena = _greedy_best(rest) if rest else ({}, 0)
    best = lift(greedy) if base + greedy_arena <= capacity else None
    best_arena = arena_of(blocks, best) if best is not None else None
    if best is not None and (best_arena == bound or not minimise):
        return done(Status.OPTIMAL if minimise else Status.FEASIBLE, best, bound, "greedy")
    info["greedy_arena"] = base + greedy_arena
    stats: dict = {}
    info["search"] = stats
    proven = bound  # every arena below this is proven impossible: the lowest capacity worth probing
    hi_cap = capacity if best is None else best_arena - 1  # the highest capacity worth probing
    step = 1.0  # how far down the open range a minimising probe goes: the peak first, then halfway
    while proven <= hi_cap:
        probe = hi_cap - int(step * (hi_cap - proven)) if minimise else hi_cap
        probe_deadline = None
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            # a fit-only probe leaves CP-SAT its share; a minimising one leaves the probes after it theirs
            probe_deadline = time.monotonic() + (left * (1 - CP_SHARE) if not minimise else
                                                 left if probe == hi_cap else left / PROBES)
        try:
            found = _dfs(rest, probe - base, probe_deadline, stats)
        except _OutOfTime:
            if not minimise:
                found = _cp_fallback(rest, probe - base, deadline, info)
                if found is None:
                    break
                best = lift(found)
                best_arena = arena_of(blocks, best)
                return done(Status.FEASIBLE, best, bound, "search+cpsat")
            if probe == hi_cap:  # not even the closest capacity settled in time
                break
            step /= 2  # unknown there: probe closer to the best arena
            continue
        if found is None:  # nothing fits in probe bytes, nor in fewer
            proven = probe + 1
            step = 0.5
        else:
            best = lift(found)
            best_arena = arena_of(blocks, best)
            hi_cap = best_arena - 1
        if not minimise:
            break
    if best is None:
        if proven > capacity:
            return done(Status.INFEASIBLE, None, proven, "search")
        return done(Status.UNKNOWN, None, proven, "search")
    optimal = minimise and proven >= best_arena
    return done(Status.OPTIMAL if optimal else Status.FEASIBLE, best, min(proven, best_arena), "search")


#: A minimising probe under a time limit gets at most 1/PROBES of the time left (the last, just below the
#: best arena, all of it), so that a capacity the search can neither fill nor refute in time (D and J's,
#: a little above their peaks) leaves time for probes nearer the best arena.
PROBES = 4
#: With a time limit and no minimising, the search gets the first (1 - CP_SHARE) of the time and
#: CP-SAT's NoOverlap2D model (8 workers: its packing subsolvers join only from about 8, see
#: CPSAT-NOTES section 7) the rest.  The search packs every MiniMalloc file within its share, but
#: on guillotine cuts of a 200 x 1000 rectangle into 150 blocks (a perfect packing exists, 20 s)
#: it missed 4 of 10 in its 8 s, and CP-SAT packed those 4 in the rest.
CP_SHARE = 0.6


def _cp_fallback(blocks: Sequence[Block], capacity: int, deadline: float, info: dict) -> dict | None:
    """Offsets from the CP-SAT model within the time left (None if it finds none)."""
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    result = cpsat_pack(blocks, capacity, left, workers=8)
    info["cpsat"] = {"status": result.status.value, "wall_time": result.info.get("wall_time")}
    return result.offsets if result.status.has_schedule else None


# ----- the plain CP-SAT model (for comparison) ------------------------------------------------

def cpsat_pack(blocks: Sequence[Block], capacity: int, time_limit: float | None = None, workers: int = 2,
               minimise: bool = False, seed: int = 0) -> PackResult:
    """The textbook CP-SAT model: a fixed x-interval per block (its lifetime), a sized
    y-interval at a variable offset, one ``NoOverlap2D``; with ``minimise``, a footprint
    variable ``>= offset + size`` minimised."""
    from ortools.sat.python import cp_model

    clock = time.monotonic()
    bound = lower_bound(blocks)
    if bound > capacity:
        return PackResult(Status.INFEASIBLE, {}, 0, bound, {"method": "bound"})
    m = cp_model.CpModel()
    xs, ys, offs = [], [], {}
    for i, b in enumerate(blocks):
        o = offs[b.id] = m.new_int_var(0, capacity - b.size, f"o{i}")
        if b.size and b.upper > b.lower:
            xs.append(m.new_fixed_size_interval_var(b.lower, b.upper - b.lower, f"x{i}"))
            ys.append(m.new_fixed_size_interval_var(o, b.size, f"y{i}"))
    m.add_no_overlap_2d(xs, ys)
    arena = None
    if minimise:
        arena = m.new_int_var(bound, capacity, "arena")
        for b in blocks:
            m.add(offs[b.id] + b.size <= arena)
        m.minimize(arena)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    if time_limit is not None:
        solver.parameters.max_time_in_seconds = time_limit
    code = solver.solve(m)
    info = {"method": "cpsat", "workers": workers, "wall_time": round(time.monotonic() - clock, 3)}
    if code == cp_model.INFEASIBLE:
        return PackResult(Status.INFEASIBLE, {}, 0, capacity + 1, info)
    if code not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        lb = max(bound, math.ceil(solver.best_objective_bound)) if minimise else bound
        return PackResult(Status.UNKNOWN, {}, 0, lb, info)
    offsets = {k: solver.value(v) for k, v in offs.items()}
    got = arena_of(blocks, offsets)
    if minimise:
        lb = max(bound, math.ceil(solver.best_objective_bound - 1e-6))
        return PackResult(Status.OPTIMAL if code == cp_model.OPTIMAL else Status.FEASIBLE, offsets, got,
                          min(lb, got), info)
    return PackResult(Status.FEASIBLE, offsets, got, bound, info)


# ----- MiniMalloc CSV -------------------------------------------------------------------------

def read_csv(path: str | Path) -> list[Block]:
    """Blocks from a MiniMalloc CSV (header ``id,lower,upper,size``; other columns ignored).

    Raises a one-line InputError naming the file and row on malformed input.
    """
    path = Path(path)
    text = read_text(path, "utf-8-sig")
    rows = csv.reader(text.splitlines())
    header = next(rows, None)
    if header is None:
        raise InputError(f"{path}: empty file (expected a header id,lower,upper,size)")
    names = [h.strip().lower() for h in header]
    missing = [c for c in ("id", "lower", "upper", "size") if c not in names]
    if missing:
        raise InputError(f"{path}: row 1: the header lacks {', '.join(missing)} (expected id,lower,upper,size)")
    col = {c: names.index(c) for c in ("id", "lower", "upper", "size")}
    blocks, seen = [], set()
    for line, row in enumerate(rows, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) < len(names):
            raise InputError(f"{path}: row {line}: expected {len(names)} fields, got {len(row)}")
        bid = row[col["id"]].strip()
        values = {}
        for c in ("lower", "upper", "size"):
            values[c] = parse_int(row[col[c]], f"{path}: row {line}: {c}", minimum=None)
        if values["lower"] < 0:
            raise InputError(f"{path}: row {line}: lower must be >= 0 (got {values['lower']})")
        if values["size"] < 0:
            raise InputError(f"{path}: row {line}: size must be >= 0 (got {values['size']})")
        if values["lower"] >= values["upper"]:
            raise InputError(f"{path}: row {line}: lower {values['lower']} must be < upper {values['upper']}")
        if not bid:
            raise InputError(f"{path}: row {line}: empty id")
        if bid in seen:
            raise InputError(f"{path}: row {line}: duplicate id {bid!r}")
        seen.add(bid)
        blocks.append(Block(bid, values["lower"], values["upper"], values["size"]))
    return blocks


def csv_text(blocks: Sequence[Block], offsets: Mapping[Hashable, int]) -> str:
    """The packing as MiniMalloc CSV: ``id,lower,upper,size,offset``."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "lower", "upper", "size", "offset"])
    for b in blocks:
        w.writerow([b.id, b.lower, b.upper, b.size, offsets[b.id]])
    return buf.getvalue()


def write_csv(path: str | Path, blocks: Sequence[Block], offsets: Mapping[Hashable, int]) -> None:
    """Write :func:`csv_text` to ``path`` (atomically)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(csv_text(blocks, offsets), encoding="utf-8")
    os.replace(tmp, path)


# ----- plans for schedules --------------------------------------------------------------------

def schedule_blocks(instance: Instance, schedule: Schedule) -> dict[str, list[Block]]:
    """Per device, the blocks of the schedule's buffers of size > 0 (PROBLEM.md section 3),
    with ids ``(kind, id)``."""
    from cpsched.validator import buffers

    out: dict[str, list[Block]] = {}
    for buf in buffers(instance, schedule):
        if buf.size > 0:
            out.setdefault(buf.device, []).append(Block((buf.kind, buf.id), buf.start, buf.end, buf.size))
    return out


def with_plan(instance: Instance, schedule: Schedule, offsets: Mapping[str, Mapping[tuple[str, str], int]],
              info: Mapping[str, Any] | None = None) -> Schedule:
    """``schedule`` with the memory plan ``offsets`` (device -> (kind, id) -> offset), its
    arenas and ``objectives.arena``."""
    blocks = schedule_blocks(instance, schedule)
    plan, arena = {}, {}
    for dev in instance.devices:
        mine = blocks.get(dev.id, [])
        got = offsets.get(dev.id, {})
        missing = [b.id for b in mine if b.id not in got]
        if missing:
            raise ValueError(f"the plan has no offset for {missing[0][0]} {missing[0][1]!r} on {dev.id!r}")
        plan[dev.id] = tuple(PlanEntry(b.id[0], b.id[1], got[b.id]) for b in mine)
        arena[dev.id] = arena_of(mine, got)
    objectives = {**schedule.objectives, "arena": max(arena.values(), default=0)}
    solver = {**schedule.solver, **({"memory_plan": dict(info)} if info else {})}
    return dataclasses.replace(schedule, memory_plan=plan, arena=arena, objectives=objectives, solver=solver)


def plan_schedule(instance: Instance, schedule: Schedule, time_limit: float | None = None) -> Schedule:
    """The ``after`` mode: the schedule fixed, each device packed with the smallest arena
    that fits its memory.  Raises :class:`NoPlan` when a device has none (proven, or
    none found within ``time_limit``, shared among the devices)."""
    if not schedule.status.has_schedule:
        return schedule
    clock = time.monotonic()
    blocks = schedule_blocks(instance, schedule)
    offsets, status, bounds = {}, {}, {}
    devices = [d for d in instance.devices if blocks.get(d.id)]
    for k, dev in enumerate(devices):
        left = None
        if time_limit is not None:
            left = max(0.0, time_limit - (time.monotonic() - clock)) / (len(devices) - k)
        result = pack(blocks[dev.id], dev.memory, left, minimise=True)
        if not result.status.has_schedule:
            why = ("proven: no plan fits" if result.status is Status.INFEASIBLE
                   else "no plan found within the time limit")
            raise NoPlan(f"device {dev.id!r}: {why} in its memory {dev.memory} "
                         f"(the arena needs at least {result.bound})")
        offsets[dev.id] = result.offsets
        status[dev.id] = result.status.value
        bounds[dev.id] = result.bound
    info = {"mode": "after", "status": status, "bound": bounds,
            "wall_time": round(time.monotonic() - clock, 3)}
    return with_plan(instance, schedule, offsets, info)
