"""Memory plans: the packer against brute force, CSV I/O, the after and joint modes, and
one test per memory-plan violation kind of the validator."""

import dataclasses
import random
from pathlib import Path

import pytest
from oracle import random_instance
from test_validate import good, instance

from cpsched import pareto
from cpsched.engines import Options
from cpsched.lexico import solve
from cpsched.errors import InputError
from cpsched.instance import Instance
from cpsched.memplan import (Block, check_packing, cpsat_pack, greedy_by_size, live_peak, pack, plan_schedule,
                             read_csv, write_csv)
from cpsched.schedule import PlanEntry, Schedule, Status
from cpsched.validator import validate

DATA = Path(__file__).resolve().parents[1] / "instances" / "data" / "minimalloc"


# ----- brute force ---------------------------------------------------------------------------

def fits(blocks, capacity) -> bool:
    """Exhaustive over offsets 0..capacity - size of each block, in index order (no canonical form)."""
    offsets = []

    def place(k):
        if k == len(blocks):
            return True
        b = blocks[k]
        for o in range(capacity - b.size + 1):
            if all(not (a.lower < b.upper and b.lower < a.upper and p < o + b.size and o < p + a.size)
                   for a, p in zip(blocks, offsets)):
                offsets.append(o)
                if place(k + 1):
                    return True
                offsets.pop()
        return False

    return place(0)


def brute_min_arena(blocks) -> int:
    arena = max(b.size for b in blocks)
    while not fits(blocks, arena):
        arena += 1
    return arena


def random_blocks(rng, n):
    out = []
    for i in range(n):
        lo = rng.randrange(0, 6)
        out.append(Block(f"b{i}", lo, lo + rng.randrange(1, 5), rng.randrange(1, 6)))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_minimal_arena_equals_brute_force(seed):
    rng = random.Random(seed)
    blocks = random_blocks(rng, 3 + seed % 3)
    best = brute_min_arena(blocks)
    result = pack(blocks, 100, minimise=True)
    assert result.status is Status.OPTIMAL
    check_packing(blocks, result.offsets, 100)
    assert result.arena == best == result.bound
    assert result.arena >= live_peak(blocks)
    below = pack(blocks, best - 1)
    assert below.status is Status.INFEASIBLE and not below.offsets
    at = pack(blocks, best)
    assert at.status is Status.FEASIBLE
    check_packing(blocks, at.offsets, best)


@pytest.mark.parametrize("seed", range(6))
def test_minimising_under_a_time_limit_brackets_the_minimal_arena(seed):
    # a limit too short to finish: the arena found and the bound still bracket the exact minimum
    rng = random.Random(seed)
    blocks = [Block(f"b{i}", lo, lo + rng.randrange(1, 12), rng.randrange(1, 40))
              for i, lo in enumerate(rng.randrange(0, 30) for _ in range(30))]
    exact = pack(blocks, 10 ** 6, minimise=True)
    assert exact.status is Status.OPTIMAL and exact.arena == exact.bound
    for limit in (0.001, 0.05):
        result = pack(blocks, 10 ** 6, time_limit=limit, minimise=True)
        assert result.status.has_schedule
        check_packing(blocks, result.offsets)
        assert live_peak(blocks) <= result.bound <= exact.arena <= result.arena
        assert (result.status is Status.OPTIMAL) == (result.arena == result.bound)


def test_nested_lifetimes_pack_at_the_peak():
    # a laminar family (every two lifetimes nested or disjoint): stack allocation reaches the peak
    rng = random.Random(3)
    blocks = []

    def grow(lo, hi, depth):
        blocks.append(Block(f"n{len(blocks)}", lo, hi, rng.randrange(1, 50)))
        if depth < 4 and hi - lo >= 4:
            mid = rng.randrange(lo + 2, hi - 1)
            grow(lo + 1, mid, depth + 1)
            grow(mid, hi - 1, depth + 1)

    grow(0, 200, 0)
    result = pack(blocks, 10 ** 6, minimise=True)
    assert result.status is Status.OPTIMAL
    assert result.arena == live_peak(blocks)
    check_packing(blocks, result.offsets)


def test_greedy_by_size_is_a_valid_packing():
    rng = random.Random(11)
    blocks = random_blocks(rng, 40)
    offsets = greedy_by_size(blocks)
    check_packing(blocks, offsets)


def test_capacity_below_the_peak_is_infeasible_at_once():
    blocks = [Block("a", 0, 10, 6), Block("b", 5, 15, 6)]
    result = pack(blocks, 11, time_limit=0.001)
    assert result.status is Status.INFEASIBLE and result.bound == 12


def test_zero_size_and_whole_span_blocks():
    blocks = [Block("w", 0, 10, 4), Block("z", 3, 5, 0), Block("a", 0, 5, 3), Block("b", 5, 10, 3)]
    result = pack(blocks, 7, minimise=True)
    assert result.status is Status.OPTIMAL and result.arena == 7
    check_packing(blocks, result.offsets, 7)


# ----- MiniMalloc CSV ------------------------------------------------------------------------

def test_input12_packs_in_12_and_not_in_11():
    blocks = read_csv(DATA / "input.12.csv")
    assert len(blocks) == 5
    result = pack(blocks, 12)
    assert result.status.has_schedule and result.arena <= 12
    check_packing(blocks, result.offsets, 12)
    assert pack(blocks, 11).status is Status.INFEASIBLE
    assert pack(blocks, 100, minimise=True).arena == 12
    plain = cpsat_pack(blocks, 12, time_limit=10)
    assert plain.status is Status.FEASIBLE
    check_packing(blocks, plain.offsets, 12)
    assert cpsat_pack(blocks, 11, time_limit=10).status is Status.INFEASIBLE


@pytest.mark.parametrize("name", ["E", "F", "I"])
def test_challenging_files_with_zero_slack(name):
    # E and I: found once each part of the search is ordered by its own unplaced section totals
    blocks = read_csv(DATA / f"{name}.1048576.csv")
    result = pack(blocks, 1048576, time_limit=30)
    assert result.status is Status.FEASIBLE and result.info["method"] == "search"
    check_packing(blocks, result.offsets, 1048576)
    assert live_peak(blocks) == 1048576 == result.arena


def guillotine(rng, pieces: int, span: int = 40, height: int = 64) -> list[Block]:
    """The blocks of a span x height rectangle cut guillotine-wise into ``pieces``: a perfect
    packing exists, at an arena equal to the live peak."""
    rects = [(0, span, 0, height)]
    while len(rects) < pieces:
        k = max(range(len(rects)), key=lambda j: (rects[j][1] - rects[j][0]) * (rects[j][3] - rects[j][2])
                * rng.random())
        t0, t1, a0, a1 = rects[k]
        if rng.random() < 0.5 and t1 - t0 > 1:
            m = rng.randrange(t0 + 1, t1)
            rects[k:k + 1] = [(t0, m, a0, a1), (m, t1, a0, a1)]
        elif a1 - a0 > 1:
            m = rng.randrange(a0 + 1, a1)
            rects[k:k + 1] = [(t0, t1, a0, m), (t0, t1, m, a1)]
    rng.shuffle(rects)
    return [Block(f"g{i}", t0, t1, a1 - a0) for i, (t0, t1, a0, a1) in enumerate(rects)]


@pytest.mark.parametrize("seed", range(30))
def test_perfect_packings_are_found(seed):
    # zero slack, and most of these split into parts as blocks are placed
    blocks = guillotine(random.Random(seed), 40)
    assert live_peak(blocks) == 64
    result = pack(blocks, 64, time_limit=30)
    assert result.status is Status.FEASIBLE
    check_packing(blocks, result.offsets, 64)


def test_csv_round_trip(tmp_path):
    blocks = [Block("x", 0, 3, 4), Block("y", 2, 5, 4)]
    result = pack(blocks, 8)
    out = tmp_path / "out.csv"
    write_csv(out, blocks, result.offsets)
    text = out.read_text().splitlines()
    assert text[0] == "id,lower,upper,size,offset"
    again = read_csv(out)  # the offset column is ignored on reading
    assert again == blocks


@pytest.mark.parametrize("body,words", [
    ("id,lower,upper,size\na,0,3,x\n", "row 2: size must be an integer"),
    ("id,lower,upper,size\na,0,3,4\nb,0,3,-1\n", "row 3: size must be >= 0"),
    ("id,lower,upper,size\na,3,3,4\n", "row 2: lower 3 must be < upper 3"),
    ("id,lower,size\na,0,4\n", "row 1: the header lacks upper"),
    ("id,lower,upper,size\na,0,3,4\na,1,2,1\n", "row 3: duplicate id"),
    ("id,lower,upper,size\na,0,3\n", "row 2: expected 4 fields"),
    ("", "empty file"),
])
def test_malformed_csv(tmp_path, body, words):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    with pytest.raises(InputError) as exc:
        read_csv(path)
    assert str(path) in str(exc.value) and words in str(exc.value)
    assert "\n" not in str(exc.value)


# ----- plans of schedules: the after mode ---------------------------------------------------

def check(inst, schedule):
    report = validate(inst, schedule)
    assert report.valid, report.violations
    assert dict(schedule.objectives) == report.objectives
    return report


def test_after_mode_on_the_validator_example():
    s = plan_schedule(instance(), good())  # good() claims no objectives: the plan adds arena alone
    report = validate(instance(), s)
    assert report.valid, report.violations
    assert set(s.memory_plan) == {"cpu", "gpu"}
    # gpu: the peak 29 is reachable; cpu 4 (x alone, then w's copy and wc)
    assert s.arena == {"cpu": 4, "gpu": 29} == report.arenas
    assert s.objectives["arena"] == 29 and s.solver["memory_plan"]["mode"] == "after"
    again = Schedule.from_dict(s.to_dict())
    assert again.memory_plan == s.memory_plan and again.arena == s.arena
    assert validate(instance(), again).valid


def chain(n: int, sizes: list[int]) -> Instance:
    """n tasks in a chain on one device (the host), tensor k of sizes[k] between task k and k + 1."""
    tasks = [{"id": f"t{k}", "op": "Op", "weights": 3, "modes": {"cpu": {"duration": 1 + k % 3, "energy": 1}}}
             for k in range(n)]
    tensors = [{"id": "in", "size": sizes[0], "producer": None, "consumers": ["t0"]}]
    tensors += [{"id": f"o{k}", "size": sizes[k + 1], "producer": f"t{k}",
                 "consumers": [f"t{k + 1}"] if k + 1 < n else [], "output": k + 1 == n} for k in range(n)]
    return Instance.from_dict({"format": "cpsched-instance/1", "name": "chain",
                               "devices": [{"id": "cpu", "memory": 10 ** 6, "static_power": 0, "host": True}],
                               "links": [], "tasks": tasks, "tensors": tensors})


def test_after_mode_reaches_the_peak_on_a_chain():
    rng = random.Random(5)
    inst = chain(12, [rng.randrange(1, 100) for _ in range(13)])
    s = solve(inst, ["latency"], Options(time_limit=20, memory_plan="after"))
    report = check(inst, s)
    assert s.arena["cpu"] == report.peaks["cpu"] == s.objectives["memory"]


@pytest.mark.parametrize("seed", range(6))
def test_after_mode_on_random_instances(seed):
    inst = random_instance(200 + seed, 6, 2 + seed % 2, channels=(0, 1))
    s = solve(inst, ["latency"], Options(time_limit=20))
    planned = plan_schedule(inst, s, time_limit=10)
    report = check(inst, planned)
    for dev, arena in planned.arena.items():
        assert arena >= report.peaks[dev]
        assert planned.solver["memory_plan"]["status"].get(dev, "optimal") == "optimal"


# ----- the joint mode --------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_joint_arena_is_no_worse_than_packing_afterwards(seed):
    inst = random_instance(300 + seed, 6, 2, channels=(1,))
    fastest = solve(inst, ["latency"], Options(time_limit=20))
    after = plan_schedule(inst, fastest)
    check(inst, after)
    joint = solve(inst, ["arena"], Options(time_limit=30, memory_plan="joint"))
    assert joint.status is Status.OPTIMAL
    check(inst, joint)
    assert joint.objectives["arena"] <= after.objectives["arena"]
    assert joint.objectives["arena"] >= joint.objectives["memory"]
    # and at the optimal latency, arena minimised second: no worse than packing the fastest schedule
    lex = solve(inst, ["latency", "arena"], Options(time_limit=30, memory_plan="joint"))
    assert lex.status is Status.OPTIMAL
    check(inst, lex)
    assert lex.objectives["latency"] == fastest.objectives["latency"]
    assert joint.objectives["arena"] <= lex.objectives["arena"] <= after.objectives["arena"]


def test_arena_needs_the_joint_mode():
    inst = random_instance(1, 4, 2)
    with pytest.raises(ValueError, match="joint"):
        solve(inst, ["arena"], Options())
    with pytest.raises(ValueError):
        pareto.sweep(inst, ("latency", "arena"))


def test_latency_arena_front_with_joint_plans():
    inst = random_instance(304, 6, 2, channels=(1,))
    front = pareto.sweep(inst, ("latency", "arena"), options=Options(memory_plan="joint"))
    assert front.complete and front.points and front.units["arena"] == inst.units.get("size", "")
    for p in front.points:
        check(inst, p.schedule)
        assert p.values == (p.schedule.objectives["latency"], p.schedule.objectives["arena"])


# ----- the validator's memory-plan rules -----------------------------------------------------

def planned():
    return plan_schedule(instance(), good())


def edit(s, device, fn):
    return dataclasses.replace(s, memory_plan={**s.memory_plan, device: tuple(fn(list(s.memory_plan[device])))})


def kinds(s, inst=None):
    return {v.kind for v in validate(inst or instance(), s).violations}


def test_missing_entry_is_a_memory_plan_violation():
    s = edit(planned(), "gpu", lambda es: [e for e in es if e.kind != "workspace"])
    assert "memory-plan" in kinds(s)


def test_unknown_entry_is_a_memory_plan_violation():
    s = edit(planned(), "cpu", lambda es: es + [PlanEntry("weights", "a", 0)])  # a runs on the gpu
    assert "memory-plan" in kinds(s)
    s = edit(planned(), "cpu", lambda es: es + [PlanEntry("tensor", "nope", 0)])
    assert "memory-plan" in kinds(s)


def test_overlap_in_time_and_address_is_a_memory_plan_violation():
    s = planned()
    gpu = {(e.kind, e.id): e.offset for e in s.memory_plan["gpu"]}
    # the workspace of a and tensor y are live together on the gpu during [3, 5)
    s = edit(s, "gpu", lambda es: [PlanEntry(e.kind, e.id, gpu["workspace", "a"]) if (e.kind, e.id) == ("tensor", "y")
                                   else e for e in es])
    found = [v for v in validate(instance(), s).violations if v.kind == "memory-plan"]
    assert found and "'a'" in found[0].message and "'y'" in found[0].message


def test_wrong_arena_claim():
    s = planned()
    assert "arena" in kinds(dataclasses.replace(s, arena={**s.arena, "gpu": 30}))
    assert "arena" in kinds(dataclasses.replace(s, arena={"cpu": s.arena["cpu"]}))


def test_arena_over_capacity():
    s = planned()
    assert kinds(s, instance(gpu_memory=29)) == set()
    moved = edit(s, "gpu", lambda es: [PlanEntry(e.kind, e.id, e.offset + 1) for e in es])
    moved = dataclasses.replace(moved, arena={**s.arena, "gpu": 30}, objectives={**s.objectives, "arena": 30})
    assert kinds(moved, instance(gpu_memory=30)) == set()
    assert kinds(moved, instance(gpu_memory=29)) == {"capacity"}


def test_wrong_arena_objective():
    s = planned()
    assert kinds(dataclasses.replace(s, objectives={**s.objectives, "arena": 28})) == {"objective"}
    bare = dataclasses.replace(good(), objectives={"arena": 3})
    assert "objective" in kinds(bare)
