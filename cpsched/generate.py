"""Random instances for tests and benchmarks, deterministic per seed.

>>> inst = random_instance(0, 5, 3)
>>> len(inst.tasks), [d.id for d in inst.devices], inst.host.id
(5, ['d0', 'd1', 'd2'], 'd0')
"""

from __future__ import annotations

import random

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
