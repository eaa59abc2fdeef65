"""Fork, join and fork-join graphs on identical processors: an exact assignment model.

A graph of this shape (a source ``s`` feeding every other task, and/or a sink
``t`` fed by every other task, the *middle* tasks otherwise independent; also
plain independent tasks) on interchangeable processors with contention-free
links and memory that cannot bind is a packing problem: which middle tasks
share a processor.  The general model searches their order too, and its
bound stays at the work spread over the processors (Sinnen's 21-node fork and
join graphs at CCR 0.10 on 4 processors: 384 against 386, open at 30 s).

Here the order is not searched.  With ``s`` on processor 0 (all processors
alike) and ``t`` on processor 0 or 1 (one model per case), a middle task ``j``
on processor ``k`` is released at ``r = dur(s) + delay(s, j)`` (no delay on
``s``'s processor) and leaves a tail ``q = delay(j, t) + dur(t)`` (no delay on
``t``'s); the makespan is the largest ``end + q``.  Where every release on a
processor is alike, the order of largest tail first is optimal there (Jackson's
rule), where every tail is alike the order of release (the same rule in
reverse), so the makespan is linear in the assignment (``min q``, ``min r``:
over the processor's tasks)::

    C >= r_j + sum of w_i on k released no earlier than j + min q
    C >= min r + sum of w_i on k with a tail no shorter than j's + q_j

Only the processors where both vary (neither ``s``'s nor ``t``'s, in a
fork-join graph) need intervals and a ``NoOverlap``.  The processors alike
in the case are ordered by load (symmetry).  :func:`solve` probes the
decision version downwards from the best schedule known ("is there one of
makespan ``C - 1``?"), which CP-SAT answers far faster than it closes the
minimisation's bound: ``16p_Join_Nodes_21`` CCR 0.10 on 4 processors, 389
is infeasible in 5-7 s, where the general model needs 41 s.

Without a fork-join's two ends, one of release and tail is alike on every
processor, and a probe is also a bin-packing question, which :func:`_pack`
answers by bin completion (Korf's bin-oriented search, with Martello and
Toth's dominance) in a thread beside CP-SAT's model; the first to decide
answers.  The source's processor is filled first, then the others one at a
time, each holding the largest task left (they are alike) and a set of tasks
that no task left could join, alone or in place of one or two lighter tasks
released no later and with no longer a tail; each loaded enough that the
processors after it can hold the rest (each at most the limit less the least
release plus tail of a task it could start with); the last takes what is
left.  Identical tasks are counted, not listed, and a remainder that failed
once is not searched again.
On Sinnen's 30-node fork (CCR 0.10) it proves 169 infeasible on 16 processors
in 0.01 s and 285 on 8 in 4 s, where CP-SAT's probes were open after 80 s.

Every schedule is list-scheduled from the assignment and the order above and
checked by the validator.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from cpsched import interrupt
from cpsched.bounds import Unreachable, latency_lower_bound, memory_may_bind, usable_devices
from cpsched.classes import symmetric_groups
from cpsched.heuristics.heft import heft, list_schedule
from cpsched.instance import Instance
from cpsched.schedule import Schedule, Status
from cpsched.validator import scored, validate


@dataclass(frozen=True)
class Shape:
    """The parts of a fork / join / fork-join graph (``source``/``sink`` None when absent)."""

    source: str | None
    sink: str | None
    middle: tuple[str, ...]
    work: dict[str, int]  # task -> duration (the same on every processor)
    fork_delay: dict[str, int]  # middle task -> its inputs' delay from the source when on another processor
    join_delay: dict[str, int]  # middle task -> its outputs' delay to the sink when on another processor

    def release(self, j: str, away: bool) -> int:
        """When middle task ``j`` can start: after the source, and its input's transfer when
        ``away`` from the source's processor."""
        return (self.work[self.source] + (self.fork_delay[j] if away else 0)) if self.source else 0

    def tail(self, j: str, away: bool) -> int:
        """What follows middle task ``j``'s end: its output's transfer when ``away`` from the
        sink's processor, then the sink."""
        return (self.work[self.sink] + (self.join_delay[j] if away else 0)) if self.sink else 0


def shape(instance: Instance) -> Shape | None:
    """The instance's shape when the model applies, else None: one plain mode per task, the same
    duration on every device, every device usable by every task and interchangeable (links alike
    and contention-free), no memory that could bind, no graph input of nonzero size, and a graph
    of middle tasks with at most a common source before and a common sink after them."""
    devices = [d.id for d in instance.devices]
    if len(devices) < 2 or not instance.plain or not instance.tasks or any(x.channels for x in instance.links):
        return None
    try:
        usable = usable_devices(instance)
    except Unreachable:
        return None
    groups = symmetric_groups(instance, usable)  # every device alike, links included (no graph input pins the host)
    link = instance.link(devices[0], devices[1])  # the one kind of link there is, when alike
    if len(groups) != 1 or set(groups[0]) != set(devices) or link is None or memory_may_bind(instance, usable):
        return None
    work = {task.id: task.modes[devices[0]].duration for task in instance.tasks}
    graph = instance.graph
    tasks = list(instance.topological_order)
    for source, sink in ((tasks[0], tasks[-1]), (tasks[0], None), (None, tasks[-1]), (None, None)):
        middle = tuple(v for v in tasks if v not in (source, sink))
        ends = (set([source] if source else ()), set([sink] if sink else ()))
        if middle and len(set(middle) | ends[0] | ends[1]) == len(tasks) \
                and all(set(graph.predecessors(v)) == ends[0] and set(graph.successors(v)) == ends[1] for v in middle) \
                and (source is None or set(graph.successors(source)) == set(middle)) \
                and (sink is None or set(graph.predecessors(sink)) == set(middle)):
            break
    else:
        return None

    def delay(u: str, v: str) -> int:
        return max((link.transfer_time(t.size) for t in instance.outputs_of[u] if t.size and v in t.consumers),
                   default=0)

    return Shape(source, sink, middle, work, {v: delay(source, v) for v in middle} if source else {},
                 {v: delay(v, sink) for v in middle} if sink else {})


def packable(sh: Shape) -> bool:
    """Whether each probe is a bin-packing question (:func:`_pack`): a fork, a join or
    independent tasks, where release or tail is alike on every processor."""
    return not (sh.source and sh.sink)


class _Case:
    """The model of one placement of the sink (processor ``sink_at``; the source is on 0)."""

    def __init__(self, sh: Shape, m: int, sink_at: int, limit: int):
        from ortools.sat.python import cp_model

        self.sh = sh
        model = self.model = cp_model.CpModel()
        w, mid = sh.work, sh.middle
        self.release = {(j, k): sh.release(j, k != 0) for j in mid for k in range(m)}
        self.tail = {(j, k): sh.tail(j, k != sink_at) for j in mid for k in range(m)}
        x = self.x = {(j, k): model.new_bool_var(f"x[{j},{k}]") for j in mid for k in range(m)}
        for j in mid:
            model.add_exactly_one(x[j, k] for k in range(m))
        self.start: dict[tuple[str, int], object] = {}
        for k in range(m):
            r = {j: self.release[j, k] for j in mid}
            q = {j: self.tail[j, k] for j in mid}
            fit = [j for j in mid if r[j] + w[j] + q[j] <= limit]
            for j in mid:
                if j not in fit:
                    model.add(x[j, k] == 0)
            both = len(set(r.values())) > 1 and len(set(q.values())) > 1
            # The tasks released with j or later run after r_j; those with j's tail or more end by C - q_j.
            # Where only r or only q varies, that holds whether j is on k or not (the first such task on k
            # is released no earlier, or has no shorter a tail; with none, j's fitting on k alone implies
            # it), and stated unenforced CP-SAT proves the probes one below the Sinnen forks' and joins'
            # optima in 0.5-7 s.  Only for a j that fits: for one that does not (kept off k), r_j + min q or
            # min r + q_j alone may pass the limit.  Where both vary (the intervals below) it is enforced
            # by j on k: unenforced there, those probes took 20 s or more.
            for j in fit:
                later = model.add(r[j] + sum(w[i] * x[i, k] for i in mid if r[i] >= r[j]) + min(q.values()) <= limit)
                longer = model.add(min(r.values()) + sum(w[i] * x[i, k] for i in mid if q[i] >= q[j]) + q[j] <= limit)
                if both:
                    later.only_enforce_if(x[j, k])
                    longer.only_enforce_if(x[j, k])
            if both:
                intervals = []
                for j in fit:
                    s = self.start[j, k] = model.new_int_var(r[j], limit - w[j] - q[j], f"s[{j},{k}]")
                    intervals.append(model.new_optional_fixed_size_interval_var(s, w[j], x[j, k], f"run[{j},{k}]"))
                model.add_no_overlap(intervals)
        self.solver = cp_model.CpSolver()
        fixed = ({0} if sh.source or sh.sink else set()) | ({sink_at} if sh.sink else set())
        alike = [k for k in range(m) if k not in fixed]
        loads = {k: sum(w[j] * x[j, k] for j in mid) for k in range(m)}
        for a, b in zip(alike, alike[1:]):
            model.add(loads[a] >= loads[b])

    def stop(self) -> None:
        """End a running :meth:`solve` at once (it answers None)."""
        self.solver.stop_search()

    def solve(self, seconds: float | None, workers: int):
        """(True: a schedule within the limit, False: proven none, None: unknown), the assignment
        and the order to list-schedule it in."""
        from ortools.sat.python import cp_model

        solver = self.solver
        if seconds is not None:
            solver.parameters.max_time_in_seconds = max(0.01, seconds)
        solver.parameters.num_workers = workers
        solver.parameters.catch_sigint_signal = False
        status = interrupt.run(lambda: solver.solve(self.model), solver.stop_search)
        if status == cp_model.INFEASIBLE:
            return False, None
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            return None, None
        where = {j: k for (j, k), lit in self.x.items() if solver.boolean_value(lit)}
        key = {j: (solver.value(self.start[j, k]), 0, j) if (j, k) in self.start  # Jackson's order elsewhere
               else (self.release[j, k], -self.tail[j, k], j) for j, k in where.items()}
        return True, (where, sorted(where, key=key.__getitem__))


class _OutOfTime(Exception):
    pass


def _pack(sh: Shape, m: int, limit: int, deadline: float | None,
          stopped: threading.Event | None = None) -> tuple[bool | None, tuple | None]:
    """The probe "a schedule of makespan ``limit`` or less?" by bin completion, for a fork, a
    join or independent tasks (one of release and tail alike on every processor; the source or
    sink on processor 0): (True, (assignment, order)) / (False, None): proven none /
    (None, None): out of time at ``deadline``, ``stopped`` or interrupted."""
    w = sh.work
    ws = w[sh.source] if sh.source else 0
    wt = w[sh.sink] if sh.sink else 0
    members: dict[tuple[int, int, int], list[str]] = {}  # (work, release, tail) off processor 0 -> tasks
    for j in sh.middle:
        members.setdefault((w[j], sh.release(j, True), sh.tail(j, True)), []).append(j)
    kinds = sorted(members, key=lambda c: (-c[0], c[1], c[2]))
    work = [c[0] for c in kinds]
    # release plus tail: with one of them alike on a processor, its load is at most the limit less
    # the least of its tasks'
    least = [c[1] + c[2] for c in kinds]
    special = bool(sh.source or sh.sink)  # processor 0 holds the source or the sink
    alike = m - 1 if special else m

    def fits(chosen: list[int], first: bool) -> bool:
        """Whether the kinds ``chosen`` fit one processor (``first``: processor 0) by Jackson's rule."""
        if first:
            return ws + sum(work[i] for i in chosen) + wt <= limit
        t = end = 0
        for i in sorted(chosen, key=lambda i: (kinds[i][1], -kinds[i][2])):
            t = max(t, kinds[i][1]) + work[i]
            end = max(end, t + kinds[i][2])
        return end <= limit

    failed: set[tuple] = set()
    nodes = [0]

    def fill(count: tuple[int, ...], left: int, first: bool) -> list[list[int]] | None:
        """Processors for the tasks ``count`` (per kind) left: processor 0 when ``first``, then
        ``left`` alike ones; None when they do not fit."""
        if not any(count):
            return []
        key = (count, left, first)
        if not left and not first or key in failed:
            return None
        if left == 1 and not first:  # the last processor takes all that is left
            rest = [i for i, c in enumerate(count) for _ in range(c)]
            return [rest] if fits(rest, False) else None
        todo = sum(work[i] * c for i, c in enumerate(count))
        # the most an alike processor can hold, one per task left that it could start with, most first
        most = sorted((max(0, limit - least[i]) for i, c in enumerate(count) for _ in range(c)), reverse=True)
        room = sum(most[:left if first else left - 1])  # the processors after this one hold at most this
        cap = limit - ws - wt if first else most[0]
        top = next(i for i, c in enumerate(count) if c)  # an alike processor holds the largest task left
        remaining = list(count)
        chosen: list[int] = []

        def dominated(load: int) -> bool:
            """Whether a task left could join here, alone or in place of one or two tasks of
            this set (not the largest of an alike processor) that it outweighs and that are
            released no later and have no longer a tail: swapped, it fits here and they fit in
            its place wherever it was."""
            for x, c in enumerate(remaining):
                if not c:
                    continue
                if load + work[x] <= cap and fits(chosen + [x], first):
                    return True
                for a in range(0 if first else 1, len(chosen)):
                    for b in range(a, len(chosen)):  # b == a: the one task chosen[a]
                        out = {a, b}
                        weight = sum(work[chosen[k]] for k in out)
                        if weight <= work[x] and load - weight + work[x] <= cap \
                                and all(chosen[k] != x and kinds[chosen[k]][1] <= kinds[x][1]
                                        and kinds[chosen[k]][2] <= kinds[x][2] for k in out) \
                                and fits([i for k, i in enumerate(chosen) if k not in out] + [x], first):
                            return True
            return False

        def complete(k: int, load: int) -> list[list[int]] | None:
            nodes[0] += 1  # a processor's sets alone can be many: check the clock here
            if nodes[0] % 256 == 0 and ((deadline is not None and time.monotonic() > deadline)
                                        or interrupt.requested() or (stopped is not None and stopped.is_set())):
                raise _OutOfTime
            if load >= todo - room and chosen and fits(chosen, first) and not dominated(load):
                rest = fill(tuple(remaining), left if first else left - 1, False)
                if rest is not None:
                    return [list(chosen)] + rest
            for i in range(k, len(kinds)):
                if not remaining[i] or load + work[i] > cap:
                    continue
                if not first and not chosen and i != top:
                    break
                remaining[i] -= 1
                chosen.append(i)
                found = complete(i, load + work[i])
                chosen.pop()
                remaining[i] += 1
                if found is not None:
                    return found
            return None

        if todo > (cap if first else 0) + sum(most[:left]):  # all too full
            found = None
        else:
            found = complete(0, 0)
        if found is None:
            failed.add(key)
        return found

    try:
        packing = fill(tuple(len(members[c]) for c in kinds), alike, special)
    except _OutOfTime:
        return None, None
    if packing is None:
        return False, None
    pools = {c: list(members[c]) for c in kinds}
    where: dict[str, int] = {}
    for k, chosen in enumerate(packing):  # processor 0 first when special, each in Jackson's order
        for i in chosen:
            where[pools[kinds[i]].pop()] = k
    rank = {j: (c[1], -c[2], j) for c in kinds for j in members[c]}
    return True, (where, sorted(where, key=rank.__getitem__))


def _probe(sh: Shape, m: int, case: int, limit: int, seconds: float | None, workers: int) -> tuple:
    """One probe, answered as :meth:`_Case.solve`: by CP-SAT's model of the case and, where the
    shape is :func:`packable`, by bin completion (:func:`_pack`) in a thread beside it (CP-SAT
    leaves the interpreter free while it searches); the first of the two to decide answers.
    Each wins somewhere: bin completion on many processors (the 30-node fork on 8, 285 proven
    infeasible in 4 s, open after 80 s in CP-SAT), CP-SAT on few (the same fork on 4: 528 in
    about 18 s, 26 s by bin completion) and with large transfers (CCR 10)."""
    model = _Case(sh, m, case, limit)
    if not packable(sh):
        return model.solve(seconds, workers)
    stopped, solved = threading.Event(), threading.Event()
    packed: list = [None, None]

    def pack() -> None:
        packed[:] = _pack(sh, m, limit, None if seconds is None else time.monotonic() + seconds, stopped)
        while packed[0] is not None and not solved.wait(0.05):
            model.stop()  # again until it returns: a stop before its search began would be lost

    thread = threading.Thread(target=pack, daemon=True)
    thread.start()
    answer = model.solve(seconds, workers)
    solved.set()
    stopped.set()
    thread.join()
    return tuple(packed) if packed[0] is not None else answer


def _schedule(instance: Instance, sh: Shape, sink_at: int, where: dict[str, int], order: list[str]) -> Schedule:
    """The list schedule of an assignment: the source first on processor 0, the middle tasks in
    ``order`` (each processor's in the model's order), the sink last on ``sink_at``.  Each task
    starts as early as its inputs and its processor allow, so no later than the model has it."""
    devices = [d.id for d in instance.devices]
    placed = {j: devices[k] for j, k in where.items()}
    if sh.source:
        placed[sh.source] = devices[0]
    if sh.sink:
        placed[sh.sink] = devices[sink_at]
    sequence = [v for v in (sh.source, *order, sh.sink) if v is not None]
    listed = list_schedule(instance, placed, sequence)
    return scored(instance, dict(listed.tasks), list(listed.transfers))


def solve(instance: Instance, sh: Shape, time_limit: float | None, workers: int,
          best: Schedule | None = None, bound: int | None = None) -> Schedule:
    """Minimise the makespan of ``instance`` (of shape ``sh``) within ``time_limit`` seconds by
    probing the decision version downwards from ``best`` (default: HEFT's schedule):
    ``optimal`` once a probe proves that nothing shorter exists (or the schedule meets
    ``bound``, a proven lower bound; default: the relaxation's), else ``feasible`` with it."""
    clock = time.monotonic()
    deadline = None if time_limit is None else clock + time_limit
    m = len(instance.devices)
    floor = latency_lower_bound(instance, usable_devices(instance)) if bound is None else bound
    best = best if best is not None and best.status.has_schedule else heft(instance)
    cases = [0] if packable(sh) else [0, 1]  # the sink on the source's processor or another
    probes, proven = 0, False
    while not proven and best.objectives["latency"] > floor:
        target, found, unknown = best.objectives["latency"] - 1, None, False
        for case in cases:
            left = None if deadline is None else deadline - time.monotonic()
            if (left is not None and left <= 0) or interrupt.requested():
                unknown = True
                break
            answer, solution = _probe(sh, m, case, target, left, workers)
            probes += 1
            if answer:
                found = _schedule(instance, sh, case, *solution)
                break
            unknown |= answer is None
        if found is None:
            proven = not unknown
            if unknown:
                break
            continue
        report = validate(instance, found)
        if not report.valid or found.objectives["latency"] > target:
            raise RuntimeError("the fork-join model's schedule is invalid or longer than its probe: "
                               + "; ".join(map(str, report.violations)))
        best = found
    value = best.objectives["latency"]
    proven = proven or value == floor
    info = {"engine": "forkjoin", "probes": probes, "shape": "fork-join" if sh.source and sh.sink else
            "fork" if sh.source else "join" if sh.sink else "independent",
            "bound_source": "search" if proven and value > floor else "relaxation",
            "wall_time": round(time.monotonic() - clock, 3)}
    return scored(instance, dict(best.tasks), best.transfers, Status.OPTIMAL if proven else Status.FEASIBLE,
                  {"latency": value if proven else floor}, info)
