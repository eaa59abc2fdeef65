"""Classes of interchangeable devices, and concrete devices for a schedule of a merged class.

Identical processors (STG's P|prec|Cmax, several equal accelerators) make a
symmetry that per-device models pay for with ``k!`` relabellings of every
schedule.  A class of devices that nothing can tell apart is one resource of
capacity ``k``; any schedule of it with at most ``k`` tasks at once assigns to
concrete members by interval partitioning (:func:`assign_members`).  The CP-SAT
model and the justification heuristic both schedule such classes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from cpsched.instance import Device, Instance
from cpsched.schedule import Placement


def signature(instance: Instance, dev: Device) -> tuple:
    """What a device is to the tasks: two devices with one signature run every task alike."""
    return (dev.memory, dev.static_power,
            tuple(tuple(m.key for m in t.choices[dev.id]) if dev.id in t.choices else None
                  for t in instance.tasks))


def alike(instance: Instance, ids: Iterable[str]) -> list[list[str]]:
    """The groups of two or more of the devices ``ids`` (in the instance's order) that share one
    :func:`signature`: devices that run every task alike."""
    keep = set(ids)
    groups: dict[tuple, list[str]] = {}
    for dev in instance.devices:
        if dev.id in keep:
            groups.setdefault(signature(instance, dev), []).append(dev.id)
    return [members for members in groups.values() if len(members) > 1]


def identical_devices(instance: Instance) -> bool:
    """True when at least two devices are interchangeable for every task.

    That symmetry is the class where CP-SAT needs its larger portfolio
    (CPSAT-NOTES section 7).
    """
    return bool(alike(instance, (d.id for d in instance.devices)))


def device_classes(instance: Instance, usable: Mapping[str, tuple[str, ...]],
                   memory_devices: set[str]) -> dict[str, tuple[str, ...]]:
    """Classes of interchangeable devices that a model may merge into one resource.

    Representative (the first member) -> members, for every group of two or
    more devices with one signature that nothing can tell apart in a
    schedule: no memory is modelled on them, no tensor of nonzero size can
    reach them (so links and transfers never involve them), and each task may
    use all of them or none.  Then any schedule of the merged resource (at
    most ``len(members)`` tasks at once) assigns to concrete devices by
    interval partitioning, so merging loses no schedule and adds none: the
    per-device symmetry (``k!`` relabellings) is gone.
    """
    moving = {v for t in instance.tensors if t.size for v in (t.producer, *t.consumers) if v is not None}
    touched = {d for v in moving for d in usable[v]}
    if any(t.size and t.producer is None for t in instance.tensors):
        touched.add(instance.host.id)
    classes = {}
    for members in alike(instance, (d.id for d in instance.devices if d.id not in memory_devices | touched)):
        if all(set(members) <= set(ds) or not set(members) & set(ds) for ds in usable.values()):
            classes[members[0]] = tuple(members)
    return classes


def assign_members(instance: Instance, tasks: Mapping[str, Placement],
                   classes: Mapping[str, tuple[str, ...]]) -> dict[str, Placement]:
    """Concrete devices for the tasks placed on a class representative in ``tasks``.

    Interval partitioning by start time: each task takes the first member free
    at its start, which exists while at most ``len(members)`` of the class's
    tasks run at once.  Returns the re-placed tasks only.
    """
    assigned = {}
    for r, members in classes.items():
        free_at = dict.fromkeys(members, 0)
        for v, p in sorted(((v, p) for v, p in tasks.items() if p.device == r), key=lambda vp: vp[1].start):
            d = next(d for d in members if free_at[d] <= p.start)
            free_at[d] = p.start + instance.task(v).mode(d, p.mode).duration
            assigned[v] = Placement(d, p.start, p.mode)
    return assigned


def symmetric_groups(instance: Instance, usable: Mapping[str, tuple[str, ...]],
                     merged: Mapping[str, tuple[str, ...]] | None = None) -> list[tuple[str, ...]]:
    """Groups of two or more devices that any permutation within the group maps onto
    themselves, although data moves between them (so :func:`device_classes` cannot merge them).

    Members share a signature; every link between two members is alike, and a member's
    links to and from each other device are alike across members; each task may use all
    members or none; the host is no member while a graph input has nonzero size.  Relabelling
    members then maps every schedule onto one with the same objectives, so a model may keep
    only the labelling in which members are used in order of their first task
    (:func:`canonical`): the ``k!`` relabellings of identical processors with communication
    are searched once.  Devices already in a ``merged`` class are left out.
    """
    taken = {m for members in (merged or {}).values() for m in members}
    host_fixed = any(t.size and t.producer is None for t in instance.tensors)
    out = []
    pending = alike(instance, (d.id for d in instance.devices if d.id not in taken and not (d.host and host_fixed)))
    while pending:
        members = pending.pop()
        parts = _split_by_links(instance, members)
        if len(parts) > 1:
            pending += [part for part in parts if len(part) > 1]
        elif all(set(members) <= set(ds) or not set(members) & set(ds) for ds in usable.values()):
            out.append(tuple(members))
    return sorted(out)


def _split_by_links(instance: Instance, members: list[str]) -> list[list[str]]:
    """``members`` split by their links: to and from each device outside them, and the
    multiset of their links to and from the other members (one part: all alike)."""
    def key(link):  # () for a missing link: keys stay comparable
        return () if link is None else (link.latency, link.bandwidth, link.energy_per_byte, link.channels)

    others = [d.id for d in instance.devices if d.id not in members]
    parts: dict[tuple, list[str]] = {}
    for a in members:
        outside = tuple((key(instance.link(a, c)), key(instance.link(c, a))) for c in others)
        inside = tuple(sorted((key(instance.link(a, b)), key(instance.link(b, a))) for b in members if b != a))
        parts.setdefault((outside, inside), []).append(a)
    if len(parts) == 1 and len({key(instance.link(a, b)) for a in members for b in members if a != b}) > 1:
        return [[a] for a in members]  # alike profiles, yet not every pair alike
    return list(parts.values())


def canonical(instance: Instance, tasks: Mapping[str, Placement],
              groups: list[tuple[str, ...]]) -> dict[str, str]:
    """The relabelling (device -> device) that puts each group's members in the order of their
    first task in topological order, the labelling the model keeps (identity elsewhere)."""
    rename: dict[str, str] = {}
    for members in groups:
        used = list(dict.fromkeys(tasks[v].device for v in instance.topological_order
                                  if v in tasks and tasks[v].device in members))
        order = used + [m for m in members if m not in used]
        rename.update({old: new for old, new in zip(order, members) if old != new})
    return rename
