"""Named modes per (task, device) (PROBLEM.md section 6): files, checker, CP-SAT, heuristics, fronts.

The oracle enumerates every mode choice (a device and a mode per task), resolves
the instance by it (:meth:`Instance.resolved`: a plain instance with one device
per task) and asks the brute-force oracles of sections 1-4 for that fixed
choice; the engines never see how it got its answer.
"""

from __future__ import annotations

import itertools

import pytest

import cpsched
from cpsched.errors import InputError, ModesUnsupported, ParameterError
from cpsched.generate import random_instance
from cpsched.heuristics.heft import heft
from cpsched.instance import Instance
from cpsched.schedule import Placement, Schedule, Status
from cpsched.validator import objectives, validate
from oracle import brute_force
from oracle_front import brute_front_latency_energy, brute_front_latency_memory, non_dominated

# PROBLEM.md section 6's example, completed into an instance
EXAMPLE = {
    "format": "cpsched-instance/1", "name": "section6", "units": {"error": "ppm"},
    "devices": [{"id": "cpu", "memory": 10**9, "static_power": 1, "host": True},
                {"id": "npu", "memory": 10**9, "static_power": 2}],
    "links": [{"src": "cpu", "dst": "npu", "latency": 1, "bandwidth": 100000, "energy_per_byte": 1},
              {"src": "npu", "dst": "cpu", "latency": 1, "bandwidth": 100000, "energy_per_byte": 1}],
    "tasks": [{"id": "conv1", "op": "Conv", "weights": 6912, "workspace": 0,
               "modes": {"cpu": {"duration": 410, "energy": 2050},
                         "npu": [{"name": "fp16", "duration": 12, "energy": 180},
                                 {"name": "int8", "duration": 7, "energy": 90, "error": 120,
                                  "weights": 1728, "outputs": {"conv1_out": 788544}}]}},
              {"id": "relu", "op": "Relu", "modes": {"cpu": {"duration": 5, "energy": 10}}}],
    "tensors": [{"id": "data", "size": 2000, "producer": None, "consumers": ["conv1"]},
                {"id": "conv1_out", "size": 3154176, "producer": "conv1", "consumers": ["relu"]},
                {"id": "y", "size": 4, "producer": "relu", "consumers": [], "output": True}],
}


def example(**changes) -> Instance:
    data = {**EXAMPLE, **changes}
    return Instance.from_dict(data)


# ----- the oracle ------------------------------------------------------------------------

def choices(instance: Instance):
    """Every mode choice: task id -> (device, mode name)."""
    per_task = [[(d, m.name) for d, ms in t.choices.items() for m in ms] for t in instance.tasks]
    for combo in itertools.product(*per_task):
        yield dict(zip((t.id for t in instance.tasks), combo))


def error_of(instance: Instance, choice) -> int:
    return sum(instance.task(v).mode(d, name).error for v, (d, name) in choice.items())


def with_modes(schedule: Schedule, choice) -> Schedule:
    """An oracle schedule of the resolved instance, its placements carrying the choice's modes."""
    tasks = {v: Placement(p.device, p.start, choice[v][1]) for v, p in schedule.tasks.items()}
    return Schedule(schedule.instance, schedule.status, tasks, schedule.transfers)


def resolved_or_none(instance: Instance, choice) -> Instance | None:
    """The resolved instance, or None when the choice needs a link that does not exist."""
    plain = instance.resolved(choice)
    for t in plain.tensors:
        src = instance.host.id if t.producer is None else choice[t.producer][0]
        if t.size and any(choice[c][0] != src and not plain.link(src, choice[c][0]) for c in t.consumers):
            return None
    return plain


def brute(instance: Instance) -> dict:
    """Optimal latency (with a witness), and the (latency, energy) and (latency, error) fronts."""
    best, witness, le, lerr = None, None, [], []
    for choice in choices(instance):
        plain = resolved_or_none(instance, choice)
        if plain is None:
            continue
        value, schedule = brute_force(plain)
        if best is None or value < best:
            best, witness = value, with_modes(schedule, choice)
        le += [(pt, None) for pt in brute_front_latency_energy(plain)]
        lerr.append(((value, error_of(instance, choice)), None))
    return {"latency": best, "witness": witness, "latency,energy": [p for p, _ in non_dominated(le)],
            "latency,error": [p for p, _ in non_dominated(lerr)]}


def tiny(seed: int) -> Instance:
    return random_instance(seed, 3 + seed % 2, 2, n_modes=2)


# ----- files ---------------------------------------------------------------------------

def test_named_modes_round_trip_and_plain_tasks_stay_objects():
    inst = example()
    assert not inst.plain and inst.task("relu").plain
    data = inst.to_dict()
    assert data["tasks"][1]["modes"] == {"cpu": {"duration": 5, "energy": 10}}
    assert [m["name"] for m in data["tasks"][0]["modes"]["npu"]] == ["fp16", "int8"]
    again = Instance.from_dict(data)
    assert again.to_dict() == data and again.content_hash == inst.content_hash
    assert inst.size_range["conv1_out"] == (788544, 3154176)


@pytest.mark.parametrize("change, words", [
    (lambda t: t[0]["modes"]["npu"].append({"name": "fp16", "duration": 3}), "names a mode twice"),
    (lambda t: t[0]["modes"]["npu"][1]["outputs"].update({"y": 2}), "'y' is not a tensor the task produces"),
    (lambda t: t[0]["modes"]["npu"][1]["outputs"].update({"conv1_out": 0}), "may not change between size 0"),
    (lambda t: t[0]["modes"]["npu"][0].pop("name"), "missing field 'name'"),
    (lambda t: t[0]["modes"]["npu"][1].update({"error": -1}), "error must be >= 0"),
    (lambda t: t[0]["modes"].update({"npu": []}), "an empty list of modes"),
])
def test_bad_modes_are_one_line_errors_naming_the_task(change, words):
    import copy
    tasks = copy.deepcopy(EXAMPLE["tasks"])
    change(tasks)
    with pytest.raises(InputError, match=words) as exc:
        example(tasks=tasks)
    assert "conv1" in str(exc.value) and "\n" not in str(exc.value)


def test_methods_written_for_one_mode_refuse_named_modes():
    with pytest.raises(ModesUnsupported, match="task 'conv1' has named modes"):
        example().task("conv1").modes
    with pytest.raises(ParameterError, match="no named modes"):
        cpsched.solve(random_instance(0, 3, 2), ["latency", "error"])


# ----- the checker -------------------------------------------------------------------------

def test_validator_recomputes_per_mode_weights_sizes_and_error():
    inst = example()
    # data reaches the npu at 1 + 1 = 2; conv1 there in int8 3..10; its output (788544 bytes)
    # goes back over the link in 1 + 8: 10..19; relu on the cpu 40..45
    s = Schedule("section6", Status.FEASIBLE,
                 {"conv1": Placement("npu", 3, "int8"), "relu": Placement("cpu", 40)},
                 (cpsched.schedule.Transfer("data", "cpu", "npu", 0),
                  cpsched.schedule.Transfer("conv1_out", "npu", "cpu", 10)))
    report = validate(inst, s, check_claims=False)
    assert report.valid, report.violations
    assert report.objectives["latency"] == 45 and report.objectives["error"] == 120
    # energy: modes 90 + 10, link bytes (2000 + 788544) x 1, static (1 + 2) x 45
    assert report.objectives["energy"] == 100 + 790544 + 3 * 45
    # npu: int8 weights 1728 for the whole makespan + its output 3..19 + the copy of data 0..10
    assert report.peaks["npu"] == 1728 + 788544 + 2000
    fp16 = Schedule("section6", Status.FEASIBLE, {**s.tasks, "conv1": Placement("npu", 3, "fp16")}, s.transfers)
    # in fp16 its 3154176 bytes arrive at 10 + 1 + 32 = 43, after relu starts
    assert "precedence" in {v.kind for v in validate(inst, fp16, check_claims=False).violations}


@pytest.mark.parametrize("placement, says", [
    (Placement("npu", 3, "int4"), "mode 'int4', which it lacks there (its modes: fp16, int8)"),
    (Placement("npu", 3), "mode 'default', which it lacks there"),
    (Placement("cpu", 0, "int8"), "mode 'int8', which it lacks there (its modes: default)"),
])
def test_a_mode_the_task_lacks_is_a_violation(placement, says):
    s = Schedule("section6", Status.FEASIBLE, {"conv1": placement, "relu": Placement("cpu", 900)})
    found = [v for v in validate(example(), s, check_claims=False).violations if v.kind == "unsupported-mode"]
    assert len(found) == 1 and says in found[0].message


def test_schedule_files_carry_modes_only_where_named():
    inst = example()
    s = min(cpsched.front(inst, ["latency", "error"]).points, key=lambda p: p.values[0]).schedule
    data = s.to_dict()
    assert data["tasks"]["conv1"]["mode"] in ("fp16", "int8") and "mode" not in data["tasks"]["relu"]
    assert Schedule.from_dict(data).tasks == s.tasks


# ----- CP-SAT against brute force --------------------------------------------------------------

@pytest.mark.parametrize("seed", range(12))
def test_cpsat_equals_brute_force_over_modes(seed):
    inst = tiny(seed)
    truth = brute(inst)
    assert validate(inst, truth["witness"], check_claims=False).valid
    s = cpsched.solve(inst, "latency")
    assert s.status is Status.OPTIMAL and s.objectives["latency"] == truth["latency"]
    assert validate(inst, s).valid
    energy = cpsched.solve(inst, "energy")
    assert energy.objectives["energy"] == min(e for _, e in truth["latency,energy"])
    for pair in ("latency,energy", "latency,error"):
        f = cpsched.front(inst, pair.split(","))
        assert f.complete and f.gap == 0
        assert sorted(p.values for p in f.points) == truth[pair], pair
        assert all(validate(inst, p.schedule).valid for p in f.points)


@pytest.mark.parametrize("seed", range(8))
def test_milp_agrees_with_cpsat_over_modes(seed):
    # the independent formulation: per-mode binaries, one transfer leg per output size
    inst = random_instance(seed, 5, 2, n_modes=2)
    for objective in (["latency"], ["energy"], ["error", "latency"]):
        a = cpsched.solve(inst, objective)
        b = cpsched.solve(inst, objective, engine="milp")
        assert a.status is b.status is Status.OPTIMAL
        assert [a.objectives[n] for n in objective] == [b.objectives[n] for n in objective], objective
        assert validate(inst, b).valid


def test_int8_shrinks_transfers_and_memory_in_the_model():
    # the fp16 output (3154176 bytes) takes 33 us back over the link, int8's 9: latency prefers
    # int8 (23 us), error fp16 (52 us; the cpu takes 415)
    inst = example()
    f = cpsched.front(inst, ["latency", "error"])
    assert f.complete
    fast = min(f.points, key=lambda p: p.values[0])
    assert fast.schedule.tasks["conv1"].mode == "int8" and fast.values == (23, 120)
    assert sorted(p.values for p in f.points) == [(23, 120), (52, 0)]


# ----- heuristics --------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
def test_heft_runs_each_task_in_its_fastest_mode_and_is_valid(seed):
    inst = tiny(seed)
    s = heft(inst)
    assert validate(inst, s).valid
    for v, p in s.tasks.items():
        assert inst.task(v).mode(p.device, p.mode).duration == min(m.duration for m in inst.task(v).choices[p.device])
    assert objectives(inst, s)[0]["latency"] >= brute(inst)["latency"]


@pytest.mark.parametrize("seed", range(6))
def test_latency_memory_front_equals_brute_force_over_modes(seed):
    # per-mode weights and output sizes change peaks: the model's memory against the checker's
    inst = random_instance(seed, 3, 2, n_modes=2)
    points = []
    for choice in choices(inst):
        plain = resolved_or_none(inst, choice)
        if plain is not None:
            points += [(pt, None) for pt in brute_front_latency_memory(plain)]
    f = cpsched.front(inst, ["latency", "memory"])
    assert f.complete and sorted(p.values for p in f.points) == [p for p, _ in non_dominated(points)]


def test_nsga2_searches_modes_as_genes():
    inst = random_instance(5, 4, 2, n_modes=2)
    f = cpsched.heuristic("nsga2", inst, objectives=["latency", "error"], population=200, generations=2)
    assert f.meta["exhaustive"]  # 4 tasks x (2 devices x 2 modes): every gene vector decoded
    exact = cpsched.front(inst, ["latency", "error"])
    assert all(validate(inst, p.schedule).valid for p in f.points)
    # list scheduling decodes each mode choice one way: never better than the exact front
    for p in f.points:
        assert any(all(q <= v for q, v in zip(e.values, p.values)) for e in exact.points)
    assert {p.schedule.tasks[v].mode for p in f.points for v in p.schedule.tasks} >= {"q0", "q1"}


# ----- modes from the platform: DVFS levels and int8 precision tables -------------------------------

DVFS = """
name: dvfs
devices:
  - {id: cpu, host: true, peak_flops: 2.0e+11, mem_bandwidth: 2.5e+10, launch_overhead: 5.0e-6,
     active_power: 3.0, static_power: 0.5, memory: 4000000000, ops: all,
     levels: [{frequency: 2.0e+9, power: 3.0}, {frequency: 1.5e+9, power: 1.6}]}
  - {id: npu, peak_flops: 1.0e+12, mem_bandwidth: 4.0e+10, launch_overhead: 2.0e-5, active_power: 2.0,
     static_power: 0.2, memory: 1000000000, ops: [Conv, Relu, MaxPool, Concat], precisions: [fp32, int8]}
links:
  - {src: cpu, dst: npu, latency: 1.0e-5, bandwidth: 1.0e+10, energy_per_byte: 1.0e-10}
  - {src: npu, dst: cpu, latency: 1.0e-5, bandwidth: 1.0e+10, energy_per_byte: 1.0e-10}
"""


@pytest.fixture
def dvfs(tmp_path):
    path = tmp_path / "dvfs.yaml"
    path.write_text(DVFS)
    return path


def test_dvfs_levels_scale_duration_up_and_price_energy_at_the_level(dvfs):
    plain = cpsched.load("alexnet", platform="edge")  # the same cpu figures at the top level
    inst = cpsched.load("alexnet", platform=dvfs)
    for task in inst.tasks:
        fast, slow = inst.task(task.id).choices["cpu"]
        assert (fast.name, slow.name) == ("2000MHz", "1500MHz")
        top = plain.task(task.id).modes["cpu"].duration
        assert fast.duration == top and slow.duration == -(-top * 4 // 3)  # x 2.0/1.5, rounded up
        assert fast.energy == 3 * 10**6 * fast.duration and slow.energy == round(1.6 * 10**6 * slow.duration)
    s = cpsched.solve(inst, ["energy", "latency"])
    assert validate(inst, s).valid and s.status is Status.OPTIMAL


@pytest.mark.parametrize("bad, says", [
    ("levels: [{frequency: 0, power: 1.0}]", "frequency must be a finite number > 0"),
    ("levels: [{frequency: 1.0e+9}]", "power"),
    ("precisions: [int8]", "precisions must list fp32"),
])
def test_bad_levels_and_precisions_name_the_device(tmp_path, bad, says):
    path = tmp_path / "p.yaml"
    path.write_text(DVFS.replace("precisions: [fp32, int8]", bad))
    with pytest.raises(InputError, match=says) as exc:
        cpsched.load("alexnet", platform=path)
    assert "npu" in str(exc.value) and str(path) in str(exc.value)


def table(device="npu", error=500):
    from cpsched.precisions import FORMAT
    return {"format": FORMAT, "device": device, "model": "squeezenet", "calibration": 2, "seed": 0,
            "nodes": {"n0": {"fp32_us": 100.0, "int8_us": 25.0, "error": error},
                      "n3": {"fp32_us": 10.0, "int8_us": 8.0, "error": 7}}}


def test_a_precision_table_gives_int8_modes_where_the_platform_lists_int8(tmp_path, dvfs):
    import json
    path = tmp_path / "p.json"
    path.write_text(json.dumps(table()))
    inst = cpsched.load("squeezenet", platform=dvfs, precisions=[str(path)])
    plain = cpsched.load("squeezenet", platform=dvfs)
    conv = inst.task("n0")
    fp32, int8 = conv.choices["npu"]
    assert (fp32.name, int8.name) == ("fp32", "int8") and int8.error == 500 and fp32.error == 0
    assert fp32.duration == plain.task("n0").choices["npu"][0].duration
    assert int8.duration == -(-fp32.duration // 4)  # the measured 25/100
    assert int8.weights == -(-conv.weights // 4)
    assert all(int8.outputs[t.id] == -(-t.size // 4) for t in inst.outputs_of["n0"])
    assert len(inst.task("n1").choices["npu"]) == 1  # not in the table: fp32 only
    assert inst.units["error"] == "ppm" and inst.meta["precisions"]["npu"]["nodes"] == 2
    with pytest.raises(InputError, match="does not list int8"):
        cpsched.load("squeezenet", platform=dvfs, precisions=[f"cpu={path}"])
    with pytest.raises(InputError, match="no such device"):
        cpsched.load("squeezenet", platform=dvfs, precisions=[f"gpu={path}"])


@pytest.mark.slow  # about a minute on 2 cores; quantize stays in CI through squeezenet's mixed-precision plan
def test_quantize_alexnet_times_every_conv_and_gemm_and_the_proxy_is_close(tmp_path):
    from cpsched.precisions import int8_nodes
    from cpsched.quantization import measured_error, quantize
    t = quantize("alexnet", "cpu", calibration=2, runs=2, threads=1)
    ops = {"n0": "Conv", "n4": "Conv", "n8": "Conv", "n10": "Conv", "n12": "Conv",
           "n16": "Gemm", "n19": "Gemm", "n22": "Gemm"}
    assert {k: v["op"] for k, v in t["nodes"].items()} == ops
    assert all(v["fp32_us"] > 0 and v["int8_us"] > 0 and v["error"] > 0 for v in t["nodes"].values())
    assert t["weights"] == "random"  # the light model's weights are placeholders
    # the documented tolerance of the additive proxy on alexnet: within 25 % of the all-int8 error
    assert abs(t["sum_of_errors"] - t["all_int8"]["error"]) <= 0.25 * t["all_int8"]["error"]
    # measured_error reproduces a single node's sensitivity (same weights, inputs, calibration)
    assert measured_error("alexnet", ["n4"], calibration=2)["error"] == t["nodes"]["n4"]["error"]
    inst = cpsched.load("alexnet", platform="edge")
    s = Schedule(inst.name, Status.FEASIBLE, {"n0": Placement("npu", 0, "int8"), "n4": Placement("npu", 9)})
    assert int8_nodes(inst, s) == ["n0"]


@pytest.mark.parametrize("seed", range(8))
def test_dvfs_fronts_on_identical_processors_equal_brute_force(seed):
    # speed levels on identical processors: the symmetry breaking and the classes meet named modes
    from cpsched.generate import SHAPES, dvfs_instance
    inst = dvfs_instance(seed, 4, SHAPES[seed % len(SHAPES)], (0.1, 1.0, 10.0)[seed % 3], 2, 2 + seed % 2)
    points = []
    for choice in choices(inst):
        plain = resolved_or_none(inst, choice)
        if plain is not None:
            points += [(pt, None) for pt in brute_front_latency_energy(plain)]
    f = cpsched.front(inst, ["latency", "energy"])
    assert f.complete and sorted(p.values for p in f.points) == [p for p, _ in non_dominated(points)]
    assert all(validate(inst, p.schedule).valid for p in f.points)


def test_a_front_suite_row_counts_points_and_completeness(tmp_path):
    from cpsched.bench import load_suite, markdown, run_suite
    from cpsched.generate import dvfs_instance
    from cpsched.instance import save_instance
    for seed in (0, 1):
        save_instance(dvfs_instance(seed, 5, "random", 1.0, 2, 2), tmp_path / f"d{seed}.json")
    (tmp_path / "s.yaml").write_text("name: s\ntime_limit: 60\nobjectives: [latency, energy]\nepsilon: auto\n"
                                    "entries:\n  - instance: d*.json\n")
    rows = run_suite(load_suite(tmp_path / "s.yaml"), jobs=1)
    assert [r.input for r in rows] == ["d0.json", "d1.json"]
    for r in rows:
        f = cpsched.front(Instance.from_dict(__import__("json").loads((tmp_path / r.input).read_text())),
                          ["latency", "energy"])
        assert r.complete == "yes" and r.points == r.proven == len(f.points) and r.front_gap == 0
    assert "complete fronts: 2/2" in markdown(rows)


def test_a_mixed_precision_plan_reports_its_measured_error_beside_the_proxy(tmp_path):
    import json
    from cpsched.precisions import int8_nodes
    from cpsched.quantization import measured_error, quantize
    table = tmp_path / "precisions.json"
    table.write_text(json.dumps(quantize("squeezenet", "npu", calibration=1, runs=1, threads=1)))
    inst = cpsched.load("squeezenet", platform="edge", precisions=[str(table)])
    s = cpsched.solve(inst, "latency", time_limit=20)
    chosen = int8_nodes(inst, s)
    assert chosen, "int8 is faster on the NPU: the latency optimum uses it"
    cpsched.export(s, "squeezenet", tmp_path / "plan", precisions=[str(table)])
    report = cpsched.run(tmp_path / "plan", runs=1, warmup=0)
    assert report.precision["int8"] == len(chosen) and report.precision["proxy"] == s.objectives["error"]
    assert report.precision["measured"] == measured_error("squeezenet", chosen, calibration=1)
    assert not report.failed  # the subgraphs ran in fp32: outputs equal the unsplit model


def test_cli_inspect_counts_named_modes_and_a_missing_table_is_exit_2(tmp_path):
    import json
    from typer.testing import CliRunner
    from cpsched.cli import app
    path = tmp_path / "p.json"
    path.write_text(json.dumps(table()))
    runner = CliRunner()
    out = runner.invoke(app, ["inspect", "squeezenet", "--platform", "edge", "--precisions", str(path)])
    assert out.exit_code == 0 and "named modes (precision, frequency): npu 2 of 65 tasks" in out.output
    missing = runner.invoke(app, ["import", "squeezenet", "--platform", "edge", "--precisions", str(tmp_path / "no.json")])
    assert missing.exit_code == 2 and missing.output.count("no.json") == 1 and "Traceback" not in missing.output
