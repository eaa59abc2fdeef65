"""Random instances for tests and benchmarks, deterministic per seed.

:func:`random_instance` makes small heterogeneous instances (optionally with named
modes); :func:`dvfs_instance` makes task graphs with communication delays on
identical processors with discrete speed levels, in the style of Stewart, Raith
and Sinnen (Computers & OR 2023), for the DVFS suites (``instances/make_dvfs.py``).

>>> inst = random_instance(0, 5, 3)
>>> len(inst.tasks), [d.id for d in inst.devices], inst.host.id
(5, ['d0', 'd1', 'd2'], 'd0')
"""

from __future__ import annotations

import random
from fractions import Fraction

import networkx as nx

from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor


#: Relative speed of d0 (host), d1, d2: durations are scaled by these factors.
_SPEED = (1.0, 0.6, 0.35)


def random_instance(seed: int, n_tasks: int, n_devices: int, *, channels=(1,),
                    size_zero_prob: float = 0.2, memory: int = 10**9, n_modes: int = 1) -> Instance:
    """A random small instance, deterministic per ``seed``.

    Devices ``d0`` (the host, slowest), ``d1``, ``d2`` (faster); a random DAG in
    which task ``i > 0`` gets 0-2 predecessors among earlier tasks (biased so
    that tensors with two consumers occur); every task produces one tensor,
    consumed by all its successors, or a graph output if it has none; one or
    two graph inputs consumed by early tasks.  Durations 1-9 per device, tasks
    always run on the host and on each other device with probability 0.8;
    sizes 0-6 (0 with probability ``size_zero_prob``); a link for every
    ordered device pair, ``channels`` drawn from ``channels``.  ``memory`` is
    large by default so that memory never binds.  ``n_modes`` > 1 gives every
    (task, device) that many named modes (:func:`with_modes`).
    """
    assert 1 <= n_devices <= len(_SPEED), n_devices
    assert n_tasks >= 1
    rng = random.Random(seed)

    def size() -> int:
        return 0 if rng.random() < size_zero_prob else rng.randint(1, 6)

    dev_ids = [f"d{i}" for i in range(n_devices)]
    devices = tuple(
        Device(id=d, memory=memory, static_power=rng.randint(0, 2), host=(i == 0))
        for i, d in enumerate(dev_ids)
    )
    links = tuple(
        Link(src=a, dst=b, latency=rng.randint(0, 2), bandwidth=rng.randint(1, 3),
             energy_per_byte=rng.randint(0, 2), channels=rng.choice(tuple(channels)))
        for a in dev_ids for b in dev_ids if a != b
    )

    task_ids = [f"t{i}" for i in range(n_tasks)]
    succs: dict[str, list[str]] = {t: [] for t in task_ids}
    for i in range(1, n_tasks):
        earlier = task_ids[:i]
        k = min(rng.randint(0, 2), i)
        chosen: list[str] = []
        single = [t for t in earlier if len(succs[t]) == 1]
        if k and single and rng.random() < 0.4:  # make a tensor with two consumers
            chosen.append(rng.choice(single))
        while len(chosen) < k:
            p = rng.choice(earlier)
            if p not in chosen:
                chosen.append(p)
        for p in chosen:
            succs[p].append(task_ids[i])

    tasks = []
    for tid in task_ids:
        base = rng.randint(2, 9)
        modes = {}
        for i, d in enumerate(dev_ids):
            if i > 0 and rng.random() >= 0.8:
                continue
            dur = max(1, min(9, round(base * _SPEED[i]) + rng.randint(-1, 1)))
            modes[d] = Mode(duration=dur, energy=rng.randint(0, 9))
        tasks.append(Task(id=tid, op="Op", modes=modes, weights=rng.randint(0, 3),
                          workspace=rng.randint(0, 3)))

    tensors = []
    early = task_ids[:min(3, n_tasks)]
    first = ["t0"] + ([t for t in early[1:] if rng.random() < 0.3])
    tensors.append(Tensor(id="in0", size=size(), producer=None, consumers=tuple(first)))
    if rng.random() < 0.5:
        tensors.append(Tensor(id="in1", size=size(), producer=None,
                              consumers=(rng.choice(early),)))
    for tid in task_ids:
        if succs[tid]:
            tensors.append(Tensor(id=f"{tid}_out", size=size(), producer=tid,
                                  consumers=tuple(succs[tid])))
        else:
            tensors.append(Tensor(id=f"{tid}_out", size=size(), producer=tid, output=True))

    plain = Instance(name=f"rand-{seed}-{n_tasks}x{n_devices}", devices=devices, links=links,
                     tasks=tuple(tasks), tensors=tuple(tensors))
    return plain if n_modes == 1 else with_modes(plain, n_modes, seed)


def with_modes(instance: Instance, count: int, seed: int) -> Instance:
    """``instance`` with ``count`` named modes ``q0``.. per (task, device), deterministic per seed.

    ``q0`` is the task's own mode; each next one is no slower, usually faster, and
    costs some ``error``, with random energy, weights and (positive) output sizes
    that may shrink: the trade-offs of precision modes, small enough for brute force.
    """
    rng = random.Random(seed * 7919 + count)
    tasks = []
    for task in instance.tasks:
        outputs = [t for t in instance.outputs_of[task.id] if t.size]
        choices = {}
        for dev, (base,) in task.choices.items():
            modes = [Mode(base.duration, base.energy, name="q0")]
            for k in range(1, count):
                prev = modes[-1]
                modes.append(Mode(max(1, prev.duration - rng.randint(0, 2)), rng.randint(0, 9), name=f"q{k}",
                                  error=prev.error + rng.randint(0, 3), weights=rng.randint(0, task.weights),
                                  outputs={t.id: rng.randint(1, t.size) for t in outputs}))
            choices[dev] = modes
        tasks.append(Task(task.id, task.op, choices, task.weights, task.workspace))
    return Instance(f"{instance.name}-m{count}", instance.devices, instance.links, tuple(tasks), instance.tensors)


SHAPES = ("random", "forkjoin", "outtree", "intree", "pipeline", "seriesparallel")
"""Task graph structures of :func:`dvfs_instance`."""
#: speed levels as fractions of the fastest, by number of levels; dynamic power ~ speed^3
LEVELS = {2: (Fraction(1), Fraction(2, 3)), 3: (Fraction(1), Fraction(2, 3), Fraction(1, 3))}
PEAK_POWER = 27  # dynamic power at full speed: 27 x (2/3)^3 = 8, 27 x (1/3)^3 = 1, integers
STATIC_POWER = 2  # per processor, for the whole makespan


def dvfs_graph(seed: int, n_tasks: int, shape: str) -> nx.DiGraph:
    """A DAG on tasks ``0..n_tasks-1`` (edges from lower to higher numbers) of the given shape."""
    rng = random.Random(seed)
    g = nx.DiGraph()
    g.add_nodes_from(range(n_tasks))
    if shape == "random":  # each task after the first takes 1-2 predecessors among the earlier ones
        for v in range(1, n_tasks):
            for u in rng.sample(range(v), min(v, rng.randint(1, 2))):
                g.add_edge(u, v)
    elif shape == "forkjoin":  # a source, 2-4 chains, a sink
        middle = list(range(1, n_tasks - 1))
        k = rng.randint(2, 4)
        for b in range(k):
            chain = middle[b::k]
            for u, v in zip([0] + chain, chain + [n_tasks - 1]):
                g.add_edge(u, v)
    elif shape in ("outtree", "intree"):
        for v in range(1, n_tasks):
            g.add_edge(rng.randrange(max(0, v - 4), v), v)
        if shape == "intree":
            g = nx.relabel_nodes(g.reverse(), {v: n_tasks - 1 - v for v in g})
    elif shape == "pipeline":  # layers of 2-3 stages, each feeding itself and a neighbour in the next layer
        width = rng.randint(2, 3)
        for v in range(width, n_tasks):
            g.add_edge(v - width, v)
            if v % width and rng.random() < 0.5:
                g.add_edge(v - width - 1, v)
    elif shape == "seriesparallel":
        _series_parallel(g, list(range(n_tasks)), rng)
    else:
        raise ValueError(f"shape must be one of {', '.join(SHAPES)} (got {shape!r})")
    return g


def _series_parallel(g: nx.DiGraph, tasks: list[int], rng: random.Random) -> tuple[list[int], list[int]]:
    """Compose ``tasks`` (in order) into a series-parallel graph; return its (sources, sinks)."""
    if len(tasks) == 1:
        return tasks, tasks
    cut = rng.randint(1, len(tasks) - 1)
    first, second = _series_parallel(g, tasks[:cut], rng), _series_parallel(g, tasks[cut:], rng)
    if rng.random() < 0.6 or len(tasks) < 4:  # series: every sink of the first feeds every source of the second
        g.add_edges_from((u, v) for u in first[1] for v in second[0])
        return first[0], second[1]
    return first[0] + second[0], first[1] + second[1]


def dvfs_instance(seed: int, n_tasks: int, shape: str, ccr: float, processors: int, levels: int) -> Instance:
    """Identical processors with ``levels`` speed levels, a task graph with communication delays.

    Task work ``w`` 5-20 time units at full speed; at speed ``s`` a task takes
    ``ceil(w / s)`` and its energy is ``27 s^3`` per time unit (27, 8, 1); every
    processor draws 2 per time unit for the whole makespan.  Each edge is a tensor
    whose size is its communication delay (contention-free links of bandwidth 1,
    latency 0, no link energy, as the classical model), scaled so that total
    communication / total work is ``ccr``.  Memory never binds.
    """
    if levels not in LEVELS:
        raise ValueError(f"levels must be one of {sorted(LEVELS)} (got {levels!r})")
    rng = random.Random(f"{seed}-{n_tasks}-{shape}-{ccr}-{processors}-{levels}")
    g = dvfs_graph(rng.randrange(2**31), n_tasks, shape)
    work = {v: rng.randint(5, 20) for v in g}
    raw = {e: rng.randint(1, 10) for e in g.edges}
    scale = Fraction(ccr).limit_denominator(1000) * sum(work.values()) / max(1, sum(raw.values()))
    devices = tuple(Device(f"p{i}", memory=10**12, static_power=STATIC_POWER, host=i == 0) for i in range(processors))
    links = tuple(Link(a.id, b.id, latency=0, bandwidth=1, channels=0) for a in devices for b in devices if a != b)
    speeds = LEVELS[levels]
    tasks = []
    for v in sorted(g):
        modes = [Mode(duration=-(-work[v] * s.denominator // s.numerator),
                      energy=int(PEAK_POWER * s**3 * -(-work[v] * s.denominator // s.numerator)),
                      name=_speed_name(s)) for s in speeds]
        tasks.append(Task(f"t{v}", "task", {d.id: modes for d in devices}))
    tensors = tuple(Tensor(f"t{u}->t{v}", max(1, round(raw[u, v] * scale)), f"t{u}", (f"t{v}",))
                    for u, v in sorted(g.edges))
    name = f"dvfs-{n_tasks}-{shape}-ccr{ccr:g}-p{processors}-l{levels}-s{seed}"
    return Instance(name, devices, links, tuple(tasks), tensors,
                    meta={"generator": "cpsched.generate.dvfs_instance", "seed": seed, "shape": shape, "ccr": ccr,
                          "processors": processors, "levels": levels})


def _speed_name(speed: Fraction) -> str:
    return "full" if speed == 1 else f"{speed.numerator}/{speed.denominator}"
