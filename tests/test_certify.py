"""Certified fronts: the lower set, the gap, every direction, resume, verification and parallel sweeps.

The lower set is checked against exact fronts (tests/oracle_front.py): it never
excludes a feasible point, it equals the front exactly when the sweep is
complete, and the gap is 0 exactly then.
"""

import itertools
import random

import pytest

import cpsched
from cpsched import certify, pareto
from cpsched.certify import LowerSet, gap
from cpsched.errors import InputError
from cpsched.generate import random_instance
from cpsched.schedule import Point, Status
from oracle_front import brute_front


def covered(lower, point) -> bool:
    return any(all(a <= b for a, b in zip(lo, point)) for lo in lower)


# ----- the lower set on its own --------------------------------------------------------------

def test_the_lower_set_is_the_minimal_points_of_what_no_statement_excludes():
    """Against a direct enumeration of a small grid, for random statements in 2 and 3 dimensions."""
    rng = random.Random(5)
    for dims in (2, 3):
        for _ in range(40):
            lower = LowerSet((0,) * dims)
            statements = []
            for _ in range(rng.randint(1, 6)):
                given = {i: rng.randint(0, 6) for i in rng.sample(range(dims), rng.randint(0, dims - 1))}
                objective = rng.choice([None, *range(dims)])
                at_least = None if objective is None else rng.randint(0, 7)
                lower.forbid(given, objective, at_least)
                statements.append((given, objective, at_least))

            def allowed(y):
                for given, o, b in statements:
                    if all(y[i] <= c for i, c in given.items()) and (o is None or y[o] < b):
                        return False
                return True

            grid = [y for y in itertools.product(range(9), repeat=dims) if allowed(y)]
            minimal = sorted(y for y in grid if not any(z != y and all(a <= b for a, b in zip(z, y)) for z in grid))
            assert [p for p in lower.points if all(v < 9 for v in p)] == minimal


def test_the_gap_is_zero_exactly_when_the_sets_agree():
    assert gap([(1, 5), (3, 2)], [(1, 5), (3, 2)]) == 0.0
    assert 0 < gap([(1, 5), (2, 2)], [(1, 5), (3, 2)]) < 1
    assert 0 < gap([(1, 5), (3, 2), (9, 0)], [(1, 5), (3, 2)]) < 1  # a lower point beyond the points' nadir
    assert gap([(0, 0)], []) is None


# ----- fronts --------------------------------------------------------------------------------

ENERGY_CASES = [(40 + s, 4 + s % 3, 2 + s % 2) for s in range(16)]
MEMORY_CASES = [(80 + s, 3, 2, m) for s in range(7) for m in (10**9, 18)]


@pytest.mark.parametrize("seed, n, d", ENERGY_CASES)
def test_every_direction_gives_the_brute_force_latency_energy_front(seed, n, d):
    inst = random_instance(seed, n, d, channels=(0, 1))
    fronts = [cpsched.front(inst, ("latency", "energy"), epsilon=e) for e in ("latency", "energy", "auto")]
    exact = sorted(pt for pt, _ in brute_front(inst, ("latency", "energy")))
    for f in fronts:
        assert f.complete and f.gap == 0 and [p.values for p in f.points] == exact
        assert sorted(f.lower) == exact and all(p.status.value == "optimal" for p in f.points)


@pytest.mark.parametrize("seed, n, d, memory", MEMORY_CASES)
def test_every_direction_gives_the_brute_force_latency_memory_front(seed, n, d, memory):
    """Untimed (the exact walk) and timed (both ends first, then bisected strips) alike."""
    inst = random_instance(seed, n, d, channels=(1,), memory=memory)
    fronts = [cpsched.front(inst, ("latency", "memory"), epsilon=e, time_limit=t)
              for e in ("latency", "memory", "auto") for t in (None, 600)]
    exact = sorted(pt for pt, _ in brute_front(inst, ("latency", "memory")) if pt[1] <= memory)
    for f in fronts:
        assert f.complete and [p.values for p in f.points] == exact and sorted(f.lower) == exact


@pytest.mark.parametrize("seed", range(6))
def test_a_timed_sweep_bisects_yet_gives_the_exact_front(seed):
    inst = random_instance(120 + seed, 7, 3, channels=(1,))
    for names in (("latency", "memory"), ("latency", "energy"), ("latency", "energy", "memory")):
        walked = cpsched.front(inst, names)
        timed = cpsched.front(inst, names, time_limit=600)
        assert walked.complete and timed.complete and timed.gap == 0
        assert [p.values for p in timed.points] == [p.values for p in walked.points]
        assert sorted(timed.lower) == [p.values for p in timed.points]


def test_an_unproven_end_calls_for_the_unbounded_step_then_the_strip_below_the_nearest_point():
    points = {v: Point(v, Status.FEASIBLE, None, {}) for v in ((10, 50), (20, 30))}
    lower = [(5, 20)]  # below both points in the first objective: the front's first end is not proven
    assert [s[0] for s in pareto._steps(points, lower, lower, None, set(), set())] == [None, 49]
    # a timed sweep bisects that strip once it is known to be dense
    assert [s[0] for s in pareto._steps(points, lower, lower, None, {49}, set())] == [None, 34]
    # a lower point above the nearest point in the stepped objective has only the unbounded step
    assert [s[0] for s in pareto._steps(points, [(5, 60)], [(5, 60)], None, set(), set())] == [None]


def test_the_strip_with_the_largest_gap_comes_first_and_a_dense_one_is_bisected_by_its_gap():
    """A narrow strip just above a costly end (what fused shufflenet's memory end left) holds more
    of the gap than a wide strip below a near point: it is stepped first, and bisected once
    dense although it is narrower than SPLIT_SHARE of the range."""
    points = {v: Point(v, Status.FEASIBLE, None, {}) for v in ((1000, 10), (20, 14), (10, 100))}
    lower = [(20, 10), (10, 14)]  # strips [10, 13] (gap 980 x 4) and [14, 99] (gap 10 x 86)
    assert pareto._area(points, lower[0], 13, 1001) == 980 * 4 and pareto._area(points, lower[1], 99, 1001) == 860
    assert [s[0] for s in pareto._steps(points, lower, lower, None, set(), set())] == [13, 99]
    assert 3 < pareto.SPLIT_SHARE * 90
    assert [s[0] for s in pareto._steps(points, lower, lower, None, {13}, set())] == [11, 99]
    assert [s[0] for s in pareto._steps(points, lower, lower, None, {13}, {9})] == [13, 99]  # barren below


def test_a_dense_strip_is_halved_by_its_gap_in_the_part_its_tried_bounds_leave_with_the_most():
    """A steep memory end (what unfused inception_v1's decomposed steps met): the gap lies low in
    the strip, so its halving point is low; bounds tried in the strip part it, and the next step
    halves the part with the most gap left, never a tried bound again."""
    points = {v: Point(v, Status.FEASIBLE, None, {}) for v in ((1000, 10), (100, 20), (10, 100))}
    lower = [(10, 10)]  # one strip [10, 99]: gap 990 x 10 below 20, 90 x 80 above
    assert pareto._area(points, lower[0], 99, 1001) == 9900 + 7200
    steps = [pareto._steps(points, lower, lower, None, {99}, set(), tried)[0][0]
             for tried in ((), {18}, {18, 14}, {18, 14, 54})]
    assert steps == [18, 14, 54, 12]  # [10, 18] holds 8910 of 17100, [19, 99] 8190; then [10, 14] 4950
    assert [s[0] for s in pareto._steps(points, lower, lower, None, set(), set(), {18})] == [99]  # not dense


@pytest.mark.parametrize("seed", range(8))
def test_an_unproven_front_has_a_lower_set_that_covers_the_exact_front(seed):
    inst = random_instance(60 + seed, 5, 2, channels=(1,))
    exact = [pt for pt, _ in brute_front(inst, ("latency", "energy"))]
    f = cpsched.front(inst, ("latency", "energy"), epsilon="latency", point_limit=0.002, hint=None)
    assert all(covered(f.lower, pt) for pt in exact)
    assert all(covered(f.lower, p.values) for p in f.points)
    assert (f.gap == 0) == f.complete == (sorted(f.lower) == [p.values for p in f.points])
    if not f.complete:
        assert 0 < f.gap < 1 if f.points else f.gap is None
        resumed = cpsched.front(inst, ("latency", "energy"), epsilon="latency", resume=f)
        assert resumed.complete and [p.values for p in resumed.points] == sorted(exact)


def test_three_objective_fronts_are_certified_in_every_direction():
    inst = random_instance(7, 6, 3, channels=(1,))
    names = ("latency", "energy", "memory")
    fronts = [cpsched.front(inst, names, epsilon=e) for e in ("auto", "latency", "energy", "memory")]
    fronts.append(cpsched.front(inst, names, time_limit=600))
    for f in fronts:
        assert f.complete and f.gap == 0 and sorted(f.lower) == [p.values for p in f.points]
        assert [p.values for p in f.points] == [p.values for p in fronts[0].points]
    assert fronts[0].meta["solves"] <= 2.2 * len(fronts[0].points)


def test_verify_proves_a_complete_front_again():
    inst = random_instance(9, 6, 2, channels=(1,))
    f = cpsched.front(inst, ("latency", "memory"), verify=True)
    assert f.complete and f.meta["verify"]["certified"] and f.meta["verify"]["solves"] >= len(f.points) - 1


def test_resume_refuses_another_instances_front_and_validates_points():
    f = cpsched.front(random_instance(9, 5, 2), ("latency", "energy"))
    other = random_instance(10, 5, 2)
    with pytest.raises(InputError, match="instance_hash differs"):
        cpsched.front(other, ("latency", "energy"), resume=f)


def test_a_parallel_sweep_equals_the_sequential_one():
    inst = random_instance(7, 6, 3, channels=(1,))
    for names in (("latency", "memory"), ("latency", "energy", "memory")):
        one = cpsched.front(inst, names)
        two = cpsched.front(inst, names, jobs=2)
        assert two.complete and [p.values for p in two.points] == [p.values for p in one.points]


def test_a_sweep_on_a_dask_cluster_equals_the_sequential_one():
    from distributed import Client, LocalCluster

    inst = random_instance(11, 7, 2, channels=(1,))
    one = cpsched.front(inst, ("latency", "energy"))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        two = cpsched.front(inst, ("latency", "energy"), dask=client)
    assert two.complete and [p.values for p in two.points] == [p.values for p in one.points]


def test_auto_picks_the_memory_capacity_as_the_stepped_or_outer_objective():
    assert pareto.auto_epsilon(("latency", "memory")) == "memory"
    assert pareto.auto_epsilon(("energy", "latency")) == "energy"
    f = cpsched.front(random_instance(3, 5, 2), ("latency", "energy", "memory"))
    assert f.meta["epsilon"] == "latency"


@pytest.mark.parametrize("seed", range(20))
def test_the_minimal_points_of_pairs_follow_the_definition(seed):
    rng = random.Random(seed)
    points = [(rng.randint(0, 9), rng.randint(0, 9)) for _ in range(rng.randint(0, 30))]
    expected = sorted({p for p in points if not any(q != p and q[0] <= p[0] and q[1] <= p[1] for q in points)})
    assert certify._minimal(points) == expected
