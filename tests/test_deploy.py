"""Deployment: schedules cut into parts, exported as ONNX subgraphs, run with onnxruntime.

The plan's outputs must equal the unsplit model's (and so must every tensor a
subgraph hands on), the subgraphs must cover every node exactly once, the
executor must make exactly the transfers the plan lists, after their producer
and before their readers, and the cut must have the properties that make an
execution follow the schedule.
"""

import importlib.util
import json
import random
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import onnx
import pytest
from typer.testing import CliRunner

import cpsched
from cpsched.cli import app
from cpsched.errors import InputError
from cpsched.executor import Executor, compare, golden_inputs, kendall_tau, reference_outputs
from cpsched.generate import random_instance
from cpsched.heuristics.heft import heft
from cpsched.io.onnx import resolve_model
from cpsched.plan import cut, load_plan
from cpsched.profiling import node_names
from cpsched.schedule import save_front, save_schedule

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


@pytest.fixture(scope="module")
def bert(tmp_path_factory) -> Path:
    """models/bert_layer.onnx with its (deterministic) weights inline: the committed file has none."""
    spec = importlib.util.spec_from_file_location("make_bert_layer", ROOT / "models" / "make_bert_layer.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "models"))  # its helper module onnx_files
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "models"))
    path = tmp_path_factory.mktemp("bert") / "bert_layer.onnx"
    onnx.save(module.build(), path)
    return path


def _task_nodes(model_path) -> list[str]:
    """The names cpsched gives the model's task nodes (the nodes that are not folded constants)."""
    names, folded = node_names(onnx.load(resolve_model(model_path), load_external_data=False))
    return sorted(names[i] for i in names if i not in folded)


@pytest.mark.parametrize("model", ["alexnet", "squeezenet", "bert"])
def test_latency_optimal_plan_equals_the_unsplit_model(model, request, tmp_path):
    source = request.getfixturevalue("bert") if model == "bert" else model
    inst = cpsched.load(source, platform="cpu2")
    sched = cpsched.solve(inst, time_limit=30)
    assert sched.status.has_schedule
    plan = cpsched.export(sched, source, tmp_path / "plan")
    manifest = json.loads((tmp_path / "plan" / "manifest.json").read_text())
    covered = [n for s in manifest["subgraphs"] for n in s["nodes"]]
    assert sorted(covered) == _task_nodes(source)  # every node, exactly once
    for s in manifest["subgraphs"]:
        sub = onnx.load(tmp_path / "plan" / s["file"])
        assert sorted(n.name for n in sub.graph.node) == sorted(s["nodes"])
        assert [i.name for i in sub.graph.input] == s["inputs"]
    executor = Executor(load_plan(tmp_path / "plan"), tmp_path / "plan")
    feeds = golden_inputs(plan)
    values, events, _ = executor.run(feeds, everything=True)
    want = reference_outputs(plan, feeds, names=sorted(values))
    for name, v in compare(values, want).items():
        assert v["max_abs"] <= 1e-5, name
        assert v["cosine"] > 1 - 1e-9, name
    assert set(plan.outputs) <= set(values)
    assert sorted(e.id for e in events if e.kind == "subgraph") == sorted(p.id for p in plan.parts)


def test_transfers_are_made_exactly_in_dependency_order(tmp_path):
    inst = cpsched.load("squeezenet", platform="cpu2")
    # every other task on the second CPU: many tensors cross
    order = sorted(t.id for t in inst.tasks)
    from cpsched.heuristics.heft import list_schedule

    sched = list_schedule(inst, {v: ("cpu1" if k % 2 else "cpu0") for k, v in enumerate(order)})
    assert sched.transfers
    plan = cpsched.export(sched, "squeezenet", tmp_path / "plan")
    executor = Executor(plan, tmp_path / "plan")
    _, events, _ = executor.run(golden_inputs(plan))
    made = sorted((e.id, e.where) for e in events if e.kind == "transfer")
    assert made == sorted((x.tensor, f"{x.src}->{x.dst}") for x in sched.transfers)
    spans = {e.id: e for e in events if e.kind == "subgraph"}
    moves = {(e.id, e.where): e for e in events if e.kind == "transfer"}
    for c in plan.copies:
        move = moves[c.tensor, f"{c.src}->{c.dst}"]
        if c.source is not None:
            assert move.start_us >= spans[c.source].end_us
        for reader in c.readers:
            assert move.end_us <= spans[reader].start_us


def _leaves_and_arrivals(inst, sched):
    end = {v: p.start + inst.task(v).modes[p.device].duration for v, p in sched.tasks.items()}
    leaves, arrives = {}, {}
    for x in sched.transfers:
        leaves[x.tensor] = min(leaves.get(x.tensor, x.start), x.start)
        arrives[x.tensor, x.dst] = x.start + inst.link(x.src, x.dst).transfer_time(inst.tensor(x.tensor).size)
    for t in inst.tensors:
        for c in t.consumers:
            d = sched.tasks[c].device
            if t.producer is not None and d != sched.tasks[t.producer].device:
                leaves[t.id] = min(leaves.get(t.id, sched.tasks[c].start), sched.tasks[c].start)
            arrives.setdefault((t.id, d), 0 if t.producer is None else end[t.producer])
    return leaves, arrives


def _faithful(inst, sched, parts) -> bool:
    """Whether ``parts`` (lists of tasks per device, in device order) run as the schedule says:
    nothing leaves a part before it ends, nothing arrives for it after it starts, no cycle."""
    leaves, arrives = _leaves_and_arrivals(inst, sched)
    end = {v: p.start + inst.task(v).modes[p.device].duration for v, p in sched.tasks.items()}
    owner = {v: k for k, p in enumerate(parts) for v in p}
    g = nx.DiGraph()
    g.add_nodes_from(range(len(parts)))
    for k, p in enumerate(parts):
        start, finish = sched.tasks[p[0]].start, max(end[v] for v in p)
        d = sched.tasks[p[0]].device
        for t in inst.tensors:
            if t.producer in p and t.id in leaves and leaves[t.id] < finish:
                return False
            if any(c in p for c in t.consumers) and (t.producer is None or owner[t.producer] != k):
                if arrives[t.id, d] > start:
                    return False
                if t.producer is not None:
                    g.add_edge(owner[t.producer], k)
        later = [j for j, q in enumerate(parts) if j > k and sched.tasks[q[0]].device == d]
        if later:
            g.add_edge(k, later[0])
    return nx.is_directed_acyclic_graph(g)


@pytest.mark.parametrize("seed", range(25))
def test_cut_is_faithful_and_maximal_on_random_instances(seed):
    rng = random.Random(seed)
    inst = random_instance(seed, rng.randint(5, 12), rng.randint(2, 3))
    sched = heft(inst) if seed % 2 else cpsched.solve(inst, time_limit=10)
    plan = cut(inst, sched)
    tasks = [v for p in plan.parts for v in p.tasks]
    assert sorted(tasks) == sorted(sched.tasks)  # every task, once
    for p in plan.parts:
        assert {sched.tasks[v].device for v in p.tasks} == {p.device}
        starts = [sched.tasks[v].start for v in p.tasks]
        assert starts == sorted(starts)
    parts = [list(p.tasks) for p in plan.parts]
    assert _faithful(inst, sched, parts)
    for d in {p.device for p in plan.parts}:  # merging two neighbours of a device breaks the schedule
        mine = [k for k, p in enumerate(plan.parts) if p.device == d]
        for a, b in zip(mine, mine[1:]):
            merged = [p for k, p in enumerate(parts) if k != b]
            merged[a] = parts[a] + parts[b]
            assert not _faithful(inst, sched, merged)
    assert len(plan.copies) == len(sched.transfers)


def test_export_refuses_another_models_schedule(tmp_path):
    sched = cpsched.solve(cpsched.load("alexnet", platform="cpu2"))
    path = tmp_path / "alexnet.json"
    save_schedule(sched, path)
    result = runner.invoke(app, ["export", str(path), "--model", "squeezenet", "-o", str(tmp_path / "plan")])
    assert result.exit_code == 2
    assert "not a schedule of model squeezenet" in result.output
    assert not (tmp_path / "plan").exists()
    assert list(tmp_path.iterdir()) == [path]  # nothing half-written


def test_export_refuses_an_invalid_schedule(tmp_path):
    inst = cpsched.load("alexnet", platform="cpu2")
    sched = cpsched.solve(inst)
    first = min(sched.tasks, key=lambda v: sched.tasks[v].start)
    broken = sched.to_dict()
    broken["tasks"][first]["start"] += 10 ** 6  # its consumers now start before it ends
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    result = runner.invoke(app, ["export", str(path), "--model", "alexnet", "-o", str(tmp_path / "plan")])
    assert result.exit_code == 2
    assert "is not valid" in result.output


def test_fused_schedule_exports_member_nodes(tmp_path):
    inst = cpsched.load("squeezenet", platform="cpu2", fuse="standard")
    assert inst.groups
    sched = heft(inst)
    plan = cpsched.export(sched, "squeezenet", tmp_path / "plan")  # the fusion is found
    assert plan.model["fusion"] == "standard"
    assert sorted(n for p in plan.parts for n in p.nodes) == _task_nodes("squeezenet")
    report = cpsched.run(tmp_path / "plan", runs=1, warmup=0)
    assert not report.failed


def test_cli_run_reports_and_fails_on_changed_weights(tmp_path):
    sched = cpsched.solve(cpsched.load("squeezenet", platform="cpu2"), time_limit=20)
    path = tmp_path / "s.json"
    save_schedule(sched, path)
    plan_dir = tmp_path / "plan"
    assert runner.invoke(app, ["export", str(path), "--model", "squeezenet", "-o", str(plan_dir)]).exit_code == 0
    report = tmp_path / "report.json"
    result = runner.invoke(app, ["run", str(plan_dir), "--runs", "2", "--warmup", "1", "-o", str(report)])
    assert result.exit_code == 0, result.output
    assert "measured p50" in result.output and "predicted (schedule)" in result.output
    data = json.loads(report.read_text())
    assert data["predicted_us"] == sched.objectives["latency"] and data["failed"] == []
    # double one output channel's weights in the last subgraph (the light model's weights are
    # uniform, so scaling all of them would not show in the softmax): exit 1 naming the output
    last = load_plan(plan_dir).parts[-1]
    model = onnx.load(plan_dir / last.file)
    conv = next(t for t in model.graph.initializer if t.dims and len(t.dims) == 4)
    array = onnx.numpy_helper.to_array(conv).copy()
    array[0] *= 2
    conv.CopyFrom(onnx.numpy_helper.from_array(array, conv.name))
    onnx.save(model, plan_dir / last.file)
    result = runner.invoke(app, ["run", str(plan_dir), "--runs", "1", "--warmup", "0"])
    assert result.exit_code == 1
    assert "softmaxout_1" in result.output and "differ" in result.output


def test_golden_inputs_are_checked(tmp_path):
    sched = heft(cpsched.load("squeezenet", platform="cpu2"))
    plan = cpsched.export(sched, "squeezenet", tmp_path / "plan")
    good = golden_inputs(plan)
    np.savez(tmp_path / "ok.npz", **good)
    assert all(np.array_equal(golden_inputs(plan, tmp_path / "ok.npz")[k], v) for k, v in good.items())
    np.savez(tmp_path / "shape.npz", data_0=np.zeros((1, 3, 10, 10), np.float32))
    with pytest.raises(InputError, match="shape"):
        golden_inputs(plan, tmp_path / "shape.npz")
    np.savez(tmp_path / "none.npz", other=np.zeros(3))
    result = runner.invoke(app, ["run", str(tmp_path / "plan"), "--golden", str(tmp_path / "none.npz")])
    assert result.exit_code == 2 and "no array for input 'data_0'" in result.output


def test_run_needs_a_plan_or_a_front(tmp_path):
    assert runner.invoke(app, ["run"]).exit_code == 2
    assert runner.invoke(app, ["run", str(tmp_path / "missing")]).exit_code == 2
    result = runner.invoke(app, ["run", "--front", str(tmp_path / "f.json")])
    assert result.exit_code == 2 and "--model" in result.output


def test_kendall_tau():
    assert kendall_tau([1, 2, 3], [10, 20, 30]) == pytest.approx(1.0)
    assert kendall_tau([1, 2, 3], [30, 20, 10]) == pytest.approx(-1.0)
    assert kendall_tau([1], [5]) is None


def test_run_front_measures_every_point(tmp_path):
    inst = cpsched.load("squeezenet", platform="cpu2", fuse="standard")
    front = cpsched.front(inst, ["latency", "memory"], time_limit=8)
    result = cpsched.run_front(front, "squeezenet", fuse="standard", runs=2, warmup=0)
    assert len(result["points"]) == len(front.points)
    assert [r["predicted_us"] for r in result["points"]] == [p.values[0] for p in front.points]
    assert all(not r["failed"] for r in result["points"])
    assert result["kendall_tau"] is None or -1 <= result["kendall_tau"] <= 1
    path = tmp_path / "front.json"
    save_front(front, path)
    out = runner.invoke(app, ["run", "--front", str(path), "--model", "squeezenet", "--runs", "1", "--warmup", "0",
                              "-o", str(tmp_path / "runs.json")])
    assert out.exit_code == 0, out.output
    assert "Kendall tau" in out.output and "memory" in out.output
    assert len(json.loads((tmp_path / "runs.json").read_text())["points"]) == len(front.points)


def test_costs_apply_to_the_devices_that_run_as_measured(tmp_path):
    table = {"format": "cpsched-costs/1", "device": "cpu0", "provider": "CPUExecutionProvider", "threads": 1,
             "unit": "us", "nodes": {"n0": {"median": 777.0, "op": "Conv"}}}
    path = tmp_path / "costs.json"
    path.write_text(json.dumps(table))
    inst = cpsched.load("squeezenet", platform="cpu2", costs=[str(path)])
    assert {d: inst.task("n0").modes[d].duration for d in ("cpu0", "cpu1")} == {"cpu0": 777, "cpu1": 777}
    only = cpsched.load("squeezenet", platform="cpu2", costs=[f"cpu1={path}"])
    assert only.task("n0").modes["cpu1"].duration == 777 != only.task("n0").modes["cpu0"].duration
    with pytest.raises(InputError, match="no device of platform edge"):
        cpsched.load("squeezenet", platform="edge", costs=[str(path)])  # edge names no providers
    result = runner.invoke(app, ["solve", "instances/examples/tinycnn-edge.json", "--costs", str(path)])
    assert result.exit_code == 2 and "--costs" in result.output


def _cuda() -> bool:
    import onnxruntime

    return "CUDAExecutionProvider" in onnxruntime.get_available_providers()


@pytest.mark.skipif(not _cuda(), reason="onnxruntime has no CUDA provider here (a GPU machine runs this)")
def test_the_loop_on_a_cuda_device(tmp_path):
    platform = tmp_path / "cpu-cuda.yaml"
    platform.write_text("""
name: cpu-cuda
devices:
  - {id: cpu, host: true, peak_flops: 3.0e+10, mem_bandwidth: 1.0e+10, launch_overhead: 5.0e-6,
     active_power: 15.0, static_power: 2.0, memory: 4000000000, provider: CPUExecutionProvider, threads: 1}
  - {id: gpu, peak_flops: 1.0e+13, mem_bandwidth: 5.0e+11, launch_overhead: 1.0e-5,
     active_power: 200.0, static_power: 50.0, memory: 16000000000, provider: CUDAExecutionProvider}
links:
  - {src: cpu, dst: gpu, latency: 1.0e-5, bandwidth: 1.0e+10, energy_per_byte: 1.0e-10}
  - {src: gpu, dst: cpu, latency: 1.0e-5, bandwidth: 1.0e+10, energy_per_byte: 1.0e-10}
""")
    inst = cpsched.load("squeezenet", platform=str(platform))
    sched = cpsched.solve(inst, time_limit=30)
    assert any(p.device == "gpu" for p in sched.tasks.values())
    cpsched.export(sched, "squeezenet", tmp_path / "plan", platform=str(platform))
    report = cpsched.run(tmp_path / "plan", runs=3, warmup=1, atol=1e-3)  # GPU kernels round differently
    assert not report.failed


def test_a_modelled_platform_runs_on_the_cpu_and_says_so(tmp_path):
    sched = cpsched.solve(cpsched.load("alexnet", platform="edge"))
    assert {p.device for p in sched.tasks.values()} - {"cpu"}  # the GPU and NPU are used
    path = tmp_path / "s.json"
    save_schedule(sched, path)
    assert runner.invoke(app, ["export", str(path), "--model", "alexnet", "-o", str(tmp_path / "plan")]).exit_code == 0
    result = runner.invoke(app, ["run", str(tmp_path / "plan"), "--runs", "1", "--warmup", "0"])
    assert result.exit_code == 0, result.output
    assert "name no execution provider" in result.output and "gpu" in result.output


def test_export_never_overwrites_what_is_not_a_plan(tmp_path):
    sched = heft(cpsched.load("squeezenet", platform="cpu2"))
    path = tmp_path / "s.json"
    save_schedule(sched, path)
    (tmp_path / "file").write_text("keep me")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "notes.txt").write_text("keep me too")
    for target in ("file", "folder"):
        result = runner.invoke(app, ["export", str(path), "--model", "squeezenet", "-o", str(tmp_path / target)])
        assert result.exit_code == 2, result.output
    assert (tmp_path / "file").read_text() == "keep me"
    assert (tmp_path / "folder" / "notes.txt").read_text() == "keep me too"
    plan = tmp_path / "plan"
    for _ in range(2):  # a folder holding a plan is replaced
        assert runner.invoke(app, ["export", str(path), "--model", "squeezenet", "-o", str(plan)]).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "folder", "plan", "s.json"]
