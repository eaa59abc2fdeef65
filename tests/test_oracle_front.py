"""The brute-force front oracle (tests/oracle_front.py) checked against the validator,
plain enumerations and hand-computed fronts, before anything trusts it to judge an
epsilon-constraint sweep."""

from __future__ import annotations

import time

from cpsched.instance import Instance
from cpsched.schedule import Status
from cpsched.validator import objectives, validate
from oracle import brute_force, random_instance
from oracle_front import (brute_front, brute_front_latency_energy, brute_front_latency_memory,
                          dominates, left_shifted_front_latency_memory, memory_instance,
                          reference_front_latency_energy)


def _instance(devices, tasks, tensors, links, name="hand"):
    """``devices``: (id, static_power), the first is the host; ``tasks``: id -> (weights,
    workspace, {device: (duration, energy)}); ``tensors``: (id, size, producer, consumers),
    a produced tensor without consumers is a graph output; ``links``: (src, dst, latency,
    bandwidth, energy_per_byte), one channel."""
    return Instance.from_dict({
        "format": "cpsched-instance/1", "name": name,
        "devices": [{"id": d, "memory": 10**6, "static_power": sp, **({"host": True} if i == 0 else {})}
                    for i, (d, sp) in enumerate(devices)],
        "links": [{"src": s, "dst": d, "latency": lat, "bandwidth": bw, "energy_per_byte": epb,
                   "channels": 1} for s, d, lat, bw, epb in links],
        "tasks": [{"id": t, "op": "Op", "weights": w, "workspace": ws,
                   "modes": {d: {"duration": p, "energy": e} for d, (p, e) in modes.items()}}
                  for t, (w, ws, modes) in tasks.items()],
        "tensors": [{"id": i, "size": size, "producer": prod, "consumers": list(cons),
                     **({"output": True} if prod is not None and not cons else {})}
                    for i, size, prod, cons in tensors],
    })


def _check_front(instance, front, names, horizon=None):
    """(a) witnesses valid, objectives recomputed equal to the point; (b) sorted, non-dominated."""
    points = [pt for pt, _ in front]
    assert points == sorted(points) and len(set(points)) == len(points)
    assert not any(dominates(p, q) for p in points for q in points), points
    assert [p[0] for p in points] == sorted({p[0] for p in points})  # strictly increasing latency
    for point, schedule in front:
        assert schedule.status is Status.FEASIBLE
        report = validate(instance, schedule)
        assert report.valid, (instance.name, report.violations)
        values, _ = objectives(instance, schedule)
        assert tuple(values[n] for n in names) == point == tuple(schedule.objectives[n] for n in names)
        if horizon is not None:
            assert point[0] <= horizon
    return points


# ----- (latency, energy) -----------------------------------------------------------------

def test_energy_fronts_on_random_instances():
    """25 fronts, 4-6 tasks x 2-3 devices, channels 0-2.

    Measured: ~0.7 s for the 25 fronts on 2 cores, ~1 s with the checks (worst single
    front, 6 tasks x 3 devices, ~0.09 s).
    """
    t0 = time.perf_counter()
    several = 0
    for seed in range(25):
        inst = random_instance(seed, 4 + seed % 3, 2 + seed % 2, channels=(0, 1, 2))
        front = brute_front(inst, ("latency", "energy"))
        points = _check_front(inst, front, ("latency", "energy"))
        assert points == brute_front_latency_energy(inst)
        assert points[0][0] == brute_force(inst)[0]  # the fastest point is the latency optimum
        several += len(points) > 1
    elapsed = time.perf_counter() - t0
    assert several >= 5  # real trade-offs occur
    assert elapsed < 10, elapsed


def test_energy_front_matches_unpruned_enumeration():
    """Placement skipping and bounded searches change nothing: every placement with its
    Lmin by every topological order x SSGS, filtered (~0.6 s)."""
    for seed in range(30):
        for n_tasks, n_devices in ((3, 2), (4, 2), (3, 3)):
            inst = random_instance(200 + seed, n_tasks, n_devices, channels=(0, 1, 2))
            assert brute_front_latency_energy(inst) == reference_front_latency_energy(inst), inst.name


def test_energy_one_task_fast_expensive_vs_slow_cheap():
    # One task a; x (2 B) is a graph input on the cpu (host); a_out (1 B) a graph output.
    # static power cpu 1 + gpu 2 = 3 (drawn by both devices for the whole makespan).
    #   a on cpu: duration 4, energy 10, no transfer      -> L 4, E 10 + 3*4           = 22
    #   a on gpu: x moves cpu->gpu in 0 + ceil(2/2) = 1 (2 B x 2 pJ/B = 4), a 1, energy 30
    #                                                     -> L 2, E 30 + 4 + 3*2       = 40
    # Neither dominates: front [(2, 40), (4, 22)].
    inst = _instance([("cpu", 1), ("gpu", 2)], {"a": (0, 0, {"cpu": (4, 10), "gpu": (1, 30)})},
                     [("x", 2, None, ["a"]), ("a_out", 1, "a", [])],
                     [("cpu", "gpu", 0, 2, 2), ("gpu", "cpu", 0, 2, 2)])
    front = brute_front(inst, ("latency", "energy"))
    assert _check_front(inst, front, ("latency", "energy")) == [(2, 40), (4, 22)]
    assert [s.tasks["a"].device for _, s in front] == ["gpu", "cpu"]
    # With a slow link (latency 3) the gpu point becomes L 5, E 30 + 4 + 15 = 49: dominated.
    slow = _instance([("cpu", 1), ("gpu", 2)], {"a": (0, 0, {"cpu": (4, 10), "gpu": (1, 30)})},
                     [("x", 2, None, ["a"]), ("a_out", 1, "a", [])],
                     [("cpu", "gpu", 3, 2, 2), ("gpu", "cpu", 3, 2, 2)])
    assert brute_front_latency_energy(slow) == [(4, 22)]


# ----- (latency, memory) -----------------------------------------------------------------

def test_memory_instance_is_deterministic_and_shaped():
    assert memory_instance(3, 4).to_dict() == memory_instance(3, 4).to_dict()
    assert memory_instance(3, 4).to_dict() != memory_instance(4, 4).to_dict()
    for seed in range(20):
        inst = memory_instance(seed, 3 + seed % 2)
        assert [d.id for d in inst.devices] == ["cpu", "acc"] and inst.host.id == "cpu"
        assert all(set(t.modes) in ({"cpu"}, {"cpu", "acc"}) for t in inst.tasks)
        assert all(1 <= m.duration <= 3 for t in inst.tasks for m in t.modes.values())
        assert all(1 <= x.size <= 5 for x in inst.tensors)
        assert all(0 <= t.weights <= 3 and 0 <= t.workspace <= 2 for t in inst.tasks)
        assert all(l.latency <= 1 and 2 <= l.bandwidth <= 5 and l.channels == 1 for l in inst.links)
        total = sum(t.weights + t.workspace for t in inst.tasks) + sum(x.size for x in inst.tensors)
        assert all(d.memory >= total for d in inst.devices)  # capacity can never bind


def test_memory_fronts_on_random_instances():
    """10 fronts, 3-4 tasks x 2 devices, exact (no horizon).

    Measured on 2 cores: the 10 fronts ~0.13 s (worst single front ~0.04 s), ~0.2 s with
    the checks.  In 3 of them the exact front has a point that no active
    (left-shifted) schedule reaches.  (Scaling: 5 tasks <= 0.03 s, 6 tasks up to ~2 s.)
    """
    t0 = time.perf_counter()
    beats_left_shifted = several = 0
    for seed in range(10):
        inst = memory_instance(seed, 3 + seed % 2)
        front = brute_front(inst, ("latency", "memory"))
        points = _check_front(inst, front, ("latency", "memory"))
        assert points == brute_front_latency_memory(inst)
        assert points[0][0] == brute_force(inst)[0]  # the fastest point is the latency optimum
        shifted = left_shifted_front_latency_memory(inst)
        # every active schedule is a schedule: weakly dominated by the exact front
        assert all(any(p == q or dominates(p, q) for p in points) for q in shifted), (points, shifted)
        beats_left_shifted += points != shifted
        several += len(points) > 1
    elapsed = time.perf_counter() - t0
    assert several >= 3 and beats_left_shifted >= 2, (several, beats_left_shifted)
    assert elapsed < 10, elapsed


def test_memory_pruning_and_compression_are_exact():
    """Cross-checks of the two shortcuts on 20 instances (~2 s; also passed on 120
    more, seeds 100-159 x 3-4 tasks, outside the suite):

    * bound pruning off (``prune=False``) gives the same front;
    * ``allow_idle=True`` (every start time in the horizon, idle slots allowed: no use of
      the compression argument, no pruning) gives the exact front cut at the horizon,
      for a horizon 2 above the front's largest latency and one in its middle.
      (Cutting the exact front at ``h`` is the front of the schedules of makespan <= h:
      a dominating point has a latency no larger.)
    """
    for seed in range(10):
        for n_tasks in (3, 4):
            inst = memory_instance(seed, n_tasks)
            exact = brute_front_latency_memory(inst)
            assert [pt for pt, _ in brute_front(inst, ("latency", "memory"), prune=False)] == exact
            for h in (exact[-1][0] + 2, (exact[0][0] + exact[-1][0]) // 2):
                cut = [pt for pt in exact if pt[0] <= h]
                front = brute_front(inst, ("latency", "memory"), horizon=h, prune=False, allow_idle=True)
                assert _check_front(inst, front, ("latency", "memory"), horizon=h) == cut, (inst.name, h)
                assert brute_front_latency_memory(inst, h) == cut


def test_memory_delay_beats_every_left_shifted_schedule():
    # a: cpu only, 1 unit, no input, output ya (4 B, a graph output: live from a's start
    #    to the makespan on the cpu).
    # b: gpu only, 3 units, input xb (2 B, graph input on the cpu host), output yb (1 B).
    # xb moves cpu->gpu in 0 + ceil(2/2) = 1; on the cpu xb lives [0, 1) (until its transfer
    # ends), on the gpu its copy lives [0, 4).  Makespan >= 1 + 3 = 4, reached with the
    # transfer at 0 and b at 1 (the only placement; gpu peak 2 + 1 = 3 on [1, 4)).
    # * left-shifted: a starts at 0 (its earliest start, the cpu is free), so ya [0, 4)
    #   overlaps xb [0, 1): cpu peak 4 + 2 = 6 -> the only active point is (4, 6);
    # * a delayed to 1 (or 2, 3): xb is freed when ya appears (half-open intervals):
    #   cpu peak max(2, 4) = 4 -> (4, 4), which dominates (4, 6); memory >= |ya| = 4 always,
    #   latency >= 4 always, so the exact front is [(4, 4)].
    inst = _instance([("cpu", 0), ("gpu", 0)],
                     {"a": (0, 0, {"cpu": (1, 0)}), "b": (0, 0, {"gpu": (3, 0)})},
                     [("xb", 2, None, ["b"]), ("ya", 4, "a", []), ("yb", 1, "b", [])],
                     [("cpu", "gpu", 0, 2, 0), ("gpu", "cpu", 0, 2, 0)])
    front = brute_front(inst, ("latency", "memory"))
    assert _check_front(inst, front, ("latency", "memory")) == [(4, 4)]
    assert front[0][1].tasks["a"].start >= 1
    assert left_shifted_front_latency_memory(inst) == [(4, 6)]
    _, fastest = brute_force(inst)  # the latency oracle's (active) optimum
    assert fastest.tasks["a"].start == 0 and objectives(inst, fastest)[0]["memory"] == 6


def test_memory_trade_off_between_placements():
    # a: cpu 3 units or gpu 1 unit, input x (4 B, on the cpu host), output a_out (1 B).
    # b: gpu only, 1 unit, weights 4 (resident on the gpu for the whole makespan), output
    #    b_out (1 B).  x moves cpu->gpu in 0 + ceil(4/4) = 1.
    # * a on cpu [0, 3), b anywhere in [0, 3): cpu x + a_out = 5, gpu 4 + 1 = 5 -> (3, 5);
    # * a on gpu: x [0, 1), a [1, 2), b [0, 1) (b after a would give makespan 3):
    #   gpu on [1, 2): weights 4 + copy of x 4 + a_out 1 + b_out 1 = 10    -> (2, 10);
    #   latency 2 is the least possible (1 transfer + 1), and 3 the least on the cpu.
    # front [(2, 10), (3, 5)].
    inst = _instance([("cpu", 0), ("gpu", 0)],
                     {"a": (0, 0, {"cpu": (3, 0), "gpu": (1, 0)}), "b": (4, 0, {"gpu": (1, 0)})},
                     [("x", 4, None, ["a"]), ("a_out", 1, "a", []), ("b_out", 1, "b", [])],
                     [("cpu", "gpu", 0, 4, 0), ("gpu", "cpu", 0, 4, 0)])
    front = brute_front(inst, ("latency", "memory"))
    assert _check_front(inst, front, ("latency", "memory")) == [(2, 10), (3, 5)]
    assert [s.tasks["a"].device for _, s in front] == ["gpu", "cpu"]
