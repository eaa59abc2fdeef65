"""Large-neighbourhood search (cpsched.lns): never worse than its start, always valid, never
better than the proven optimum, and it does improve a poor start."""

from __future__ import annotations

import pytest

from cpsched import engines, lexico, lns
from cpsched.engines import Options
from cpsched.errors import NoSchedule
from cpsched.generate import random_instance
from cpsched.heuristics.baselines import host
from cpsched.heuristics.heft import heft_or_none
from cpsched.schedule import Status
from cpsched.validator import validate

OPTIONS = Options(workers=1)


@pytest.mark.parametrize("seed", range(20))
def test_lns_is_valid_and_never_worse_than_its_start(seed, monkeypatch):
    monkeypatch.setattr(lns, "WINDOW_TASKS", 3)
    monkeypatch.setattr(lns, "STEP_LIMIT", 1.0)
    instance = random_instance(seed, 9 + seed % 4, 3, memory=10**9 if seed % 2 else 40)
    try:
        start = heft_or_none(instance) if seed % 3 else host(instance)
    except NoSchedule:
        start = None
    if start is None or not validate(instance, start, check_claims=False).valid:
        start = lexico.solve(instance, ["latency"], Options(workers=1, time_limit=0.05))
        if not start.status.has_schedule:
            pytest.skip("no start schedule")
    objectives = ["latency"] if seed % 4 else ["energy", "latency"]
    result, info = lns.improve(instance, start, objectives, OPTIONS, engines.get("cpsat"))
    assert validate(instance, result, check_claims=False).valid
    before = [start.objectives[n] for n in objectives]
    after = [result.objectives[n] for n in objectives]
    assert after <= before and info["from"] == before and info["to"] == after
    best = lexico.solve(instance, objectives, OPTIONS)
    assert best.status is Status.OPTIMAL
    assert after >= [best.objectives[n] for n in objectives]


def test_lns_improves_the_host_only_schedule(monkeypatch):
    monkeypatch.setattr(lns, "WINDOW_TASKS", 4)
    instance = random_instance(5, 12, 3)
    start = host(instance)
    result, info = lns.improve(instance, start, ["latency"], OPTIONS, engines.get("cpsat"), budget=20)
    assert result.objectives["latency"] < start.objectives["latency"] and info["improved"] >= 1
