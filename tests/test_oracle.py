"""The brute-force oracle (tests/oracle.py) checked against the validator, a plain
enumeration and hand-computed optima, before anything trusts it to judge an engine."""

from __future__ import annotations

import time

import pytest

from cpsched.instance import Instance
from cpsched.schedule import Status
from cpsched.validator import validate
from oracle import brute_force, brute_force_latency, random_instance, reference_latency


def _instance(tasks, tensors, links, name="hand"):
    """Host ``cpu`` and ``gpu``; ``tasks`` maps id -> {device: duration}; links as (src, dst, lat, bw, ch)."""
    return Instance.from_dict({
        "format": "cpsched-instance/1", "name": name,
        "devices": [{"id": "cpu", "memory": 10**9, "static_power": 0, "host": True},
                    {"id": "gpu", "memory": 10**9, "static_power": 0}],
        "links": [{"src": s, "dst": d, "latency": lat, "bandwidth": bw, "channels": ch}
                  for s, d, lat, bw, ch in links],
        "tasks": [{"id": t, "op": "Op", "modes": {d: {"duration": p, "energy": 0} for d, p in modes.items()}}
                  for t, modes in tasks.items()],
        "tensors": [{"id": i, "size": size, "producer": prod, "consumers": list(cons),
                     **({"output": True} if prod is not None and not cons else {})}
                    for i, size, prod, cons in tensors],
    })


def _check(instance, expected):
    value, schedule = brute_force(instance)
    report = validate(instance, schedule)
    assert report.valid, report.violations
    assert value == expected == report.objectives["latency"]
    return schedule


# ----- random instances ----------------------------------------------------------------------

def test_random_instance_is_deterministic_and_shaped():
    a, b = random_instance(7, 6, 3), random_instance(7, 6, 3)
    assert a.to_dict() == b.to_dict()
    assert random_instance(8, 6, 3).to_dict() != a.to_dict()
    multi = False
    for seed in range(30):
        inst = random_instance(seed, 6, 3, channels=(0, 1, 2))
        assert inst.host.id == "d0" and [d.id for d in inst.devices] == ["d0", "d1", "d2"]
        assert len(inst.links) == 6 and {l.channels for l in inst.links} <= {0, 1, 2}
        assert all("d0" in t.modes for t in inst.tasks)
        assert all(1 <= m.duration <= 9 for t in inst.tasks for m in t.modes.values())
        assert all(0 <= x.size <= 6 for x in inst.tensors)
        assert all(len(inst.outputs_of[t.id]) == 1 for t in inst.tasks)
        inputs = [x for x in inst.tensors if x.producer is None]
        assert 1 <= len(inputs) <= 2 and all(x.consumers and not x.output for x in inputs)
        for x in inst.tensors:
            if x.producer is not None:
                assert x.output == (not x.consumers)
        multi |= any(len(x.consumers) > 1 for x in inst.tensors)
    assert multi


def test_oracle_schedules_are_valid_on_random_instances():
    """>= 30 instances, 4-6 tasks, 2-3 devices, channels in (0, 1, 2).

    Measured: ~0.4 s for the 30 on 2 cores (worst single 6-task x 3-device instance ~0.13 s).
    """
    t0 = time.perf_counter()
    for seed in range(30):
        inst = random_instance(seed, 4 + seed % 3, 2 + seed % 2, channels=(0, 1, 2))
        value, schedule = brute_force(inst)
        assert schedule.status is Status.FEASIBLE
        report = validate(inst, schedule)
        assert report.valid, (inst.name, report.violations)
        assert report.objectives["latency"] == value == schedule.objectives["latency"]
        # everything on the host, one after another, is a schedule with no transfers
        assert value <= sum(t.modes["d0"].duration for t in inst.tasks)
        assert value >= max(min(m.duration for m in t.modes.values()) for t in inst.tasks)
    assert time.perf_counter() - t0 < 15


def test_pruned_search_matches_plain_enumeration():
    """The pruned DFS equals every placement x every topological order decoded by SSGS."""
    for seed in range(40):
        for n_tasks, n_devices in ((3, 2), (4, 2), (3, 3)):
            inst = random_instance(100 + seed, n_tasks, n_devices, channels=(0, 1, 2))
            assert brute_force_latency(inst) == reference_latency(inst), inst.name


# ----- hand-made instances with known optima -------------------------------------------------

LINKS = [("cpu", "gpu", 2, 2, 1), ("gpu", "cpu", 2, 2, 1)]


def test_chain_moves_to_fast_device_despite_transfer():
    # x (4 B, on the host) -> a -> a_out (6 B) -> b -> b_out (output); a, b: cpu 4, gpu 1;
    # links latency 2, bandwidth 2.  Placements:
    #   cpu, cpu: 4 + 4 = 8
    #   gpu, gpu: x moves in 2 + ceil(4/2) = 4, then 1 + 1          -> 6  (optimum)
    #   cpu, gpu: 4 + a_out moves in 2 + ceil(6/2) = 5, + 1           = 10
    #   gpu, cpu: 4 + 1 + 5 + 4                                       = 14
    # b_out is a graph output: it stays on the gpu, no transfer back.
    inst = _instance({"a": {"cpu": 4, "gpu": 1}, "b": {"cpu": 4, "gpu": 1}},
                     [("x", 4, None, ["a"]), ("a_out", 6, "a", ["b"]), ("b_out", 5, "b", [])], LINKS)
    schedule = _check(inst, 6)
    assert {t: p.device for t, p in schedule.tasks.items()} == {"a": "gpu", "b": "gpu"}
    assert [(x.tensor, x.dst, x.start) for x in schedule.transfers] == [("x", "gpu", 0)]


def test_chain_stays_on_host_when_the_link_is_slow():
    # Same chain, latency 5: gpu, gpu costs 5 + 2 + 1 + 1 = 9 > cpu, cpu = 8.
    slow = [("cpu", "gpu", 5, 2, 1), ("gpu", "cpu", 5, 2, 1)]
    inst = _instance({"a": {"cpu": 4, "gpu": 1}, "b": {"cpu": 4, "gpu": 1}},
                     [("x", 4, None, ["a"]), ("a_out", 6, "a", ["b"]), ("b_out", 5, "b", [])], slow)
    schedule = _check(inst, 8)
    assert not schedule.transfers


def test_two_independent_tasks_split_across_devices():
    # a, b independent, each cpu 3, gpu 2; x is a size-0 input (no transfer wherever they run).
    # both cpu: 6; both gpu: 4; split: max(3, 2) = 3 (optimum).
    inst = _instance({"a": {"cpu": 3, "gpu": 2}, "b": {"cpu": 3, "gpu": 2}},
                     [("x", 0, None, ["a", "b"]), ("a_out", 1, "a", []), ("b_out", 1, "b", [])], LINKS)
    schedule = _check(inst, 3)
    assert {p.device for p in schedule.tasks.values()} == {"cpu", "gpu"}
    assert not schedule.transfers


@pytest.mark.parametrize("channels, expected", [(1, 9), (0, 6), (2, 6)])
def test_link_exclusivity_serialises_transfers(channels, expected):
    # x1, x2 (4 B each, on the host) feed a and b, which run only on the gpu (duration 1);
    # link cpu->gpu latency 0, bandwidth 1: each transfer takes 4.
    # channels 1: x1 [0,4), x2 [4,8); a [4,5), b [8,9)                  -> 9
    # channels 0 or 2: both [0,4); a [4,5), b [5,6) (the gpu serialises) -> 6
    links = [("cpu", "gpu", 0, 1, channels), ("gpu", "cpu", 0, 1, channels)]
    inst = _instance({"a": {"gpu": 1}, "b": {"gpu": 1}},
                     [("x1", 4, None, ["a"]), ("x2", 4, None, ["b"]),
                      ("a_out", 1, "a", []), ("b_out", 1, "b", [])], links)
    schedule = _check(inst, expected)
    assert len(schedule.transfers) == 2


def test_tensor_with_two_consumers_moves_once():
    # x (4 B) feeds a and b, both gpu-only (1); one transfer [0,4) serves both: a [4,5), b [5,6).
    # (Two transfers over a 1-channel link would give 9.)
    links = [("cpu", "gpu", 0, 1, 1)]
    inst = _instance({"a": {"gpu": 1}, "b": {"gpu": 1}},
                     [("x", 4, None, ["a", "b"]), ("a_out", 1, "a", []), ("b_out", 1, "b", [])], links)
    schedule = _check(inst, 6)
    assert len(schedule.transfers) == 1


def test_size_zero_tensor_is_a_pure_precedence():
    # a (gpu 2) -> a_out (0 B) -> b (cpu 3): no transfer, no link needed, b starts at a's end: 5.
    inst = _instance({"a": {"gpu": 2}, "b": {"cpu": 3}},
                     [("a_out", 0, "a", ["b"]), ("b_out", 1, "b", [])], [])
    schedule = _check(inst, 5)
    assert not schedule.transfers and schedule.tasks["b"].start == 2


def test_placements_needing_a_missing_link_are_skipped():
    # a (cpu 5, gpu 1) -> a_out (2 B) -> b (cpu 1); only cpu->gpu exists, so a cannot run on
    # the gpu (a_out could not come back): 5 + 1 = 6.  With gpu->cpu (latency 0, bandwidth 2):
    # a on the gpu, 1 + ceil(2/2) + 1 = 3.
    tasks = {"a": {"cpu": 5, "gpu": 1}, "b": {"cpu": 1}}
    tensors = [("a_out", 2, "a", ["b"]), ("b_out", 1, "b", [])]
    _check(_instance(tasks, tensors, [("cpu", "gpu", 0, 2, 1)]), 6)
    _check(_instance(tasks, tensors, [("cpu", "gpu", 0, 2, 1), ("gpu", "cpu", 0, 2, 1)]), 3)


def test_no_feasible_placement_raises():
    inst = _instance({"a": {"gpu": 1}}, [("x", 4, None, ["a"]), ("a_out", 1, "a", [])], [])
    with pytest.raises(ValueError, match="no placement"):
        brute_force(inst)
