"""What an exact engine offers the drivers, and what it declares it can do.

An engine (:class:`Engine`) turns an instance into a :class:`Model` that the
lexicographic driver (:mod:`cpsched.lexico`) and the decomposition
(:mod:`cpsched.decompose`) drive through a handful of calls:

* :meth:`Model.minimise` an objective (optionally breaking ties towards early
  ends of some tasks, or by a second objective in the same solve), :meth:`Model.limit` an objective's value,
  :meth:`Model.fix` a task's placement, :meth:`Model.hint` a schedule;
* :meth:`Model.solve` with a time limit, giving a :class:`Stage` (a status word
  and the proven bound), then :meth:`Model.read` the solution back;
* :meth:`Model.stop`, safe from another thread, ends a running solve early
  (cpsched's SIGINT handler calls it: :mod:`cpsched.interrupt`).

Each engine declares its :class:`Capabilities`; :func:`requirements` lists what
a request needs, and the driver refuses a request that needs something the
engine lacks with a :class:`~cpsched.errors.CapabilityError` naming the
capability, never a silent drop.  Nothing here imports a solver.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

from cpsched.bounds import routes
from cpsched.instance import Instance
from cpsched.schedule import Placement, Status, Transfer

MEMORY_PLANS = ("after", "joint")


@dataclass(frozen=True)
class Progress:
    """A live report from a running stage: the incumbent and the proven bound so far."""

    objective: str
    elapsed: float  # seconds since the stage began
    value: int | None  # the incumbent's value of the stage objective (None: none yet)
    bound: int | None  # the best proven lower bound (None: none yet)


@dataclass(frozen=True)
class Options:
    """Engine settings; all but the callbacks are recorded in every result (``solver``)."""

    time_limit: float | None = None  # seconds for all lexicographic stages together
    workers: int | None = None  # None: the engine's default for the problem class
    seed: int = 0
    log: Callable[[str], None] | None = None  # the engine's search log, line by line
    redundant: bool = True  # redundant load constraints (they give the relaxation the load bound)
    #: the LP relaxation inside the search (CP-SAT's linearization); engines without one ignore it.
    #: Off, one worker proves a series segment's latency 2-4x sooner (cpsched.series.ONE_WORKER_LP)
    lp: bool = True
    #: on 2 workers, two complete searches (with and without the LP) in place of one beside LNS: for
    #: sub-solves that start from a near point and whose proof is the bottleneck (the bounded steps of
    #: cpsched.api.front on a graph solved whole, cpsat.PROOF_WORKERS); engines without a portfolio ignore it
    proof: bool = False
    #: None: no memory plan; "after": pack each result's buffers once it is solved
    #: (cpsched.memplan.plan_schedule); "joint": offsets inside the model, objective "arena" allowed
    memory_plan: str | None = None
    #: merge interchangeable devices into one cumulative resource (CP-SAT, cpsched.classes)
    classes: bool = True
    #: keep one labelling of interchangeable devices between which data moves (CP-SAT,
    #: cpsched.classes.symmetric_groups); off where tasks are pinned (decomposition windows)
    symmetry: bool = True
    progress: Callable[[Progress], None] | None = None  # live incumbent / bound reports
    #: keep every intermediate solution as a validated schedule (Schedule.archive: a sweep's
    #: candidate points); engines without Capabilities.solutions simply keep none
    archive: bool = False
    #: None: a later lexicographic stage (a tie-break among the first stage's optima) may use all the
    #: time left; else at most this share of ``time_limit``.  Timed sweeps set it: their next step
    #: bounds the tie-broken objective below the value found, so an unproven tie-break costs a step,
    #: not a wrong point, while an open-ended one starves the steps that certify the front
    tail_share: float | None = None

    def recorded(self) -> dict[str, Any]:
        """The settings a result records (no callbacks)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("log", "progress")}


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do; asking for anything else is a CapabilityError naming it."""

    memory: bool  # device memory: capacities that can bind, the memory objective and limits
    channels: bool  # links with 2 or more channels
    memory_plan: bool  # offset plans (memory_plan="after" or "joint") and the arena objective
    decomposition: bool  # windows of pinned tasks with early-end tie-breaking (cpsched.decompose)
    bounds: bool  # a proven bound from the search itself when a stage is stopped early
    progress: bool  # live incumbent / bound reports while a stage runs (Options.progress)
    solutions: bool  # every intermediate solution of a stage can be read (Model.collect, Options.archive)
    modes: bool = False  # named modes per (task, device) and the error objective (PROBLEM.md section 6)


@dataclass(frozen=True)
class Frame:
    """What the instance fixes for a model: usable devices, the makespan's range, the devices
    whose memory is modelled."""

    usable: Mapping[str, tuple[str, ...]]
    lower: int  # a lower bound on the makespan (cpsched.bounds.latency_lower_bound)
    upper: int  # the horizon: some optimal schedule ends by then
    memory_devices: frozenset[str]
    floors: Mapping[str, int]  # each objective's relaxation bound (cpsched.bounds.relaxation_bounds)


@dataclass(frozen=True)
class Stage:
    """How one minimisation ended."""

    status: Status  # optimal / feasible (stopped with a solution) / infeasible / unknown
    bound: int | None  # a proven lower bound on the minimised expression (None: the engine has none)
    wall_time: float
    word: str  # the engine's own status word, recorded


class Model(Protocol):
    """One engine model of one instance, driven stage by stage."""

    def minimise(self, objective: str, early: Sequence[str] = (), then: str | None = None) -> bool:
        """Make ``objective`` the one to minimise; with ``early``, break its ties towards early
        ends of those tasks (the stage's bound is then None).  With ``then``, the model may
        minimise ``then`` among ``objective``'s optima in the same solve (one solve for a
        lexicographic pair): it returns whether it did, and the stage's bound and progress stay
        ``objective``'s."""

    def limit(self, objective: str, value: int) -> None:
        """Add ``objective <= value``."""

    def at_least(self, objective: str, value: int) -> None:
        """Add ``objective >= value`` (a proven lower bound, e.g. from a sweep's lower set)."""

    def span(self, source: str | None, source_device: str | None, sink: str | None, sink_device: str | None,
             value: int) -> None:
        """Add ``end[sink] - start[source] >= value`` while both run on those devices (a None
        source: from time 0; a None sink: to the makespan), a proven bound of the segment between
        them (:attr:`cpsched.series.Series.spans`); redundant, so a device the model merged into
        a class or does not offer may simply be left out."""

    def span_table(self, source: str | None, between: Sequence[str], sink: str | None,
                   spans: Mapping[tuple[str | None, ...], int | None]) -> None:
        """Add ``start[sink] - end[source] >= spans[devices]`` (a None source: from time 0; a None
        sink: to the makespan), ``devices`` being those of ``source``, the tasks ``between`` and
        ``sink`` in order (None for a missing one), ``spans`` every placement's proven bound
        (:func:`cpsched.residency.tables`; None: no bound); redundant, so an engine may leave it
        out, and does where a device of those tasks is merged into a class."""

    def fix(self, task: str, placement: Placement) -> None:
        """Pin ``task`` to its device (or its device's class) and start time."""

    def hint(self, schedule) -> None:
        """Warm-start the next solve from a valid schedule of the instance."""

    def solve(self, time_limit: float | None) -> Stage:
        """Minimise the current objective within ``time_limit`` seconds (None: no limit)."""

    def read(self) -> tuple[dict[str, Placement], list[Transfer], dict | None]:
        """The last solution: placements, transfers and (joint plans) device -> (kind, id) -> offset."""

    def stop(self) -> None:
        """End a running :meth:`solve` early; safe to call from any thread or a signal handler."""

    # With Capabilities.solutions: ``collect(callback)``, after which every solution a later
    # :meth:`solve` meets is passed to ``callback`` as :meth:`read` would return it.


class Engine(Protocol):
    """An exact engine: its name, its capabilities, and how it builds a model."""

    name: str
    capabilities: Capabilities

    def settings(self, instance: Instance, options: Options) -> dict[str, Any]:
        """What a result records about the engine (versions, the workers it uses)."""

    def build(self, instance: Instance, frame: Frame, objectives: Sequence[str], options: Options) -> Model:
        """The model of ``instance`` within ``frame``; ``objectives`` are those that will be minimised."""

    # Optional: ``confirmer() -> Engine | None``, the same problem in an independent formulation,
    # which the driver asks to confirm an ``infeasible`` answer under memory capacities.


def requirements(instance: Instance, frame: Frame, objectives: Sequence[str], limits: Mapping[str, int],
                 options: Options) -> list[tuple[str, str]]:
    """(capability, why) for everything this request needs beyond placement, order and transfers."""
    needs = []
    if not instance.plain:
        needs.append(("modes", "the instance has named modes (PROBLEM.md section 6)"))
    named = [n for n in (*objectives, *limits) if n == "memory"]
    if named:
        needs.append(("memory", "memory is an objective or a limit"))
    elif frame.memory_devices:
        needs.append(("memory", "memory capacity can bind on " + ", ".join(sorted(frame.memory_devices))))
    if options.memory_plan is not None:
        needs.append(("memory_plan", f"memory_plan={options.memory_plan!r} was asked for"))
    if options.progress is not None:
        needs.append(("progress", "live progress was asked for"))
    for pairs in routes(instance, frame.usable).values():
        for a, b in pairs:
            link = instance.link(a, b)
            if link.channels >= 2:
                needs.append(("channels", f"link {a}->{b} has {link.channels} channels"))
                return needs
    return needs
