"""Series decomposition at cut tasks (cpsched.series): the cut tasks, a bound that never exceeds
the optimum, and a glued schedule that is valid and optimal whenever it meets that bound."""

from __future__ import annotations

import json
import random

import networkx as nx
import pytest
from typer.testing import CliRunner

import cpsched
from cpsched import cuts, decompose, engines, lexico, residency, series
from cpsched.bounds import latency_lower_bound, relaxation_bounds, usable_devices
from cpsched.cli import app
from cpsched.decompose import _capped_priced, solve as decomposed
from cpsched.engines import Options
from cpsched.generate import random_instance
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor, save_instance
from cpsched.schedule import Status
from cpsched.validator import validate

OPTIONS = Options(workers=1)


def blocks(seed: int, n_blocks: int = 4, memory: int | None = None) -> Instance:
    """A chain of blocks, each one task or a fork into 2-3 parallel tasks joined by the next
    block's first task: the joins are cut tasks.  Three devices (d0 the host), every link
    present; sizes 0-6; ``memory`` (None: a random capacity that sometimes binds)."""
    rng = random.Random(seed)
    cap = memory if memory is not None else rng.choice((10**6, 40, 30, 24))
    devices = (Device("d0", 10**6, static_power=rng.randint(0, 2), host=True),
               Device("d1", cap, static_power=rng.randint(0, 2)), Device("d2", cap, static_power=rng.randint(0, 2)))
    links = tuple(Link(a, b, rng.randint(0, 2), rng.randint(1, 3), rng.randint(0, 2), channels=rng.choice((0, 1)))
                  for a in ("d0", "d1", "d2") for b in ("d0", "d1", "d2") if a != b)
    tasks: list[Task] = []
    tensors: list[Tensor] = []

    def task(name: str) -> str:
        base = rng.randint(2, 9)
        modes = {"d0": Mode(base, rng.randint(0, 9))}
        for d, speed in (("d1", 0.6), ("d2", 0.35)):
            if rng.random() < 0.8:
                modes[d] = Mode(max(1, round(base * speed) + rng.randint(-1, 1)), rng.randint(0, 9))
        tasks.append(Task(name, "Op", modes, weights=rng.randint(0, 6), workspace=rng.randint(0, 3)))
        return name

    last = task("t0")
    tensors.append(Tensor("in", rng.randint(1, 6), None, ("t0",)))
    for k in range(n_blocks):
        width = rng.choice((1, 2, 3))
        branch = [task(f"b{k}_{i}") for i in range(width)]
        tensors.append(Tensor(f"{last}.out", rng.randint(0, 6), last, tuple(branch)))
        join = task(f"j{k}")
        for v in branch:
            tensors.append(Tensor(f"{v}.out", rng.randint(0, 6), v, (join,)))
        last = join
    tensors.append(Tensor(f"{last}.out", rng.randint(1, 6), last, (), output=True))
    return Instance(f"blocks{seed}", devices, links, tuple(tasks), tuple(tensors))


def cut_definition(instance: Instance) -> list[str]:
    """Cut tasks straight from the definition: every other task is an ancestor or a descendant,
    and no precedence edge or graph input of nonzero size goes from before the task to after it."""
    g = instance.graph
    out = []
    for c in instance.topological_order:
        before, after = nx.ancestors(g, c), nx.descendants(g, c)
        if len(before) + len(after) + 1 != len(instance.tasks):
            continue
        jumps = any((t.producer in before or (t.producer is None and t.size > 0))
                    and any(v in after for v in t.consumers) for t in instance.tensors)
        if not jumps:
            out.append(c)
    return out


@pytest.mark.parametrize("seed", range(60))
def test_cut_tasks_follow_the_definition(seed):
    instance = blocks(seed) if seed % 2 else random_instance(seed, 4 + seed % 9, 3)
    assert cuts.cut_tasks(instance) == cut_definition(instance)


def test_joins_are_cut_tasks_and_a_skip_tensor_removes_them():
    instance = blocks(3, n_blocks=3)
    found = cuts.cut_tasks(instance)
    assert {"j0", "j1", "j2"} <= set(found)
    skip = Tensor("skip", 1, "j0", ("j2",))
    skipped = Instance(instance.name, instance.devices, instance.links, instance.tasks, (*instance.tensors, skip))
    assert "j1" not in cuts.cut_tasks(skipped) and "j0" in cuts.cut_tasks(skipped)


def optimum(instance: Instance, objective: str, limits=None) -> Status | int:
    result = lexico.solve(instance, [objective], OPTIONS, limits=limits)
    assert result.status in (Status.OPTIMAL, Status.INFEASIBLE)
    return result.status if result.status is Status.INFEASIBLE else result.objectives[objective]


@pytest.mark.parametrize("seed", range(54))
def test_series_bound_never_exceeds_the_optimum(seed):
    """54 random chains of blocks, each objective once per 3 seeds (some with binding memory):
    the bound is at most the proven optimum, and a glued schedule is valid, meets the bound
    and then equals the optimum."""
    instance = blocks(seed)
    objective = series.OBJECTIVES[seed % 3]
    found = series.solve(instance, objective, usable_devices(instance), OPTIONS, engines.get("cpsat"), least=1)
    best = optimum(instance, objective)
    assert found.info["cuts"] >= 1
    if best is Status.INFEASIBLE:
        assert found.schedule is None
        return
    assert found.bound is not None and found.bound <= best
    if found.schedule is not None:
        assert validate(instance, found.schedule, check_claims=False).valid
        assert found.schedule.objectives[objective] >= best
        if found.exact:
            assert found.bound == best


@pytest.mark.parametrize("seed", range(12))
def test_a_series_without_time_still_glues_a_valid_schedule(seed):
    """With no time for any segment solve, every pair stands at its relaxation bound and the
    bound path's segments are scheduled by HEFT (fitted into memory where the glue overfills a
    device): the bound stays at most the optimum, and the glued schedule is valid; there is one
    whenever memory is loose (odd seeds), and HEFT may find none under tight memory."""
    instance = blocks(400 + seed, memory=10**6 if seed % 2 else None)
    best = optimum(instance, "latency")
    if best is Status.INFEASIBLE:
        return
    found = series.solve(instance, "latency", usable_devices(instance), OPTIONS, engines.get("cpsat"),
                         budget=0.0, least=1)
    assert found.info["solves"] == 0 and found.bound <= best
    assert found.schedule is not None or seed % 2 == 0
    if found.schedule is not None:
        assert validate(instance, found.schedule, check_claims=False).valid
        assert found.schedule.objectives["latency"] >= best


@pytest.mark.parametrize("seed", range(30))
def test_lazy_pairs_give_the_bound_of_every_pair(seed):
    """Solving only the pairs of devices on the programme's cheapest path (the others standing at
    their relaxation bounds) gives the bound of solving every pair, with fewer solves (311 against
    924 over these 30 instances); the objectives rotate, and odd seeds have a memory limit."""
    instance = blocks(700 + seed, n_blocks=5)
    objective = series.OBJECTIVES[seed % 3]
    limits = {"memory": optimum(instance, "memory") + 3} if seed % 2 else None
    if limits is not None and limits["memory"] is Status.INFEASIBLE:
        return
    usable, engine = usable_devices(instance), engines.get("cpsat")
    every = series.solve(instance, objective, usable, OPTIONS, engine, limits, least=1, repair=False,
                         every_pair=True)
    lazy = series.solve(instance, objective, usable, OPTIONS, engine, limits, least=1, repair=False)
    assert every.info["all_proven"] and lazy.info["all_proven"]
    assert lazy.bound == every.bound
    assert lazy.info["solves"] < every.info["solves"] == every.info["pairs"]
    if lazy.schedule is not None:
        assert validate(instance, lazy.schedule, check_claims=False).valid


@pytest.mark.parametrize("seed", range(12))
def test_series_bound_holds_under_limits(seed):
    """Each limit holds for every segment, so the bound under a limit is still at most the
    constrained optimum."""
    instance = blocks(100 + seed, memory=10**6)
    free = optimum(instance, "latency")
    limits = {"memory": optimum(instance, "memory") + seed % 3} if seed % 2 else {"latency": free + seed % 4}
    objective = "energy" if seed % 2 == 0 else "latency"
    found = series.solve(instance, objective, usable_devices(instance), OPTIONS, engines.get("cpsat"), limits,
                         least=1)
    best = optimum(instance, objective, limits)
    assert found.bound is not None and found.bound <= best
    if found.schedule is not None:
        assert all(found.schedule.objectives[n] <= v for n, v in limits.items())


def test_alexnet_latency_optimum_from_segments():
    """alexnet on edge: the glued schedule meets the series bound at the proven optimum 7280."""
    instance = cpsched.load("alexnet", platform="edge")
    found = series.solve(instance, "latency", usable_devices(instance), OPTIONS, engines.get("cpsat"))
    assert found.exact and found.bound == 7280
    assert validate(instance, found.schedule, check_claims=False).valid


def test_decomposition_reports_the_series_bound(monkeypatch):
    """A decomposed solve returns the glued schedule as optimal, says the series proved it, and
    agrees with the whole model's optimum."""
    monkeypatch.setattr("cpsched.decompose.SERIES_TASKS", 0)
    instance = blocks(7, n_blocks=6, memory=10**6)
    result = decomposed(instance, ["latency"], OPTIONS, decompose=4)
    assert result.status is Status.OPTIMAL
    assert result.solver["bound_source"] == "series"
    assert result.objectives["latency"] == optimum(instance, "latency")
    assert validate(instance, result).valid


@pytest.mark.parametrize("seed, source", [(2, "relaxation"), (4, "search")])
def test_whole_model_reports_its_bound_source(seed, source):
    """An optimum at the relaxation bound is proven by it, one above it by the engine's search."""
    instance = random_instance(seed, 6, 3)
    result = cpsched.solve(instance, "latency")
    floor = latency_lower_bound(instance, usable_devices(instance))
    assert result.status is Status.OPTIMAL and result.solver["bound_source"] == source
    assert (result.objectives["latency"] == floor) == (source == "relaxation")


@pytest.mark.parametrize("seed", range(10))
def test_series_then_whole_model_agrees_with_the_whole_model(seed, monkeypatch):
    """Graphs that try the series first and then solve whole (memory often binding, so the glued
    schedule is often over-full): valid, the bound never above the optimum, the same optimum."""
    monkeypatch.setattr("cpsched.decompose.SERIES_TASKS", 0)
    instance = blocks(200 + seed)
    objective = ("latency", "energy")[seed % 2]
    result = decomposed(instance, [objective], OPTIONS)
    best = optimum(instance, objective)
    if best is Status.INFEASIBLE:
        assert result.status is Status.INFEASIBLE
        return
    assert validate(instance, result).valid
    assert result.status is Status.OPTIMAL and result.objectives[objective] == best
    assert result.solver["bound_source"] in ("search", "series")


@pytest.mark.parametrize("seed", range(8))
def test_lexicographic_solve_starts_from_the_series_bound(seed, monkeypatch):
    """(latency, energy) and (latency, memory): the series bound is the whole solve's floor on
    latency; the answer equals the whole model's lexicographic optimum in both objectives."""
    monkeypatch.setattr("cpsched.decompose.SERIES_TASKS", 0)
    instance = blocks(300 + seed, memory=None if seed % 2 else 10**6)
    objectives = ["latency", ("energy", "memory")[seed % 2]]
    result = decomposed(instance, objectives, OPTIONS)
    whole = lexico.solve(instance, objectives, OPTIONS)
    if whole.status is Status.INFEASIBLE:
        assert result.status is Status.INFEASIBLE
        return
    assert result.status is Status.OPTIMAL and whole.status is Status.OPTIMAL
    assert [result.objectives[n] for n in objectives] == [whole.objectives[n] for n in objectives]
    assert validate(instance, result).valid


def test_an_exact_series_settles_the_first_stage(monkeypatch):
    """With a later objective, a glued schedule that meets the series bound ends the first stage,
    and the tie-break is solved on the whole model (no windows), to the whole model's optimum."""
    monkeypatch.setattr("cpsched.decompose.SERIES_TASKS", 0)
    instance = blocks(7, n_blocks=6, memory=10**6)
    objectives = ["latency", "energy"]
    result = decomposed(instance, objectives, OPTIONS, decompose=4)
    assert result.status is Status.OPTIMAL
    assert result.solver["bound_source"] == "series"
    assert "windows" not in result.solver["decompose"]
    whole = lexico.solve(instance, objectives, OPTIONS)
    assert [result.objectives[n] for n in objectives] == [whole.objectives[n] for n in objectives]


def test_cli_names_what_proved_the_answer(tmp_path, monkeypatch):
    monkeypatch.setattr("cpsched.decompose.SERIES_TASKS", 0)
    path = tmp_path / "blocks.json"
    save_instance(blocks(7, n_blocks=6, memory=10**6), path)
    result = CliRunner().invoke(app, ["solve", str(path), "--no-cache", "-o", str(tmp_path / "s.json")])
    assert result.exit_code == 0, result.output
    assert "status optimal" in result.output
    assert "latency proven by: the series decomposition (2 segments between cut tasks)" in result.output


def test_priced_bound_never_exceeds_the_optimum():
    """The Lagrangian bound (weights on over-full devices priced) on 30 chains of blocks whose
    small devices hold too many weights in the plain bound: never above the optimum, and it
    applies on most of them; the schedule its tries glued, when there is one, is valid.  Where
    the weights alone are over memory, the room split (the weights within the capacity less
    the bytes of a task that runs there, or no such task there) never lowers the tries' bound
    and raises it on several."""
    applied = scheduled = split = 0
    for seed in range(30):
        instance = blocks(300 + seed, n_blocks=5, memory=rng_capacity(seed))
        plain = series.solve(instance, "latency", usable_devices(instance), OPTIONS, engines.get("cpsat"), least=1)
        result = series.priced(instance, usable_devices(instance), OPTIONS, engines.get("cpsat"), plain, least=1)
        bound, info = result.bound, result.info
        over = plain.weights is not None and any(plain.weights[d.id] > d.memory for d in instance.devices)
        if over and bound is not None:
            tried = max(t["bound"] for t in info["tries"])
            assert bound >= tried
            split += bound > tried
        json.dumps(info, allow_nan=False)  # written into schedule files: strict JSON
        best = optimum(instance, "latency")
        if result.schedule is not None:
            assert validate(instance, result.schedule, check_claims=False).valid
            assert result.schedule.objectives["latency"] >= best
            scheduled += 1
        if bound is None:
            continue
        applied += 1
        assert best is not Status.INFEASIBLE and bound <= best, (seed, bound, best, info)
        if "split" not in info or over:  # over memory, the tries bound every case; else one only
            assert info["tries"] and all(t["bound"] <= best for t in info["tries"])
    assert applied >= 10 and scheduled >= 5 and split >= 8


def test_split_bound_never_exceeds_the_optimum():
    """Small devices whose weights fit in the plain bound's choice but not beside its largest task's
    own bytes (a memory limit counts as the capacity): the bound splits on whether that much runs
    there (the lesser of the two cases' bounds), is never above the optimum, and raises the plain
    bound on most of them."""
    applied = raised = limited = 0
    for seed in range(36):
        cap = (18, 22, 26)[seed % 3]  # odd seeds: the devices' own memory, even: a memory limit
        instance = blocks(500 + seed, n_blocks=5, memory=cap if seed % 2 else 10**6)
        limits = None if seed % 2 else {"memory": cap}
        usable = usable_devices(instance)
        plain = series.solve(instance, "latency", usable, OPTIONS, engines.get("cpsat"), limits, least=1)
        result = series.priced(instance, usable, OPTIONS, engines.get("cpsat"), plain, limits, least=1)
        bound, info = result.bound, result.info
        if "split" not in info:
            continue
        best = optimum(instance, "latency", limits)
        if best is Status.INFEASIBLE:  # any bound holds
            assert result.schedule is None
            continue
        if result.schedule is not None:
            assert validate(instance, result.schedule, check_claims=False).valid
            assert best <= result.schedule.objectives["latency"]
            assert all(result.schedule.objectives[n] <= v for n, v in (limits or {}).items())
        applied += 1
        assert bound is not None and bound <= best, (seed, bound, best, info)
        assert bound == min(v for v in (info["split"]["without"], info["split"]["within"]) if v is not None)
        raised += bound > plain.bound
        limited += limits is not None
    assert applied >= 8 and raised >= 6 and limited >= 1


def rng_capacity(seed: int) -> int:
    """A small-device capacity that makes weights overflow in the plain bound, yet leaves the
    instance feasible."""
    return (26, 30, 34)[seed % 3]


def _holds(instance: Instance, schedule, span) -> bool:
    """Whether ``schedule`` meets the span ``(a, da, b, db, value)`` (or the span does not apply)."""
    a, da, b, db, value = span
    if (a is not None and schedule.tasks[a].device != da) or (b is not None and schedule.tasks[b].device != db):
        return True
    end = schedule.objectives["latency"] if b is None else \
        schedule.tasks[b].start + instance.task(b).modes[db].duration
    return end - (0 if a is None else schedule.tasks[a].start) >= value


@pytest.mark.parametrize("seed", range(24))
def test_spans_hold_in_every_optimum_under_any_limit(seed):
    """The latency series' spans, solved without limits, hold in the optimal schedules of
    other objectives and under memory or latency limits; and adding them as constraints
    (CP-SAT, and MILP where no memory is asked for) changes no optimum."""
    instance = blocks(400 + seed, memory=10**6)
    cut = series.solve(instance, "latency", usable_devices(instance), OPTIONS, engines.get("cpsat"), least=1)
    assert cut.spans and cut.bound is not None
    objective = ("latency", "energy", "memory")[seed % 3]
    limits = ({"memory": optimum(instance, "memory") + seed % 4} if seed % 2
              else {"latency": optimum(instance, "latency") + seed % 5})
    objectives = [objective] + (["latency"] if objective != "latency" else [])
    plain = lexico.solve(instance, objectives, OPTIONS, limits=limits)
    assert plain.status is Status.OPTIMAL
    assert all(_holds(instance, plain, span) for span in cut.spans)
    for engine in ("cpsat",) if "memory" in (*objectives, *limits) else ("cpsat", "milp"):
        spanned = lexico.solve(instance, objectives, OPTIONS, limits=limits, engine=engine, spans=cut.spans)
        assert spanned.status is Status.OPTIMAL and spanned.solver["spans"] == len(cut.spans)
        assert [spanned.objectives[n] for n in objectives] == [plain.objectives[n] for n in objectives]


def test_sweep_steps_under_limits_use_the_cached_spans(monkeypatch):
    """A solve under a memory limit gets the latency series' spans (computed once without limits,
    then reused; the search uses them unless the placement relaxation settled the step before
    it) and agrees with the whole model."""
    monkeypatch.setattr("cpsched.decompose.SPAN_TASKS", 0)
    monkeypatch.setattr("cpsched.decompose._SPANS", {})
    instance = blocks(500, n_blocks=5, memory=10**6)
    cap = {"memory": optimum(instance, "memory") + 2}
    first = decomposed(instance, ["latency", "memory"], OPTIONS, limits=cap)
    again = decomposed(instance, ["latency", "memory"], OPTIONS, limits=cap)
    whole = lexico.solve(instance, ["latency", "memory"], OPTIONS, limits=cap)
    assert len(decompose._SPANS) == 1
    spans = len(next(iter(decompose._SPANS.values())))
    assert spans > 0 and first.solver.get("spans", spans) == again.solver.get("spans", spans) == spans
    assert [first.objectives[n] for n in ("latency", "memory")] == [whole.objectives[n] for n in ("latency", "memory")]
    assert validate(instance, first).valid


@pytest.mark.parametrize("engine", ["cpsat", "milp"])
def test_a_span_binds_in_every_engine(engine):
    """A span is a constraint, not a note: one above the optimum raises the latency to it, and
    one on devices the cut tasks do not take leaves the optimum alone."""
    instance = blocks(600, memory=10**6)
    best = optimum(instance, "latency")
    last = instance.topological_order[-1]
    forced = lexico.solve(instance, ["latency"], OPTIONS, engine=engine,
                          spans=[(None, None, last, d, best + 2) for d in instance.task(last).modes])
    assert forced.status is Status.OPTIMAL and forced.objectives["latency"] == best + 2
    free = lexico.solve(instance, ["latency"], OPTIONS, engine=engine)
    device = free.tasks["j0"].device
    other = next(d for d in instance.task("j0").modes if d != device)
    pinned = lexico.solve(instance, ["latency"], OPTIONS, engine=engine, spans=[(None, None, "j0", other, 10**4)])
    assert pinned.objectives["latency"] == best and pinned.tasks["j0"].device != other


@pytest.mark.parametrize("seed", range(10))
def test_mixing_picks_the_cheapest_choice_within_the_capacity(seed):
    """The knapsack that mixes the priced tries' segments (``_mixed``) against brute force over
    every consistent choice of the plain series' schedules: the same least summed latency among
    the choices whose weights on the small devices fit (capacities this small count bytes exactly)."""
    instance = blocks(600 + seed, n_blocks=3, memory=10**6)
    usable = usable_devices(instance)
    plain = series.solve(instance, "latency", usable, OPTIONS, engines.get("cpsat"), least=1, every_pair=True)
    parts, devices = cuts.segments(instance, 1), ("d1", "d2")

    def cost(picks):
        held = value = 0
        for (a, _, _), (da, _, schedule) in zip(parts, picks):
            held += sum(instance.task(v).weights for v, p in schedule.tasks.items() if v != a and p.device in devices)
            value += schedule.objectives["latency"] - (cuts.overlap(instance, "latency", a, da) if a else 0)
        return held, value

    choices = [[]]
    for segment in plain.found:
        choices = [c + [(da, db, s)] for c in choices for (da, db), s in segment.items()
                   if (da is None and not c) or (c and c[-1][1] == da)]
    for capacity in (0, 4, 8, 12, 20, 30, 40):
        fits = [value for held, value in map(cost, choices) if held <= capacity]
        picks = series._mixed(series._choices(instance, parts, [plain.found], devices), capacity)
        if not fits or capacity == 0:
            assert picks is None or cost(picks)[0] == 0
            continue
        assert picks is not None and cost(picks)[0] <= capacity and cost(picks)[1] == min(fits)


def _dual(choices: list[tuple[int, int]], capacity: int, price: float) -> tuple[float, int]:
    """(the Lagrangian dual at ``price`` of picking one of ``choices`` (latency, weights) with the
    weights within ``capacity``, a supergradient there: the minimiser's weights over capacity)."""
    latency, weights = min(choices, key=lambda c: (c[0] + price * (c[1] - capacity), c[1]))
    return latency + price * (weights - capacity), weights - capacity


@pytest.mark.parametrize("seed", range(40))
def test_the_price_ceiling_caps_the_dual_and_meets_it_from_every_piece(seed):
    """``_ceiling`` (where the priced rounds stop) against an exact Lagrangian dual, the least of a
    few choices' lines: from any tries it is at least the dual's maximum over prices >= 0 (inf when no choice fits),
    and from tries inside every piece of the dual it is that maximum; inf while every try is over."""
    rng = random.Random(seed)
    choices = [(rng.randint(10, 100), rng.randint(0, 50)) for _ in range(rng.randint(2, 6))]
    capacity = rng.randint(5, 45)
    prices = sorted({0.0, *(abs(l1 - l2) / abs(w1 - w2) for (l1, w1) in choices for (l2, w2) in choices
                            if w1 != w2)})
    top = max(_dual(choices, capacity, p)[0] for p in prices)
    if all(w > capacity for _, w in choices):  # no choice fits: the dual grows without end
        top = float("inf")
    ends = prices + [prices[-1] + 1]
    inside = [(p + q) / 2 for p, q in zip(ends, ends[1:])]  # one price within every piece
    for tried in (rng.sample(inside, rng.randint(1, len(inside))), inside):
        lines = [(p, *_dual(choices, capacity, p)) for p in [0.0, *tried]]
        ceiling = series._ceiling(lines)
        if all(g > 0 for _, _, g in lines):
            assert ceiling == float("inf")
        else:
            assert ceiling >= top - 1e-9, (choices, capacity, lines)
    assert series._ceiling([(p, *_dual(choices, capacity, p)) for p in [0.0, *inside]]) == pytest.approx(top)


def test_the_price_ceiling_is_where_two_lines_cross():
    """Two tries, one over the capacity and one under: the ceiling is where their lines cross."""
    assert series._ceiling([(0.0, 10, 5), (2.0, 12, -3)]) == pytest.approx(15)
    assert series._ceiling([(0.0, 10, -1)]) == 10
    assert series._ceiling([(0.0, 10, 2), (1.0, 11, 1)]) == float("inf")


@pytest.mark.parametrize("seed", range(40))
def test_bounds_between_prices_never_pass_the_value_and_meet_it_on_one_piece(seed):
    """``_between`` against a pair's exact re-priced value, the least of a few schedules' lines
    ``q * latency + p * weights``: from lower bounds at other prices it never passes the value at
    any price, and from the exact values at two prices where one schedule is optimal at both it
    is the value everywhere between them."""
    rng = random.Random(seed)
    q = rng.randint(1, 5)
    lines = [(rng.randint(10, 100), rng.randint(0, 50)) for _ in range(rng.randint(1, 5))]

    def value(p: int) -> int:
        return min(q * latency + p * weights for latency, weights in lines)

    known = sorted(rng.sample(range(0, 60), rng.randint(1, 4)))
    points = [(p, value(p) - rng.choice((0, 0, rng.randint(1, 20)))) for p in known]
    for p in range(0, 70):
        assert series._between(points, p) <= value(p), (lines, points, p)
    a, b = sorted(rng.sample(range(0, 60), 2))
    best = min(lines, key=lambda line: q * line[0] + a * line[1])
    if value(b) == q * best[0] + b * best[1]:  # one schedule is optimal at both a and b
        for p in range(a, b + 1):
            assert series._between([(a, value(a)), (b, value(b))], p) == value(p)


def test_tries_from_earlier_prices_equal_tries_from_scratch():
    """Each price's re-priced series bound, solved with the earlier tries' schedules and their
    values interpolated as floors (a pair whose schedule meets its floor is not solved), equals
    the same price solved from scratch, on chains of blocks whose small devices hold too many
    weights; some pairs are settled by the floors alone."""
    at_floor = 0
    for seed in range(12):
        instance = blocks(300 + seed, n_blocks=5, memory=rng_capacity(seed))
        usable, engine = usable_devices(instance), engines.get("cpsat")
        plain = series.solve(instance, "latency", usable, OPTIONS, engine, least=1)
        over = sorted(d.id for d in instance.devices if plain.weights is not None and plain.weights[d.id] > d.memory)
        if not over:
            continue
        capacity = sum(instance.device(d).memory for d in over)
        bound, record, _, duals = series._lagrangian(instance, usable, OPTIONS, engine, plain, over, capacity,
                                                     None, None, 1)
        for p, value in duals:
            fresh = series.solve(series._repriced(instance, over, p), "energy", usable, OPTIONS, engine, {},
                                 least=1, repair=False)
            assert fresh.info["all_proven"] and value == fresh.bound, (seed, p, value, fresh.bound)
        at_floor += sum(t.get("at_floor", 0) for t in record["tries"])
    assert at_floor > 0


def test_hints_of_other_segments_are_passed_over():
    """Schedules found under another cut (fewer segments, or segments of other tasks) are no
    hints: the series with them gives the bound it gives without them."""
    instance = blocks(305, n_blocks=5)
    usable, engine = usable_devices(instance), engines.get("cpsat")
    coarse = series.solve(instance, "latency", usable, OPTIONS, engine, least=3, repair=False)
    assert len(cuts.segments(instance, 3)) != len(cuts.segments(instance, 1))
    fine = series.solve(instance, "latency", usable, OPTIONS, engine, least=1, repair=False)
    assert fine.info["all_proven"]
    shifted = fine.found[1:] + fine.found[:1]  # as many segments, each another's tasks
    for hints in ([coarse.found], [shifted]):
        hinted = series.solve(instance, "latency", usable, OPTIONS, engine, least=1, repair=False, hints=hints)
        assert hinted.bound == fine.bound and "at_floor" not in hinted.info


@pytest.mark.parametrize("seed", [9, 10] + [pytest.param(s, marks=pytest.mark.slow)
                                            for s in (0, 1, 2, 3, 4, 5, 6, 7, 8, 11)])
def test_a_capped_latency_step_carries_the_priced_bound(seed, monkeypatch):
    """A latency solve under a memory limit on a graph with cut tasks (the threshold patched to 0):
    the series and priced bound under the limit (decompose._capped_priced) never exceeds the
    optimum within the limit, the answer is valid and within it, and its bound is at most the
    optimum; the lexicographic answer equals the whole model's."""
    monkeypatch.setattr("cpsched.decompose.SERIES_TASKS", 0)
    monkeypatch.setattr("cpsched.decompose._PRICED", {})
    monkeypatch.setattr("cpsched.decompose._MISSED", {})
    monkeypatch.setattr("cpsched.decompose._BEATEN", set())
    cap = (45, 55, 65)[seed % 3]
    instance = blocks(500 + 2 * seed, n_blocks=10)
    limits = {"memory": cap}
    usable = usable_devices(instance)
    relaxed = relaxation_bounds(instance, usable)["latency"]
    found, bound, info = _capped_priced(instance, usable, OPTIONS, engines.get("cpsat"), limits, relaxed, None)
    best = optimum(instance, "latency", limits)
    if best is Status.INFEASIBLE:
        assert not found
        return
    assert bound is None or bound <= best, (seed, bound, best, info)
    for schedule in found.values():
        assert validate(instance, schedule, check_claims=False).valid and schedule.within(limits)
    objectives = ["latency", "memory"]
    result = decomposed(instance, objectives, OPTIONS, limits=limits)
    whole = lexico.solve(instance, objectives, OPTIONS, limits=limits)
    assert validate(instance, result).valid and result.within(limits)
    assert result.status is Status.OPTIMAL and whole.status is Status.OPTIMAL
    assert [result.objectives[n] for n in objectives] == [whole.objectives[n] for n in objectives]


def test_the_priced_bound_raises_capped_steps_above_the_relaxation(monkeypatch):
    """Blocks whose fast devices hold too many weights under the cap: the priced bound beats the
    relaxation and never passes the optimum within the cap; an instance where it beats none of
    the floors it is given is not priced again, or only under smaller caps once it has beaten them."""
    monkeypatch.setattr("cpsched.decompose._PRICED", {})
    monkeypatch.setattr("cpsched.decompose._MISSED", {})
    monkeypatch.setattr("cpsched.decompose._BEATEN", set())
    for seed, cap in ((600, 50), (604, 50), (606, 40)):
        instance = blocks(seed, n_blocks=10, memory=10**6)
        usable = usable_devices(instance)
        relaxed = relaxation_bounds(instance, usable)["latency"]
        _, bound, _ = _capped_priced(instance, usable, OPTIONS, engines.get("cpsat"), {"memory": cap}, relaxed, None)
        assert bound is not None and bound > relaxation_bounds(instance, usable)["latency"]
        assert bound <= optimum(instance, "latency", {"memory": cap})
    monkeypatch.setattr("cpsched.decompose.SERIES_TASKS", 0)  # a step's solve records it among its bounds
    # (when its search runs: here the placement relaxation would settle the step before it)
    monkeypatch.setattr("cpsched.decompose._capped_proven", lambda *args: None)
    result = decomposed(instance, ["latency", "memory"], OPTIONS, limits={"memory": cap})
    recorded, placed = result.solver["decompose"]["bounds"], residency.placed(instance, cap).bound
    # a price counts only above the step's floor, which the placement relaxation raises to its bound
    assert recorded["priced"] == (bound if bound > placed else None) and recorded["search"] >= placed
    assert validate(instance, result).valid
    decompose._BEATEN.clear()
    instance = blocks(600, n_blocks=10, memory=10**6)

    def price(cap: int, floor: int = 0) -> tuple:
        usable = usable_devices(instance)
        return _capped_priced(instance, usable, OPTIONS, engines.get("cpsat"), {"memory": cap},
                              max(floor, relaxation_bounds(instance, usable)["latency"]), None)

    assert price(60, 10**9)[1] is None and decompose._MISSED[instance.content_hash, "memory"] == [60]
    assert "skipped" in price(50)[2]  # a miss before any gain: not priced again
    decompose._MISSED.clear()
    assert price(50)[1] is not None  # a gain, then a miss under 60: only caps of 60 or more are skipped
    assert price(60, 10**9)[1] is None
    assert "skipped" in price(70)[2] and "skipped" not in price(40)[2]


@pytest.mark.parametrize("seed", [0, 3])
def test_windows_after_the_priced_bound_without_limits(seed, monkeypatch):
    """A latency solve through the windows whose series was priced (no memory limit, so no capped
    price): valid, and its bound, the priced one among them, is at most the whole model's optimum."""
    monkeypatch.setattr("cpsched.decompose.SERIES_TASKS", 0)
    instance = blocks(300 + seed, n_blocks=5, memory=rng_capacity(seed))
    result = decomposed(instance, ["latency"], OPTIONS, decompose=4)
    assert "priced" in result.solver["decompose"] and "windows" in result.solver["decompose"]
    assert validate(instance, result).valid
    assert result.bounds.get("latency", result.objectives["latency"]) <= optimum(instance, "latency")
