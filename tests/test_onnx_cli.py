"""ONNX models end to end through the CLI: import, inspect, solve on the edge preset."""

import json
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper
from typer.testing import CliRunner

from cpsched.cli import app
from cpsched.instance import load_instance
from cpsched.platforms import load_platform
from cpsched.schedule import load_schedule
from cpsched.validator import validate

runner = CliRunner()
MODELS = Path(__file__).resolve().parents[1] / "models"


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def npu_excluded_model(path: Path, batch="1") -> Path:
    """Conv -> LRN -> Relu -> Flatten -> Gather (constant indices) -> Softmax, opset 17."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 3, 3, 3], [0.1] * 216)
    idx = helper.make_tensor("idx", TensorProto.INT64, [4], [0, 1, 2, 3])
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("LRN", ["c"], ["l"], name="lrn", size=3),
        helper.make_node("Relu", ["l"], ["r"], name="relu"),
        helper.make_node("Flatten", ["r"], ["f"], name="flatten"),
        helper.make_node("Gather", ["f", "idx"], ["g"], name="gather", axis=1),
        helper.make_node("Softmax", ["g"], ["y"], name="softmax", axis=1),
    ]
    dim = 1 if batch == "1" else batch
    graph = helper.make_graph(nodes, "excluded", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, idx])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_npu_exclusions_land_off_the_npu(tmp_path):
    excluded = {op for op in ("LRN", "Softmax", "Gather") if not load_platform("edge").device("npu").supports(op)}
    assert excluded == {"LRN", "Softmax", "Gather"}
    for model in (npu_excluded_model(tmp_path / "m.onnx"), "alexnet"):
        out = tmp_path / "s.json"
        code, _, stderr = run("solve", model, "--platform", "edge", "-o", out)
        assert code == 0, stderr
        schedule = load_schedule(out)
        instance = load_instance(run_import(model, tmp_path))
        assert validate(instance, schedule).valid
        ops = {t.id: t.op for t in instance.tasks}
        placed = {ops[t]: p.device for t, p in schedule.tasks.items() if ops[t] in excluded}
        assert placed and "npu" not in placed.values(), placed


def run_import(model, tmp_path) -> Path:
    out = tmp_path / "inst.json"
    code, _, stderr = run("import", model, "--platform", "edge", "-o", out)
    assert code == 0, stderr
    return out


def test_import_a_bundled_model(tmp_path):
    instance = load_instance(run_import("resnet50", tmp_path))
    assert len(instance.tasks) == 176 and instance.name == "resnet50@edge"
    assert instance.units["time"] == "us" and instance.meta["platform"] == "edge"


def test_inspect_reports_macs_and_support():
    code, stdout, _ = run("inspect", "alexnet", "--platform", "edge", "--json")
    report = json.loads(stdout)
    assert code == 0 and report["tasks"] == 24
    assert abs(report["macs"] / 0.65e9 - 1) < 0.03
    assert report["devices"]["cpu"] == 24 and report["devices"]["npu"] < 24
    code, stdout, _ = run("inspect", "vgg19")
    assert code == 0 and "GMACs" in stdout and "Conv 16" in stdout


def test_dims_on_the_command_line(tmp_path):
    model = npu_excluded_model(tmp_path / "dyn.onnx", batch="N")
    code, _, stderr = run("import", model, "--platform", "edge")
    assert code == 2 and "'x'" in stderr and "--dim" in stderr and len(stderr.strip().splitlines()) == 1
    out = tmp_path / "pinned.json"
    assert run("import", model, "--platform", "edge", "--dim", "N=2", "-o", out)[0] == 0
    assert load_instance(out).tensor("x").size == 2 * 3 * 16 * 16 * 4
    assert run("import", model, "--platform", "edge", "--dim", "N=two")[0] == 2


def test_model_usage_errors(tmp_path):
    code, _, stderr = run("solve", "alexnet")
    assert code == 2 and "--platform" in stderr
    assert run("solve", "alexnet", "--platform", "mars")[0] == 2
    assert run("solve", "nosuchmodel", "--platform", "edge")[0] == 2
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    code, _, stderr = run("solve", bad, "--platform", "edge")
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert run("solve", "instances/examples/tinycnn-edge.json", "--platform", "edge")[0] == 2


@pytest.mark.parametrize("name", ["bert_layer.onnx", "unet_small.onnx"])
def test_generated_models_schedule_on_edge(tmp_path, name):
    out = tmp_path / "h.json"
    code, _, stderr = run("heuristic", "heft", MODELS / name, "--platform", "edge", "-o", out)
    assert code == 0, stderr
    instance = load_instance(run_import(MODELS / name, tmp_path))
    assert validate(instance, load_schedule(out)).valid
