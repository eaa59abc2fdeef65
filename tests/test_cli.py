"""The command line: exit codes, one-line errors, files written only when whole."""

import copy
import json

import pytest
from typer.testing import CliRunner

from cpsched.cli import app
from cpsched.instance import Instance, save_instance
from cpsched.schedule import load_schedule
from cpsched.validator import validate

runner = CliRunner()

BASE = {
    "format": "cpsched-instance/1", "name": "cli",
    "devices": [{"id": "cpu", "memory": 1000, "static_power": 1, "host": True},
                {"id": "gpu", "memory": 1000, "static_power": 2}],
    "links": [{"src": "cpu", "dst": "gpu", "latency": 1, "bandwidth": 4},
              {"src": "gpu", "dst": "cpu", "latency": 1, "bandwidth": 4}],
    "tasks": [{"id": "a", "op": "Conv", "modes": {"cpu": {"duration": 9, "energy": 9}, "gpu": {"duration": 2}}},
              {"id": "b", "op": "Relu", "modes": {"cpu": {"duration": 3, "energy": 3}, "gpu": {"duration": 1}}}],
    "tensors": [{"id": "x", "size": 8, "producer": None, "consumers": ["a"]},
                {"id": "y", "size": 8, "producer": "a", "consumers": ["b"]},
                {"id": "z", "size": 4, "producer": "b", "consumers": [], "output": True}],
}


def run(*args):
    result = runner.invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def write(tmp_path, data, name="inst.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def broken(edit):
    data = copy.deepcopy(BASE)
    edit(data)
    return data


INVALID = {
    "unknown device in modes": (lambda d: d["tasks"][0]["modes"].update(npu={"duration": 1}), "npu"),
    "duration < 1": (lambda d: d["tasks"][0]["modes"]["gpu"].update(duration=0), "duration"),
    "negative number": (lambda d: d["tensors"][0].update(size=-3), "size"),
    "non-integer number": (lambda d: d["devices"][1].update(memory=1.5), "memory"),
    "duplicate task id": (lambda d: d["tasks"].append(copy.deepcopy(d["tasks"][0])), "duplicate task"),
    "duplicate tensor id": (lambda d: d["tensors"].append(copy.deepcopy(d["tensors"][0])), "duplicate tensor"),
    "duplicate device id": (lambda d: d["devices"].append(dict(d["devices"][1])), "duplicate device"),
    "unknown task in tensor": (lambda d: d["tensors"][1].update(consumers=["nope"]), "nope"),
    "cycle": (lambda d: d["tensors"].append({"id": "back", "size": 1, "producer": "b", "consumers": ["a"]}),
              "cycle"),
    "no host": (lambda d: d["devices"][0].pop("host"), "host"),
    "two hosts": (lambda d: d["devices"][1].update(host=True), "host"),
    "no mode": (lambda d: d["tasks"][1].update(modes={}), "'b'"),
    "wrong format": (lambda d: d.update(format="other/1"), "format"),
    "unknown device in link": (lambda d: d["links"][0].update(dst="tpu"), "tpu"),
}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_instance_exits_2_with_one_line(tmp_path, case):
    edit, needle = INVALID[case]
    path = write(tmp_path, broken(edit))
    out = tmp_path / "out.json"
    code, stdout, stderr = run("solve", path, "-o", out)
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "inst.json" in lines[0] and needle in lines[0], lines[0]
    assert "Traceback" not in stderr
    assert not out.exists()


def test_unreadable_inputs_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    for path in (bad, tmp_path / "missing.json", tmp_path / "graph.xyz"):
        code, _, stderr = run("solve", path)
        assert code == 2 and len(stderr.strip().splitlines()) == 1, stderr


def test_usage_errors_exit_2(tmp_path):
    path = write(tmp_path, BASE)
    assert run("solve", path, "--objective", "speed")[0] == 2
    assert run("solve", path, "--time-limit", "0")[0] == 2
    assert run("solve", path, "--processors", "2")[0] == 2  # only for STG


def test_solve_writes_a_valid_optimal_schedule(tmp_path):
    path = write(tmp_path, BASE)
    out = tmp_path / "s.json"
    code, stdout, stderr = run("solve", path, "-o", out, "--objective", "latency,energy")
    assert code == 0, stderr
    schedule = load_schedule(out)
    assert schedule.status.value == "optimal"
    # gpu for both: x arrives at 1 + 2 = 3, a 3..5, b 5..6; latency 6
    assert schedule.objectives["latency"] == 6
    assert validate(Instance.from_dict(BASE), schedule).valid
    assert "optimal" in stderr and "latency" in stderr
    assert run("validate", path, out)[0] == 0


def test_solve_to_stdout(tmp_path):
    code, stdout, _ = run("solve", write(tmp_path, BASE))
    assert code == 0
    assert json.loads(stdout)["format"] == "cpsched-schedule/1"


def test_validate_exit_codes(tmp_path):
    path = write(tmp_path, BASE)
    out = tmp_path / "s.json"
    run("solve", path, "-o", out)
    data = json.loads(out.read_text())
    data["tasks"]["b"]["start"] = 0
    bad = write(tmp_path, data, "bad.json")
    code, stdout, _ = run("validate", path, bad)
    assert code == 1 and "precedence" in stdout and "INVALID" in stdout
    data["status"] = "great"
    assert run("validate", path, write(tmp_path, data, "worse.json"))[0] == 2


def test_infeasible_is_an_answer_naming_the_task(tmp_path):
    # b runs only on the gpu, and nothing links cpu -> gpu
    data = broken(lambda d: (d["tasks"][1].update(modes={"gpu": {"duration": 1}}), d["links"].pop(0)))
    out = tmp_path / "s.json"
    code, _, stderr = run("solve", write(tmp_path, data), "-o", out)
    assert code == 0
    written = json.loads(out.read_text())
    assert written["status"] == "infeasible" and "'b'" in written["reason"] and "tasks" not in written
    assert "infeasible" in stderr


def test_memory_infeasible_is_proven(tmp_path):
    # both tasks fit alone, but y (8 bytes) must be live with z (4) or x (8)
    data = broken(lambda d: [dev.update(memory=11) for dev in d["devices"]])
    out = tmp_path / "s.json"
    code, _, _ = run("solve", write(tmp_path, data), "-o", out)
    assert code == 0
    assert json.loads(out.read_text())["status"] == "infeasible"


def test_memory_infeasible_found_by_search_is_confirmed_by_the_second_memory_model(tmp_path):
    # three tasks with 5 bytes of weights each, two devices of 9 bytes: each fits alone, no two share one
    data = broken(lambda d: ([dev.update(memory=9) for dev in d["devices"]],
                             [t.update(weights=5) for t in d["tasks"]],
                             d["tasks"].append({"id": "c", "op": "X", "weights": 5,
                                                "modes": {"cpu": {"duration": 1}, "gpu": {"duration": 1}}}),
                             d.update(tensors=[{"id": "x", "size": 0, "producer": None, "consumers": ["a", "b", "c"]}])))
    out = tmp_path / "s.json"
    assert run("solve", write(tmp_path, data), "-o", out, "--no-cache")[0] == 0
    result = json.loads(out.read_text())
    assert result["status"] == "infeasible" and "memory capacities of cpu, gpu" in result["reason"]
    assert result["solver"]["infeasible"] == {"cause": "instance",
                                              "confirmed_by": "confirmed by the cpsat, demand memory model"}


def test_heuristic_heft(tmp_path):
    path = write(tmp_path, BASE)
    out = tmp_path / "h.json"
    code, _, stderr = run("heuristic", "heft", path, "-o", out)
    assert code == 0, stderr
    schedule = load_schedule(out)
    assert schedule.status.value == "feasible"
    assert validate(Instance.from_dict(BASE), schedule).valid
    assert schedule.bounds["latency"] <= schedule.objectives["latency"]


def test_import_roundtrip(tmp_path):
    path = write(tmp_path, BASE)
    out = tmp_path / "copy.json"
    assert run("import", path, "-o", out)[0] == 0
    assert Instance.from_dict(json.loads(out.read_text())).to_dict() == Instance.from_dict(BASE).to_dict()
    save_instance(Instance.from_dict(BASE), tmp_path / "again.json")
    assert json.loads((tmp_path / "again.json").read_text()) == json.loads(out.read_text())


def _modules_after(args: list[str]) -> tuple[int, set[str]]:
    """Exit code and top-level packages imported by one in-process command run, in a fresh interpreter."""
    import subprocess
    import sys
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom cpsched.cli import app\n"
            f"r = CliRunner().invoke(app, {args!r})\n"
            "print(r.exit_code, ' '.join(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), set(out[1:])


HEAVY = {"onnx", "onnxruntime", "dask", "distributed", "matplotlib", "pymoo", "pulp"}


def test_help_imports_no_solver_and_solving_json_no_model_stack(tmp_path):
    code, loaded = _modules_after(["--help"])
    assert code == 0 and not loaded & (HEAVY | {"ortools", "networkx", "numpy", "pandas"})
    path = write(tmp_path, BASE)
    code, loaded = _modules_after(["solve", str(path), "--no-cache"])
    assert code == 0 and not loaded & HEAVY
    # pandas comes only with OR-Tools' cp_model module, which imports it unconditionally
    code, loaded = _modules_after(["solve", str(path), "--no-cache", "--engine", "milp"])
    assert code == 0 and not loaded & (HEAVY - {"pulp"} | {"ortools", "pandas"})


def test_bundled_suites_are_found_by_name():
    from cpsched.bench import find_suite
    assert find_suite("smoke").name == "smoke.yaml"
    code, _, stderr = run("bench", "smokey")
    assert code == 2 and "unknown suite 'smokey'" in stderr and "smoke" in stderr
    assert len(stderr.strip().splitlines()) == 1


def test_tables_show_human_units_and_the_exact_integers(tmp_path):
    code, _, stderr = run("solve", "alexnet", "--platform", "edge", "--no-cache")
    assert code == 0
    assert "7.28 ms" in stderr and "7,280 us" in stderr and "MiB" in stderr and "mJ" in stderr


def test_validate_of_another_instances_schedule_says_so(tmp_path):
    path = write(tmp_path, BASE)
    other = tmp_path / "alexnet.json"
    assert run("heuristic", "heft", "alexnet", "--platform", "edge", "-o", other)[0] == 0
    code, stdout, stderr = run("validate", path, other)
    assert code == 2 and not stdout and len(stderr.strip().splitlines()) == 1
    assert "the schedule is for 'alexnet@edge', not 'cli'" in stderr


def test_compare_checks_ref_and_instances(tmp_path):
    path = write(tmp_path, BASE)
    assert run("solve", path, "--epsilon", "latency", "--objectives", "latency,energy", "-o", tmp_path / "a.json",
               "--no-cache")[0] == 0
    code, _, stderr = run("compare", tmp_path / "a.json", tmp_path / "a.json", "--ref", "0.5")
    assert code == 2 and "error: --ref 0.5: each value must be a number >= 1" in stderr
    other = write(tmp_path, broken(lambda d: d.update(name="other")), "other.json")
    assert run("solve", other, "--epsilon", "latency", "--objectives", "latency,energy", "-o", tmp_path / "b.json",
               "--no-cache")[0] == 0
    code, _, stderr = run("compare", tmp_path / "a.json", tmp_path / "b.json")
    assert code == 2 and "different instances" in stderr


def test_outputs_that_cannot_be_written_are_refused_before_solving(tmp_path):
    path = write(tmp_path, BASE)
    (tmp_path / "file").write_text("x")
    for target, needle in ((tmp_path, "is a directory"), (tmp_path / "file" / "out.json", "is a file, not a folder")):
        code, stdout, stderr = run("solve", path, "-o", target)
        assert code == 2 and needle in stderr and not stdout, stderr
