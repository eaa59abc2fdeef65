"""`cpsched heuristic` and `cpsched compare` from the command line."""

import json

import pytest
from typer.testing import CliRunner

from cpsched.cli import app
from cpsched.generate import random_instance
from cpsched.instance import save_instance
from cpsched.schedule import load_front, load_schedule
from cpsched.validator import validate

runner = CliRunner()


@pytest.fixture
def inst(tmp_path, monkeypatch):
    monkeypatch.setenv("CPSCHED_CACHE_DIR", str(tmp_path / "cache"))
    instance = random_instance(21, 7, 3, channels=(1,))
    path = tmp_path / "inst.json"
    save_instance(instance, path)
    return instance, path


@pytest.mark.parametrize("name", ["host", "fastest", "heft"])
def test_single_schedule_heuristics(inst, tmp_path, name):
    instance, path = inst
    out = tmp_path / f"{name}.json"
    result = runner.invoke(app, ["heuristic", name, str(path), "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    schedule = load_schedule(out)
    assert schedule.status.value == "feasible" and validate(instance, schedule).valid
    if name == "host":
        assert {p.device for p in schedule.tasks.values()} == {instance.host.id}


def test_nsga2_front_is_reproducible_and_compared_with_the_exact_front(inst, tmp_path):
    _, path = inst
    args = ["heuristic", "nsga2", str(path), "--population", "12", "--generations", "6", "--seed", "3"]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert runner.invoke(app, [*args, "-o", str(a)]).exit_code == 0
    assert runner.invoke(app, [*args, "-o", str(b)]).exit_code == 0
    fa, fb = load_front(a), load_front(b)
    assert not fa.complete and [p.values for p in fa.points] == [p.values for p in fb.points]
    exact = tmp_path / "exact.json"
    assert runner.invoke(app, ["solve", str(path), "--epsilon", "latency", "-o", str(exact)]).exit_code == 0
    same = runner.invoke(app, ["compare", str(exact), str(exact)])
    data = json.loads(same.stdout)
    assert data["hypervolume_ratio"] == pytest.approx(1.0) and data["igd_plus"] == pytest.approx(0.0)
    out = tmp_path / "cmp.json"
    result = runner.invoke(app, ["compare", str(exact), str(a), "--ref", "1.2", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["ref"] == [1.2, 1.2] and data["hypervolume_ratio"] <= 1.0 + 1e-9
    energy = tmp_path / "energy.json"
    runner.invoke(app, ["heuristic", "nsga2", str(path), "--objectives", "latency,energy", "--population", "8",
                        "--generations", "2", "-o", str(energy)])
    assert runner.invoke(app, ["compare", str(exact), str(energy)]).exit_code == 2
