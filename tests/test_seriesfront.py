"""Latency/energy fronts joined from the segments' fronts (cpsched.seriesfront): exact where the
capacities hold, a lower set that never passes a feasible point where they bind, and the front
door's sweep that starts from it."""

from __future__ import annotations

import itertools
import math

import pytest
from typer.testing import CliRunner

import cpsched
from cpsched import api, pareto, seriesfront
from cpsched.bounds import usable_devices
from cpsched.certify import LowerSet
from cpsched.cuts import overlap, segments
from cpsched.cli import app
from cpsched.engines import Options
from cpsched.instance import save_instance
from cpsched.schedule import load_front
from cpsched.validator import validate
from oracle_front import brute_front_latency_energy
from test_series import blocks

OPTIONS = Options(workers=1)


def values(schedules) -> list[tuple[int, int]]:
    return sorted((s.objectives["latency"], s.objectives["energy"]) for s in schedules)


def whole(instance) -> list[tuple[int, int]]:
    """The exact front of the whole graph, every step solved on it."""
    found = pareto.sweep(instance, seriesfront.NAMES, "auto", OPTIONS)
    assert found.complete
    return sorted(p.values for p in found.points)


@pytest.mark.parametrize("seed", range(8))
def test_the_joined_front_is_the_exact_front_where_the_capacities_hold(seed):
    instance = blocks(seed, 2, memory=10**6)
    joined = seriesfront.front(instance, OPTIONS)
    exact = whole(instance)
    assert joined.complete
    assert values(joined.schedules) == list(joined.lower) == exact
    if len(instance.tasks) <= 6:
        assert brute_front_latency_energy(instance) == exact
    assert all(validate(instance, s).valid for s in joined.schedules)


@pytest.mark.parametrize("seed", range(9))
def test_where_the_capacities_bind_the_lower_set_never_passes_a_feasible_point(seed):
    instance = blocks(seed, 3, memory=(24, 20, 16)[seed % 3])
    joined = seriesfront.front(instance, OPTIONS, crowded=math.inf)
    exact = whole(instance)
    assert all(any(lo[0] <= v[0] and lo[1] <= v[1] for lo in joined.lower) for v in exact)
    assert all(validate(instance, s).valid for s in joined.schedules)
    # each glued or fitted point is feasible: none beats the exact front
    assert not any(v[0] <= e[0] and v[1] <= e[1] and v != e for v in values(joined.schedules) for e in exact)


def test_a_graph_whose_weights_crowd_a_device_gets_no_joined_front():
    instance = blocks(0, 3, memory=16)
    assert seriesfront._crowded(instance, usable_devices(instance)) > seriesfront.CROWDED
    assert seriesfront.front(instance, OPTIONS) is None


def test_the_statements_rebuild_the_lower_set():
    lower = ((10, 90), (12, 70), (15, 69), (30, 20))
    joined = seriesfront.Joined(lower, ())
    rebuilt = LowerSet((0, 0))
    pareto.apply(rebuilt, joined.proofs, {"latency": 0, "energy": 1})
    assert tuple(rebuilt.points) == lower
    nothing = LowerSet((0, 0))
    pareto.apply(nothing, seriesfront.Joined((), ()).proofs, {"latency": 0, "energy": 1})
    assert nothing.points == []


def test_the_join_is_every_sum_over_the_cut_devices_with_each_cut_counted_once():
    instance = blocks(3, 2, memory=10**6)
    parts = segments(instance, 1)
    assert len(parts) == 3
    usable = usable_devices(instance)
    given = []
    for k, (a, _, b) in enumerate(parts):
        pairs = itertools.product([None] if a is None else usable[a], [None] if b is None else usable[b])
        given.append({pair: [(3 * k + i + 1, 50 - 7 * i - k) for i in range(1 + (k + i) % 3)]
                      for i, pair in enumerate(pairs)})
    sums = []
    for choice in itertools.product(*(list(found.items()) for found in given)):
        if any(pair[1] != nxt[0] for (pair, _), (nxt, _) in zip(choice, choice[1:])):
            continue
        for picked in itertools.product(*(vectors for _, vectors in choice)):
            total = [sum(v[i] for v in picked) for i in range(2)]
            for (a, _, _), (pair, _) in zip(parts, choice):
                if a is not None:
                    total = [t - overlap(instance, n, a, pair[0]) for t, n in zip(total, seriesfront.NAMES)]
            sums.append(tuple(total))
    minimal = sorted({s for s in sums if not any(o[0] <= s[0] and o[1] <= s[1] and o != s for o in sums)})
    joined = seriesfront._join(instance, parts, given)
    assert [v for v, _ in joined] == minimal
    for v, picks in joined:  # the picks name vectors that add up to it
        total = [sum(given[k][da, db][j][i] for k, (da, db, j) in enumerate(picks)) for i in range(2)]
        for (a, _, _), (da, _, _) in zip(parts, picks):
            if a is not None:
                total = [t - overlap(instance, n, a, da) for t, n in zip(total, seriesfront.NAMES)]
        assert tuple(total) == v
        assert all(picks[k][1] == picks[k + 1][0] for k in range(len(picks) - 1))


def test_a_latency_energy_front_of_a_large_graph_starts_from_its_segments_and_is_complete():
    instance = blocks(0, 22, memory=10**6)
    assert len(instance.tasks) > api.SEED_TASKS
    lines = []
    found = cpsched.front(instance, ("latency", "energy"), time_limit=60, workers=1,
                          progress=lambda s: lines.append(s) if isinstance(s, str) else None)
    assert found.complete and found.gap == 0
    assert found.meta["joined"]["complete"] == found.meta["joined"]["pairs"]
    assert any(line.startswith("series front:") for line in lines)
    assert all(validate(instance, p.schedule).valid for p in found.points)
    assert sorted(p.values for p in found.points) == list(found.lower)
    assert found.meta["solves"] == 0  # no step of the whole graph was needed


def test_no_joined_front_where_its_glued_schedules_would_lack_what_the_request_asks():
    instance = blocks(0, 22, memory=10**6)
    names = ("latency", "energy")
    assert api._joined(instance, names, Options(memory_plan="after"), 60, "cpsat", "auto", None) is None
    assert api._joined(instance, names, OPTIONS, 60, "cpsat", "off", None) is None
    assert api._joined(instance, ("latency", "memory"), OPTIONS, 60, "cpsat", "auto", None) is None
    assert api._joined(blocks(0, 3, memory=10**6), names, OPTIONS, 60, "cpsat", "auto", None) is None  # small


def test_the_command_says_the_front_was_joined_from_segment_fronts(tmp_path):
    path = tmp_path / "blocks.json"
    save_instance(blocks(1, 22, memory=10**6), path)
    result = CliRunner().invoke(app, ["solve", str(path), "--objectives", "latency,energy", "--epsilon", "auto",
                                      "--time-limit", "60", "--workers", "1", "--no-cache",
                                      "-o", str(tmp_path / "f.json")])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "complete (proven), 0 solves of the whole graph after" in said and "segment fronts" in said
    assert load_front(tmp_path / "f.json").complete
