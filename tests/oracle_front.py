"""Test-side exact Pareto fronts by brute force, for tiny instances.

Imported by tests (``from oracle_front import ...``), never by the package.  Like
:mod:`oracle` it shares nothing with the engines but the instance/schedule types
and the validator, so that agreement with an epsilon-constraint sweep is
independent evidence.  Memory *capacity* is ignored everywhere: callers must use
instances whose memory never binds (generous ``memory`` on every device).

(latency, energy) -- :func:`brute_front_latency_energy`
    For a fixed placement the transfers are fixed, so (PROBLEM.md section 4)
    ``energy = const(p) + S * makespan`` with ``const(p)`` = mode energies +
    transfer bytes x energy per byte, and ``S`` = total static power.  Energy is
    non-decreasing in the makespan, so the best schedules of a placement are
    those of minimal makespan ``Lmin(p)``, and the front is the non-dominated
    filter of ``{(Lmin(p), const(p) + S * Lmin(p))}`` over placements.
    ``Lmin(p)`` comes from :func:`oracle._search` (the per-placement exact search
    of the latency oracle).  A placement is skipped (exactly) when an already
    found point ``(L', E')`` with ``E' <= const(p) + S * L'`` has
    ``L' <= lower bound of Lmin(p)``; otherwise the search is asked only for a
    makespan below the smallest such ``L'`` (any larger one would be dominated
    or equal).  :func:`reference_front_latency_energy` does the same with no
    pruning and ``Lmin(p)`` by plain enumeration (every topological order x SSGS).

(latency, memory) -- :func:`brute_front_latency_memory`
    Memory is ``cpsched.validator.objectives(...)["memory"]`` of a candidate
    schedule, nothing else.  Left-shifted (active) schedules are *not* enough:
    delaying a task or a transfer can shorten a buffer's lifetime.  So for every
    placement, the activities (tasks + needed transfers, :func:`oracle._problem`)
    get *every* integer start time, by a DFS over a fixed topological order:
    ``start in [earliest given the predecessors, H - duration - longest tail]``,
    with device / link-channel overlaps checked incrementally.

    Horizon.  *Compression*: if no activity runs in a unit slot ``[x, x+1)``
    before the makespan, moving every activity that starts after ``x`` one unit
    earlier keeps the schedule valid (no activity spans the slot, and every
    duration is >= 1), lowers the makespan by one and never raises a peak: every
    buffer boundary (PROBLEM.md section 3) is 0, the makespan, or an activity's
    start or end, hence ``<= x`` or ``>= x+1``, and the map ``b -> b`` (``b <= x``),
    ``b -> b-1`` (``b >= x+1``) is monotone, so the live set at every time after
    equals the live set at some time before.  Hence every front point is achieved
    by a schedule *without idle slots*, whose makespan is at most the sum of the
    durations of the placement's activities.  The DFS therefore only explores
    schedules without idle slots (exact restriction, pruned as soon as a slot
    before every unassigned activity's earliest start is uncovered), with
    ``H(p) = sum of durations`` -- the front is then exact with no horizon at
    all (``horizon=None``).  With ``horizon=h`` the search is restricted to
    makespans ``<= h`` (``H(p) = min(h, sum)``): the result is then the exact
    front of the schedules with makespan ``<= h`` (compression never raises a
    makespan, so the no-idle restriction stays exact).

    Pruning (exact).  A partial assignment has a latency lower bound (ends and
    heads + longest tails) and a memory lower bound: the peak, per device, of
    the buffers whose start is already known, each over a sub-interval of its
    final lifetime (ends of unassigned users replaced by their earliest ends;
    graph outputs and weights up to the latency lower bound).  The branch is cut
    when a point already found is <= both bounds.  ``prune=False`` switches this
    off (still exact, slower) so that tests can check the bound.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import networkx as nx

from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor
from cpsched.schedule import Placement, Schedule, Status, Transfer
from cpsched.validator import objectives
from oracle import (_active_starts, _draft, _lower_bound, _placement_problems, _search, _tails, _to_schedule)

Point = tuple[int, int]


# ----------------------------------------------------------------------------------------
# dominance helpers
# ----------------------------------------------------------------------------------------

def dominates(a: Sequence[int], b: Sequence[int]) -> bool:
    """PROBLEM.md section 4: no worse everywhere and better somewhere (minimisation)."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def non_dominated(items):
    """Filter ``(point, witness)`` pairs: keep the non-dominated points, one witness each,
    sorted by point."""
    best: dict[tuple, object] = {}
    for point, witness in items:
        point = tuple(point)
        if point not in best:
            best[point] = witness
    keep = [pt for pt in best if not any(dominates(q, pt) for q in best)]
    return [(pt, best[pt]) for pt in sorted(keep)]


def _covered(found: list, point: Sequence[int]) -> bool:
    """Some found point is <= ``point`` in every objective (so ``point`` adds nothing)."""
    return any(all(f <= x for f, x in zip(fp, point)) for fp, _ in found)


# ----------------------------------------------------------------------------------------
# (latency, energy)
# ----------------------------------------------------------------------------------------

def _const_energy(instance: Instance, placement: dict[str, str], p) -> int:
    total = sum(instance.task(t).modes[d].energy for t, d in placement.items())
    for kind in p.kinds:
        if kind[0] == "xfer":
            _, tensor, src, dst = kind
            total += instance.tensor(tensor).size * instance.link(src, dst).energy_per_byte
    return total


def _front_latency_energy(instance: Instance) -> list[tuple[Point, Schedule]]:
    static = sum(d.static_power for d in instance.devices)
    cands = []
    for placement, p in _placement_problems(instance):
        const = _const_energy(instance, placement, p)
        lb = _lower_bound(p, _tails(p))
        cands.append((lb, const + static * lb, len(cands), placement, p, const))
    if not cands:
        raise ValueError(f"instance {instance.name!r}: no placement has all the links it needs")
    cands.sort(key=lambda c: c[:3])
    found: list[tuple[Point, Schedule]] = []
    for lb, _, _, placement, p, const in cands:
        bound = min((fl for (fl, fe), _ in found if fe <= const + static * fl), default=math.inf)
        if lb >= bound:
            continue  # Lmin(p) >= lb >= L' and energy >= const + S*L' >= E': dominated or equal
        value, starts = _search(p, bound)
        if starts is None:
            continue
        sched = _to_schedule(instance, placement, p, starts, value)
        point = (value, const + static * value)
        assert sched.objectives["energy"] == point[1], (sched.objectives, point)
        found.append((point, sched))
    return non_dominated(found)


def brute_front_latency_energy(instance: Instance) -> list[Point]:
    """The exact (latency, energy) Pareto front, sorted by latency.

    Memory capacity is ignored: use instances with generous memory on every
    device (e.g. :func:`oracle.random_instance`'s default).  Exact; meant for at
    most ~6 tasks x 3 devices.  Raises ValueError when no placement is possible.
    """
    return [pt for pt, _ in _front_latency_energy(instance)]


def reference_front_latency_energy(instance: Instance) -> list[Point]:
    """The same front with no pruning: every placement, ``Lmin(p)`` as the best SSGS
    decoding of every topological order.  Exponential; only for cross-checks."""
    static = sum(d.static_power for d in instance.devices)
    points = []
    for placement, p in _placement_problems(instance):
        lmin = min(max((s + d for s, d in zip(start, p.dur)), default=0) for start in _active_starts(p))
        points.append(((lmin, _const_energy(instance, placement, p) + static * lmin), None))
    if not points:
        raise ValueError(f"instance {instance.name!r}: no placement has all the links it needs")
    return [pt for pt, _ in non_dominated(points)]


# ----------------------------------------------------------------------------------------
# (latency, memory)
# ----------------------------------------------------------------------------------------

class _MemorySearch:
    """Every-start-time DFS for one placement, sharing ``found`` across placements."""

    def __init__(self, instance: Instance, placement: dict[str, str], p, horizon: int | None,
                 found: list, prune: bool, stats: dict, allow_idle: bool = False):
        self.inst, self.placement, self.p = instance, placement, p
        self.found, self.prune, self.stats = found, prune, stats
        self.allow_idle = allow_idle
        n = p.n
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from((q, a) for a, ps in enumerate(p.preds) for q in ps)
        self.order = list(nx.lexicographical_topological_sort(g))
        self.pos = {a: i for i, a in enumerate(self.order)}
        self.tail = _tails(p)
        total = sum(p.dur)
        if allow_idle:
            assert horizon is not None, "allow_idle needs a horizon"
            self.horizon = horizon
        else:
            self.horizon = total if horizon is None else min(horizon, total)
        index = {}
        for a, kind in enumerate(p.kinds):
            index[kind[:2] if kind[0] == "task" else (kind[0], kind[1], kind[3])] = a
        self.index = index
        # memory recipes: W[d], workspaces, tensor buffers (start activity, end activities)
        devs = [d.id for d in instance.devices]
        self.weights = {d: 0 for d in devs}
        self.workspace = []  # (activity, device, bytes)
        for t in instance.tasks:
            d = placement[t.id]
            self.weights[d] += t.weights
            if t.workspace:
                self.workspace.append((index[("task", t.id)], d, t.workspace))
        host = instance.host.id
        self.tensor_bufs = []  # (device, size, start activity or None (time 0), end activities, output)
        for tensor in instance.tensors:
            if tensor.size == 0:
                continue
            src = host if tensor.producer is None else placement[tensor.producer]
            prod = None if tensor.producer is None else index[("task", tensor.producer)]
            users = [] if prod is None else [prod]
            users += [index[("task", c)] for c in tensor.consumers if placement[c] == src]
            xfers = [a for a, k in enumerate(p.kinds) if k[0] == "xfer" and k[1] == tensor.id]
            users += xfers
            self.tensor_bufs.append((src, tensor.size, prod, users, tensor.output))
            for x in xfers:
                dst = p.kinds[x][3]
                cons = [index[("task", c)] for c in tensor.consumers if placement[c] == dst]
                self.tensor_bufs.append((dst, tensor.size, x, [x] + cons, False))
        self.devs = devs
        self.start = [0] * n
        self.assigned = [False] * n
        self.timelines = {key: [] for key in p.cap}

    # ----- bounds ------------------------------------------------------------------------
    def _heads(self, depth: int) -> list[int]:
        """Exact starts of assigned activities, earliest possible starts of the others."""
        p, head = self.p, list(self.start)
        for a in self.order[depth:]:
            head[a] = max((head[q] + p.dur[q] for q in p.preds[a]), default=0)
        return head

    def _bounds(self, head: list[int]) -> tuple[int, int]:
        p = self.p
        lat = max((head[a] + p.dur[a] + self.tail[a] for a in range(p.n)), default=0)
        events: dict[str, list[tuple[int, int]]] = {d: [] for d in self.devs}

        def add(dev, s, e, size):
            if e > s:
                events[dev] += [(s, size), (e, -size)]

        for a, dev, size in self.workspace:
            if self.assigned[a]:
                add(dev, head[a], head[a] + p.dur[a], size)
        for dev, size, first, users, output in self.tensor_bufs:
            if first is not None and not self.assigned[first]:
                continue
            s = 0 if first is None else head[first]
            e = lat if output else max((head[u] + p.dur[u] for u in users), default=s)
            add(dev, s, e, size)
        mem = 0
        for dev, evs in events.items():
            level = best = 0
            for _, delta in sorted(evs):
                level += delta
                best = max(best, level)
            base = self.weights[dev] if lat > 0 else 0
            mem = max(mem, base + best)
        return lat, mem

    # ----- search ------------------------------------------------------------------------
    def _fits(self, a: int, t: int) -> bool:
        key = self.p.res[a]
        if key is None:
            return True
        cap, hi = self.p.cap[key], t + self.p.dur[a]
        inside = [(max(s, t), min(e, hi)) for s, e in self.timelines[key] if s < hi and e > t]
        if len(inside) < cap:
            return True
        if cap == 1:
            return False
        level = peak = 0
        for _, delta in sorted([(s, 1) for s, _ in inside] + [(e, -1) for _, e in inside]):
            level += delta
            peak = max(peak, level)
        return peak < cap

    def run(self) -> None:
        self._rec(0, 0)

    def _rec(self, depth: int, covered: int) -> None:
        p = self.p
        self.stats["nodes"] += 1
        if depth == p.n:
            span = max((self.start[a] + p.dur[a] for a in range(p.n)), default=0)
            if not self.allow_idle and covered != (1 << span) - 1:
                return  # an idle slot: compressible, never needed (module docstring)
            lat, mem_lb = self._bounds(self.start)
            if self.prune and _covered(self.found, (lat, mem_lb)):
                return
            self.stats["leaves"] += 1
            sched = self._schedule()
            values, _ = objectives(self.inst, sched)
            assert values["latency"] == lat == span and mem_lb <= values["memory"], (values, lat, mem_lb)
            point = (values["latency"], values["memory"])
            if not _covered(self.found, point):
                self.found.append((point, Schedule(
                    instance=self.inst.name, status=Status.FEASIBLE, tasks=sched.tasks,
                    transfers=sched.transfers, objectives=values,
                    solver={"engine": "brute-force front oracle"})))
            return
        a = self.order[depth]
        est = max((self.start[q] + p.dur[q] for q in p.preds[a]), default=0)
        last = self.horizon - p.dur[a] - self.tail[a]
        key = p.res[a]
        for t in range(est, last + 1):
            if not self._fits(a, t):
                continue
            self.start[a], self.assigned[a] = t, True
            if key is not None:
                self.timelines[key].append((t, t + p.dur[a]))
            cov = covered | (((1 << p.dur[a]) - 1) << t)
            ok = True
            if depth + 1 < p.n:
                head = self._heads(depth + 1)
                if not self.allow_idle:
                    first = min(head[b] for b in self.order[depth + 1:])
                    ok = cov & ((1 << first) - 1) == (1 << first) - 1
                if ok and self.prune:
                    ok = not _covered(self.found, self._bounds(head))
            if ok:
                self._rec(depth + 1, cov)
            if key is not None:
                self.timelines[key].pop()
            self.assigned[a] = False
            self.start[a] = 0

    def _schedule(self) -> Schedule:
        tasks, transfers = {}, []
        for a, kind in enumerate(self.p.kinds):
            if kind[0] == "task":
                tasks[kind[1]] = Placement(kind[2], self.start[a])
            else:
                transfers.append(Transfer(kind[1], kind[2], kind[3], self.start[a]))
        return Schedule(instance=self.inst.name, status=Status.FEASIBLE, tasks=tasks,
                        transfers=tuple(transfers))

    def static_bounds(self) -> tuple[int, int]:
        """Lower bounds of the placement before any start is fixed: the latency bound of
        :func:`oracle._lower_bound`, and the bytes that must be live on a task's device
        while it runs (weights there, its workspace, its inputs -- local or their copy --
        and its outputs)."""
        lat = _lower_bound(self.p, self.tail)
        mem = 0
        for t in self.inst.tasks:
            d = self.placement[t.id]
            live = self.weights[d] + t.workspace
            live += sum(x.size for x in self.inst.inputs_of[t.id])
            live += sum(x.size for x in self.inst.outputs_of[t.id])
            mem = max(mem, live)
        return lat, mem


def _front_latency_memory(instance: Instance, horizon: int | None, prune: bool = True,
                          stats: dict | None = None,
                          allow_idle: bool = False) -> list[tuple[Point, Schedule]]:
    stats = {"nodes": 0, "leaves": 0, "placements": 0} if stats is None else stats
    searches = []
    for placement, p in _placement_problems(instance):
        s = _MemorySearch(instance, placement, p, horizon, [], prune, stats, allow_idle)
        searches.append((s.static_bounds(), len(searches), s))
    if not searches:
        raise ValueError(f"instance {instance.name!r}: no placement has all the links it needs")
    searches.sort(key=lambda c: c[:2])
    found: list[tuple[Point, Schedule]] = []
    for bounds, _, s in searches:
        if prune and _covered(found, bounds):
            continue
        stats["placements"] += 1
        s.found = found
        s.run()
    return non_dominated(found)


def brute_front_latency_memory(instance: Instance, horizon: int | None = None) -> list[Point]:
    """The exact (latency, memory) Pareto front over all schedules with makespan <= horizon.

    ``horizon=None``: no restriction, the exact front (by the compression argument
    of the module docstring every front point has a schedule without idle slots,
    of makespan <= the sum of its activities' durations).  Memory is the
    validator's (``cpsched.validator.objectives``); capacity is ignored (use
    generous memory).  Only for tiny instances: 3-4 tasks, 2 devices, short
    durations and transfers.  Raises ValueError when no placement is possible.
    """
    return [pt for pt, _ in _front_latency_memory(instance, horizon)]


# ----------------------------------------------------------------------------------------
# common entry point and tiny memory instances
# ----------------------------------------------------------------------------------------

def brute_front(instance: Instance, objectives_: tuple[str, str] = ("latency", "energy"),
                horizon: int | None = None, *, prune: bool = True, allow_idle: bool = False,
                stats: dict | None = None) -> list[tuple[Point, Schedule]]:
    """The exact front over ``("latency", "energy")`` or ``("latency", "memory")``, each
    point with a witness schedule (status FEASIBLE, objectives recomputed by the
    validator), sorted by latency.  ``horizon`` (memory only): see
    :func:`brute_front_latency_memory`.  Cross-check switches (memory only, still
    exact, slower): ``prune=False`` drops the bound pruning; ``allow_idle=True``
    (needs ``horizon``) also enumerates schedules with idle slots, i.e. does not
    rely on the compression argument.  ``stats`` (a dict) receives counters."""
    objectives_ = tuple(objectives_)
    if objectives_ == ("latency", "energy"):
        if horizon is not None:
            raise ValueError("horizon applies to the (latency, memory) front only")
        return _front_latency_energy(instance)
    if objectives_ == ("latency", "memory"):
        return _front_latency_memory(instance, horizon, prune=prune, stats=stats,
                                     allow_idle=allow_idle)
    raise ValueError(f"unsupported objectives {objectives_!r}: ('latency', 'energy') or ('latency', 'memory')")


def memory_instance(seed: int, n_tasks: int, memory: int = 10**6) -> Instance:
    """A tiny random instance in which memory matters, deterministic per ``seed``.

    Devices ``cpu`` (host) and ``acc``; 3-4 tasks (any ``n_tasks >= 1`` works), each
    on both devices or on the cpu only; durations 1-3; weights 0-3, workspace
    0-2; every task produces one tensor (size 1-5) consumed by its successors,
    or a graph output; one graph input (size 1-5) for ``t0`` (and maybe ``t1``);
    links both ways, latency 0-1, bandwidth 2-5, channels 1.  ``memory`` is
    generous: capacity never binds.
    """
    assert n_tasks >= 1
    rng = random.Random(seed)
    devices = (Device("cpu", memory, rng.randint(0, 2), host=True), Device("acc", memory, rng.randint(0, 2)))
    links = tuple(Link(a, b, rng.randint(0, 1), rng.randint(2, 5), rng.randint(0, 2), 1)
                  for a, b in (("cpu", "acc"), ("acc", "cpu")))
    ids = [f"t{i}" for i in range(n_tasks)]
    succs: dict[str, list[str]] = {t: [] for t in ids}
    for i in range(1, n_tasks):
        k = min(rng.choice((0, 1, 1, 2)), i)
        for q in rng.sample(ids[:i], k):
            succs[q].append(ids[i])
    tasks = []
    for tid in ids:
        modes = {"cpu": Mode(rng.randint(1, 3), rng.randint(0, 9))}
        if rng.random() < 0.6:
            modes["acc"] = Mode(rng.randint(1, 3), rng.randint(0, 9))
        tasks.append(Task(tid, "Op", modes, weights=rng.randint(0, 3), workspace=rng.randint(0, 2)))
    firsts = ["t0"] + (["t1"] if n_tasks > 1 and rng.random() < 0.4 else [])
    tensors = [Tensor("in0", rng.randint(1, 5), None, tuple(firsts))]
    for tid in ids:
        tensors.append(Tensor(f"{tid}_out", rng.randint(1, 5), tid, tuple(succs[tid]),
                              output=not succs[tid]))
    return Instance(name=f"mem-{seed}-{n_tasks}", devices=devices, links=links,
                    tasks=tuple(tasks), tensors=tuple(tensors))


def left_shifted_front_latency_memory(instance: Instance) -> list[Point]:
    """The (latency, memory) front over *active* schedules only: every placement x every
    topological order of its activities decoded by SSGS (what a latency oracle
    explores).  Not the exact front -- delays can lower peaks; the tests use it to
    show that :func:`brute_front_latency_memory` finds points that it misses."""
    points = []
    for _, p in _placement_problems(instance):
        for start in _active_starts(p):
            values, _ = objectives(instance, _draft(instance, p, start))
            points.append(((values["latency"], values["memory"]), None))
    return [pt for pt, _ in non_dominated(points)]
