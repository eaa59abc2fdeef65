"""`cpsched memplan` and `cpsched solve --memory-plan` from the command line."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cpsched.cli import app
from cpsched.generate import random_instance
from cpsched.instance import save_instance
from cpsched.schedule import load_front, load_schedule
from cpsched.validator import validate

runner = CliRunner()
DATA = Path(__file__).resolve().parents[1] / "instances" / "data" / "minimalloc"


def test_memplan_packs_input12_in_12_and_proves_11_infeasible(tmp_path):
    out = tmp_path / "packed.csv"
    result = runner.invoke(app, ["memplan", str(DATA / "input.12.csv"), "--capacity", "12", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    rows = out.read_text().splitlines()
    assert rows[0].split(",")[-1] == "offset" and len(rows) == 6
    none = tmp_path / "none.csv"
    result = runner.invoke(app, ["memplan", str(DATA / "input.12.csv"), "--capacity", "11", "-o", str(none)])
    assert result.exit_code == 0 and "infeasible (proven)" in result.stderr and not none.exists()
    result = runner.invoke(app, ["memplan", str(DATA / "input.12.csv"), "--capacity", "100", "--minimise"])
    assert result.exit_code == 0 and "arena 12 " in result.stderr and "minimal (proven)" in result.stderr


def test_memplan_bad_csv(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("id,lower,upper,size\nb0,5,3,4\n")
    result = runner.invoke(app, ["memplan", str(bad), "--capacity", "10"])
    assert result.exit_code == 2 and "bad.csv" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("mode", ["after", "joint"])
def test_solve_writes_a_valid_memory_plan(tmp_path, mode):
    inst = random_instance(31, 6, 3, channels=(1,))
    path = tmp_path / "inst.json"
    save_instance(inst, path)
    out = tmp_path / "s.json"
    objective = "latency,arena" if mode == "joint" else "latency"
    result = runner.invoke(app, ["solve", str(path), "--memory-plan", mode, "--objective", objective,
                                 "-o", str(out), "--no-cache"])
    assert result.exit_code == 0, result.stderr
    schedule = load_schedule(out)
    report = validate(inst, schedule)
    assert report.valid, report.violations
    data = json.loads(out.read_text())
    assert data["objectives"]["arena"] == max(data["arena"].values()) >= data["objectives"]["memory"]
    assert runner.invoke(app, ["validate", str(path), str(out)]).exit_code == 0


def test_arena_front_and_usage_errors(tmp_path):
    inst = random_instance(32, 5, 2, channels=(1,))
    path = tmp_path / "inst.json"
    save_instance(inst, path)
    out = tmp_path / "f.json"
    result = runner.invoke(app, ["solve", str(path), "--memory-plan", "joint", "--epsilon", "latency",
                                 "--objectives", "latency,arena", "-o", str(out), "--no-cache"])
    assert result.exit_code == 0, result.stderr
    front = load_front(out)
    assert front.complete and front.objectives == ("latency", "arena")
    for p in front.points:
        assert validate(inst, p.schedule).valid
    assert runner.invoke(app, ["solve", str(path), "--objective", "arena"]).exit_code == 2
    assert runner.invoke(app, ["solve", str(path), "--memory-plan", "after", "--engine", "milp"]).exit_code == 2
