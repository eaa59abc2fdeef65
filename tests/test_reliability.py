"""Reliability: no hang, no native abort, no lost result.

Time limits bound warm starts too; Ctrl-C at any moment ends in a result or
one line, never a signal; outputs are checked before any work and written
atomically under unique temporary names; the cache survives bad entries;
malformed input is one line, exit 2.
"""

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cpsched
from cpsched import cache, interrupt
from cpsched.cli import app
from cpsched.errors import InputError
from cpsched.files import MAX_DEPTH, write_json
from cpsched.generate import random_instance
from cpsched.heuristics.heft import heft
from cpsched.instance import Instance, save_instance
from cpsched.schedule import Front, Status, load_front


def cli(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def command(*args, **kwargs) -> subprocess.Popen:
    """``python -m cpsched ARGS`` in its own process (stdin closed, output captured)."""
    return subprocess.Popen([sys.executable, "-m", "cpsched", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, **kwargs)


def oversized_input() -> dict:
    """The hang of old: a graph input larger than the host's memory (the task fits the gpu)."""
    return {"format": "cpsched-instance/1", "name": "big-input",
            "devices": [{"id": "cpu", "memory": 5, "host": True}, {"id": "gpu", "memory": 100}],
            "links": [{"src": "cpu", "dst": "gpu", "latency": 1, "bandwidth": 2}],
            "tasks": [{"id": "a", "op": "X", "modes": {"cpu": {"duration": 3}, "gpu": {"duration": 1}}}],
            "tensors": [{"id": "x", "size": 6, "producer": None, "consumers": ["a"]},
                        {"id": "y", "size": 1, "producer": "a", "consumers": [], "output": True}]}


def test_an_input_larger_than_the_host_is_proven_infeasible_within_the_time_limit(tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(oversized_input()))
    clock = time.monotonic()
    code, stdout, stderr = cli("solve", path, "--time-limit", "5", "--no-cache")
    assert time.monotonic() - clock < 5 and code == 0
    result = json.loads(stdout)
    assert result["status"] == "infeasible" and "graph inputs need 6 bytes on the host 'cpu'" in result["reason"]
    clock = time.monotonic()
    code, _, stderr = cli("heuristic", "heft", path)
    assert time.monotonic() - clock < 5 and code == 3 and "graph inputs" in stderr


def test_heft_never_leaves_out_a_device_twice():
    # the host overflows whatever HEFT places (its inputs), but each input alone fits: HEFT must stop
    inst = Instance.from_dict(oversized_input())
    with pytest.raises(cpsched.api.NoSchedule):
        heft(inst)


def test_a_time_limit_bounds_the_warm_start_too():
    inst = cpsched.load("inception_v1", platform="edge")
    clock = time.monotonic()
    s = cpsched.solve(inst, time_limit=3)
    assert time.monotonic() - clock < 3 + 2.5  # a few seconds of slack: model building, validation
    assert s.status.has_schedule and s.solver["warm_start"]["wall_time"] < 3


# ----- Ctrl-C --------------------------------------------------------------------------------

def test_sigint_at_random_moments_of_a_three_objective_sweep(tmp_path):
    """20 SIGINTs from start-up to the end: never a signal exit, one line at most on a bare
    interrupt, every written front valid and resumable to the uninterrupted front."""
    inst = random_instance(7, 6, 3, channels=(1,))
    path = tmp_path / "inst.json"
    save_instance(inst, path)
    objectives = ("latency", "energy", "memory")
    whole = cpsched.front(inst, objectives)
    assert whole.complete
    rng = random.Random(4)
    delays = sorted(rng.uniform(0.15, 2.5) for _ in range(20))
    outcomes = {}
    for k in range(0, len(delays), 2):  # two at a time: the machine has two cores
        runs = []
        for delay in delays[k:k + 2]:
            out = tmp_path / f"front-{delay:.3f}.json"
            runs.append((delay, out, command("solve", path, "--epsilon", "latency", "--objectives",
                                             ",".join(objectives), "--no-cache", "-o", out)))
        started = time.monotonic()
        for delay, _, proc in runs:
            time.sleep(max(0.0, delay - (time.monotonic() - started)))
            proc.send_signal(signal.SIGINT)
        for delay, out, proc in runs:
            _, stderr = proc.communicate(timeout=60)
            assert proc.returncode in (0, 3, 130), (delay, proc.returncode, stderr)
            assert "Traceback" not in stderr and "terminate called" not in stderr, stderr
            outcomes[delay] = proc.returncode
            if proc.returncode == 130:
                assert not out.exists() and stderr.strip().splitlines()[-1].startswith("interrupted")
                continue
            front = load_front(out)
            for p in front.points:
                assert cpsched.validate(inst, p.schedule).valid
            resumed = cpsched.front(inst, objectives, resume=out)
            assert resumed.complete and [p.values for p in resumed.points] == [p.values for p in whole.points]
    assert set(outcomes.values()) >= {3}, outcomes  # some interrupts landed inside the sweep


def test_interrupt_request_stops_a_solve_through_the_engine():
    inst = cpsched.load("inception_v1", platform="edge")
    import threading
    timer = threading.Timer(2.0, interrupt.request)
    timer.start()
    clock = time.monotonic()
    with interrupt.guard():
        s = cpsched.solve(inst, decompose="off")
    timer.cancel()
    assert time.monotonic() - clock < 10
    assert s.status is Status.FEASIBLE and s.solver["stopped"] == "interrupted" and cpsched.validate(inst, s).valid
    assert not interrupt.requested()  # the guard clears the flag on exit


def test_sigint_during_start_up_imports_is_one_line():
    # from 0.15 s on: Python's own start-up (the site module) comes first and is not cpsched's to own
    for delay in (0.15, 0.3, 0.5):
        proc = command("solve", "alexnet", "--platform", "edge", "--no-cache")
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        assert proc.returncode in (0, 3, 130) and "Traceback" not in stderr, (delay, stderr)
        if proc.returncode == 130:
            assert stderr.strip().splitlines() == ["interrupted before any result"] and not stdout


# ----- outputs -------------------------------------------------------------------------------

def test_outputs_that_cannot_be_written_are_refused_at_once(tmp_path):
    inst = tmp_path / "inst.json"
    save_instance(cpsched.load("inception_v1", platform="edge"), inst)  # would take long to solve
    (tmp_path / "file").write_text("")
    unwritable = Path("/sys/cpsched-test.json") if Path("/sys").is_dir() else None
    for target in (tmp_path, tmp_path / "file" / "out.json", unwritable):
        if target is None:
            continue
        clock = time.monotonic()
        code, stdout, stderr = cli("solve", inst, "-o", target, "--no-cache")
        assert code == 2 and time.monotonic() - clock < 2 and not stdout, (target, stderr)
        assert len(stderr.strip().splitlines()) == 1 and str(target) in stderr


def _write_many(path: str, payload: int, rounds: int) -> None:
    for _ in range(rounds):
        write_json(path, {"payload": payload, "data": list(range(2000))})
        cache.put("samekey", {"payload": payload, "data": list(range(2000))})


def test_two_processes_writing_one_path_and_one_cache_key(tmp_path, monkeypatch):
    monkeypatch.setenv("CPSCHED_CACHE_DIR", str(tmp_path / "cache"))
    target = tmp_path / "out.json"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_many, args=(str(target), k, 300)) for k in (1, 2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    for written in (target, tmp_path / "cache" / "samekey.json"):
        data = json.loads(written.read_text())
        assert data["payload"] in (1, 2) and data["data"] == list(range(2000))
    assert sorted(os.listdir(tmp_path)) == ["cache", "out.json"]  # no temporary file left behind


# ----- the cache -----------------------------------------------------------------------------

def test_a_cache_entry_of_the_wrong_shape_or_tampered_is_a_miss(tmp_path):
    path = tmp_path / "inst.json"
    save_instance(random_instance(4, 6, 2), path)
    out = tmp_path / "s.json"
    assert cli("solve", path, "-o", out)[0] == 0
    entries = list(Path(os.environ["CPSCHED_CACHE_DIR"]).glob("*.json"))
    assert len(entries) == 1
    entries[0].write_text(json.dumps({"format": "cpsched-schedule/1", "status": 5}))  # valid JSON, wrong shape
    code, _, stderr = cli("solve", path, "-o", out)
    assert code == 0 and "unusable" in stderr and "deleted, computing again" in stderr
    assert json.loads(out.read_text())["status"] == "optimal" and "cached" not in json.loads(out.read_text())["solver"]
    # a front whose schedules were tampered with is recomputed, not an error
    front = tmp_path / "f.json"
    assert cli("solve", path, "--epsilon", "latency", "--objectives", "latency,energy", "-o", front)[0] == 0
    stored = [p for p in Path(os.environ["CPSCHED_CACHE_DIR"]).glob("*.json")
              if json.loads(p.read_text())["format"] == "cpsched-front/1"]
    data = json.loads(stored[0].read_text())
    for point in data["points"]:
        for placement in point["schedule"]["tasks"].values():
            placement["start"] += 1000
    stored[0].write_text(json.dumps(data))
    code, _, stderr = cli("solve", path, "--epsilon", "latency", "--objectives", "latency,energy", "-o", front)
    assert code == 0 and "does not validate" in stderr and Front.from_dict(json.loads(front.read_text())).complete


# ----- malformed input -----------------------------------------------------------------------

def _instance_text() -> str:
    return json.dumps(random_instance(2, 4, 2).to_dict())


def _edited(edit) -> str:
    data = random_instance(2, 4, 2).to_dict()
    edit(data)
    return json.dumps(data)


MALFORMED = {
    "nested deep": ("[" * 1000 + "]" * 1000, f"nested 1000 deep (at most {MAX_DEPTH}"),
    "nested just too deep": ('{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1), "nested"),
    "integer of 2^62": (_edited(lambda d: d["tasks"][0]["modes"]["d0"].update(duration=2**62)), "<= 9007199254740991"),
    "integer of 5000 digits": (_instance_text().replace('"memory": 1000000000', '"memory": ' + "9" * 5000, 1),
                               "digits"),
    "totals too large": (_edited(lambda d: [dev.update(static_power=2**30) for dev in d["devices"]]
                                 + [x.update(size=2**40) for x in d["tensors"]]), "largest possible energy"),
    "output as a string": (_edited(lambda d: d["tensors"][-1].update(output="false")), "output must be true or false"),
    "host as a string": (_edited(lambda d: d["devices"][1].update(host="no")), "host must be true or false"),
    "output as a list": (_edited(lambda d: d["tensors"][-1].update(output=[])), "output must be true or false"),
    "no tensors": (_edited(lambda d: d.pop("tensors")), "missing field 'tensors'"),
    "no consumers": (_edited(lambda d: d["tensors"][0].pop("consumers")), "missing field 'consumers'"),
    "no producer": (_edited(lambda d: d["tensors"][0].pop("producer")), "missing field 'producer'"),
    "complete as a string in a front": (None, "complete must be true or false"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_input_is_one_line_exit_2_and_no_file(tmp_path, case):
    text, needle = MALFORMED[case]
    out = tmp_path / "out.json"
    if text is None:  # a front file for select
        front = cpsched.front(random_instance(4, 5, 2), ("latency", "energy")).to_dict()
        front["complete"] = "true"
        path = tmp_path / "front.json"
        path.write_text(json.dumps(front))
        code, stdout, stderr = cli("select", path, "-o", out)
    else:
        path = tmp_path / "inst.json"
        path.write_text(text)
        code, stdout, stderr = cli("solve", path, "-o", out, "--no-cache")
    assert code == 2, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and str(path) in lines[0], lines
    assert not out.exists() and not stdout


def test_booleans_in_a_platform_file_are_json_booleans(tmp_path):
    platform = tmp_path / "p.yaml"
    text = (Path(cpsched.__file__).parent / "presets" / "edge.yaml").read_text()
    platform.write_text(text.replace("host: true", 'host: "yes"', 1))
    code, _, stderr = cli("import", "alexnet", "--platform", platform)
    assert code == 2 and "host" in stderr and len(stderr.strip().splitlines()) == 1


def test_memory_infeasibility_carries_its_confirmation():
    from cpsched.engines.cpsat import CpSatEngine
    assert CpSatEngine().confirmer().memory_model == "demand" and CpSatEngine("demand").confirmer() is None
    inst = Instance.from_dict({
        "format": "cpsched-instance/1", "name": "three-in-two",
        "devices": [{"id": "a", "memory": 9, "host": True}, {"id": "b", "memory": 9}], "links": [],
        "tasks": [{"id": f"t{i}", "op": "X", "weights": 5, "modes": {"a": {"duration": 1}, "b": {"duration": 1}}}
                  for i in range(3)],
        "tensors": [{"id": "x", "size": 0, "producer": None, "consumers": ["t0", "t1", "t2"]}]})
    s = cpsched.solve(inst)
    assert s.status is Status.INFEASIBLE
    assert s.solver["infeasible"]["confirmed_by"] == "confirmed by the cpsat, demand memory model"
    assert cpsched.solve(inst, engine="cpsat", hint=None).status is Status.INFEASIBLE
    with pytest.raises(InputError):
        cpsched.solve(inst, engine="milp")  # no memory model: it cannot confirm, and says so
