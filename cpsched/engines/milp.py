"""An independent MILP model of PROBLEM.md (PuLP; CBC or HiGHS), to cross-check CP-SAT.

It implements the engine protocol (:mod:`cpsched.engines.protocol`), so the
lexicographic driver gives it the statuses and output of CP-SAT; it shares no
modelling code with CP-SAT, only the instance facts of :mod:`cpsched.bounds`
and the validator.  Importing it does not import OR-Tools.

Scope
-----
Placement, ordering on devices, transfers, link exclusivity, latency and
energy.  There is **no memory model**: when :func:`cpsched.bounds.memory_may_bind`
finds a device whose capacity some schedule could exceed, or ``memory`` is an
objective or a limit, the driver refuses the request with a
:class:`~cpsched.errors.CapabilityError` naming ``memory`` (use CP-SAT).
Links must have ``channels`` 0 (unlimited) or 1 (capability ``channels``).

Formulation
-----------
Sets: tasks ``v``, usable devices ``D(v)`` (:func:`usable_devices`),
durations ``p[v,d]`` and energies ``e[v,d]``; ``M`` is the makespan cap
``U`` (:func:`horizon`, or the makespan of a valid hint when latency comes
first, or a latency limit), never below :func:`latency_lower_bound` ``L``.
All start times are integer variables, so with integer data every solution
is a schedule in whole time units (no integrality argument needed).

* placement (:meth:`MilpModel._placement`): ``x[v,d]`` binary,
  ``sum_d x[v,d] = 1``; ``S[v]`` integer in ``[0, U]``;
  ``E[v] = S[v] + sum_d p[v,d] x[v,d]``; ``L <= C <= U``, ``C >= E[v]``.
* precedence (:meth:`MilpModel._precedence`): ``S[c] >= E[p]`` for every
  tensor (size 0 included) with producer ``p`` and consumer ``c``.
* device order (:meth:`MilpModel._device_order`): for each unordered pair
  ``{u, v}`` that shares a usable device and is not ordered by the task graph
  (neither a descendant of the other), one binary ``o[u,v]`` (1: ``u``
  first) and, for each shared device ``d``,
  ``S[v] >= E[u] - M(1 - o) - M(2 - x[u,d] - x[v,d])`` and
  ``S[u] >= E[v] - M o - M(2 - x[u,d] - x[v,d])``.
  Pairs ordered by the graph never overlap anyway (precedence).
* transfers (:meth:`MilpModel._transfers`): for each tensor ``t`` of size > 0,
  sources ``A`` (the producer's usable devices, the host for a graph input,
  where ``x[host] := 1``) and each destination ``b`` some consumer may use:
  ``ts[t,b]`` integer in ``[0, U]``, ``ts >= E[p]``; for ``a in A, a != b``
  with a link, ``z[t,a,b]`` binary with
  ``z <= x[p,a]``, ``z <= sum_{c on b} x[c,b]``, ``z >= x[p,a] + x[c,b] - 1``
  (so ``z = 1`` exactly when the producer runs on ``a`` and a consumer on
  ``b``: no missing, duplicate or superfluous transfer), and each consumer
  ``c`` that may run on ``b``:
  ``S[c] >= ts[t,b] + sum_a tau[t,a,b] z[t,a,b] - M(1 - x[c,b])``
  (``tau`` = latency + ceil(size / bandwidth)).  Without a link ``a -> b``
  the placements are forbidden: ``x[p,a] + x[c,b] <= 1``.
* link order (:meth:`MilpModel._link_order`), links with 1 channel: for each
  pair of transfers ``i, j`` on one link, unless the graph already orders
  them (every consumer of ``i`` that may run on ``b`` is ``j``'s producer or
  one of its ancestors, or the other way round), ``q`` binary and, with
  ``F_i = ts_i + tau_i z_i``,
  ``ts_j >= F_i - M(1 - q) - M(2 - z_i - z_j)``,
  ``ts_i >= F_j - M q - M(2 - z_i - z_j)``.  Channels 0: nothing.
* loads (:meth:`MilpModel._loads`, redundant, ``Options.redundant``):
  ``sum_v p[v,d] x[v,d] <= C`` per device, ``sum tau z <= C`` per 1-channel
  link: implied by the orders, but they give the LP the load bound.

Why ``M = U`` is big enough.  Every real schedule with makespan ``<= U``
maps to a model solution: its placement, starts, ``C`` = its makespan,
``o``/``q`` from the order on a shared device or link (anything otherwise),
``ts`` = the transfer's start, or ``E[p]`` (0 for an input) when there is no
transfer.  Every term that a ``-M`` relaxes is a difference of an end
expression (``E``, ``F``, ``ts + tau z`` of a present transfer, which ends
before a consumer starts) and a start, all in ``[0, U]``, so it is at most
``U``.  Conversely a model solution read back (placements from ``x``,
transfers recomputed from the placement, starts from ``S`` and ``ts``)
satisfies PROBLEM.md section 2; the validator checks every one.  And
:func:`horizon` caps the makespan of some optimal schedule for any objective,
limits included, so ``U = horizon`` loses no optimum.

Objectives: ``latency = C``; ``energy = sum e x + sum size * energy_per_byte
* z + (sum static_power) * C``; minimised lexicographically (stage ``k+1``
adds ``obj_k <= value_k``), each ``limits`` entry an upper bound.  Every
objective is integer-valued, so the solvers run with absolute gap 0.5 and
relative gap 0: "optimal" is a proof.

A stage is ``optimal`` when the solver proved it (``LpSolutionOptimal``),
``feasible`` when a time limit stopped it with an incumbent
(``LpSolutionIntegerFeasible``), ``infeasible`` (proven) or ``unknown``.  The
bound of a stage: HiGHS (highspy) reports its MIP dual bound; CBC's is read
from its log ("Lower bound:"); where neither is available (CBC stopped before
it printed one, ``HiGHS_CMD``) the stage has none and the driver uses the
instance's relaxation bound.

Options: threads = ``workers`` or 1; ``seed`` goes to HiGHS ``random_seed`` and to CBC ``randomCbcSeed``
(only when > 0: CBC reads 0 as "seed from the clock").  A valid hint is
passed to CBC as a MIP start (``-mips``), and each later stage starts from
the previous stage's schedule; CBC 2.10 crashes on exit when its time limit
falls inside the start's processing, and the stage then runs again without
the start for the time left (at least 1 s).  HiGHS gets no start: with a start set by
``setSolution``, HiGHS 1.16 proved an optimum (objective and dual bound 46)
yet returned the start's column values (objective 48).  ``Options.log`` receives
the solver log lines after each stage.
"""

from __future__ import annotations

import math
import re
import tempfile
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import networkx as nx
import pulp

from cpsched import interrupt
from cpsched.engines.protocol import Capabilities, Frame, Options, Stage
from cpsched.errors import InputError
from cpsched.instance import Instance, Mode
from cpsched.schedule import Placement, Schedule, Status, Transfer
from cpsched.validator import effective, objectives as recompute

BACKENDS = ("cbc", "highs")
_GAP_ABS = 0.5  # objectives are integers: best - bound <= 0.5 proves optimality


# --------------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------------

class MilpModel:
    """PROBLEM.md sections 1, 2 and 4 (no memory) as one PuLP problem; see the module docstring."""

    def __init__(self, instance: Instance, usable: dict[str, tuple[str, ...]], lower: int, upper: int,
                 options: Options = Options(), backend: str = "cbc", highs_kind: str | None = None):
        self.inst = instance
        self.usable = usable
        self.M = upper
        self.options, self.backend, self.highs_kind = options, backend, highs_kind
        self.prob = pulp.LpProblem("cpsched", pulp.LpMinimize)
        self._tix = {t.id: i for i, t in enumerate(instance.tasks)}
        self._dix = {d.id: i for i, d in enumerate(instance.devices)}
        self._nix = {t.id: i for i, t in enumerate(instance.tensors)}
        self._n = 0
        self.C = self.var("C", lower, upper, cat=pulp.LpInteger)
        desc = {v: nx.descendants(instance.graph, v) for v in instance.graph}
        self.desc = {t.id: desc.get(t.id, set()) for t in instance.tasks}
        self._placement()
        self._precedence()
        self._device_order()
        self._transfers()
        self._link_order()
        if options.redundant:
            self._loads()
        self._objectives: dict[str, pulp.LpAffineExpression] = {}
        self._limits: dict[str, int] = {}
        self._start = False
        self._tie_break = False
        self.info = {"size": {"variables": self.prob.numVariables(), "constraints": self.prob.numConstraints()}}

    def var(self, name: str, low=None, up=None, cat=pulp.LpContinuous) -> pulp.LpVariable:
        """A variable of this problem (``prob.add_variable`` where PuLP has it, 3.x)."""
        if hasattr(self.prob, "add_variable"):
            return self.prob.add_variable(name, low, up, cat=cat)
        return pulp.LpVariable(name, low, up, cat=cat)

    def add(self, constraint) -> None:
        """Add a constraint under a generated name (ids may hold any characters)."""
        self._n += 1
        self.prob += constraint, f"c{self._n}"

    # ----- constraint families ------------------------------------------------------------
    def _placement(self) -> None:
        """x[v,d] binary, sum_d x = 1; S[v] integer; E[v] = S[v] + sum_d p x; C >= E[v].
        With several modes on ``d`` (PROBLEM.md section 6), ``x[v,d]`` is the sum of one
        binary ``w[v,d,k]`` per mode and the durations are summed over the modes."""
        inst, U = self.inst, self.M
        self.x, self.S, self.E = {}, {}, {}
        self.w: dict[tuple[str, str], list[tuple[Mode, object]]] = {}
        for task in inst.tasks:
            v, i = task.id, self._tix[task.id]
            for d in self.usable[v]:
                modes = task.choices[d]
                if len(modes) == 1:
                    self.x[v, d] = self.var(f"x_{i}_{self._dix[d]}", cat=pulp.LpBinary)
                    self.w[v, d] = [(modes[0], self.x[v, d])]
                else:
                    self.w[v, d] = [(m, self.var(f"w_{i}_{self._dix[d]}_{k}", cat=pulp.LpBinary))
                                    for k, m in enumerate(modes)]
                    self.x[v, d] = pulp.lpSum(w for _, w in self.w[v, d])
            fastest = min(m.duration for d in self.usable[v] for m in task.choices[d])
            self.S[v] = self.var(f"S_{i}", 0, max(0, U - fastest), cat=pulp.LpInteger)
            self.E[v] = self.S[v] + pulp.lpSum(m.duration * w for d in self.usable[v] for m, w in self.w[v, d])
            self.add(pulp.lpSum(self.x[v, d] for d in self.usable[v]) == 1)
            self.add(self.C >= self.E[v])

    def _precedence(self) -> None:
        """S[c] >= E[p] for every tensor with a producer, whatever its size."""
        for tensor in self.inst.tensors:
            if tensor.producer is not None:
                for c in tensor.consumers:
                    self.add(self.S[c] >= self.E[tensor.producer])

    def _device_order(self) -> None:
        """One order binary per unordered pair sharing a device, big-M active when both run there."""
        M = self.M
        self.o = {}
        tasks = [t.id for t in self.inst.tasks]
        for i, u in enumerate(tasks):
            for v in tasks[i + 1:]:
                common = [d for d in self.usable[u] if d in self.usable[v]]
                if not common or v in self.desc[u] or u in self.desc[v]:
                    continue
                o = self.o[u, v] = self.var(f"o_{self._tix[u]}_{self._tix[v]}", cat=pulp.LpBinary)
                for d in common:
                    apart = 2 - self.x[u, d] - self.x[v, d]
                    self.add(self.S[v] >= self.E[u] - M * (1 - o) - M * apart)
                    self.add(self.S[u] >= self.E[v] - M * o - M * apart)

    def _sources(self, tensor) -> dict[str, pulp.LpVariable | None]:
        """Where a tensor can be: device -> placement binary (None: always, a graph input on the host)."""
        if tensor.producer is None:
            return {self.inst.host.id: None}
        return {a: self.x[tensor.producer, a] for a in self.usable[tensor.producer]}

    def _transfers(self) -> None:
        """ts[t,b], z[t,a,b] = [producer on a and some consumer on b], arrival before each consumer."""
        inst, M, U = self.inst, self.M, self.M
        self.ts, self.z = {}, {}
        #: (tensor, a, b) -> [(binary, duration, size)]: the transfer, one leg per size the
        #: producer's modes on ``a`` give the tensor (a single leg is z itself)
        self.legs: dict[tuple[str, str, str], list[tuple[object, int, int]]] = {}
        self.there: dict[tuple[str, str], list[str]] = {}  # (tensor, b) -> consumers that may run on b
        for tensor in inst.tensors:
            if tensor.size == 0:
                continue
            t, p, k = tensor.id, tensor.producer, self._nix[tensor.id]
            sources = self._sources(tensor)
            dests = [d.id for d in inst.devices if any(d.id in self.usable[c] for c in tensor.consumers)]
            for b in dests:
                there = [c for c in tensor.consumers if b in self.usable[c]]
                lits = {a: src for a, src in sources.items() if a != b}
                if not lits:
                    continue
                ts = self.ts[t, b] = self.var(f"ts_{k}_{self._dix[b]}", 0, U, cat=pulp.LpInteger)
                self.there[t, b] = there
                if p is not None:
                    self.add(ts >= self.E[p])
                arrival = []
                for a, src in lits.items():
                    link = inst.link(a, b)
                    if link is None:  # usable_devices leaves no such pair possible, but say it anyway
                        for c in there:
                            self.add(self.x[c, b] <= (0 if src is None else 1 - src))
                        continue
                    z = self.z[t, a, b] = self.var(f"z_{k}_{self._dix[a]}_{self._dix[b]}", cat=pulp.LpBinary)
                    if src is not None:
                        self.add(z <= src)
                    self.add(z <= pulp.lpSum(self.x[c, b] for c in there))
                    for c in there:
                        self.add(z >= (1 if src is None else src) + self.x[c, b] - 1)
                    legs = self.legs[t, a, b] = []
                    sizes: dict[int, list] = {tensor.size: []} if p is None else {}
                    for m, w in ([] if p is None else self.w[p, a]):
                        sizes.setdefault(m.size(tensor), []).append(w)
                    for j, (size, ws) in enumerate(sizes.items()):
                        leg = z
                        if len(sizes) > 1:
                            leg = self.var(f"z_{k}_{self._dix[a]}_{self._dix[b]}_{j}", cat=pulp.LpBinary)
                            self.add(leg <= z)
                            self.add(leg <= pulp.lpSum(ws))
                            self.add(leg >= z + pulp.lpSum(ws) - 1)
                        legs.append((leg, link.transfer_time(size), size))
                    arrival += [tau * leg for leg, tau, _ in legs]
                for c in there:
                    self.add(self.S[c] >= ts + pulp.lpSum(arrival) - M * (1 - self.x[c, b]))

    def _link_order(self) -> None:
        """Transfers on a 1-channel link never overlap: one order binary per pair, big-M when both exist."""
        M = self.M
        self.q = {}
        per_link: dict[tuple[str, str], list[str]] = {}
        for t, a, b in self.z:
            if self.inst.link(a, b).channels == 1:
                per_link.setdefault((a, b), []).append(t)
        for (a, b), tensors in per_link.items():
            for i, ti in enumerate(tensors):
                for tj in tensors[i + 1:]:
                    if self._before(ti, tj, b) or self._before(tj, ti, b):
                        continue
                    zi, zj = self.z[ti, a, b], self.z[tj, a, b]
                    fi = self.ts[ti, b] + self._sent(ti, a, b)
                    fj = self.ts[tj, b] + self._sent(tj, a, b)
                    q = self.q[ti, tj, a, b] = self.var(
                        f"q_{self._nix[ti]}_{self._nix[tj]}_{self._dix[a]}_{self._dix[b]}", cat=pulp.LpBinary)
                    apart = 2 - zi - zj
                    self.add(self.ts[tj, b] >= fi - M * (1 - q) - M * apart)
                    self.add(self.ts[ti, b] >= fj - M * q - M * apart)

    def _sent(self, t: str, a: str, b: str):
        """The duration of the transfer of ``t`` over ``a -> b`` (0 when there is none)."""
        return pulp.lpSum(tau * leg for leg, tau, _ in self.legs[t, a, b])

    def _before(self, ti: str, tj: str, b: str) -> bool:
        """True when a transfer of ``ti`` to ``b`` always ends before one of ``tj`` starts: every
        consumer of ``ti`` that may run on ``b`` is ``tj``'s producer or one of its ancestors."""
        pj = self.inst.tensor(tj).producer
        return pj is not None and all(c == pj or pj in self.desc[c] for c in self.there[ti, b])

    def _loads(self) -> None:
        """Redundant: the work on a device, or sent over a 1-channel link, fits in the makespan."""
        load: dict[str, list] = {}
        for (v, d), ws in self.w.items():
            load.setdefault(d, []).extend(m.duration * w for m, w in ws)
        sent: dict[tuple[str, str], list] = {}
        for t, a, b in self.z:
            if self.inst.link(a, b).channels == 1:
                sent.setdefault((a, b), []).append(self._sent(t, a, b))
        for terms in [*load.values(), *sent.values()]:
            if len(terms) > 1:
                self.add(pulp.lpSum(terms) <= self.C)

    # ----- objectives ---------------------------------------------------------------------
    def objective(self, name: str) -> pulp.LpAffineExpression:
        """The expression of an objective (PROBLEM.md section 4), built once."""
        if name not in self._objectives:
            inst = self.inst
            if name == "latency":
                expr = pulp.LpAffineExpression(self.C)
            elif name == "energy":
                expr = (pulp.lpSum(m.energy * w for ws in self.w.values() for m, w in ws)
                        + pulp.lpSum(size * inst.link(a, b).energy_per_byte * leg
                                     for (t, a, b), legs in self.legs.items() for leg, _, size in legs)
                        + sum(d.static_power for d in inst.devices) * self.C)
            elif name == "error":
                expr = pulp.lpSum(m.error * w for ws in self.w.values() for m, w in ws)
            else:
                raise ValueError(f"the MILP engine has no objective {name!r}")
            self._objectives[name] = expr
        return self._objectives[name]

    # ----- starts and read-back -----------------------------------------------------------
    def start_from(self, schedule: Schedule) -> bool:
        """Set every variable's initial value from a valid schedule; False when it does not fit."""
        inst = self.inst
        if any(v not in schedule.tasks or (v, schedule.tasks[v].device) not in self.x
               or inst.task(v).mode(schedule.tasks[v].device, schedule.tasks[v].mode) is None for v in self.S):
            return False
        dev = {v: p.device for v, p in schedule.tasks.items()}
        start = {v: p.start for v, p in schedule.tasks.items()}
        end = {v: start[v] + inst.task(v).mode(p.device, p.mode).duration for v, p in schedule.tasks.items()}
        span = recompute(inst, schedule)[0]["latency"]
        if span > self.M:
            return False
        self.C.setInitialValue(span)
        for (v, d), ws in self.w.items():
            for m, w in ws:
                w.setInitialValue(int(dev[v] == d and schedule.tasks[v].mode == m.name))
        for v, s in self.S.items():
            s.setInitialValue(start[v])
        for (u, v), o in self.o.items():
            o.setInitialValue(int(start[u] <= start[v]))
        sent = {(x.tensor, x.dst): x for x in schedule.transfers}
        for (t, b), ts in self.ts.items():
            x = sent.get((t, b))
            p = inst.tensor(t).producer
            ts.setInitialValue(x.start if x else (end[p] if p is not None else 0))
        sized = effective(inst, schedule)
        for (t, a, b), z in self.z.items():
            x = sent.get((t, b))
            z.setInitialValue(int(x is not None and x.src == a))
            for leg, _, size in self.legs[t, a, b]:
                if leg is not z:
                    leg.setInitialValue(int(x is not None and x.src == a and size == sized.tensor(t).size))
        for (ti, tj, a, b), q in self.q.items():
            xi, xj = sent.get((ti, b)), sent.get((tj, b))
            q.setInitialValue(int(xi is None or xj is None or xi.start <= xj.start))
        return True

    def read(self) -> tuple[dict[str, Placement], list[Transfer], None]:
        """Placements from x and S; transfers recomputed from the placement, starts from ts."""
        inst = self.inst
        tasks = {}
        for task in inst.tasks:
            v = task.id
            d, mode, _ = max(((d, m, w) for d in self.usable[v] for m, w in self.w[v, d]),
                             key=lambda dmw: dmw[2].value() or 0)
            tasks[v] = Placement(d, round(self.S[v].value() or 0), mode.name)
        transfers = []
        for tensor in inst.tensors:
            if tensor.size == 0:
                continue
            src = inst.host.id if tensor.producer is None else tasks[tensor.producer].device
            for b in [d.id for d in inst.devices]:
                if b != src and any(tasks[c].device == b for c in tensor.consumers):
                    transfers.append(Transfer(tensor.id, src, b, round(self.ts[tensor.id, b].value() or 0)))
        return tasks, transfers, None

    # ----- the protocol: stages and solving -----------------------------------------------
    def minimise(self, objective: str, early: Sequence[str] = (), then: str | None = None) -> bool:
        """Never folds ``then`` in: weights that large would sit below the MILP solvers' tolerances."""
        expr = self.objective(objective)
        if early:
            expr = len(early) * expr + pulp.lpSum(self.E[v] for v in early)
        self.prob.setObjective(expr)
        self._tie_break = bool(early)
        return False

    def limit(self, objective: str, value: int) -> None:
        self.add(self.objective(objective) <= value)
        self._limits[objective] = min(value, self._limits.get(objective, value))

    def at_least(self, objective: str, value: int) -> None:
        self.add(self.objective(objective) >= value)

    def span(self, source: str | None, source_device: str | None, sink: str | None, sink_device: str | None,
             value: int) -> None:
        ends = [(v, d) for v, d in ((source, source_device), (sink, sink_device)) if v is not None]
        if any(key not in self.x for key in ends):
            return
        after = self.E[sink] if sink is not None else self.C
        off = pulp.lpSum(1 - self.x[key] for key in ends)
        self.add(after - (self.S[source] if source is not None else 0) >= value - value * off)

    def span_table(self, source: str | None, between: Sequence[str], sink: str | None,
                   spans: Mapping[tuple[str | None, ...], int | None]) -> None:
        """Left out (the protocol allows it: the bound is redundant): each placement would be one
        more big-M row, a cost the MILP's weak relaxation would not repay."""

    def fix(self, task: str, placement: Placement) -> None:
        for m, w in self.w[task, placement.device]:
            self.add(w == int(m.name == placement.mode))
        self.add(self.S[task] == placement.start)

    def hint(self, schedule: Schedule) -> None:
        values = recompute(self.inst, schedule)[0]
        fits = all(values[name] <= ub for name, ub in self._limits.items())
        self._start = fits and self.start_from(schedule)

    def solve(self, time_limit: float | None) -> Stage:
        threads = self.options.workers or 1
        with tempfile.TemporaryDirectory(prefix="cpsched-milp-") as tmp:
            log_path = Path(tmp) / "stage.log"
            clock = time.monotonic()
            solver = _solver(self.backend, self.highs_kind, time_limit, threads, self.options.seed, self._start,
                             log_path, self.options.log is not None)
            try:
                interrupt.run(lambda: self.prob.solve(solver), self.stop)
            except pulp.PulpSolverError:
                if not (self.backend == "cbc" and self._start):
                    raise
                # CBC 2.10 crashes on exit when its time limit falls inside the MIP start's
                # processing (Sinnen's graphs at 16 processors): the rest of the time without it
                left = None if time_limit is None else max(1.0, time_limit - (time.monotonic() - clock))
                solver = _solver(self.backend, self.highs_kind, left, threads, self.options.seed, False,
                                 log_path, self.options.log is not None)
                interrupt.run(lambda: self.prob.solve(solver), self.stop)
            wall = round(time.monotonic() - clock, 3)
            kind, bound = _outcome(self.prob, self.backend, self.highs_kind, log_path)
            kind = _trusted(kind, wall, time_limit)
            if self.options.log is not None and log_path.exists():
                for line in log_path.read_text(errors="replace").splitlines():
                    self.options.log(line)
        status = {"optimal": Status.OPTIMAL, "feasible": Status.FEASIBLE, "infeasible": Status.INFEASIBLE,
                  "none": Status.UNKNOWN}[kind]
        proven = None if bound is None or self._tie_break else math.ceil(bound - 1e-6)
        return Stage(status, proven, wall, kind)

    def stop(self) -> None:
        """Nothing to call: CBC runs in a child process that receives the same SIGINT and stops;
        HiGHS returns at its time limit."""


# --------------------------------------------------------------------------------------------
# backends
# --------------------------------------------------------------------------------------------

_banner_silenced = False


def _silence_highs_banner() -> None:
    """HiGHS prints its banner on stdout when the first ``Highs`` object of a process is made;
    stdout carries results, so make that first one with file descriptor 1 on /dev/null."""
    global _banner_silenced
    if _banner_silenced:
        return
    _banner_silenced = True
    import ctypes
    import os
    import sys

    import highspy
    sys.stdout.flush()
    libc = ctypes.CDLL(None)
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            highspy.Highs()
            libc.fflush(None)
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _highs_kind() -> str | None:
    """'api' (highspy), 'cmd' (the highs executable) or None."""
    if pulp.HiGHS().available():
        return "api"
    if pulp.HiGHS_CMD(msg=False).available():
        return "cmd"
    return None


def _cbc(**kwargs):
    """PuLP's bundled CBC (deprecated in PuLP 3.3 in favour of a separately installed one,
    which is used when ``cbc`` is on the path)."""
    system = pulp.COIN_CMD(**kwargs)
    if system.available():
        return system
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return pulp.PULP_CBC_CMD(**kwargs)


def _check_backend(backend: str) -> str | None:
    """The HiGHS kind (None for CBC); an InputError when the backend's solver is missing."""
    if backend == "cbc":
        if not _cbc(msg=False).available():
            raise InputError("engine 'milp': PuLP's bundled CBC is not available (see pulp.listSolvers())")
        return None
    kind = _highs_kind()
    if kind is None:
        raise InputError("engine 'milp-highs': HiGHS is not installed (pip install highspy)")
    if kind == "api":
        _silence_highs_banner()
    return kind


def _solver(backend: str, highs_kind: str | None, time_left: float | None, threads: int, seed: int,
            start: bool, log_path: Path, want_log: bool):
    """A PuLP solver object for one stage; CBC always logs to ``log_path`` (its bound is read there)."""
    if backend == "cbc":
        options = [f"randomCbcSeed {seed}"] if seed > 0 else []
        return _cbc(msg=False, timeLimit=time_left, threads=threads, gapRel=0, gapAbs=_GAP_ABS,
                                 warmStart=start, logPath=str(log_path), timeMode="elapsed", options=options)
    if highs_kind == "api":
        logging = {"output_flag": True, "log_to_console": False, "log_file": str(log_path)} if want_log else {}
        return pulp.HiGHS(msg=False, timeLimit=time_left, threads=threads, gapRel=0, gapAbs=_GAP_ABS,
                          random_seed=seed, **logging)  # no MIP start: see the module docstring
    return pulp.HiGHS_CMD(msg=False, timeLimit=time_left, threads=threads, gapRel=0, gapAbs=_GAP_ABS,
                          warmStart=start, logPath=str(log_path), options=[f"random_seed={seed}"])


def _trusted(kind: str, wall: float, time_limit: float | None) -> str:
    """``kind``, except that infeasibility reported once the time limit has run out is not proven
    ('none'): CBC 2.10 stopped by its limit inside preprocessing prints "Pre-processing says
    infeasible or unbounded" on feasible models (a 21-task fork-join on 16 processors, 3 of 12
    one-second solves)."""
    if kind == "infeasible" and time_limit is not None and wall >= time_limit:
        return "none"
    return kind


def _outcome(prob: pulp.LpProblem, backend: str, highs_kind: str | None, log_path: Path
             ) -> tuple[str, float | None]:
    """('optimal' | 'feasible' | 'infeasible' | 'none', the solver's proven lower bound or None)."""
    sol = prob.sol_status
    bound = None
    if backend == "highs" and highs_kind == "api":
        info = prob.solverModel.getInfo()
        if sol == pulp.LpSolutionIntegerFeasible and info.primal_solution_status != 2:
            sol = pulp.LpSolutionNoSolutionFound  # stopped before any incumbent
        if math.isfinite(info.mip_dual_bound):
            bound = info.mip_dual_bound
    elif backend == "cbc" and log_path.exists():
        found = re.findall(r"Lower bound:\s*([-+0-9.eE]+)", log_path.read_text(errors="replace"))
        if found:
            bound = float(found[-1])
    if sol == pulp.LpSolutionOptimal:
        return "optimal", bound
    if sol == pulp.LpSolutionIntegerFeasible:
        return "feasible", bound
    if sol == pulp.LpSolutionInfeasible or prob.status == pulp.LpStatusInfeasible:
        return "infeasible", bound
    return "none", bound


# --------------------------------------------------------------------------------------------
# the engine
# --------------------------------------------------------------------------------------------

class MilpEngine:
    """The MILP engine on ``backend`` (``cbc`` or ``highs``): no memory model, 0/1-channel links."""

    capabilities = Capabilities(memory=False, channels=False, memory_plan=False, decomposition=True,
                                bounds=True, progress=False, solutions=False, modes=True)

    def __init__(self, backend: str = "cbc"):
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {', '.join(BACKENDS)} (got {backend!r})")
        self.backend = backend
        self.name = "milp" if backend == "cbc" else "milp-highs"

    def settings(self, instance: Instance, options: Options) -> dict:
        out = {"backend": self.backend, "pulp": pulp.__version__, "workers": options.workers or 1}
        if self.backend == "highs":
            out["highs"] = _highs_kind()
        return out

    def build(self, instance: Instance, frame: Frame, objectives: Sequence[str], options: Options) -> MilpModel:
        highs_kind = _check_backend(self.backend)
        return MilpModel(instance, dict(frame.usable), frame.lower, frame.upper, options, self.backend, highs_kind)
