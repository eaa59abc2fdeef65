"""Decomposition (cpsched.decompose): coarsening, windows, the stitched schedule and its bound.

On graphs small enough to prove whole, the decomposed answer must be a valid
schedule no better than the proven optimum, and its bound must not exceed it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cpsched.bounds import relaxation_bounds, usable_devices
from cpsched.cli import app
from cpsched.decompose import AUTO_TASKS, coarsen, expand, restrict, solve, window_size, windows
from cpsched import lexico
from cpsched.engines import Options
from cpsched.generate import random_instance
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor, load_instance
from cpsched.inputs import load_input
from cpsched.schedule import Status
from cpsched.validator import validate

TINYCNN = Path(__file__).resolve().parents[1] / "instances" / "examples" / "tinycnn-edge.json"


def chain(memory: int = 10**6) -> Instance:
    """a -> b -> c on cpu/npu, then c feeds d and e: a, b, c merge into one super-task."""
    devices = (Device("cpu", 10**6, host=True), Device("npu", memory))
    links = (Link("cpu", "npu", 1, 4), Link("npu", "cpu", 1, 4))
    both = {"cpu": Mode(6, 3), "npu": Mode(2, 5)}
    tasks = tuple(Task(v, "op", dict(both), weights=10, workspace=w)
                  for v, w in zip("abcde", (1, 50, 2, 3, 4)))
    tensors = (Tensor("x", 8, None, ("a",)), Tensor("ab", 30, "a", ("b",)), Tensor("bc", 20, "b", ("c",)),
               Tensor("cd", 4, "c", ("d", "e")), Tensor("d.out", 1, "d", output=True),
               Tensor("e.out", 1, "e", output=True))
    return Instance("chain", devices, links, tasks, tensors)


def test_coarsen_merges_a_chain_with_exact_sums_and_its_peak_memory():
    inst = chain()
    coarse = coarsen(inst, usable_devices(inst))
    assert dict(coarse.members) == {"a": ("a", "b", "c"), "d": ("d",), "e": ("e",)}
    sup = coarse.instance.task("a")
    assert sup.modes["cpu"] == Mode(18, 9) and sup.modes["npu"] == Mode(6, 15)
    assert sup.weights == 30
    assert sup.workspace == 50 + 30 + 20  # b holds its workspace and both internal tensors
    assert {t.id for t in coarse.instance.tensors} == {"x", "cd", "d.out", "e.out"}


def test_coarsen_stops_a_chain_that_would_not_fit_a_device():
    # a+b needs weights 20 + workspace max(1 + 30, 50 + 30) + x 8 + bc 20 = 128 bytes while it
    # runs; a+b+c would need 30 + (50 + 30 + 20) + 8 + 4 = 142, over the npu's 130
    inst = chain(memory=130)
    coarse = coarsen(inst, usable_devices(inst))
    assert dict(coarse.members) == {"a": ("a", "b"), "c": ("c",), "d": ("d",), "e": ("e",)}
    assert set(coarse.instance.task("a").modes) == {"cpu", "npu"}


@pytest.mark.parametrize("seed", range(6))
def test_expanded_coarse_optimum_is_valid_and_no_better_than_the_whole_optimum(seed):
    inst = load_instance(TINYCNN) if seed == 0 else random_instance(seed, 10, 3, memory=40)
    usable = usable_devices(inst)
    coarse = coarsen(inst, usable)
    whole = lexico.solve(inst, ["latency"], Options(time_limit=30))
    part = lexico.solve(coarse.instance, ["latency"], Options(time_limit=30))
    if not part.status.has_schedule:
        return
    back = expand(coarse, inst, part)
    assert validate(inst, back, check_claims=False).valid
    assert back.objectives["latency"] == part.objectives["latency"]
    assert back.objectives["memory"] <= part.objectives["memory"]  # the coarse model never holds less
    assert whole.status is Status.OPTIMAL
    assert back.objectives["latency"] >= whole.objectives["latency"]


def test_windows_cover_the_graph_in_topological_order():
    inst = load_input("squeezenet", platform="edge")
    parts = windows(inst, 10)
    order = [v for part in parts for v in part]
    assert sorted(order) == sorted(t.id for t in inst.tasks)
    position = {v: i for i, v in enumerate(order)}
    assert all(position[u] < position[v] for u, v in inst.graph.edges)
    assert all(len(p) >= 10 for p in parts[:-1])


def test_restrict_keeps_tensors_needed_later_alive():
    inst = chain()
    sub = restrict(inst, {"a", "b"})
    assert [t.id for t in sub.tasks] == ["a", "b"]
    bc = sub.tensor("bc")
    assert bc.consumers == () and bc.output  # consumed by c later: live to the prefix's end
    assert "cd" not in {t.id for t in sub.tensors}


CASES = [("tinycnn", 3), ("rand-1", 4), ("rand-2", 5), ("rand-3", 3), ("chain", 2), ("memory-4", 4)]


def case(name: str) -> Instance:
    if name == "tinycnn":
        return load_instance(TINYCNN)
    if name == "chain":
        return chain()
    seed = int(name.split("-")[1])
    return random_instance(seed, 14, 3, memory=45 if name.startswith("memory") else 10**9)


@pytest.mark.parametrize("name,window", CASES)
def test_decomposed_schedule_is_valid_and_its_bound_holds(name, window):
    inst = case(name)
    whole = lexico.solve(inst, ["latency"], Options(time_limit=30))
    assert whole.status is Status.OPTIMAL
    result = solve(inst, ["latency"], Options(time_limit=20), decompose=window)
    info = result.solver["decompose"]
    assert info["window"] == window and info["windows"] >= 1
    assert validate(inst, result).valid
    optimum = whole.objectives["latency"]
    assert result.objectives["latency"] >= optimum
    bound = optimum if result.status is Status.OPTIMAL else result.bounds["latency"]
    assert bound <= optimum
    if result.status is Status.OPTIMAL:
        assert result.objectives["latency"] == optimum


def test_a_graph_below_the_auto_threshold_is_solved_whole():
    inst = load_instance(TINYCNN)
    assert len(inst.tasks) <= AUTO_TASKS and window_size(inst, "auto") is None
    result = solve(inst, ["latency"], Options(time_limit=30), decompose="auto")
    assert "decompose" not in result.solver
    assert result.status is Status.OPTIMAL
    assert result.objectives == lexico.solve(inst, ["latency"], Options(time_limit=30)).objectives


def test_auto_decomposes_a_large_heterogeneous_graph_but_not_identical_processors():
    big = load_input("inception_v1", platform="edge")
    assert len(big.tasks) > AUTO_TASKS and window_size(big, "auto") is not None
    stg = Instance("wide", tuple(Device(f"p{i}", 10**9, host=i == 0) for i in range(2)), (),
                   tuple(Task(f"t{i}", "op", {"p0": Mode(1, 0), "p1": Mode(1, 0)}) for i in range(AUTO_TASKS + 5)),
                   ())
    assert window_size(stg, "auto") is None
    assert window_size(big, "off") is None and window_size(big, 7) == 7
    with pytest.raises(ValueError):
        window_size(big, 0)


@pytest.mark.parametrize("seed", range(8))
def test_relaxation_bounds_never_exceed_proven_optima(seed):
    inst = random_instance(200 + seed, 8, 3, memory=10**9)
    lower = relaxation_bounds(inst, usable_devices(inst))
    for objective in ("latency", "energy", "memory"):
        result = lexico.solve(inst, [objective], Options(time_limit=30))
        assert result.status is Status.OPTIMAL
        assert lower[objective] <= result.objectives[objective], objective


def test_cli_decompose_option(tmp_path):
    out = tmp_path / "s.json"
    runner = CliRunner()
    ok = runner.invoke(app, ["solve", str(TINYCNN), "--decompose", "4", "--no-cache", "--time-limit", "20",
                             "-o", str(out)])
    assert ok.exit_code in (0, 3), ok.output
    assert out.exists()
    bad = runner.invoke(app, ["solve", str(TINYCNN), "--decompose", "x"])
    assert bad.exit_code == 2 and "--decompose" in bad.output
