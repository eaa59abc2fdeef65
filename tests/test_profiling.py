"""Measured costs (cpsched.profiling): onnxruntime profiles, cost tables, calibrated instances, predictions."""

import json
import math
import shutil
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from cpsched import costs as costs_mod
from cpsched import profiling
from cpsched.errors import InputError
from cpsched.io.onnx import read_onnx
from cpsched.lowering import energy_pj, to_instance
from cpsched.platforms import PRESET_DIR, load_platform

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def alexnet_costs(tmp_path_factory):
    """alexnet profiled on this CPU (3 runs, 1 thread), and the file it was written to."""
    costs = profiling.profile("alexnet", "cpu", runs=3, threads=1)
    path = tmp_path_factory.mktemp("costs") / "alexnet-cpu.json"
    path.write_text(json.dumps(costs))
    return costs, path


@pytest.fixture(scope="module")
def graph():
    return read_onnx("alexnet")


def test_profile_times_every_task_of_the_instance(alexnet_costs, graph):
    costs, _ = alexnet_costs
    assert costs["format"] == "cpsched-costs/1" and costs["unit"] == "us"
    assert costs["device"] == "cpu" and costs["provider"] == "CPUExecutionProvider"
    assert costs["threads"] == 1 and costs["runs"] == 3 and costs["machine"]["cpu_count"] >= 1
    assert costs["onnxruntime"] and costs["date"]
    instance = to_instance(graph, load_platform("edge"))
    missing = {t.id for t in instance.tasks} - set(costs["nodes"])
    assert not missing
    for name, entry in costs["nodes"].items():
        assert entry["median"] > 0 and entry["p90"] >= entry["median"], name
        assert math.isfinite(entry["p90"]) and entry["op"]
    # The light model's weights are ConstantOfShape nodes: timed, marked folded, matching no task.
    folded = {n for n, e in costs["nodes"].items() if e.get("folded")}
    assert folded and all(costs["nodes"][n]["op"] == "ConstantOfShape" for n in folded)
    assert not folded & {t.id for t in instance.tasks}
    assert costs_mod.load_costs(alexnet_costs[1]).folded_us > 0


def test_calibrated_instance_differs_from_the_roofline_only_on_measured_tasks(alexnet_costs, graph):
    costs, path = alexnet_costs
    edge = load_platform("edge")
    roofline = to_instance(graph, edge)
    table = costs_mod.load_costs(path)
    calibrated = to_instance(graph, edge, costs={"cpu": table})
    assert [t.id for t in roofline.tasks] == [t.id for t in calibrated.tasks]
    measured = {t.id for t in calibrated.tasks if t.id in costs["nodes"]}
    assert calibrated.meta["measured"] == {"cpu": len(measured)} == costs_mod.measured(calibrated)
    assert costs_mod.measured(roofline) == {}
    for r, c in zip(roofline.tasks, calibrated.tasks):
        assert r.modes.keys() == c.modes.keys()
        for dev in r.modes:
            if r.modes[dev] != c.modes[dev]:
                assert dev == "cpu" and c.id in measured, (c.id, dev)
        if c.id in measured:
            want = max(1, math.ceil(costs["nodes"][c.id]["median"]))
            assert c.modes["cpu"].duration == want
            assert c.modes["cpu"].energy == energy_pj(want, edge.device("cpu"))
    assert to_instance(graph, edge, costs={"cpu": path}).tasks == calibrated.tasks


def test_a_platform_yaml_can_name_a_costs_file(alexnet_costs, graph, tmp_path):
    _, path = alexnet_costs
    shutil.copy(path, tmp_path / "costs.json")
    text = (PRESET_DIR / "edge.yaml").read_text()
    text = text.replace("    host: true\n", "    host: true\n    costs: costs.json\n", 1)
    (tmp_path / "mine.yaml").write_text(text)
    platform = load_platform(tmp_path / "mine.yaml")
    assert platform.device("cpu").costs == tmp_path / "costs.json"  # relative to the YAML's folder
    from_yaml = to_instance(graph, platform)
    direct = to_instance(graph, load_platform("edge"), costs={"cpu": path})
    assert from_yaml.tasks == direct.tasks and from_yaml.meta["measured"] == direct.meta["measured"]
    # An absolute path works too, and so does Platform.with_costs.
    (tmp_path / "abs.yaml").write_text(text.replace("costs: costs.json", f"costs: {path}"))
    assert to_instance(graph, load_platform(tmp_path / "abs.yaml")).tasks == direct.tasks
    assert to_instance(graph, load_platform("edge").with_costs("cpu", path)).tasks == direct.tasks
    with pytest.raises(InputError, match="no device 'tpu'"):
        load_platform("edge").with_costs("tpu", path)
    with pytest.raises(InputError, match="no such device"):
        to_instance(graph, load_platform("edge"), costs={"tpu": path})


def good():
    return {"format": "cpsched-costs/1", "device": "cpu", "unit": "us",
            "nodes": {"a": {"median": 2.5, "p90": 3.0, "op": "Relu"}}}


@pytest.mark.parametrize("change, message", [
    (lambda d: d.update(format="cpsched-costs/9"), "format must be"),
    (lambda d: d.update(unit="ms"), "unit must be 'us'"),
    (lambda d: d.pop("nodes"), "nodes must be"),
    (lambda d: d["nodes"]["a"].update(median=-1), "node 'a': median must be a positive finite"),
    (lambda d: d["nodes"]["a"].update(median=0), "node 'a': median must be a positive finite"),
    (lambda d: d["nodes"]["a"].update(median=float("nan")), "node 'a': median must be a positive finite"),
    (lambda d: d["nodes"]["a"].update(median="fast"), "node 'a': median must be"),
    (lambda d: d["nodes"]["a"].update(p90=float("inf")), "node 'a': p90 must be"),
    (lambda d: d["nodes"]["a"].pop("median"), "node 'a': missing field 'median'"),
])
def test_a_bad_costs_file_is_an_input_error_naming_file_and_node(tmp_path, change, message):
    data = good()
    change(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=message) as info:
        costs_mod.load_costs(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)
    assert costs_mod.load_costs(_write(tmp_path / "good.json", good())).duration_us("a") == 3


def _write(path, data):
    path.write_text(json.dumps(data))
    return path


def test_missing_or_malformed_costs_files(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        costs_mod.load_costs(tmp_path / "none.json")
    (tmp_path / "x.json").write_text("{")
    with pytest.raises(InputError, match="invalid JSON"):
        costs_mod.load_costs(tmp_path / "x.json")


def test_an_unavailable_provider_lists_the_available_ones():
    with pytest.raises(InputError, match=r"'NoSuchExecutionProvider'.*available: .*CPUExecutionProvider"):
        profiling.profile("squeezenet", "gpu", provider="NoSuchExecutionProvider", runs=1)
    with pytest.raises(InputError, match="CPUExecutionProvider"):
        profiling.measure("squeezenet", runs=1, provider="NoSuchExecutionProvider")


def test_measure_reports_latency_and_a_prediction_error(alexnet_costs, graph):
    result = profiling.measure("alexnet", runs=3, threads=1)
    assert result["runs"] == 3 and result["optimisation"] == "ORT_DISABLE_ALL"
    assert 0 < result["p50_us"] <= result["p99_us"] and math.isfinite(result["p99_us"])
    assert result["throughput_per_s"] == pytest.approx(1e6 / result["mean_us"])
    edge = load_platform("edge")
    for instance in (to_instance(graph, edge), to_instance(graph, edge, costs={"cpu": alexnet_costs[1]})):
        predicted = profiling.predict(instance, "cpu")
        assert predicted >= sum(t.modes["cpu"].duration for t in instance.tasks)  # one device: no overlap
        error = profiling.relative_error(predicted, result["p50_us"])
        assert math.isfinite(error) and error > -1
    with pytest.raises(InputError, match="does not run"):
        profiling.predict(to_instance(graph, edge), "npu")  # LRN and Softmax: not on the NPU
    with pytest.raises(InputError, match="no device 'tpu'"):
        profiling.predict(to_instance(graph, edge), "tpu")


def tiny_model(tmp_path):
    """x[N, 4] -> Relu (unnamed) -> y: one symbolic dim."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "tiny.onnx"
    onnx.save(model, path)
    return path


def test_symbolic_dims_are_pinned_as_for_read_onnx(tmp_path):
    path = tiny_model(tmp_path)
    with pytest.raises(InputError, match="--dim N=VALUE"):
        profiling.profile(path, "cpu", runs=1)
    with pytest.raises(InputError, match="no symbolic input dim 'M'"):
        profiling.measure(path, runs=1, dims={"M": 2})
    costs = profiling.profile(path, "cpu", runs=2, dims={"N": 3})
    assert set(costs["nodes"]) == {n.name for n in read_onnx(path, {"N": 3}).nodes} == {"Relu_0"}
    assert profiling.measure(path, runs=2, dims={"N": 3})["p50_us"] > 0


def test_a_fused_node_takes_the_sum_of_its_measured_members():
    table = costs_mod.CostTable.from_dict(
        {"format": "cpsched-costs/1", "device": "cpu",
         "nodes": {"c": {"median": 10.2}, "r": {"median": 1.5}, "x": {"median": 0.1}}})
    assert table.node_us(SimpleNamespace(name="c+r", members=("c", "r"))) == 12
    assert table.node_us(SimpleNamespace(name="c+z", members=("c", "z"))) is None
    assert table.node_us(SimpleNamespace(name="x", members=())) == 1  # at least 1 us
    assert np.isclose(table.folded_us, 0.0)
