"""Platform presets and YAML platform files (cpsched.platforms)."""

import textwrap
from pathlib import Path

import pytest
import yaml

from cpsched.errors import InputError
from cpsched.platforms import PRESET_DIR, PRESETS, DeviceSpec, LinkSpec, Platform, load_platform


@pytest.mark.parametrize("name", PRESETS)
def test_preset_loads_with_one_host(name):
    platform = load_platform(name)
    assert platform.name == name
    assert platform.description
    assert sum(d.host for d in platform.devices) == 1
    assert platform.host.id == ("cpu0" if name == "cpu2" else "cpu")


def test_cpu2_is_executable_here():
    """Both devices of cpu2 name the CPU provider and one thread; the other presets name none."""
    assert {(d.provider, d.threads) for d in load_platform("cpu2").devices} == {("CPUExecutionProvider", 1)}
    assert all(d.provider is None for d in load_platform("edge").devices)


def test_provider_and_threads_are_checked(tmp_path):
    base = ("name: p\ndevices:\n  - {id: c, host: true, peak_flops: 1.0e+9, mem_bandwidth: 1.0e+9, "
            "launch_overhead: 0, active_power: 1, static_power: 0, memory: 1000, ")
    for extra, message in (("threads: 0}", "threads must be >= 1"), ("provider: ''}", "provider must be")):
        path = tmp_path / "p.yaml"
        path.write_text(base + extra + "\n")
        with pytest.raises(InputError, match=message):
            load_platform(path)


@pytest.mark.parametrize("name", PRESETS)
def test_preset_links_go_both_ways(name):
    platform = load_platform(name)
    pairs = {(l.src, l.dst) for l in platform.links}
    assert pairs, "a preset with several devices needs links"
    for src, dst in pairs:
        assert (dst, src) in pairs, f"{name}: link {src}->{dst} has no reverse"
    linked = {end for pair in pairs for end in pair}
    assert linked == {d.id for d in platform.devices}


@pytest.mark.parametrize("name", PRESETS)
def test_preset_numbers_read_as_numbers_by_plain_pyyaml(name):
    """Other tools may read the presets with yaml.safe_load (YAML 1.1 floats)."""
    data = yaml.safe_load((PRESET_DIR / f"{name}.yaml").read_text())
    for dev in data["devices"]:
        for key in ("peak_flops", "mem_bandwidth", "launch_overhead", "active_power", "static_power", "memory"):
            assert isinstance(dev[key], (int, float)), (name, dev["id"], key)
    for link in data["links"]:
        for key in ("latency", "bandwidth", "energy_per_byte"):
            assert isinstance(link[key], (int, float)), (name, link["src"], link["dst"], key)


def test_preset_device_ids():
    assert [d.id for d in load_platform("edge").devices] == ["cpu", "gpu", "npu"]
    assert [d.id for d in load_platform("server").devices] == ["cpu", "gpu"]
    assert [d.id for d in load_platform("multigpu").devices] == ["cpu", "gpu0", "gpu1"]


def test_multigpu_nvlink_is_faster_than_pcie():
    platform = load_platform("multigpu")
    bw = {(l.src, l.dst): l.bandwidth for l in platform.links}
    assert bw[("gpu0", "gpu1")] > bw[("cpu", "gpu0")]
    assert ("cpu", "cpu") not in bw


@pytest.mark.parametrize("op", ["LRN", "Softmax", "Gather", "NonZero", "NonMaxSuppression", "TopK",
                                "Unique", "Loop", "If", "Shape", "Resize"])
def test_edge_npu_excludes(op):
    edge = load_platform("edge")
    assert not edge.device("npu").supports(op)
    assert edge.device("cpu").supports(op)


def test_edge_npu_runs_dense_ops_and_is_small():
    edge = load_platform("edge")
    npu = edge.device("npu")
    for op in ("Conv", "Gemm", "MatMul", "Relu", "Add", "MaxPool"):
        assert npu.supports(op)
    assert npu.memory < 10**8 < edge.device("gpu").memory


def test_supports_ops_and_exclude():
    kw = dict(peak_flops=1.0, mem_bandwidth=1.0, launch_overhead=0.0, active_power=0.0,
              static_power=0.0, memory=1)
    assert DeviceSpec("a", **kw).supports("Anything")
    assert not DeviceSpec("a", exclude=frozenset({"If"}), **kw).supports("If")
    listed = DeviceSpec("a", ops=frozenset({"Conv", "If"}), exclude=frozenset({"If"}), **kw)
    assert listed.supports("Conv") and not listed.supports("If") and not listed.supports("Relu")


GOOD = """\
name: mine
devices:
  - id: cpu
    host: true
    peak_flops: 1e9
    mem_bandwidth: 2.0e9
    launch_overhead: 0
    active_power: 1
    static_power: 0.5
    memory: 4.0e6
  - id: acc
    peak_flops: 4e9
    mem_bandwidth: 1e9
    launch_overhead: 1.0e-6
    active_power: 2
    static_power: 0
    memory: 1000
    ops: [Conv, Relu]
links:
  - {src: cpu, dst: acc, latency: 1e-6, bandwidth: 1e9, energy_per_byte: 1e-11}
  - {src: acc, dst: cpu, latency: 1e-6, bandwidth: 1e9, energy_per_byte: 1e-11, channels: 0}
"""


def write(tmp_path: Path, text: str, name: str = "plat.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("as_str", [True, False])
def test_load_yaml_path(tmp_path, as_str):
    path = write(tmp_path, GOOD)
    platform = load_platform(str(path) if as_str else path)
    assert platform.name == "mine"
    cpu, acc = platform.devices
    assert cpu.host and cpu.peak_flops == 1e9 and cpu.memory == 4_000_000 and isinstance(cpu.memory, int)
    assert cpu.ops is None and acc.ops == frozenset({"Conv", "Relu"})
    assert platform.links[0] == LinkSpec("cpu", "acc", 1e-6, 1e9, 1e-11, 1)
    assert platform.links[1].channels == 0
    assert platform.description == ""


def test_unknown_platform_names_presets(tmp_path):
    with pytest.raises(InputError) as err:
        load_platform(str(tmp_path / "nope.yaml"))
    msg = str(err.value)
    assert "nope.yaml" in msg and "edge" in msg and "\n" not in msg


def _replace(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


BAD = {
    "unknown top key": (GOOD + "extra: 1\n", ["unknown key 'extra'"]),
    "unknown device key": (_replace("    peak_flops: 4e9\n", "    peak_flop: 4e9\n"),
                           ["device 'acc'", "unknown key 'peak_flop'"]),
    "unknown link key": (_replace("energy_per_byte: 1e-11}", "energy_per_byte: 1e-11, lat: 2}"),
                         ["link cpu->acc", "unknown key 'lat'"]),
    "missing device field": (_replace("    mem_bandwidth: 1e9\n", ""), ["device 'acc'", "missing field 'mem_bandwidth'"]),
    "missing device id": (_replace("  - id: acc\n    peak_flops", "  - peak_flops"), ["devices[1]", "missing field 'id'"]),
    "missing link field": (_replace("latency: 1e-6, bandwidth: 1e9, energy_per_byte: 1e-11}",
                                    "latency: 1e-6, energy_per_byte: 1e-11}"),
                           ["link cpu->acc", "missing field 'bandwidth'"]),
    "missing name": (GOOD.replace("name: mine\n", ""), ["missing field 'name'"]),
    "zero peak_flops": (_replace("peak_flops: 4e9", "peak_flops: 0"), ["device 'acc': peak_flops", "> 0"]),
    "negative mem_bandwidth": (_replace("mem_bandwidth: 2.0e9", "mem_bandwidth: -1"),
                               ["device 'cpu': mem_bandwidth", "> 0"]),
    "zero link bandwidth": (_replace("latency: 1e-6, bandwidth: 1e9", "latency: 1e-6, bandwidth: 0"),
                            ["link cpu->acc: bandwidth", "> 0"]),
    "negative latency": (_replace("latency: 1e-6", "latency: -1e-6"), ["link cpu->acc: latency", ">= 0"]),
    "negative power": (_replace("active_power: 2", "active_power: -2"), ["device 'acc': active_power", ">= 0"]),
    "infinite rate": (_replace("peak_flops: 4e9", "peak_flops: .inf"), ["device 'acc': peak_flops", "finite"]),
    "string number": (_replace("peak_flops: 4e9", "peak_flops: 4 GFLOPS"), ["device 'acc': peak_flops", "number"]),
    "fractional memory": (_replace("memory: 1000", "memory: 10.5"), ["device 'acc': memory", "integer"]),
    "bad ops": (_replace("ops: [Conv, Relu]", "ops: some"), ["device 'acc': ops"]),
    "bad host": (_replace("host: true", "host: 1"), ["device 'cpu': host"]),
    "duplicate id": (_replace("  - id: acc", "  - id: cpu"), ["duplicate device id 'cpu'"]),
    "no host": (_replace("    host: true\n", ""), ["exactly one device must have host: true", "found 0"]),
    "two hosts": (_replace("  - id: acc\n", "  - id: acc\n    host: true\n"), ["exactly one", "found 2"]),
    "unknown link device": (_replace("{src: cpu, dst: acc", "{src: cpu, dst: tpu"),
                            ["link cpu->tpu", "unknown device 'tpu'"]),
    "self link": (_replace("{src: cpu, dst: acc", "{src: cpu, dst: cpu"), ["link cpu->cpu", "two different"]),
    "duplicate link": (_replace("{src: acc, dst: cpu", "{src: cpu, dst: acc"), ["duplicate link cpu->acc"]),
    "no devices": ("name: x\ndevices: []\n", ["at least one device"]),
    "devices not a list": ("name: x\ndevices: {cpu: 1}\n", ["devices must be a list"]),
    "not a mapping": ("- 1\n- 2\n", ["must be a mapping"]),
    "bad yaml": ("name: x\ndevices: [\n  - id: cpu\n", ["invalid YAML", "line"]),
    "bad yaml tab": ("name: x\n\tdevices: []\n", ["invalid YAML"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_validation_error_is_one_line_naming_file_and_field(tmp_path, case):
    text, fragments = BAD[case]
    path = write(tmp_path, text, "bad-platform.yaml")
    with pytest.raises(InputError) as err:
        load_platform(path)
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: "), msg
    for fragment in fragments:
        assert fragment in msg, msg


def test_direct_construction_validates():
    kw = dict(peak_flops=1.0, mem_bandwidth=1.0, launch_overhead=0.0, active_power=0.0,
              static_power=0.0, memory=1)
    with pytest.raises(InputError, match="device 'a': peak_flops"):
        DeviceSpec("a", **{**kw, "peak_flops": 0.0})
    with pytest.raises(InputError, match="exactly one device"):
        Platform("p", devices=(DeviceSpec("a", **kw),))
    with pytest.raises(InputError, match="duplicate device id 'a'"):
        Platform("p", devices=(DeviceSpec("a", host=True, **kw), DeviceSpec("a", **kw)))
