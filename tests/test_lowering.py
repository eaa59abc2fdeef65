"""Pricing an OpGraph on a Platform (cpsched.lowering): roofline, rounding, errors, round trip."""

import json

import pytest

from cpsched.errors import InputError
from cpsched.instance import Instance
from cpsched.lowering import duration_us, energy_pj, to_instance
from cpsched.opgraph import OpGraph, OpNode, OpTensor
from cpsched.platforms import PRESETS, DeviceSpec, LinkSpec, Platform, load_platform

# cpu: 1000 FLOP/us, 1000 B/us, 2 us launch, 1.5 W, 0.25 W static.
CPU = DeviceSpec("cpu", host=True, peak_flops=1e9, mem_bandwidth=1e9, launch_overhead=2e-6,
                 active_power=1.5, static_power=0.25, memory=10**6)
# acc: 10000 FLOP/us, 500 B/us, 5 us launch (5e-6 is not exact in binary), 2 W, runs Conv and Relu.
ACC = DeviceSpec("acc", peak_flops=1e10, mem_bandwidth=5e8, launch_overhead=5e-6, active_power=2.0,
                 static_power=0.1, memory=5000, ops=frozenset({"Conv", "Relu"}))
LAB = Platform("lab", devices=(CPU, ACC), links=(
    LinkSpec("cpu", "acc", latency=1.5e-6, bandwidth=2.5e6, energy_per_byte=2.5e-12),
    LinkSpec("acc", "cpu", latency=0.0, bandwidth=1e9, energy_per_byte=1e-11, channels=0),
))


def node(name, op, flops, nbytes, inputs=(), outputs=(), **kw):
    return OpNode(name, op, tuple(inputs), tuple(outputs), flops=flops, bytes=nbytes, **kw)


def graph():
    """x -> conv -> a -> relu -> b -> soft -> y (output); conv has weights and workspace."""
    return OpGraph(
        "g",
        nodes=(node("conv", "Conv", 50_000, 1000, ["x"], ["a"], weights=864, workspace=128),
               node("relu", "Relu", 100, 4000, ["a"], ["b"]),
               node("soft", "Softmax", 1500, 0, ["b"], ["y"])),
        tensors=(OpTensor("x", 600, None, ("conv",)),
                 OpTensor("a", 2000, "conv", ("relu",)),
                 OpTensor("b", 2000, "relu", ("soft",)),
                 OpTensor("y", 40, "soft", (), output=True)),
        unknown_ops={"Softmax": 1},
        meta={"source": "hand-built"},
    )


def modes(inst, task):
    return {d: (m.duration, m.energy) for d, m in inst.task(task).modes.items()}


def test_roofline_durations_and_energies():
    inst = to_instance(graph(), LAB)
    # conv: cpu 2 + max(50, 1) = 52 (compute-bound); acc 5 + max(5, 2) = 10 (compute-bound).
    # energy = W x us x 1e6 pJ.
    assert modes(inst, "conv") == {"cpu": (52, 78_000_000), "acc": (10, 20_000_000)}
    # relu: cpu 2 + max(0.1, 4) = 6; acc 5 + max(0.01, 8) = 13 (memory-bound).
    assert modes(inst, "relu") == {"cpu": (6, 9_000_000), "acc": (13, 26_000_000)}
    # soft: only the cpu runs Softmax; 2 + max(1.5, 0) = 3.5, rounded up to 4.
    assert modes(inst, "soft") == {"cpu": (4, 6_000_000)}


def test_ceil_launch_overhead_and_floor_of_one():
    tiny = node("t", "Relu", 1, 1)
    assert duration_us(tiny, CPU) == 3  # 2 + 0.001 -> 3
    assert duration_us(tiny, ACC) == 6  # 5 + 0.002 -> 6
    empty = node("e", "Relu", 0, 0)
    assert duration_us(empty, ACC) == 5  # launch alone: exactly 5 us, not 5.000000000000001 -> 6
    free = DeviceSpec("f", peak_flops=1e9, mem_bandwidth=1e9, launch_overhead=0.0, active_power=1.0,
                      static_power=0.0, memory=1)
    assert duration_us(empty, free) == 1  # PROBLEM.md: duration >= 1
    assert duration_us(node("h", "Relu", 1000, 0), free) == 1  # exactly 1 us stays 1
    assert duration_us(node("h", "Relu", 1001, 0), free) == 2


def test_energy_rounds_to_nearest_halves_up():
    dev = DeviceSpec("d", peak_flops=1.0, mem_bandwidth=1.0, launch_overhead=0.0, active_power=2.5e-7,
                     static_power=0.0, memory=0)
    assert [energy_pj(d, dev) for d in (1, 2, 3, 6)] == [0, 1, 1, 2]  # 0.25, 0.5, 0.75, 1.5 pJ


def test_devices_and_links_quantised():
    inst = to_instance(graph(), LAB)
    cpu, acc = inst.devices
    assert (cpu.id, cpu.host, cpu.memory, cpu.static_power) == ("cpu", True, 10**6, 250_000)
    assert (acc.id, acc.host, acc.memory, acc.static_power) == ("acc", False, 5000, 100_000)
    there, back = inst.link("cpu", "acc"), inst.link("acc", "cpu")
    # 1.5 us -> 2 (up); 2.5 B/us -> 2 (down); 2.5 pJ/B -> 3 (nearest, halves up).
    assert (there.latency, there.bandwidth, there.energy_per_byte, there.channels) == (2, 2, 3, 1)
    assert (back.latency, back.bandwidth, back.energy_per_byte, back.channels) == (0, 1000, 10, 0)


def test_link_slower_than_one_byte_per_us_is_an_error():
    slow = Platform("slow", devices=(CPU, ACC), links=(LinkSpec("cpu", "acc", 0.0, 5e5, 0.0),))
    with pytest.raises(InputError, match=r"link cpu->acc: bandwidth .* below 1 byte/us"):
        to_instance(graph(), slow)


def test_tasks_and_tensors_carried_over():
    inst = to_instance(graph(), LAB)
    assert [t.id for t in inst.tasks] == ["conv", "relu", "soft"]
    conv = inst.task("conv")
    assert (conv.op, conv.weights, conv.workspace) == ("Conv", 864, 128)
    assert [(t.id, t.size, t.producer, t.consumers, t.output) for t in inst.tensors] == [
        ("x", 600, None, ("conv",), False),
        ("a", 2000, "conv", ("relu",), False),
        ("b", 2000, "relu", ("soft",), False),
        ("y", 40, "soft", (), True),
    ]


def test_name_and_meta():
    inst = to_instance(graph(), LAB)
    assert inst.name == "g@lab"
    assert to_instance(graph(), LAB, name="custom").name == "custom"
    assert inst.meta["source"] == "hand-built"
    assert inst.meta["platform"] == "lab"
    assert "rounded up" in inst.meta["quantisation"]
    assert inst.meta["unknown_ops"] == {"Softmax": 1}
    assert inst.units["time"] == "us" and inst.units["energy"] == "pJ"


def test_node_supported_nowhere_is_named():
    g = OpGraph("g", nodes=(node("x", "Foo", 1, 1, [], ["o"]),), tensors=(OpTensor("o", 4, "x", (), True),))
    nowhere = Platform("nowhere", devices=(
        DeviceSpec("cpu", host=True, peak_flops=1e9, mem_bandwidth=1e9, launch_overhead=0.0,
                   active_power=1.0, static_power=0.0, memory=10, exclude=frozenset({"Foo"})),
        ACC))
    with pytest.raises(InputError) as err:
        to_instance(g, nowhere)
    assert str(err.value) == "node 'x' (op Foo) is supported by no device of platform nowhere"


def test_round_trip_through_dict_and_json():
    inst = to_instance(graph(), LAB)
    data = json.loads(json.dumps(inst.to_dict()))
    again = Instance.from_dict(data)
    assert again.to_dict() == inst.to_dict()
    assert modes(again, "conv") == modes(inst, "conv")


@pytest.mark.parametrize("name", PRESETS)
def test_presets_lower(name):
    platform = load_platform(name)
    g = OpGraph("m", nodes=(node("conv", "Conv", 10**8, 10**6, ["x"], ["a"]),
                            node("lrn", "LRN", 10**5, 10**6, ["a"], ["y"])),
                tensors=(OpTensor("x", 10**5, None, ("conv",)), OpTensor("a", 10**5, "conv", ("lrn",)),
                         OpTensor("y", 10**5, "lrn", (), True)))
    inst = to_instance(g, platform)
    assert set(inst.task("conv").modes) == {d.id for d in platform.devices}
    assert "npu" not in inst.task("lrn").modes
    assert len(inst.links) == len(platform.links)
    assert all(l.bandwidth >= 1 for l in inst.links)
    Instance.from_dict(inst.to_dict())
