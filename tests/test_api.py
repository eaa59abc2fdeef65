"""The front door (cpsched.load / solve / front / select / validate / heuristic / compare).

The README's Python example runs verbatim and gives the proven values the CLI
prints; library errors name parameters (the CLI names flags); the pipeline is
the CLI's (warm start included); instances are read-only.
"""

import contextlib
import io
import json
import pickle
import re
import warnings
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cpsched
from cpsched.cli import app
from cpsched.errors import InputError, ParameterError
from cpsched.generate import random_instance
from cpsched.instance import Mode

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Python\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def cli(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def test_the_readme_example_runs_verbatim_and_agrees_with_the_cli(tmp_path):
    code = readme_example()
    assert len(code.strip().splitlines()) <= 10
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    status, latency = out.getvalue().splitlines()[0].split()
    code_, stdout, _ = cli("solve", "alexnet", "--platform", "edge", "--no-cache")
    schedule = json.loads(stdout)
    assert code_ == 0 and (status, int(latency)) == (schedule["status"], schedule["objectives"]["latency"]) \
        == ("optimal", 7280)
    points, complete = out.getvalue().splitlines()[1].split(" points, complete: ")
    code_, _, _ = cli("solve", "alexnet", "--platform", "edge", "--epsilon", "latency", "--no-cache",
                      "-o", tmp_path / "front.json")
    front = json.loads((tmp_path / "front.json").read_text())
    assert code_ == 0 and front["complete"] and complete == "True" and int(points) == len(front["points"])
    chosen = out.getvalue().splitlines()[2]
    fits = [p["values"] for p in front["points"] if p["values"][1] <= 150 * 2**20]
    assert chosen == f"{tuple(min(fits))} True"


def test_a_plain_string_objective_is_one_objective():
    inst = random_instance(3, 6, 2)
    s = cpsched.solve(inst, "energy", hint=None)
    assert s.solver["objectives"] == ["energy"] and s.status.value == "optimal"
    assert cpsched.solve(inst, ["latency", "energy"]).solver["objectives"] == ["latency", "energy"]


def test_solve_is_the_pipeline_of_the_command():
    inst = cpsched.load("squeezenet", platform="edge")
    s = cpsched.solve(inst, time_limit=60)
    assert s.solver["warm_start"]["engine"] == "heft" and s.status.value == "optimal"
    assert s.objectives["latency"] == 1645 and cpsched.validate(inst, s).valid
    assert "warm_start" not in cpsched.solve(random_instance(3, 6, 2), hint=None).solver


def test_the_bounded_steps_of_a_front_solved_whole_run_the_proof_portfolio():
    inst = random_instance(7, 6, 2)
    f = cpsched.front(inst, ("latency", "energy"))
    proof = [bool(p.schedule.solver.get("proof")) for p in f.points]
    assert f.complete and any(proof) and not all(proof)  # the ends start from heuristics: LNS stays
    assert all(p.schedule.solver.get("limits") for p, on in zip(f.points, proof) if on)
    assert "proof" not in cpsched.solve(inst).solver


@pytest.mark.parametrize("call, param", [
    (lambda i: cpsched.front(i, ("latency", "memory"), epsilon="energy"), "epsilon='energy'"),
    (lambda i: cpsched.solve(i, "speed"), "objective='speed'"),
    (lambda i: cpsched.solve(i, time_limit=-1), "time_limit=-1"),
    (lambda i: cpsched.solve(i, engine="gurobi"), "engine='gurobi'"),
    (lambda i: cpsched.solve(i, decompose="sometimes"), "decompose='sometimes'"),
    (lambda i: cpsched.solve(i, "arena"), "objective='arena'"),
    (lambda i: cpsched.solve(i, limits={"latency": 1.5}), "limits={'latency': 1.5}"),
    (lambda i: cpsched.front(i, ("latency",)), "objectives=['latency']"),
    (lambda i: cpsched.heuristic("greedy", i), "name='greedy'"),
])
def test_library_errors_name_parameters_not_flags(call, param):
    with pytest.raises(ParameterError) as info:
        call(random_instance(3, 6, 2))
    assert str(info.value).startswith(param) and "--" not in str(info.value)


def test_the_cli_names_its_flags_for_the_same_errors(tmp_path):
    path = tmp_path / "i.json"
    path.write_text(json.dumps(random_instance(3, 6, 2).to_dict()))
    code, _, err = cli("solve", path, "--epsilon", "energy", "--objectives", "latency,memory")
    assert code == 2 and err.strip() == "error: --epsilon energy: is not one of the objectives latency, memory"
    code, _, err = cli("solve", path, "--objective", "speed")
    assert code == 2 and err.startswith("error: --objective speed: expected distinct names")


def test_a_model_name_typo_is_named_as_such():
    code, _, err = cli("solve", "alexnt", "--platform", "edge")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "unknown model 'alexnt'" in err and "did you mean 'alexnet'?" in err and "platform" not in err


def test_select_names_the_limit_that_excludes_the_points():
    f = cpsched.front(random_instance(4, 6, 2), ("latency", "energy"))
    (fast, _), (_, frugal) = f.points[0].values, f.points[-1].values
    with pytest.raises(ParameterError, match=r"^max_energy=%d: excludes every point within the other limits"
                       % (frugal - 1)):
        cpsched.select(f, max_latency=f.nadir[0], max_energy=frugal - 1)
    with pytest.raises(ParameterError, match=r"^max_latency=%d: excludes every point of the front" % (fast - 1)):
        cpsched.select(f, max_latency=fast - 1)


def test_compare_refuses_other_instances_warns_on_incomplete_and_checks_ref():
    a = cpsched.front(random_instance(4, 6, 2), ("latency", "energy"))
    b = cpsched.front(random_instance(5, 6, 2), ("latency", "energy"))
    with pytest.raises(InputError, match="different instances"):
        cpsched.compare(a, b)
    import dataclasses
    with pytest.warns(UserWarning, match="not complete"):
        cpsched.compare(dataclasses.replace(a, complete=False), a)
    with pytest.raises(ParameterError, match=r"^ref=0.5"):
        cpsched.compare(a, a, ref=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cpsched.compare(a, a)["hypervolume_ratio"] == 1.0


def test_validate_names_a_schedule_of_another_instance():
    one, other = random_instance(4, 6, 2), cpsched.load("alexnet", platform="edge")
    with pytest.raises(InputError, match="the schedule is for 'alexnet@edge'"):
        cpsched.validate(one, cpsched.heuristic("heft", other))


def test_instances_are_read_only_and_pickle():
    inst = cpsched.load("alexnet", platform="edge")
    with pytest.raises(TypeError):
        inst.tasks[0].modes["cpu"] = Mode(1)
    with pytest.raises(TypeError):
        inst.units["time"] = "s"
    with pytest.raises(TypeError):
        inst.meta["source"] = "x"
    copy = pickle.loads(pickle.dumps(inst))
    assert copy.to_dict() == inst.to_dict() and copy.content_hash == inst.content_hash


def test_a_mode_is_validated_on_its_own():
    with pytest.raises(InputError, match="duration must be >= 1"):
        Mode(0)
    with pytest.raises(InputError, match="energy must be >= 0"):
        Mode(3, -1)


def test_the_front_door_is_lazy():
    import subprocess
    import sys
    code = "import sys, cpsched; print(sorted(m for m in sys.modules if m.startswith('cpsched')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['cpsched']"
    assert set(cpsched.__all__) >= {"load", "solve", "front", "select", "validate", "heuristic", "compare"}


def test_a_solve_reports_its_incumbent_and_bound_live():
    reports = []
    inst = cpsched.load("alexnet", platform="edge")
    s = cpsched.solve(inst, hint=None, progress=reports.append, time_limit=60)
    assert reports and all(r.objective == "latency" and r.elapsed >= 0 for r in reports)
    found = [r for r in reports if r.value is not None]
    assert found and all(r.bound <= r.value for r in found if r.bound is not None)
    assert found[-1].value == s.objectives["latency"]
