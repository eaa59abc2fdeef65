"""The CP-SAT engine: the model of PROBLEM.md, driven through :mod:`cpsched.engines.protocol`.

Variables (one family per method of :class:`CpSatModel`):

* placement: ``x[v, d]`` (exactly one per task), a start and end per task, and
  an optional fixed-size interval per (task, device), on a no-overlap per device;
* pools (redundant): devices alike for every task share one cumulative of their
  number over the tasks' runs there (their load as a whole, :meth:`CpSatModel._pools`);
* transfers: for each tensor of size > 0 and each possible destination ``b``,
  a start ``ts[t, b]`` and, per possible source ``a``, a literal ``z[t, a, b]``
  that is true exactly when the producer runs on ``a`` and some consumer on
  ``b != a``; its interval sits on link ``a -> b`` (no-overlap for 1 channel,
  cumulative for k, nothing for 0); a tensor whose transfer is only a delay
  (every link it may take has no channel limit and no energy, one duration,
  and no memory is modelled) gets instead one literal per consumer, "on the
  producer's device", and the consumer starts that delay after the producer
  otherwise (the contention-free model of Sinnen's task graphs: O(devices)
  per edge instead of O(devices^2); its transfers start as the producer ends);
* memory (only on devices where it can bind, or when memory is minimised):
  a cumulative per device over workspaces, tensor lifetimes and copies, whose
  capacity ``rest[d]`` plus the weights placed there is the peak;
* memory plan (``Options.memory_plan == "joint"``, CPSAT-NOTES section 2.4): per
  device a ``NoOverlap2D`` whose boxes are the buffer lifetimes above (and the
  weights over ``[0, makespan)``) x ``[offset, offset + size)``, a footprint
  ``arena[d] >= offset + size`` of every present box, and the objective
  ``arena`` = the largest footprint; the cumulative stays as a redundant
  relaxation (footprint >= peak).

Lifetime ends are modelled as ``>=`` the ends that PROBLEM.md maxes over, a
relaxation in the safe direction: a model solution never has less memory than
the real schedule, and every real schedule is a model solution, so optima and
bounds are those of PROBLEM.md.  The lexicographic stages, statuses and
validation are the driver's (:mod:`cpsched.lexico`); :class:`CpSatModel`
builds, solves one stage and reads back.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence

import ortools
from ortools.sat.python import cp_model

from cpsched import interrupt
from cpsched.bounds import bytes_beside_weights
from cpsched.classes import alike, assign_members, canonical, device_classes, identical_devices, symmetric_groups
from cpsched.engines.protocol import Capabilities, Frame, Options, Progress, Stage
from cpsched.instance import Instance, Mode
from cpsched.schedule import Placement, Schedule, Status, Transfer
from cpsched.validator import buffers, effective, objectives as recompute

_STATUS = {
    cp_model.OPTIMAL: Status.OPTIMAL,
    cp_model.FEASIBLE: Status.FEASIBLE,
    cp_model.INFEASIBLE: Status.INFEASIBLE,
    cp_model.UNKNOWN: Status.UNKNOWN,
}


#: Options.proof's portfolio: the LP's bound and the faster search without it.  On squeezenet (``edge``)
#: latency under 6.6 / 7.14 MB proves in 27 / 29 s against 62 / 49 s with the default (default_lp beside
#: LNS); fused inception_v1's energy under 3,200-4,000 us in 5-6 s against 12-38 s
PROOF_WORKERS = ("default_lp", "no_lp")
#: a pool (CpSatModel._pools) only where moving every tensor once between its devices takes at most this
#: many times the tasks' least work there: where data movement dominates, the pool's cumulative costs
#: time itself (dvfs10-s0 at 30 s: at CCR 10, 2 fronts lost and 8 up to 3x slower with it, with or
#: without its propagators; all 13 gains at CCR 0.1 and 1; on Sinnen's graphs every gain at CCR 0.1)
POOL_TRAFFIC = 5
#: CP-SAT's presolve probing level on heterogeneous devices (probing_level).  Squeezenet (``edge``)
#: under a memory cap: presolve 0.9 s against 3.5 s, with the search no slower: six hard caps proven
#: in 46-54 s against 79 s.  Identical processors keep it: 300-task STG entries
#: were proven up to 1.3x slower without it (one of ten not in 10 s), Sinnen's graphs the same
HETEROGENEOUS_PROBING = 0
#: a folded objective (CpSatModel.minimise's ``then``) only while every weighted value stays below this,
#: so that CP-SAT's double-valued objective and bound are exact integers
EXACT = 2**53


def default_workers(instance: Instance) -> int:
    """8 workers for identical devices (bounds close only with max_lp/core in the
    portfolio), 2 for heterogeneous devices (more only slow down 2 cores)."""
    return 8 if identical_devices(instance) else 2


def probing_level(instance: Instance) -> int:
    """CP-SAT's presolve probing: its default (2) for identical devices, :data:`HETEROGENEOUS_PROBING`
    for heterogeneous ones, where probing costs more presolve time than it saves in search."""
    return 2 if identical_devices(instance) else HETEROGENEOUS_PROBING


class CpSatEngine:
    """The CP-SAT engine: every capability of the protocol.

    ``memory_model`` chooses how tensor lifetimes enter the memory cumulatives
    (:class:`CpSatModel`); the default ``optional`` is the faster, ``demand`` the
    :meth:`confirmer` of its ``infeasible`` answers under memory capacities.
    """

    name = "cpsat"
    capabilities = Capabilities(memory=True, channels=True, memory_plan=True, decomposition=True,
                                bounds=True, progress=True, solutions=True, modes=True)

    def __init__(self, memory_model: str = "optional"):
        if memory_model not in ("optional", "demand"):
            raise ValueError(f"memory_model must be 'optional' or 'demand' (got {memory_model!r})")
        self.memory_model = memory_model

    def settings(self, instance: Instance, options: Options) -> dict:
        return {"ortools": ortools.__version__, "workers": options.workers or default_workers(instance),
                "probing": probing_level(instance),
                **({"memory_model": self.memory_model} if self.memory_model != "optional" else {})}

    def confirmer(self) -> "CpSatEngine | None":
        """The same engine with the other memory model, to confirm an infeasible answer."""
        return CpSatEngine("demand") if self.memory_model == "optional" else None

    def build(self, instance: Instance, frame: Frame, objectives: Sequence[str], options: Options) -> "CpSatModel":
        joint = options.memory_plan == "joint"
        classes = device_classes(instance, frame.usable, set(frame.memory_devices)) \
            if options.classes and not joint else {}
        groups = [g for g in symmetric_groups(instance, frame.usable, classes)
                  if len({d in frame.memory_devices for d in g}) == 1] if options.symmetry else []
        return CpSatModel(instance, dict(frame.usable), frame.lower, frame.upper, set(frame.memory_devices),
                          options, plan=joint, classes=classes, memory_model=self.memory_model, groups=groups)


class CpSatModel:
    """The whole of PROBLEM.md as one CP-SAT model; objectives are expressions on it."""

    def __init__(self, instance: Instance, usable: dict[str, tuple[str, ...]], lower: int, upper: int,
                 memory_devices: set[str], options: Options = Options(), plan: bool = False,
                 classes: Mapping[str, tuple[str, ...]] | None = None, memory_model: str = "optional",
                 groups: Sequence[tuple[str, ...]] = ()):
        self.inst = instance
        self.options = options
        #: "optional": each lifetime an optional interval of variable size per device (presence =
        #: the tensor is there); "demand": one interval per lifetime in every device's cumulative,
        #: with demand size x presence (an independent path through CP-SAT's propagators)
        self.demand_model = memory_model == "demand" and not plan
        #: representative -> members of each merged class (device_classes); a class is one
        #: resource of capacity len(members), keyed by its representative everywhere below
        self.classes = dict(classes or {})
        self.rep = {m: r for r, members in self.classes.items() for m in members}
        self.usable = {v: tuple(d for d in ds if self.rep.get(d, d) == d) for v, ds in usable.items()}
        self.horizon = upper
        self.m = cp_model.CpModel()
        self.makespan = self.m.new_int_var(lower, upper, "makespan")
        self._index: dict[str, cp_model.IntVar] = {}  # task -> its device's index (span_table)
        self._placement()
        #: interchangeable devices between which data moves (classes.symmetric_groups): each
        #: group's members are used in the order of their first task (classes.canonical)
        self.groups = list(groups)
        self._break_symmetry()
        self.delayed = not plan and not memory_devices  # transfers may be mere delays (see _delay)
        self._transfers()
        #: the members of each pool of alike devices (_pools)
        self.pools: list[list[str]] = []
        if options.redundant:
            self._loads()
            self._pools()
        self.peak: dict[str, cp_model.LinearExprT] = {}
        self.rest: dict[str, cp_model.IntVar] = {}
        self._objectives: dict[str, cp_model.LinearExprT] = {}
        self.items: dict[str, list[tuple]] = {}
        self.footprint: dict[str, cp_model.IntVar] = {}
        # (device, kind, id) -> [(offset var, presence literal or None)]: a tensor can have two
        # mutually exclusive boxes on one device, its own lifetime and a copy's
        self.offset: dict[tuple[str, str, str], list[tuple[cp_model.IntVar, object]]] = {}
        self.plan = plan
        self._memory(memory_devices | ({d.id for d in instance.devices} if plan else set()))
        if plan:
            self._offsets()
        self.solver = cp_model.CpSolver()
        params = self.solver.parameters
        params.num_workers = options.workers or default_workers(instance)
        if not options.lp:
            params.linearization_level = 0
        if self.pools:  # the pool's cumulative is what these propagators work on
            params.use_overload_checker_in_cumulative = True
            params.use_timetable_edge_finding_in_cumulative = True
        if options.proof and params.num_workers == len(PROOF_WORKERS):
            params.num_full_subsolvers = len(PROOF_WORKERS)
            params.subsolvers.extend(PROOF_WORKERS)
        params.random_seed = options.seed
        params.cp_model_probing_level = probing_level(instance)
        params.catch_sigint_signal = False  # cpsched.interrupt owns SIGINT
        if options.log is not None:
            params.log_search_progress = True
            self.solver.log_callback = options.log
        self._current: str | None = None
        self._tie_break = False
        self._weight = 1  # the first objective's weight when a second one is folded in (minimise's ``then``)
        self._limits: dict[str, int] = {}
        self._collect: Callable[..., None] | None = None
        self.info = {"classes": [list(members) for members in self.classes.values()],
                     **({"symmetric": [list(g) for g in self.groups]} if self.groups else {}),
                     **({"pools": self.pools} if self.pools else {})}

    # ----- variables and constraints ------------------------------------------------------
    def _placement(self) -> None:
        m, H = self.m, self.horizon
        self.start, self.end, self.x, self.interval = {}, {}, {}, {}
        #: (task, device) -> [(mode, literal)]: the mode chosen there (PROBLEM.md section 6);
        #: a device with one mode has the placement literal itself
        self.y: dict[tuple[str, str], list[tuple[Mode, cp_model.IntVar]]] = {}
        per_device: dict[str, list] = {d.id: [] for d in self.inst.devices}
        for task in self.inst.tasks:
            v = task.id
            self.start[v] = m.new_int_var(0, H, f"s[{v}]")
            self.end[v] = m.new_int_var(1, H, f"e[{v}]")
            for d in self.usable[v]:
                x = self.x[v, d] = m.new_bool_var(f"x[{v},{d}]")
                modes = task.choices[d]
                lits = [x] if len(modes) == 1 else [m.new_bool_var(f"y[{v},{d},{k.name}]") for k in modes]
                if len(modes) > 1:
                    m.add(sum(lits) == x)
                self.y[v, d] = list(zip(modes, lits))
                for mode, y in self.y[v, d]:
                    iv = self.interval[v, d, mode.name] = m.new_optional_fixed_size_interval_var(
                        self.start[v], mode.duration, y, f"run[{v},{d},{mode.name}]")
                    m.add(self.end[v] == self.start[v] + mode.duration).only_enforce_if(y)
                    per_device[d].append(iv)
            m.add_exactly_one(self.x[v, d] for d in self.usable[v])
            m.add(self.makespan >= self.end[v])
        for d, ivs in per_device.items():
            k = self.capacity(d)
            if k == 1 and len(ivs) > 1:
                m.add_no_overlap(ivs)
            elif len(ivs) > k > 1:
                m.add_cumulative(ivs, [1] * len(ivs), k)

    def _break_symmetry(self) -> None:
        """Member ``j`` of a group runs a task only after member ``j - 1`` ran an earlier one
        (topological order): of the ``k!`` relabellings of a schedule exactly one remains."""
        m = self.m
        for members in self.groups:
            order = [v for v in self.inst.topological_order if members[0] in self.usable[v]]
            for prev, cur in zip(members, members[1:]):
                seen = None  # "some earlier task runs on prev" (None: false)
                for v in order:
                    if seen is None:
                        m.add(self.x[v, cur] == 0)
                    else:
                        m.add_implication(self.x[v, cur], seen)
                    now = m.new_bool_var(f"used[{prev},{v}]")
                    m.add_bool_or(([seen] if seen is not None else []) + [self.x[v, prev]]).only_enforce_if(now)
                    m.add_implication(self.x[v, prev], now)
                    if seen is not None:
                        m.add_implication(seen, now)
                    seen = now

    def capacity(self, device: str) -> int:
        """How many tasks the resource ``device`` runs at once (a merged class: its size)."""
        return len(self.classes.get(device, (device,)))

    def _sources(self, tensor) -> dict[str, cp_model.IntVar | None]:
        """Where a tensor can be: device -> literal (None: always, a graph input on the host)."""
        if tensor.producer is None:
            return {self.inst.host.id: None}
        return {a: self.x[tensor.producer, a] for a in self.usable[tensor.producer]}

    def _sizes(self, tensor, device: str) -> dict[int, list]:
        """The tensor's size on its source ``device`` -> the producer's mode literals giving it
        ([None] for a graph input): one entry unless the producer's modes there resize it."""
        if tensor.producer is None:
            return {tensor.size: [None]}
        out: dict[int, list] = {}
        for mode, y in self.y[tensor.producer, device]:
            out.setdefault(mode.size(tensor), []).append(y)
        return out

    def _either(self, lits: list, whole: tuple[list, object] | None, name: str):
        """A literal equal to "one of ``lits``" (at most one of them holds); ``whole[1]`` when
        ``lits`` are all of ``whole[0]``, the literals summing to it."""
        if len(lits) == 1:
            return lits[0]
        if whole is not None and len(lits) == len(whole[0]):
            return whole[1]
        g = self.m.new_bool_var(name)
        self.m.add(sum(lits) == g)
        return g

    def _transfers(self) -> None:
        m, H, inst = self.m, self.horizon, self.inst
        self.ts, self.z = {}, {}
        #: (tensor, src, dst) -> [(literal, duration, size)]: the transfer on that link, one leg
        #: per size its producer's modes give the tensor (the literal: z and that size)
        self.legs: dict[tuple[str, str, str], list[tuple[object, int, int]]] = {}
        self.routes: dict[str, list[tuple[str, str]]] = {}  # tensor -> the (src, dst) pairs of its z
        self.same: dict[tuple[str, str], object] = {}  # (tensor, consumer) -> "on the producer's device"
        per_link: dict[tuple[str, str], list] = {}
        for tensor in inst.tensors:
            p = tensor.producer
            for c in tensor.consumers:
                if p is not None:
                    m.add(self.start[c] >= self.end[p])
            if tensor.size == 0:
                continue
            sources = self._sources(tensor)
            dests = sorted({b for c in tensor.consumers for b in self.usable[c]})
            delay = self._delay(tensor, sources, dests)
            if delay is not None:
                self._delays(tensor, sources, delay)
                continue
            for b in dests:
                there = [c for c in tensor.consumers if b in self.usable[c]]
                lits = {a: lit for a, lit in sources.items() if a != b}
                if not lits:
                    continue
                ts = self.ts[tensor.id, b] = m.new_int_var(0, H, f"ts[{tensor.id},{b}]")
                if p is not None:
                    m.add(ts >= self.end[p])
                for a, src in lits.items():
                    link = inst.link(a, b)
                    if link is None:  # usable_devices leaves no consumer there unless a link exists
                        for c in there:
                            m.add_bool_or(_not(src) + [self.x[c, b].Not()])
                        continue
                    z = self.z[tensor.id, a, b] = m.new_bool_var(f"z[{tensor.id},{a}->{b}]")
                    m.add_bool_or([self.x[c, b] for c in there]).only_enforce_if(z)
                    if src is not None:
                        m.add_implication(z, src)
                    for c in there:
                        m.add_bool_or(_not(src) + [self.x[c, b].Not(), z])
                    legs = self.legs[tensor.id, a, b] = []
                    sizes = self._sizes(tensor, a)
                    for size, ys in sizes.items():
                        leg = z
                        if len(sizes) > 1:
                            leg = m.new_bool_var(f"z[{tensor.id},{a}->{b},{size}]")
                            m.add_implication(leg, z)
                            m.add_bool_or(ys).only_enforce_if(leg)
                            for y in ys:
                                m.add_bool_or([z.Not(), y.Not(), leg])
                        dur = link.transfer_time(size)
                        legs.append((leg, dur, size))
                        for c in there:
                            m.add(self.start[c] >= ts + dur).only_enforce_if([leg, self.x[c, b]])
                        if link.channels:
                            iv = m.new_optional_fixed_size_interval_var(ts, dur, leg,
                                                                        f"xfer[{tensor.id},{a}->{b},{size}]")
                            per_link.setdefault((a, b), []).append(iv)
                    self.routes.setdefault(tensor.id, []).append((a, b))
        for (a, b), ivs in per_link.items():
            channels = inst.link(a, b).channels
            if channels == 1:
                m.add_no_overlap(ivs)
            elif len(ivs) > channels:
                m.add_cumulative(ivs, [1] * len(ivs), channels)

    def _delay(self, tensor, sources: Mapping[str, object], dests: Sequence[str]) -> int | None:
        """The one duration of every transfer ``tensor`` may need, when a transfer of it is only
        that delay (no memory modelled, one size, every link it may take without a channel limit
        or link energy, all of one duration); None otherwise."""
        if not self.delayed or any(d in self.classes for d in (*sources, *dests)):
            return None
        sizes = {size for a in sources for size in self._sizes(tensor, a)}
        links = [self.inst.link(a, b) for a in sources for b in dests if a != b]
        if len(sizes) != 1 or any(link is None or link.channels or link.energy_per_byte for link in links):
            return None
        size = sizes.pop()
        durations = {link.transfer_time(size) for link in links} if links else {0}
        return durations.pop() if len(durations) == 1 else None

    def _delays(self, tensor, sources: Mapping[str, object], delay: int) -> None:
        """Each consumer of ``tensor`` starts ``delay`` after its producer's end (after time 0, for
        a graph input) unless it runs on the producer's device (:meth:`_delay`)."""
        m, p = self.m, tensor.producer
        ready = self.end[p] if p is not None else 0
        for c in tensor.consumers:
            same = m.new_bool_var(f"same[{tensor.id},{c}]")
            for a, src in sources.items():
                m.add_bool_or(_not(src) + [same.Not()] + ([self.x[c, a]] if (c, a) in self.x else []))
            m.add(self.start[c] >= ready + delay).only_enforce_if(same.Not())
            self.same[tensor.id, c] = same

    def _loads(self) -> None:
        """Redundant: the work placed on a device, or sent over a link with k channels,
        fits in the makespan (k x the makespan).  Implied by the no-overlaps, but it
        gives the LP the load bound; measured 100x faster proofs on 26-30 tasks."""
        m, inst = self.m, self.inst
        load: dict[str, list] = {d.id: [] for d in inst.devices}
        for (v, d), ys in self.y.items():
            load[d].append(sum(mode.duration * y for mode, y in ys))
        for d, terms in load.items():
            if len(terms) > self.capacity(d):
                m.add(sum(terms) <= self.capacity(d) * self.makespan)
        sent: dict[tuple[str, str], list] = {}
        for (t, a, b), legs in self.legs.items():
            sent.setdefault((a, b), []).append(sum(dur * leg for leg, dur, _ in legs))
        for (a, b), terms in sent.items():
            channels = inst.link(a, b).channels
            if channels and len(terms) > channels:
                m.add(sum(terms) <= channels * self.makespan)

    def _pools(self) -> None:
        """Redundant: devices that run every task alike (one signature) never run more tasks at
        once than there are of them.  Implied by the per-device no-overlaps, but the pool's
        cumulative reasons on their load as a whole, which no single device's does.  On Sinnen's
        graphs of 21 and 30 nodes (identical processors, data moving between them; 384 entries,
        30 s each) 370 are proven against 367 without it, the bound is higher on 11 of the 14
        left open, and the suite takes 643 s of solving against 737.  With a pool, CP-SAT's overload
        checker and timetable edge finding (off by default; on for every cumulative of the model)
        prove 371: a 30-node series-parallel graph on 4 processors more, at 6 s.  Devices between
        which data movement dominates get no pool (:data:`POOL_TRAFFIC`)."""
        m, inst = self.m, self.inst
        for members in alike(inst, {d for ds in self.usable.values() for d in ds}):
            if self._traffic(members) > POOL_TRAFFIC * self._work(members):
                continue
            runs = []
            for task in inst.tasks:
                on = [d for d in members if d in self.usable[task.id]]
                modes = task.choices[on[0]] if on else ()  # alike on every member
                if len(modes) == 1 and set(self.usable[task.id]) <= set(members):  # it always runs in the pool
                    runs.append(m.new_interval_var(self.start[task.id], modes[0].duration, self.end[task.id],
                                                   f"pool[{task.id}]"))
                    continue
                for k, mode in enumerate(modes):
                    present = m.new_bool_var(f"pooled[{task.id},{mode.name}]")
                    m.add(sum(self.y[task.id, d][k][1] for d in on) == present)
                    runs.append(m.new_optional_interval_var(self.start[task.id], mode.duration, self.end[task.id],
                                                            present, f"pool[{task.id},{mode.name}]"))
            m.add_cumulative(runs, [1] * len(runs), sum(self.capacity(d) for d in members))
            self.pools.append(members)

    def _traffic(self, members: Sequence[str]) -> int:
        """The time every produced tensor takes to reach each of its consumers once over the fastest
        link between ``members`` (0 without one)."""
        links = [link for link in self.inst.links if link.src in members and link.dst in members]
        if not links:
            return 0
        return sum(len(t.consumers) * min(link.transfer_time(t.size) for link in links)
                   for t in self.inst.tensors if t.producer is not None and t.size)

    def _work(self, members: Sequence[str]) -> int:
        """The least duration of every task that may run on ``members``, summed."""
        return sum(min(mode.duration for mode in task.choices[on[0]])
                   for task in self.inst.tasks if (on := [d for d in members if d in self.usable[task.id]]))

    def _memory(self, devices: set[str]) -> None:
        """Peak memory per device (PROBLEM.md section 3) on the devices in ``devices``."""
        m, inst = self.m, self.inst
        # per device: (interval, bytes, presence literal or None, plan kind, plan id)
        items: dict[str, list[tuple]] = {d: [] for d in devices}
        self.items = items
        self.lend, self.cend, self.copy = {}, {}, {}
        self.life, self.clife = {}, {}  # the lifetimes' lengths: lend - begin, cend - ts
        if not devices:
            return
        for task in inst.tasks:
            for d in self.usable[task.id]:
                for mode, y in self.y[task.id, d]:
                    if d in devices and task.workspace_in(mode):
                        items[d].append((self.interval[task.id, d, mode.name], task.workspace_in(mode), y,
                                         "workspace", task.id))
        for tensor in inst.tensors:
            if tensor.size:
                self._tensor_lifetime(tensor, devices, items)
        for d in sorted(devices):
            weights = sum(inst.task(v).weights_in(mode) * y for v in self.usable if (v, d) in self.y
                          for mode, y in self.y[v, d])
            cap = inst.device(d).memory
            rest = self.rest[d] = m.new_int_var(0, cap, f"rest[{d}]")
            if items[d]:
                m.add_cumulative([it[0] for it in items[d]], [it[1] for it in items[d]], rest)
            else:
                m.add(rest == 0)
            m.add(weights + rest <= cap)
            self.peak[d] = weights + rest
            for v in self.usable:  # redundant: while v runs on d, all it touches is live there too
                if (v, d) in self.x and inst.plain:
                    touched = bytes_beside_weights(inst, v)
                    if touched:
                        m.add(rest >= touched).only_enforce_if(self.x[v, d])
                        m.add(weights + touched * self.x[v, d] <= cap)

    def _tensor_lifetime(self, tensor, devices: set[str], items: dict[str, list[tuple]]) -> None:
        m, H = self.m, self.horizon
        p = tensor.producer
        lend = self.lend[tensor.id] = m.new_int_var(0, H, f"lend[{tensor.id}]")
        begin = 0 if p is None else self.start[p]
        if p is not None:
            m.add(lend >= self.end[p])
        if tensor.output:
            m.add(lend >= self.makespan)
        for a, src in self._sources(tensor).items():
            for c in tensor.consumers:
                if a in self.usable[c]:
                    m.add(lend >= self.end[c]).only_enforce_if(_lits(src, self.x[c, a]))
        t = tensor.id
        for a, b in self.routes.get(t, ()):
            for leg, dur, _ in self.legs[t, a, b]:
                m.add(lend >= self.ts[t, b] + dur).only_enforce_if(leg)
        size = self.life[tensor.id] = m.new_int_var(0, H, f"life[{tensor.id}]")
        m.add(begin + size == lend)
        live = m.new_interval_var(begin, size, lend, f"live[{tensor.id}]") if self.demand_model else None
        for a, src in self._sources(tensor).items():
            if a not in devices:
                continue
            for nbytes, ys in self._sizes(tensor, a).items():
                lit = src if ys[0] is None else self._either(
                    ys, ([y for _, y in self.y[p, a]], src), f"sized[{t},{a},{nbytes}]")
                if live is not None:
                    items[a].append((live, self._demand(nbytes, lit), lit, "tensor", t))
                    continue
                iv = (m.new_interval_var(begin, size, lend, f"live[{t},{a}]") if lit is None else
                      m.new_optional_interval_var(begin, size, lend, lit, f"live[{t},{a},{nbytes}]"))
                items[a].append((iv, nbytes, lit, "tensor", t))
        for b in sorted({b for _, b in self.routes.get(t, ()) if b in devices}):
            zs = [self.z[t, a, dst] for a, dst in self.routes[t] if dst == b]
            present = self.copy[t, b] = m.new_bool_var(f"copy[{t},{b}]")  # some transfer to b
            m.add(sum(zs) == present)
            cend = self.cend[t, b] = m.new_int_var(0, H, f"cend[{t},{b}]")
            for c in tensor.consumers:
                if b in self.usable[c]:
                    m.add(cend >= self.end[c]).only_enforce_if(self.x[c, b])
            csize = self.clife[t, b] = m.new_int_var(0, H, f"clife[{t},{b}]")
            by_size: dict[int, list] = {}
            for a, dst in self.routes[t]:
                if dst == b:
                    for leg, _, nbytes in self.legs[t, a, b]:
                        by_size.setdefault(nbytes, []).append(leg)
            for nbytes, legs in by_size.items():
                lit = present if len(by_size) == 1 else self._either(legs, None, f"copy[{t},{b},{nbytes}]")
                if self.demand_model:
                    iv = m.new_interval_var(self.ts[t, b], csize, cend, f"copy[{t},{b}]")
                    items[b].append((iv, self._demand(nbytes, lit), lit, "tensor", t))
                else:
                    iv = m.new_optional_interval_var(self.ts[t, b], csize, cend, lit, f"copy[{t},{b},{nbytes}]")
                    items[b].append((iv, nbytes, lit, "tensor", t))

    def _demand(self, size: int, present) -> cp_model.IntVar | int:
        """The ``demand`` memory model's demand: ``size`` while ``present`` holds, else 0."""
        if present is None:
            return size
        var = self.m.new_int_var(0, size, "demand")
        self.m.add(var == size * present)
        return var

    def _offsets(self) -> None:
        """The memory plan: one NoOverlap2D per device over lifetimes x addresses."""
        m, inst = self.m, self.inst
        for dev in inst.devices:
            d, cap = dev.id, dev.memory
            boxes = list(self.items.get(d, []))
            for v in self.usable:
                for mode, y in self.y.get((v, d), ()):
                    w = inst.task(v).weights_in(mode)
                    if w:
                        iv = m.new_optional_interval_var(0, self.makespan, self.makespan, y,
                                                         f"weights[{v},{d},{mode.name}]")
                        boxes.append((iv, w, y, "weights", v))
            if not boxes:
                continue
            arena = self.footprint[d] = m.new_int_var(0, cap, f"arena[{d}]")
            xs, ys = [], []
            for iv, size, lit, kind, bid in boxes:
                off = m.new_int_var(0, max(0, cap - size), f"off[{kind},{bid},{d}]")
                self.offset.setdefault((d, kind, bid), []).append((off, lit))
                m.add(off + size <= arena).only_enforce_if(_lits(lit))
                xs.append(iv)
                ys.append(m.new_fixed_size_interval_var(off, size, f"addr[{kind},{bid},{d}]"))
            if len(boxes) > 1:
                m.add_no_overlap_2d(xs, ys)
            if d in self.peak:
                m.add(arena >= self.peak[d])  # redundant: no plan beats the peak

    # ----- objectives ---------------------------------------------------------------------
    def objective(self, name: str) -> cp_model.LinearExprT:
        """The expression of an objective (PROBLEM.md section 4), built once."""
        if name not in self._objectives:
            self._objectives[name] = self._build_objective(name)
        return self._objectives[name]

    def _build_objective(self, name: str) -> cp_model.LinearExprT:
        if name == "latency":
            return self.makespan
        if name in ("energy", "error"):
            return sum(coefficient * var for coefficient, var in self._terms(name))
        if name == "memory":
            peak = self.m.new_int_var(0, max(d.memory for d in self.inst.devices), "memory")
            for expr in self.peak.values():
                self.m.add(peak >= expr)
            return peak
        if name == "arena":
            if not self.plan:
                raise ValueError("objective 'arena' needs a model with a memory plan (plan=True)")
            arena = self.m.new_int_var(0, max(d.memory for d in self.inst.devices), "arena")
            for expr in self.footprint.values():
                self.m.add(arena >= expr)
            return arena
        raise ValueError(f"unknown objective {name!r}")

    def _terms(self, name: str) -> list[tuple[int, cp_model.IntVar]]:
        """(coefficient, variable) of the linear objective ``name`` ("energy" or "error"): every
        variable a literal but the makespan."""
        modes = [(mode.error if name == "error" else mode.energy, y) for ys in self.y.values() for mode, y in ys]
        if name == "error":
            return modes
        inst = self.inst
        links = [(size * inst.link(a, b).energy_per_byte, leg)
                 for (t, a, b), legs in self.legs.items() for leg, _, size in legs]
        return modes + links + [(sum(d.static_power for d in inst.devices), self.makespan)]

    def _ceiling(self, name: str) -> int:
        """An upper bound on objective ``name`` over the model's solutions."""
        if name in self._limits:
            return self._limits[name]
        if name == "latency":
            return self.horizon
        if name in ("memory", "arena"):
            return max(d.memory for d in self.inst.devices)
        return sum(abs(c) * (self.horizon if var is self.makespan else 1) for c, var in self._terms(name))

    # ----- hints and read-back ------------------------------------------------------------
    def fix(self, task: str, placement: Placement) -> None:
        """Pin a task to its device (a merged class: the class) and start time."""
        device = self.rep.get(placement.device, placement.device)
        self.m.add(self.x[task, device] == 1)
        for mode, y in self.y[task, device]:
            if len(self.y[task, device]) > 1:
                self.m.add(y == int(mode.name == placement.mode))
        self.m.add(self.start[task] == placement.start)

    def hint(self, schedule: Schedule) -> None:
        """Hint every variable from a schedule (complete hints are the ones CP-SAT uses)."""
        m, inst = self.m, self.inst
        m.clear_hints()
        rename = canonical(inst, schedule.tasks, self.groups)
        if rename:
            schedule = dataclasses.replace(
                schedule, tasks={v: Placement(rename.get(p.device, p.device), p.start, p.mode)
                                 for v, p in schedule.tasks.items()},
                transfers=tuple(Transfer(x.tensor, rename.get(x.src, x.src), rename.get(x.dst, x.dst), x.start)
                                for x in schedule.transfers), memory_plan={}, arena={})
        place = {v: self.rep.get(p.device, p.device) for v, p in schedule.tasks.items()}
        if any(v not in place or (v, place[v]) not in self.x for v in self.start):
            return  # not a schedule of this model (e.g. an unusable device): no hint
        if any(inst.task(v).mode(p.device, p.mode) is None for v, p in schedule.tasks.items()):
            return
        end = {}
        for v, p in schedule.tasks.items():
            end[v] = p.start + inst.task(v).mode(p.device, p.mode).duration
            m.add_hint(self.start[v], p.start)
            m.add_hint(self.end[v], end[v])
            for d in self.usable[v]:
                m.add_hint(self.x[v, d], int(d == place[v]))
                for mode, y in self.y[v, d]:
                    if len(self.y[v, d]) > 1:
                        m.add_hint(y, int(d == place[v] and mode.name == p.mode))
        span = max(end.values(), default=0)
        m.add_hint(self.makespan, span)
        values, peaks = recompute(inst, schedule)
        for d, rest in self.rest.items():
            weights = sum(inst.task(v).weights_in(inst.task(v).mode(p.device, p.mode))
                          for v, p in schedule.tasks.items() if p.device == d)
            m.add_hint(rest, peaks[d] - weights)
        if "memory" in self._objectives:
            m.add_hint(self._objectives["memory"], values["memory"])
        if self.offset:
            self._hint_plan(schedule)
        for (t, c), same in self.same.items():
            prod = inst.tensor(t).producer
            m.add_hint(same, int(place[c] == (place[prod] if prod is not None else inst.host.id)))
        sent = {(x.tensor, x.dst): x for x in schedule.transfers}
        sized = effective(inst, schedule)
        for (t, b), ts in self.ts.items():
            prod = inst.tensor(t).producer
            x = sent.get((t, b))
            m.add_hint(ts, x.start if x else (end[prod] if prod else 0))
        for (t, a, b), z in self.z.items():
            x = sent.get((t, b))
            m.add_hint(z, int(x is not None and x.src == a))
            for leg, _, size in self.legs[t, a, b]:
                if leg is not z:
                    m.add_hint(leg, int(x is not None and x.src == a and size == sized.tensor(t).size))
        if not self.lend and not self.cend:
            return
        ends = {}
        for buf in buffers(inst, schedule):
            if buf.kind == "tensor":
                ends[buf.id, buf.device] = buf.end
        for t, lend in self.lend.items():
            tensor = inst.tensor(t)
            home = inst.host.id if tensor.producer is None else schedule.tasks[tensor.producer].device
            lend_value = ends.get((t, home), 0)
            m.add_hint(lend, lend_value)
            m.add_hint(self.life[t], lend_value - (schedule.tasks[tensor.producer].start if tensor.producer else 0))
        for (t, b), cend in self.cend.items():
            cend_value = ends.get((t, b), 0)
            m.add_hint(cend, cend_value)
            m.add_hint(self.copy[t, b], int((t, b) in sent))
            start = sent[t, b].start if (t, b) in sent else cend_value
            m.add_hint(self.clife[t, b], max(0, cend_value - start))

    def _hint_plan(self, schedule: Schedule) -> None:
        """Hint offsets and footprints: the schedule's own plan, else greedy-by-size's."""
        from cpsched.memplan import greedy_by_size, schedule_blocks

        m = self.m
        if schedule.memory_plan:
            plan = {d: {(e.kind, e.id): e.offset for e in entries} for d, entries in schedule.memory_plan.items()}
        else:
            plan = {d: greedy_by_size(blocks) for d, blocks in schedule_blocks(self.inst, schedule).items()}
        sizes = {(b.id[0], b.id[1]): b.size for blocks in schedule_blocks(self.inst, schedule).values()
                 for b in blocks}
        tops = {d: 0 for d in self.footprint}
        for (d, kind, bid), boxes in self.offset.items():
            value = plan.get(d, {}).get((kind, bid))
            for off, _ in boxes:
                m.add_hint(off, value or 0)
            if value is not None and d in tops:
                tops[d] = max(tops[d], value + sizes.get((kind, bid), 0))
        for d, var in self.footprint.items():
            m.add_hint(var, tops[d])
        if "arena" in self._objectives:
            m.add_hint(self._objectives["arena"], max(tops.values(), default=0))

    # ----- the protocol: stages, solving, read-back --------------------------------------
    def minimise(self, objective: str, early: Sequence[str] = (), then: str | None = None) -> bool:
        """Folds ``then`` in as ``objective * (limit + 1) + then`` (CPSAT-NOTES 3.1's one-solve
        lexicographic pair) when ``then`` has a limit and every weighted value stays below
        :data:`EXACT`.  Without a limit the weight would be ``then``'s largest value in the model, and
        a solve stopped by its time would have traded ``objective`` for ``then``: fused inception_v1's
        least memory (cut after 34 s of a 120-s front) came out at 11.22 MB folded against 11.05 MB in
        two stages."""
        expr = self.objective(objective)
        self._weight = 1
        if early:
            expr = len(early) * expr + sum(self.end[v] for v in early)
        elif then is not None and then in self._limits:
            weight = self._limits[then] + 1
            if 0 < weight and (self._ceiling(objective) + 1) * weight < EXACT:
                expr, self._weight = weight * expr + self.objective(then), weight
        self.m.minimize(expr)
        self._current, self._tie_break = objective, bool(early)
        return self._weight > 1

    def limit(self, objective: str, value: int) -> None:
        self.m.add(self.objective(objective) <= value)
        self._limits[objective] = min(value, self._limits.get(objective, value))

    def at_least(self, objective: str, value: int) -> None:
        self.m.add(self.objective(objective) >= value)

    def span(self, source: str | None, source_device: str | None, sink: str | None, sink_device: str | None,
             value: int) -> None:
        ends = [(v, d) for v, d in ((source, source_device), (sink, sink_device)) if v is not None]
        if any(key not in self.x or key[1] in self.classes for key in ends):
            return  # (a class's literal says "some member", which the bound does not cover)
        after = self.end[sink] if sink is not None else self.makespan
        self.m.add(after - (self.start[source] if source is not None else 0) >= value).only_enforce_if(
            [self.x[key] for key in ends])

    def span_table(self, source: str | None, between: Sequence[str], sink: str | None,
                   spans: Mapping[tuple[str | None, ...], int | None]) -> None:
        tasks = (source, *between, sink)
        named = [v for v in tasks if v is not None]
        if any(d in self.rep for v in named for d in self.inst.task(v).modes):
            return  # (a class's literal says "some member", which the table does not cover)
        # each row: every named task's device index in its usable devices, then its span (a placement
        # the model does not offer is left out; one the table does not bound gets 0)
        rows = [(*(self.usable[v].index(d) for v, d in zip(tasks, key) if v is not None), value or 0)
                for key, value in spans.items() if all(v is None or d in self.usable[v] for v, d in zip(tasks, key))]
        if any({row[k] for row in rows} != set(range(len(self.usable[v]))) for k, v in enumerate(named)):
            return  # a device the model offers that no row covers: the table would forbid it
        span = self.m.new_int_var(0, max(row[-1] for row in rows), "")
        self.m.add_allowed_assignments([*(self._device_index(v) for v in named), span], rows)
        after = self.start[sink] if sink is not None else self.makespan
        self.m.add(after - (self.end[source] if source is not None else 0) >= span)

    def _device_index(self, v: str) -> cp_model.IntVar:
        """An integer variable equal to the index of ``v``'s device in its usable devices (made once)."""
        if v not in self._index:
            self._index[v] = self.m.new_int_var(0, len(self.usable[v]) - 1, f"device[{v}]")
            self.m.add(self._index[v] == sum(i * self.x[v, d] for i, d in enumerate(self.usable[v])))
        return self._index[v]

    def solve(self, time_limit: float | None) -> Stage:
        params = self.solver.parameters
        if time_limit is not None:
            params.max_time_in_seconds = time_limit
        else:
            params.clear_max_time_in_seconds()
        callback = None
        if self.options.progress is not None or self._collect is not None:
            callback = _Reporter(self._current or "", self.options.progress,
                                 self._collected if self._collect is not None else None, self._weight)
            if self.options.progress is not None:
                self.solver.best_bound_callback = callback.on_bound
        code = interrupt.run(lambda: self.solver.solve(self.m, callback), self.solver.stop_search)
        self.solver.best_bound_callback = None
        status = _STATUS.get(code)
        if status is None:
            raise RuntimeError(f"CP-SAT returned {self.solver.status_name(code)}: {self.m.validate()}")
        bound = None
        if status.has_schedule and not self._tie_break:
            bound = math.ceil(self.solver.best_objective_bound - 1e-6) // self._weight
        return Stage(status, bound, round(self.solver.wall_time, 3), self.solver.status_name(code))

    def stop(self) -> None:
        self.solver.stop_search()

    def collect(self, callback: Callable[..., None] | None) -> None:
        self._collect = callback

    def _collected(self, solution: cp_model.CpSolverSolutionCallback) -> None:
        self._collect(*self.read(solution))

    def read(self, source: cp_model.CpSolver | cp_model.CpSolverSolutionCallback | None = None
             ) -> tuple[dict[str, Placement], list[Transfer], dict | None]:
        """The solution of the last solve, or of ``source`` (a solution callback, mid-search)."""
        solver = source or self.solver
        tasks = {}
        for (v, d), ys in self.y.items():
            for mode, y in ys:
                if solver.boolean_value(y):
                    tasks[v] = Placement(d, solver.value(self.start[v]), mode.name)
        transfers = [Transfer(t, a, b, solver.value(self.ts[t, b]))
                     for (t, a, b), z in self.z.items() if solver.boolean_value(z)]
        delayed = {}  # (tensor, destination) of the delays' transfers, each as its producer ends
        for t, c in self.same:
            prod = self.inst.tensor(t).producer
            a = tasks[prod].device if prod is not None else self.inst.host.id
            if tasks[c].device != a:
                delayed[t, tasks[c].device] = (a, 0 if prod is None else solver.value(self.end[prod]))
        transfers += [Transfer(t, a, b, start) for (t, b), (a, start) in delayed.items()]
        tasks.update(assign_members(self.inst, tasks, self.classes))
        order = {t.id: i for i, t in enumerate(self.inst.tasks)}
        return dict(sorted(tasks.items(), key=lambda kv: order[kv[0]])), transfers, self._read_plan(solver)

    def _read_plan(self, solver) -> dict[str, dict[tuple[str, str], int]] | None:
        """device -> (kind, id) -> offset of every present box (None without a plan)."""
        if not self.offset:
            return None
        plan: dict[str, dict[tuple[str, str], int]] = {}
        for (d, kind, bid), boxes in self.offset.items():
            for off, lit in boxes:
                if lit is None or solver.boolean_value(lit):
                    plan.setdefault(d, {})[kind, bid] = solver.value(off)
        return plan


class _Reporter(cp_model.CpSolverSolutionCallback):
    """Turns CP-SAT's solution and bound callbacks into :class:`Progress` reports (``report``)
    and hands each solution to ``collect`` (either may be None)."""

    def __init__(self, objective: str, report, collect, weight: int = 1):
        super().__init__()
        self.objective, self.report, self.collect = objective, report, collect
        self.weight = weight  # a folded second objective's: the reports are the first objective's
        self.clock = time.monotonic()
        self.incumbent: int | None = None
        self.bound: int | None = None

    def on_solution_callback(self) -> None:
        self.incumbent = round(self.objective_value) // self.weight
        self.bound = math.ceil(self.best_objective_bound - 1e-6) // self.weight
        self._send()
        if self.collect is not None:
            self.collect(self)

    def on_bound(self, bound: float) -> None:
        self.bound = math.ceil(bound - 1e-6) // self.weight
        self._send()

    def _send(self) -> None:
        if self.report is not None:
            self.report(Progress(self.objective, round(time.monotonic() - self.clock, 3), self.incumbent,
                                 self.bound))


def _not(lit) -> list:
    """The negation of a placement literal as a clause part ([] for 'always true')."""
    return [] if lit is None else [lit.Not()]


def _lits(*lits) -> list:
    """Enforcement literals, leaving out the 'always true' None."""
    return [lit for lit in lits if lit is not None]
