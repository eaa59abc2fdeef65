"""`cpsched profile`, `measure` and `inspect` with a measured cost table, from the command line."""

import json
from importlib.resources import files

import yaml
from typer.testing import CliRunner

from cpsched.cli import app

runner = CliRunner()


def test_profile_measure_and_inspect(tmp_path):
    costs = tmp_path / "costs.json"
    result = runner.invoke(app, ["profile", "squeezenet", "--device", "cpu", "--runs", "2", "--threads", "1",
                                 "-o", str(costs)])
    assert result.exit_code == 0, result.stderr
    table = json.loads(costs.read_text())
    assert table["format"] == "cpsched-costs/1" and table["device"] == "cpu"
    assert all(n["median"] > 0 for n in table["nodes"].values())

    out = tmp_path / "measure.json"
    result = runner.invoke(app, ["measure", "squeezenet", "--device", "cpu", "--costs", str(costs), "--runs", "3",
                                 "--threads", "1", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert 0 < data["p50_us"] <= data["p99_us"]
    assert set(data["predicted"]) == {"roofline", "calibrated"}
    assert "calibrated" in result.stderr and "%" in result.stderr

    platform = tmp_path / "mine.yaml"
    edge = yaml.safe_load(files("cpsched").joinpath("presets/edge.yaml").read_text())
    edge["name"] = "mine"
    edge["devices"][0]["costs"] = str(costs)
    platform.write_text(yaml.safe_dump(edge))
    result = runner.invoke(app, ["inspect", "squeezenet", "--platform", str(platform)])
    assert result.exit_code == 0, result.stderr
    assert "measured costs: cpu 66 of 66 tasks" in result.stdout

    assert runner.invoke(app, ["profile", "instances/examples/tinycnn-edge.json", "--device", "cpu"]).exit_code == 2
    assert runner.invoke(app, ["profile", "alexnet", "--device", "cpu", "--provider", "NoSuchProvider"]).exit_code == 2
