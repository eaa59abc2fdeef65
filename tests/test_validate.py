"""The validator: objectives recomputed by hand, and one test per kind of violation."""

import dataclasses

import pytest

from cpsched.instance import Instance
from cpsched.schedule import Placement, Schedule, Status, Transfer
from cpsched.validator import KINDS, validate


def instance(channels=1, gpu_memory=1000) -> Instance:
    """cpu (host) + gpu; input x -> a -> y -> b, a -> w -> c; b and c write outputs."""
    return Instance.from_dict({
        "format": "cpsched-instance/1", "name": "vt",
        "devices": [{"id": "cpu", "memory": 1000, "static_power": 2, "host": True},
                    {"id": "gpu", "memory": gpu_memory, "static_power": 3}],
        "links": [{"src": "cpu", "dst": "gpu", "latency": 1, "bandwidth": 2, "energy_per_byte": 5,
                   "channels": channels},
                  {"src": "gpu", "dst": "cpu", "latency": 1, "bandwidth": 2, "energy_per_byte": 5,
                   "channels": channels}],
        "tasks": [{"id": "a", "op": "Conv", "weights": 10, "workspace": 7,
                   "modes": {"cpu": {"duration": 6, "energy": 60}, "gpu": {"duration": 2, "energy": 40}}},
                  {"id": "b", "op": "Relu", "modes": {"cpu": {"duration": 3, "energy": 30},
                                                        "gpu": {"duration": 1, "energy": 20}}},
                  {"id": "c", "op": "Softmax", "modes": {"cpu": {"duration": 4, "energy": 8}}}],
        "tensors": [{"id": "x", "size": 4, "producer": None, "consumers": ["a"]},
                    {"id": "y", "size": 6, "producer": "a", "consumers": ["b"]},
                    {"id": "w", "size": 2, "producer": "a", "consumers": ["c"]},
                    {"id": "yb", "size": 5, "producer": "b", "consumers": [], "output": True},
                    {"id": "wc", "size": 1, "producer": "c", "consumers": [], "output": True},
                    {"id": "ctl", "size": 0, "producer": "b", "consumers": ["c"]}]})


def good() -> Schedule:
    """a on gpu after x arrives (1 + ceil(4/2) = 3); b on gpu at 5; w back to cpu at 5..7; c at 7."""
    return Schedule("vt", Status.FEASIBLE,
                    {"a": Placement("gpu", 3), "b": Placement("gpu", 5), "c": Placement("cpu", 7)},
                    (Transfer("x", "cpu", "gpu", 0), Transfer("w", "gpu", "cpu", 5)))


def test_objectives_recomputed_by_hand():
    report = validate(instance(), good())
    assert report.valid, report.violations
    # makespan: c ends at 11
    assert report.objectives["latency"] == 11
    # modes 40 + 20 + 8; transfers (4 + 2) bytes x 5; static (2 + 3) x 11
    assert report.objectives["energy"] == 68 + 30 + 55
    # gpu: weights 10 over [0,11); copy of x [0,5) 4; workspace [3,5) 7; y [3,6) 6; w [3,7) 2;
    # yb [5,11) 5.  At t in [3,5): 10 + 4 + 7 + 6 + 2 = 29 (yb starts at 5, x's copy ends at 5).
    assert report.peaks["gpu"] == 29
    # cpu: x [0, 3) 4 (until its transfer out ends); copy of w [5, 11) 2; wc [7, 11) 1
    assert report.peaks["cpu"] == 4
    assert report.objectives["memory"] == 29


def kinds(inst, sched):
    return {v.kind for v in validate(inst, sched).violations}


def replace(s: Schedule, **changes) -> Schedule:
    return dataclasses.replace(s, **changes)


def with_task(s, task, device, start):
    return replace(s, tasks={**s.tasks, task: Placement(device, start)})


CASES = {
    "missing-task": lambda s: replace(s, tasks={k: v for k, v in s.tasks.items() if k != "c"}),
    "unknown-task": lambda s: with_task(s, "zz", "cpu", 0),
    "unsupported-device": lambda s: with_task(s, "c", "gpu", 7),
    "precedence": lambda s: with_task(s, "b", "gpu", 4),
    "device-overlap": lambda s: replace(
        s, tasks={**s.tasks, "a": Placement("cpu", 0), "c": Placement("cpu", 5)},
        transfers=(Transfer("y", "cpu", "gpu", 6),)),
    "missing-transfer": lambda s: replace(s, transfers=s.transfers[:1]),
    "superfluous-transfer": lambda s: replace(s, transfers=s.transfers + (Transfer("y", "gpu", "cpu", 5),)),
    "transfer-source": lambda s: replace(s, transfers=(Transfer("x", "gpu", "cpu", 0), s.transfers[1])),
    "transfer-early": lambda s: replace(s, transfers=(s.transfers[0], Transfer("w", "gpu", "cpu", 4))),
    "objective": lambda s: replace(s, objectives={"latency": 10}),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_violation_kind_is_caught(kind):
    found = kinds(instance(), CASES[kind](good()))
    assert kind in found, found


def test_no_link():
    inst = instance()
    one_way = dataclasses.replace(inst, links=inst.links[:1])
    assert "no-link" in kinds(one_way, good())


def test_link_channels():
    # a and c both on cpu do not help; send x and a second input over one channel at once
    inst = instance()
    data = inst.to_dict()
    data["tensors"].append({"id": "x2", "size": 4, "producer": None, "consumers": ["b"]})
    two = Instance.from_dict(data)
    s = replace(good(), transfers=good().transfers + (Transfer("x2", "cpu", "gpu", 0),))
    assert "link-channels" in kinds(two, s)
    data["links"][0]["channels"] = 2
    assert kinds(Instance.from_dict(data), s) == set()


def test_capacity():
    assert "capacity" in kinds(instance(gpu_memory=28), good())
    assert kinds(instance(gpu_memory=29), good()) == set()


def test_every_kind_has_a_test():
    tested = set(CASES) | {"no-link", "link-channels", "capacity"} | {"memory-plan", "arena"} \
        | {"unsupported-mode"}  # test_memplan.py, test_modes.py
    assert tested == set(KINDS)


def test_size_zero_tensor_is_pure_precedence():
    # ctl (b -> c, size 0) needs no transfer but c must start after b ends (6)
    s = with_task(good(), "c", "cpu", 5)
    report = validate(instance(), replace(s, transfers=(good().transfers[0], Transfer("w", "gpu", "cpu", 5))))
    assert any(v.kind == "precedence" and "'ctl'" in v.message for v in report.violations)


def test_empty_answer_has_nothing_to_check():
    assert validate(instance(), Schedule("vt", Status.INFEASIBLE, reason="none")).valid
