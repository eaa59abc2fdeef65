"""The residency relaxation: a memory floor never above the optimum, and its placement as a start."""

import dataclasses
import itertools
import random
import time

import pytest
import cpsched
from oracle_front import brute_front_latency_memory, memory_instance

from cpsched import decompose, engines, lexico, lns, pareto, residency
from cpsched.bounds import relaxation_bounds, usable_devices
from cpsched.engines.protocol import Options
from cpsched.heuristics.baselines import frugal, place
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor
from cpsched.schedule import Status
from cpsched.validator import validate


@pytest.mark.parametrize("seed", range(30))
def test_bound_never_exceeds_the_brute_force_least_memory(seed):
    inst = memory_instance(seed, 3 + seed % 2)
    held = residency.solve(inst)
    least = min(memory for _, memory in brute_front_latency_memory(inst))
    assert relaxation_bounds(inst, usable_devices(inst))["memory"] <= held.bound <= least
    assert held.proven and held.devices is not None


@pytest.mark.parametrize("seed", range(20))
def test_bound_never_exceeds_the_proven_least_memory_under_binding_capacities(seed):
    base = memory_instance(100 + seed, 4)
    inst = dataclasses.replace(base, devices=tuple(dataclasses.replace(d, memory=6 + seed % 5) if not d.host else d
                                                   for d in base.devices))
    held = residency.solve(inst)
    best = lexico.solve(inst, ["memory"], Options(time_limit=30))
    if best.status is Status.INFEASIBLE:
        return
    assert best.status is Status.OPTIMAL
    assert held.bound <= best.objectives["memory"]
    start = frugal(inst, [held.devices])
    assert validate(inst, start).valid and start.objectives["memory"] >= held.bound


def _skipped(seed: int) -> Instance:
    """A chain t0 -> t1 -> t2 -> t3 with a skip tensor from t0 to t3 and a graph output of t1
    beside its tensor to t2: both are live through the tasks between on a device that keeps them
    (``residency._around``); random modes, weights and sizes as in ``memory_instance``."""
    base = memory_instance(seed, 4)
    rng = random.Random(seed)
    tensors = (Tensor("in0", rng.randint(1, 5), None, ("t0",)),
               *(Tensor(f"t{i}_out", rng.randint(1, 5), f"t{i}", (f"t{i + 1}",)) for i in range(3)),
               Tensor("skip", rng.randint(2, 6), "t0", ("t3",)),
               Tensor("kept", rng.randint(1, 4), "t1", (), output=True),
               Tensor("t3_out", rng.randint(1, 5), "t3", (), output=True))
    return dataclasses.replace(base, name=f"skipped-{seed}", tensors=tensors)


@pytest.mark.parametrize("seed", range(12))
def test_tensors_around_a_task_raise_the_bound_yet_never_above_the_brute_force_least_memory(seed, monkeypatch):
    """With the skip tensor and the early graph output counted where they stay, the bound is
    never above the brute-force least memory, and every list schedule of every placement holds
    at least that placement's relaxed value; it is raised above the bound without them on a
    placement that keeps them on one device."""
    inst = _skipped(seed)
    around = residency._around(inst)
    assert [t.id for t, _, _ in around["t1"]] == ["skip"]
    assert sorted(t.id for t, _, _ in around["t2"]) == ["kept", "skip"]
    held = residency.solve(inst)
    assert held.proven and held.bound <= min(memory for _, memory in brute_front_latency_memory(inst))
    usable = usable_devices(inst)
    for choice in itertools.product(*(usable[t.id] for t in inst.tasks)):
        devices = {t.id: d for t, d in zip(inst.tasks, choice)}
        assert place(inst, devices, "any").objectives["memory"] >= residency._peak(inst, devices)
    on_host = {t.id: "cpu" for t in inst.tasks}
    raised = residency._peak(inst, on_host)
    monkeypatch.setattr(residency, "_around", lambda instance: {t.id: [] for t in instance.tasks})
    assert raised > residency._peak(inst, on_host)


def _two_heavy_tasks() -> Instance:
    """Two tasks of 10 bytes of weights each; the accelerator holds 5 bytes, so both weights stay
    on the host: memory >= 20, where the closed-form floor spreads them to 10 (and takes the one
    largest task's 12 bytes)."""
    devices = (Device("cpu", 100, 0, host=True), Device("acc", 5, 0))
    links = (Link("cpu", "acc", 0, 1, 0, 1), Link("acc", "cpu", 0, 1, 0, 1))
    tasks = tuple(Task(f"t{i}", "Op", {"cpu": Mode(2, 0), "acc": Mode(1, 0)}, weights=10) for i in range(2))
    tensors = (Tensor("x", 1, None, ("t0",)), Tensor("y", 1, "t0", ("t1",)), Tensor("z", 1, "t1", (), output=True))
    return Instance(name="two-heavy", devices=devices, links=links, tasks=tasks, tensors=tensors)


def test_capacities_and_the_tasks_own_bytes_raise_the_floor():
    inst = _two_heavy_tasks()
    held = residency.solve(inst)
    assert relaxation_bounds(inst, usable_devices(inst))["memory"] == 12
    # both weights on the cpu, and t0 holds its input and output beside them
    assert held.bound == 22 and held.proven and held.devices == {"t0": "cpu", "t1": "cpu"}
    assert lexico.solve(inst, ["memory"], Options(time_limit=10)).objectives["memory"] == 22


def test_a_sweeps_lower_set_starts_at_the_given_floors():
    inst = _two_heavy_tasks()
    stopped = pareto.sweep(inst, ("latency", "memory"), budget=pareto.Budget(time_limit=1e-6),
                           floors={"memory": 22})
    assert not stopped.complete and stopped.lower
    assert min(memory for _, memory in stopped.lower) == 22


def test_named_modes_are_left_to_the_closed_form_floor():
    from cpsched.generate import random_instance

    assert residency.solve(random_instance(1, 4, 2, n_modes=2)) is None


def _holds(inst: Instance, devices: dict[str, str]) -> dict[str, int]:
    """Per device: its weights plus the most bytes beside them of a task placed there."""
    from cpsched.bounds import bytes_beside_weights

    out = {d.id: 0 for d in inst.devices}
    for d in out:
        on = [v for v, at in devices.items() if at == d]
        out[d] = sum(inst.task(v).weights for v in on) + max((bytes_beside_weights(inst, v, d) for v in on), default=0)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_a_capped_placement_fits_the_cap_and_none_fits_below_the_floor(seed):
    inst = memory_instance(200 + seed, 4)
    floor = residency.solve(inst).bound
    for cap in (floor, floor + 3):
        devices = residency.placed(inst, cap).devices
        assert devices is not None and set(devices) == {t.id for t in inst.tasks}
        assert max(_holds(inst, devices).values()) <= cap
    assert residency.placed(inst, floor - 1) == residency.Placed(None, None)  # nothing fits: no schedule


@pytest.mark.parametrize("seed", range(30))
def test_the_capped_relaxations_latency_bound_never_exceeds_the_brute_force_least_latency_within_the_cap(seed):
    """Every schedule within a memory cap is at least as long as the relaxation's bound under it
    (graph inputs copied from the host included), at every cap from the floor to the front's top."""
    inst = memory_instance(600 + seed, 3 + seed % 2)
    front = brute_front_latency_memory(inst)
    floor = residency.solve(inst).bound
    checked = 0
    for cap in range(floor, max(memory for _, memory in front) + 1):
        within = [latency for latency, memory in front if memory <= cap]
        bound = residency.placed(inst, cap).bound
        if within:  # (below the least memory no schedule is within the cap: any bound holds)
            assert bound is not None and bound <= min(within), (cap, bound, min(within))
            checked += 1
    assert checked


def _fork_joins(seed: int, blocks: int = 2) -> Instance:
    """``blocks`` fork-joins in series on a host and two accelerators (cut tasks between them:
    segments of two or three tasks), weights and tensors large enough that tight caps move tasks
    apart."""
    rng = random.Random(seed)
    ids = ("cpu", "a1", "a2")
    devices = tuple(Device(d, 10**6, host=d == "cpu") for d in ids)
    links = tuple(Link(a, b, rng.randint(0, 1), rng.randint(2, 4)) for a in ids for b in ids if a != b)
    shape = [["f"]]
    for k in range(blocks):
        shape += [[f"b{k}_{i}" for i in range(2 + (seed + k) % 2)], [f"j{k}"]]
    tasks = tuple(Task(v, "Op", {d: Mode(rng.randint(1, 5) * (2 if d == "cpu" else 1)) for d in ids
                                 if d == "cpu" or rng.random() < 0.8}, weights=rng.randint(0, 6))
                  for level in shape for v in level)
    tensors = [Tensor("in", rng.randint(1, 4), None, ("f",))]
    for level, after in zip(shape, shape[1:]):
        tensors += [Tensor(f"{v}_out", rng.randint(1, 4), v, tuple(after)) for v in level]
    last = shape[-1][0]
    tensors.append(Tensor(f"{last}_out", rng.randint(1, 4), last, (), output=True))
    return Instance(name=f"forkjoins-{seed}", devices=devices, links=links, tasks=tasks, tensors=tuple(tensors))


ENUMERATED = residency.ENUMERATED


@pytest.mark.parametrize("enumerated", [ENUMERATED, 1])
@pytest.mark.parametrize("seed", range(8))
def test_the_capped_latency_bound_by_segments_never_exceeds_the_proven_optimum_under_the_cap(seed, enumerated,
                                                                                            monkeypatch):
    """With cut tasks, the relaxation bounds each segment's span apart: by each placement's own
    paths and loads (enumerated) or task by task (``ENUMERATED`` = 1: each branch apart, their
    loads added up); under every cap from the memory floor up, the bound stays at or below the
    engine's proven least latency within it, and the enumeration's bound is never below the
    task-by-task one."""
    monkeypatch.setattr(residency, "ENUMERATED", enumerated)
    _forget(monkeypatch)
    inst = _fork_joins(seed)
    floor = residency.solve(inst).bound
    top = max(p.values[1] for p in cpsched.front(inst, ("latency", "memory"), time_limit=60).points)
    for cap in range(floor, top + 1, max(1, (top - floor) // 6)):
        bound, best = _bound_below_the_optimum(inst, cap)
        if best is not None and enumerated == 1:
            monkeypatch.setattr(residency, "ENUMERATED", ENUMERATED)
            _forget(monkeypatch)
            assert residency.placed(inst, cap, time_limit=30).bound >= bound
            monkeypatch.setattr(residency, "ENUMERATED", 1)
            _forget(monkeypatch)


def _branched(seed: int) -> Instance:
    """Two fork-joins in series on a host and two accelerators, each of 2 or 3 branches of two
    tasks in a chain: the first segment begins with the fork (a cut task inside it)."""
    rng = random.Random(seed)
    ids = ("cpu", "a1", "a2")
    devices = tuple(Device(d, 10**6, host=d == "cpu") for d in ids)
    links = tuple(Link(a, b, rng.randint(0, 1), rng.randint(2, 4)) for a in ids for b in ids if a != b)
    names, tensors, before = ["f"], [Tensor("in", rng.randint(1, 4), None, ("f",))], "f"
    for k in range(2):
        chains = [[f"b{k}_{i}_{j}" for j in range(2)] for i in range(2 + (seed + k) % 2)]
        tensors.append(Tensor(f"{before}_out", rng.randint(1, 4), before, tuple(c[0] for c in chains)))
        for chain in chains:
            names += chain
            tensors += [Tensor(f"{chain[0]}_out", rng.randint(1, 4), chain[0], (chain[1],)),
                        Tensor(f"{chain[1]}_out", rng.randint(1, 4), chain[1], (f"j{k}",))]
        names.append(f"j{k}")
        before = f"j{k}"
    tensors.append(Tensor(f"{before}_out", rng.randint(1, 4), before, (), output=True))
    tasks = tuple(Task(v, "Op", {d: Mode(rng.randint(1, 5) * (2 if d == "cpu" else 1)) for d in ids
                                 if d == "cpu" or rng.random() < 0.8}, weights=rng.randint(0, 6)) for v in names)
    return Instance(name=f"branched-{seed}", devices=devices, links=links, tasks=tasks, tensors=tuple(tensors))


@pytest.mark.parametrize("seed", range(6))
def test_the_branches_of_a_large_segment_bound_every_schedule_under_every_cap(seed, monkeypatch):
    """A segment of more than ``ENUMERATED`` placements splits at the cut task inside it and into
    its branches (each with the segment's source and sink, together its tasks); under every cap
    from the memory floor up, the bound stays at or below the engine's proven least latency and
    never below the task-by-task one, and every valid schedule spans each branch at least its
    table's bound."""
    monkeypatch.setattr(residency, "ENUMERATED", 9)
    _forget(monkeypatch)
    inst = _branched(seed)
    usable = usable_devices(inst)
    groups = residency._pieces(inst, usable)
    assert groups[0][0] == (None, (), "f")
    assert sum(len(pieces) > 1 for _, pieces in groups) == 2
    for (source, between, sink), pieces in groups:
        assert sorted(v for piece in pieces for v in piece[1]) == sorted(between)
        assert all(piece[0] == source and piece[2] == sink for piece in pieces)
    tables = residency.tables(inst)
    assert len(tables) == sum(len(pieces) for _, pieces in groups)
    rng = random.Random(seed)
    schedules = [place(inst, {v: rng.choice(ds) for v, ds in usable.items()}, "random") for _ in range(20)]
    floor = residency.solve(inst).bound
    for cap in range(floor, floor + 13, 3):
        bound, best = _bound_below_the_optimum(inst, cap)
        if best is None:
            continue
        schedules.append(best)
        monkeypatch.setattr(residency, "ENUMERATED", 1)
        _forget(monkeypatch)
        assert residency.placed(inst, cap, time_limit=30).bound <= bound
        monkeypatch.setattr(residency, "ENUMERATED", 9)
        _forget(monkeypatch)
    for schedule in schedules:
        assert validate(inst, schedule).valid
        for (source, between, sink), spans in tables:
            key = tuple(None if v is None else schedule.tasks[v].device for v in (source, *between, sink))
            assert _span_of(inst, schedule, source, sink) >= spans[key], (key, spans[key])


def _bound_below_the_optimum(inst: Instance, cap: int) -> tuple[int | None, object]:
    """(the capped relaxation's bound under ``cap``, the engine's proven least-latency schedule
    within it, None when none fits), the bound checked at or below that schedule's latency."""
    best = lexico.solve(inst, ["latency"], Options(time_limit=60), limits={"memory": cap})
    bound = residency.placed(inst, cap, time_limit=30).bound
    if best.status is Status.INFEASIBLE:
        return bound, None
    assert best.status is Status.OPTIMAL
    assert bound is not None and bound <= best.objectives["latency"], (cap, bound, best.objectives)
    return bound, best


def _forget(monkeypatch) -> None:
    """Empty the per-instance caches of the segments' spans and options (after ENUMERATED changed)."""
    monkeypatch.setattr(residency, "_BOUNDED", {})


def _span_of(inst: Instance, schedule, source: str | None, sink: str | None) -> int:
    """The time ``schedule`` spends between a segment's source's end (or 0) and its sink's start
    (or its makespan)."""
    after = schedule.tasks[sink].start if sink is not None else schedule.objectives["latency"]
    if source is None:
        return after
    at = schedule.tasks[source]
    return after - at.start - inst.task(source).modes[at.device].duration


@pytest.mark.parametrize("seed", range(10))
def test_every_valid_schedule_spans_each_segment_at_least_its_tables_bound(seed):
    """The engine's table constraints are redundant: on fork-joins in series, every segment of
    every valid schedule (list schedules of 30 random placements, and the whole model's optima
    under a few caps) lasts at least the table's bound for the devices it placed there, and some
    segment meets its bound exactly."""
    rng = random.Random(seed)
    inst = _fork_joins(seed, blocks=3)
    usable = usable_devices(inst)
    tables = residency.tables(inst)
    assert len(tables) == 4
    schedules = [place(inst, {v: rng.choice(ds) for v, ds in usable.items()}, "random") for _ in range(30)]
    floor = residency.solve(inst).bound
    schedules += [lexico.solve(inst, ["latency"], Options(time_limit=30), limits={"memory": cap})
                  for cap in (floor, floor + 3, floor + 8)]
    tight = 0
    for schedule in (s for s in schedules if s.status.has_schedule):
        assert validate(inst, schedule).valid
        for (source, between, sink), spans in tables:
            key = tuple(None if v is None else schedule.tasks[v].device for v in (source, *between, sink))
            assert spans[key] is not None
            assert _span_of(inst, schedule, source, sink) >= spans[key], (key, spans[key])
            tight += _span_of(inst, schedule, source, sink) == spans[key]
    assert tight


@pytest.mark.parametrize("seed", range(6))
def test_the_tables_leave_the_optimum_under_every_cap_unchanged(seed):
    """The whole model's proven optimum (latency, then memory) under caps from the memory floor
    up is the same with the segments' tables as without them."""
    inst = _fork_joins(seed, blocks=3)
    tables = residency.tables(inst)
    floor = residency.solve(inst).bound
    for cap in range(floor, floor + 10, 2):
        plain = lexico.solve(inst, ["latency", "memory"], Options(time_limit=60), limits={"memory": cap})
        tabled = lexico.solve(inst, ["latency", "memory"], Options(time_limit=60), limits={"memory": cap},
                              tables=tables)
        assert tabled.status is plain.status
        if plain.status is Status.INFEASIBLE:
            continue
        assert plain.status is Status.OPTIMAL
        assert tabled.objectives == plain.objectives, cap
        assert tabled.solver["tables"] == len(tables)


@pytest.mark.parametrize("seed", range(8))
def test_a_proven_tie_holds_on_the_exact_front_and_never_below_a_point(seed):
    """``tied(L, M)`` (every schedule within latency L holds at least M bytes) never claims more
    than the exact front allows, never holds one byte above a front point (that point is a
    schedule within L below it), and settles some points exactly."""
    inst = _fork_joins(seed)
    front = cpsched.front(inst, ("latency", "memory"), time_limit=60)
    assert front.complete
    points = [p.values for p in front.points]
    settled = 0
    for latency, memory in points:
        assert not residency.tied(inst, latency, memory + 1, time_limit=30)
        for claim in (memory, memory - 1):
            if residency.tied(inst, latency, claim, time_limit=30):
                assert all(m >= claim for lat, m in points if lat <= latency), (latency, claim, points)
                settled += claim == memory
    assert settled


@pytest.mark.parametrize("seed", (1, 4, 6))
def test_steps_under_a_memory_cap_proven_by_the_relaxation_equal_the_whole_models_proof(seed):
    """On 20-odd tasks (the front door's capped path), every cap's answer is the optimum the
    whole model proves alone, latency then memory, also where the relaxation proved it (on
    these seeds, at one cap or more each)."""
    inst = _fork_joins(seed, blocks=6)
    assert len(inst.tasks) > 20
    floor = residency.solve(inst).bound
    by_placed = 0
    for cap in range(floor, floor + 12, 2):
        alone = lexico.solve(inst, ["latency", "memory"], Options(time_limit=120), limits={"memory": cap})
        step = cpsched.solve(inst, ["latency", "memory"], limits={"memory": cap}, time_limit=120)
        assert step.status is alone.status
        if alone.status is Status.INFEASIBLE:
            continue
        assert alone.status is Status.OPTIMAL
        assert (step.objectives["latency"], step.objectives["memory"]) == \
            (alone.objectives["latency"], alone.objectives["memory"]), cap
        assert validate(inst, step).valid
        by_placed += step.solver.get("bound_source") == "placed"
    assert by_placed


@pytest.mark.parametrize("seed", range(16))
def test_the_bisection_from_the_worst_placement_meets_the_relaxations_minimum(seed):
    """Probing caps halfway from the closed-form floor and every task on the host (the worst
    placement) ends at the minimum that minimising proves, with a placement of exactly that
    value: no probe's answer is wrong either way (here the accelerator's capacity binds)."""
    base = memory_instance(300 + seed, 10 + seed % 5)
    inst = dataclasses.replace(base, devices=tuple(dataclasses.replace(d, memory=8 + seed % 7) if not d.host else d
                                                   for d in base.devices))
    exact = residency.solve(inst, time_limit=30)
    assert exact.proven
    usable = usable_devices(inst)
    floor = relaxation_bounds(inst, usable)["memory"]
    worst = {v: inst.host.id for v in usable}
    held = residency._bisect(inst, floor, worst, time.monotonic() + 30, 2)
    assert held.proven and held.bound == exact.bound
    assert max(_holds(inst, held.devices).values()) == exact.bound


@pytest.mark.parametrize("seed", range(4))
def test_a_decomposed_step_under_a_memory_cap_meets_it(seed):
    from cpsched.decompose import solve as decomposed
    from cpsched.generate import random_instance

    inst = random_instance(300 + seed, 14, 3, memory=10**9)
    cap = residency.solve(inst).bound + 6
    whole = lexico.solve(inst, ["latency"], Options(time_limit=30), limits={"memory": cap})
    result = decomposed(inst, ["latency"], Options(time_limit=20), limits={"memory": cap}, decompose=4)
    if whole.status is Status.INFEASIBLE:
        assert not result.status.has_schedule
        return
    assert whole.status is Status.OPTIMAL and validate(inst, result).valid
    assert whole.objectives["latency"] <= result.objectives["latency"] and result.objectives["memory"] <= cap


def _heavy_chain(seed: int, n: int) -> Instance:
    """A chain of ``n`` tasks (with a few skips) whose weights (10-60 bytes) dwarf their tensors
    (1-3 bytes), fast on the accelerator: like a CNN's, a memory cap spreads the weights and the
    capped placement's list schedule meets it."""
    rng = random.Random(seed)
    devices = (Device("cpu", 10**6, 0, host=True), Device("acc", 10**6, 0))
    links = (Link("cpu", "acc", 1, 2, 0, 1), Link("acc", "cpu", 1, 2, 0, 1))
    tasks = tuple(Task(f"t{i}", "Op", {"cpu": Mode(rng.randint(4, 9), 0), "acc": Mode(rng.randint(1, 3), 0)},
                       weights=rng.randint(10, 60)) for i in range(n))
    tensors = [Tensor("x", 2, None, ("t0",))]
    for i in range(n):
        after = tuple(f"t{j}" for j in (i + 1, i + 2) if j < n and (j == i + 1 or rng.random() < 0.3))
        tensors.append(Tensor(f"y{i}", rng.randint(1, 3), f"t{i}", after, output=not after))
    return Instance(name=f"heavy-chain-{seed}", devices=devices, links=links, tasks=tasks, tensors=tuple(tensors))


@pytest.mark.parametrize("seed", range(6))
def test_a_whole_models_step_under_a_memory_cap_starts_from_the_better_of_its_hint_and_the_capped_placement(seed):
    """A graph solved whole but spanned (over SPAN_TASKS tasks) starts a latency step under a
    memory cap from the capped placement's schedule unless the hint meets the cap and is
    shorter; the step proves the whole model's optimum, never above that start."""
    from cpsched.decompose import SPAN_TASKS, _capped_start
    from cpsched.decompose import solve as decomposed

    inst = _heavy_chain(seed, SPAN_TASKS + 4)
    over = lexico.solve(inst, ["latency"], Options(time_limit=10))  # the uncapped optimum
    cap = (residency.solve(inst).bound + over.objectives["memory"]) // 2
    answer = residency.capped(inst, cap)
    placed = answer.schedule
    assert placed is not None and placed.objectives["memory"] <= cap < over.objectives["memory"]
    limits = {"memory": cap}
    start, floors = _capped_start(inst, ["latency"], over, limits, None, None)
    # (the relaxation may pick another of its optimal placements each time: its bound is the same)
    assert start is not over and start.within(limits) and floors == {"latency": answer.bound}
    assert _capped_start(inst, ["latency"], None, limits, {"latency": 10**6}, None)[1] == {"latency": 10**6}
    within = dataclasses.replace(placed, objectives={**placed.objectives, "latency": placed.objectives["latency"] - 1})
    assert _capped_start(inst, ["latency"], within, limits, None, None)[0] is within  # a shorter hint within the cap
    whole = lexico.solve(inst, ["latency"], Options(time_limit=30), limits=limits)
    result = decomposed(inst, ["latency"], Options(time_limit=30), limits=limits, hint=over)
    assert whole.status is Status.OPTIMAL and result.status is Status.OPTIMAL and validate(inst, result).valid
    assert answer.bound <= result.objectives["latency"] == whole.objectives["latency"] <= placed.objectives["latency"]
    assert result.objectives["memory"] <= cap


@pytest.mark.parametrize("seed", range(6))
def test_a_memory_solve_of_a_whole_model_starts_from_the_capped_schedule_at_the_floor(seed):
    """The capped placement's list schedule under the memory floor itself has exactly the
    floor's memory (so it is memory-optimal; on these weight-heavy chains there is one); the
    memory-then-latency solve that starts from it gives the whole model's lexicographic optimum."""
    from cpsched.decompose import _residency
    from cpsched.decompose import solve as decomposed

    inst = _heavy_chain(100 + seed, 24)
    bounds: dict = {}
    found = _residency(inst, bounds, None, None, at_floor=True, tie_break=True)
    assert "frugal" in found and "floor" not in _residency(inst, {}, None, None)
    if found["frugal"].objectives["memory"] == bounds["residency"]:  # memory alone: frugal settles it
        assert "floor" not in _residency(inst, {}, None, None, at_floor=True)
    floor = found["floor"]
    assert validate(inst, floor).valid and floor.objectives["memory"] == bounds["residency"]
    whole = lexico.solve(inst, ["memory", "latency"], Options(time_limit=30))
    result = decomposed(inst, ["memory", "latency"], Options(time_limit=30))
    assert whole.status is Status.OPTIMAL and result.status is Status.OPTIMAL and validate(inst, result).valid
    assert [result.objectives[n] for n in ("memory", "latency")] == [whole.objectives[n] for n in ("memory", "latency")]


@pytest.mark.parametrize("seed", range(12))
def test_a_capped_schedule_is_valid_within_its_cap_and_never_below_the_floor(seed):
    inst = memory_instance(400 + seed, 4)
    floor = residency.solve(inst).bound
    assert residency.capped(inst, floor - 1) == residency.Capped(None, None)
    for cap in (floor, floor + 2, floor + 6):
        start = residency.capped(inst, cap).schedule
        if start is not None:  # the list may hold more than the relaxation: then none, never one over
            assert validate(inst, start).valid and floor <= start.objectives["memory"] <= cap


def test_a_ladder_steps_its_caps_up_from_the_floor_below_the_top():
    inst = _two_heavy_tasks()  # floor 22; caps 24, 26, 30, 39
    found = residency.ladder(inst, 22, None, 4)
    assert len(found) == 4 and all(validate(inst, s).valid for s in found)
    assert all(s.objectives["memory"] <= cap for s, cap in zip(found, (24, 26, 30, 39)))
    assert residency.ladder(inst, 22, 24, 4) == []  # the first cap is already at the top
    assert residency.ladder(inst, 22, None, 0) == []


@pytest.mark.parametrize("seed", range(10))
def test_seeds_leave_a_complete_front_unchanged_and_are_its_points_when_no_step_runs(seed):
    inst = memory_instance(500 + seed, 4)
    floor = residency.solve(inst).bound
    seeds = residency.ladder(inst, floor, None, 4)
    exact = pareto.sweep(inst, ("latency", "memory"))
    seeded = pareto.sweep(inst, ("latency", "memory"), seeds=seeds)
    assert exact.complete and seeded.complete
    assert [p.values for p in seeded.points] == [p.values for p in exact.points]
    stopped = pareto.sweep(inst, ("latency", "memory"), budget=pareto.Budget(time_limit=1e-6), seeds=seeds)
    kept = {p.values for p in stopped.points}
    for s in seeds:  # each seed is a point unless another seed dominates or equals it
        values = (s.objectives["latency"], s.objectives["memory"])
        assert values in kept or any(v != values and all(a <= b for a, b in zip(v, values)) for v in kept)


@pytest.mark.parametrize("seed", range(4))
def test_the_front_door_with_seeds_gives_the_exact_front(seed, monkeypatch):
    import cpsched
    from cpsched import api

    inst = memory_instance(600 + seed, 4)
    exact = cpsched.front(inst, ("latency", "memory"), time_limit=60)
    monkeypatch.setattr(api, "SEED_TASKS", 2)  # the seeds are computed for graphs above it
    seeded = cpsched.front(inst, ("latency", "memory"), time_limit=60)
    assert exact.complete and seeded.complete
    assert [p.values for p in seeded.points] == [p.values for p in exact.points]


@pytest.mark.parametrize("seed", range(4))
def test_tables_over_devices_merged_into_a_class_change_nothing(seed):
    """Where nothing moves and nothing is stored, two identical accelerators are merged into one
    class (one literal for "some member", which the engine's tables leave out): the proven
    optimum with the tables is the one without them."""
    base = _fork_joins(seed, blocks=3)
    tasks = tuple(dataclasses.replace(t, weights=0, modes={"cpu": t.modes["cpu"], **(
        {"a1": t.modes["a1"], "a2": t.modes["a1"]} if "a1" in t.modes else {})}) for t in base.tasks)
    tensors = tuple(dataclasses.replace(t, size=0) for t in base.tensors)
    inst = dataclasses.replace(base, tasks=tasks, tensors=tensors)
    tables = residency.tables(inst)
    plain = lexico.solve(inst, ["latency"], Options(time_limit=30))
    tabled = lexico.solve(inst, ["latency"], Options(time_limit=30), tables=tables)
    assert tabled.solver["classes"] and tables
    assert plain.status is tabled.status is Status.OPTIMAL
    assert tabled.objectives["latency"] == plain.objectives["latency"]


@pytest.mark.parametrize("seed", range(16))  # 12 and 14 try a second placement
def test_the_pinned_starts_keep_the_relaxations_placements_and_fit_the_whole_instance(seed):
    """The memory-first starts on the residency relaxation's placements (``decompose._pinned``):
    the first on its own placement, each later one on another placement whose relaxed value is
    no higher, tried only while none meets the relaxation's bound; each a valid (unproven)
    schedule of the whole instance, at or above the brute-force least memory and the bound,
    and the optimum on its placement; under a latency limit below the first one's latency
    each is either within the limit or not offered."""
    inst = memory_instance(900 + seed, 3 + seed % 2)
    held = residency.solve(inst)
    cpsat = engines.get("cpsat")
    starts = decompose._pinned(inst, ["memory", "latency"], Options(), cpsat, None, 30)
    assert list(starts)[0] == "pinned" and len(starts) <= decompose.PINNED_TRIES
    assert {v: at.device for v, at in starts["pinned"].tasks.items()} == dict(held.devices)
    least = min(memory for _, memory in brute_front_latency_memory(inst))
    placements = []
    for k, start in enumerate(starts.values()):
        devices = {v: at.device for v, at in start.tasks.items()}
        assert devices not in placements and residency._peak(inst, devices) <= residency._peak(inst, held.devices)
        placements.append(devices)
        assert start.status is Status.FEASIBLE and validate(inst, start).valid
        assert max(least, held.bound) <= start.objectives["memory"]
        assert k == len(starts) - 1 or start.objectives["memory"] > held.bound
        fixed = lexico.solve(lns.pinned(inst, devices), ["memory"], Options(time_limit=30))
        assert fixed.status is Status.OPTIMAL and start.objectives["memory"] == fixed.objectives["memory"]
    limits = {"latency": starts["pinned"].objectives["latency"] - 1}
    tighter = decompose._pinned(inst, ["memory", "latency"], Options(), cpsat, limits, 30)
    assert all(s.within(limits) for s in tighter.values())


def _priced_fork_joins(seed: int) -> Instance:
    """:func:`_fork_joins` with task energies (the host dearer per task), static powers and link
    energies: its latency/energy front trades the accelerators' time for the host's energy."""
    return _priced(_fork_joins(seed, blocks=3), seed)


def _priced(inst: Instance, seed: int) -> Instance:
    """``inst`` with task energies (the host dearer per task), static powers and link energies."""
    rng = random.Random(1000 + seed)
    devices = tuple(dataclasses.replace(d, static_power=rng.randint(1, 3)) for d in inst.devices)
    links = tuple(dataclasses.replace(link, energy_per_byte=rng.randint(0, 2)) for link in inst.links)
    tasks = tuple(dataclasses.replace(t, modes={d: Mode(m.duration, rng.randint(1, 20) * (3 if d == "cpu" else 1))
                                                for d, m in t.modes.items()}) for t in inst.tasks)
    return dataclasses.replace(inst, devices=devices, links=links, tasks=tasks)


def test_the_energy_bound_under_a_latency_cap_never_exceeds_the_least_energy_within_it():
    """On fork-joins in series with energies (8 seeds), under every latency cap across the exact
    latency/energy front, :func:`cpsched.residency.spent`'s bound is at most the least energy of
    a front point within the cap (the least energy of any schedule within it), without a cap at
    most the least energy; every statement of :func:`cpsched.residency.rungs` holds on the front;
    and on most seeds some cap raises the bound above the uncapped one (the cap is used)."""
    raised = 0
    for seed in range(8):
        inst = _priced_fork_joins(seed)
        front = cpsched.front(inst, ("latency", "energy"), time_limit=120)
        assert front.complete
        points = [p.values for p in front.points]
        free = residency.spent(inst, None, 10)
        assert free is not None and free <= min(energy for _, energy in points)
        bounds = []
        for cap in range(min(latency for latency, _ in points), max(latency for latency, _ in points) + 1):
            bounds.append(residency.spent(inst, {"latency": cap}, 10))
            least = min(energy for latency, energy in points if latency <= cap)
            assert bounds[-1] is not None and bounds[-1] <= least, (seed, cap, bounds[-1], least)
        raised += max(bounds) > free
        proofs = residency.rungs(inst, 6, 10)
        assert proofs[0] == {"given": {}, "objective": "energy", "at_least": free}
        for proof in proofs[1:]:
            cap = proof["given"]["latency"]
            assert proof["objective"] == "energy" and proof["at_least"] > free
            assert all(energy >= proof["at_least"] for latency, energy in points if latency <= cap)
    assert raised >= 4


def _priced_instances() -> list[Instance]:
    """Random DAGs (a tensor with two consumers, graph inputs), branched and plain fork-joins in
    series, all with task, link and static energies."""
    from cpsched.generate import random_instance

    return ([random_instance(seed, 8, 3) for seed in range(4)] + [_priced(_branched(seed), seed) for seed in range(3)]
            + [_priced_fork_joins(seed) for seed in range(3)])


@pytest.mark.parametrize("enumerated", [ENUMERATED, 9, 0])
def test_the_energy_bound_with_transfers_priced_never_exceeds_the_least_energy(enumerated, monkeypatch):
    """Transfers priced by the pieces whose options own them (``ENUMERATED``), by the placement
    literals (0: every piece task by task) or by both (9: large pieces task by task): on random
    DAGs and fork-joins with link energies, :func:`cpsched.residency.spent`'s bound without a cap
    and under latency caps across the exact latency/energy front is at most the least energy
    within the cap, so no copy is paid twice and none that a schedule can avoid is paid."""
    monkeypatch.setattr(residency, "ENUMERATED", enumerated)
    _forget(monkeypatch)
    monkeypatch.setattr(residency, "_SPENT", {})
    for inst in _priced_instances():
        front = cpsched.front(inst, ("latency", "energy"), time_limit=60)
        assert front.complete, inst.name
        points = [p.values for p in front.points]
        latencies = sorted({latency for latency, _ in points})
        for cap in [None, *latencies]:
            bound = residency.spent(inst, None if cap is None else {"latency": cap}, 10)
            least = min(energy for latency, energy in points if cap is None or latency <= cap)
            assert bound is not None and bound <= least, (inst.name, cap, bound, least)


def _copying(shape: str) -> tuple[Instance, int]:
    """(an instance without static power on a host and an accelerator whose copies every schedule
    makes, by ``shape``, its least energy): ``chain``, tasks that only the host or only the
    accelerator runs in turn, one tensor consumed by two accelerator tasks; ``sink``, a fork on
    the host, two branches of two tasks and a join on the accelerator, the fork's output copied
    to the join directly, the segment between them split into its branches with ``ENUMERATED`` =
    4, which must not each pay for that copy."""
    devices = (Device("cpu", 10**6, host=True), Device("acc", 10**6))
    links = (Link("cpu", "acc", 1, 2, energy_per_byte=3), Link("acc", "cpu", 1, 2, energy_per_byte=5))
    both = {"cpu": Mode(3, 2), "acc": Mode(1, 1)}
    if shape == "chain":
        on = {"a": "acc", "b": "cpu", "c": "acc", "d": "acc"}
        tasks = tuple(Task(v, "Op", {d: Mode(2, 7)}) for v, d in on.items())
        tensors = (Tensor("in", 4, None, ("a",)), Tensor("a_out", 2, "a", ("b",)),
                   Tensor("b_out", 6, "b", ("c", "d")), Tensor("c_out", 1, "c", ("d",)),
                   Tensor("d_out", 1, "d", (), output=True))
        least = 4 * 7 + 4 * 3 + 2 * 5 + 6 * 3
    else:
        tasks = (Task("f", "Op", {"cpu": Mode(1, 1)}), *(Task(v, "Op", both) for v in ("x1", "x2", "y1", "y2")),
                 Task("j", "Op", {"acc": Mode(1, 1)}))
        tensors = (Tensor("f_x", 0, "f", ("x1", "y1")), Tensor("f_j", 5, "f", ("j",)), Tensor("x", 0, "x1", ("x2",)),
                   Tensor("y", 0, "y1", ("y2",)), Tensor("xy_j", 0, "x2", ("j",)), Tensor("y_j", 0, "y2", ("j",)),
                   Tensor("j_out", 1, "j", (), output=True))
        least = 1 + 4 * 1 + 1 + 5 * 3
    return Instance(name=shape, devices=devices, links=links, tasks=tasks, tensors=tensors), least


@pytest.mark.parametrize("enumerated", [ENUMERATED, 4, 0])
@pytest.mark.parametrize("shape", ["chain", "sink"])
def test_the_energy_bound_pays_for_each_copy_every_schedule_makes_once(shape, enumerated, monkeypatch):
    """:func:`_copying`'s instances, their pieces enumerated (``ENUMERATED``), split into branches
    (4) or relaxed task by task (0): the bound is the engine's proven least energy."""
    monkeypatch.setattr(residency, "ENUMERATED", enumerated)
    _forget(monkeypatch)
    monkeypatch.setattr(residency, "_SPENT", {})
    inst, least = _copying(shape)
    found = cpsched.solve(inst, "energy", time_limit=10)
    assert found.status is Status.OPTIMAL and found.objectives["energy"] == least
    assert residency.spent(inst, None, 10) == least
