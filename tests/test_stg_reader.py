"""The Kasahara STG reader (cpsched.io.stg) on the shared data set and on malformed inline texts."""

from __future__ import annotations

import re
from pathlib import Path

import networkx as nx
import pytest

from cpsched.errors import InputError
from cpsched.instance import Instance
from cpsched.io.stg import MEMORY, parse_stg, read_stg

STG = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "stg"
RANDOM_50 = [f"rand{i:04d}" for i in range(10)]
APPLICATIONS = {"robot": 88, "sparse": 96, "fpppp": 334}

needs_data = pytest.mark.skipif(not STG.is_dir(), reason=f"STG data not found at {STG}")


def header(path: Path) -> dict[str, str]:
    """The '# Key : value' lines of a file's information part."""
    out = {}
    for line in path.read_text().splitlines():
        m = re.match(r"^#\s*([^:]+?)\s*:\s*(.*?)\s*$", line)
        if m:
            out.setdefault(m.group(1), m.group(2))
    return out


def critical_path(inst: Instance) -> int:
    """Longest path with node weights = durations: edge u->v weighs dur(u), plus a sink."""
    dur = {t.id: next(iter(t.modes.values())).duration for t in inst.tasks}
    g = nx.DiGraph()
    for u, v in inst.graph.edges:
        g.add_edge(u, v, weight=dur[u])
    for u in inst.graph.nodes:
        g.add_edge(u, "__sink__", weight=dur[u])
    return nx.dag_longest_path_length(g, weight="weight")


def total_work(inst: Instance) -> int:
    return sum(next(iter(t.modes.values())).duration for t in inst.tasks)


def expected_work(h: dict[str, str], n: int) -> int:
    """Total work from the header: n * average processing time (the 'Real' one when given)."""
    avg = h["Ave. Proc. Time"]
    m = re.search(r"Real\s*:\s*([0-9.]+)", avg)
    return round(float(m.group(1) if m else avg.split()[0]) * n)


def check_structure(inst: Instance, m: int, n: int) -> None:
    assert [d.id for d in inst.devices] == [f"p{i}" for i in range(m)]
    assert inst.host.id == "p0"
    assert all(d.memory == MEMORY and d.static_power == 0 for d in inst.devices)
    assert len(inst.links) == m * (m - 1)
    assert all(
        (l.latency, l.bandwidth, l.energy_per_byte, l.channels) == (0, 1, 0, 0) for l in inst.links
    )
    assert [t.id for t in inst.tasks] == [f"t{k}" for k in range(1, n + 1)]
    for t in inst.tasks:
        assert t.op == "stg" and set(t.modes) == {d.id for d in inst.devices}
        assert len({(md.duration, md.energy) for md in t.modes.values()}) == 1
        assert all(md.energy == 0 and md.duration >= 1 for md in t.modes.values())
    for x in inst.tensors:
        assert x.size == 0 and x.id == f"{x.producer}.out" and x.consumers and not x.output
        keys = [int(c[1:]) for c in x.consumers]
        assert keys == sorted(keys) and min(keys) > int(x.producer[1:])


# ----- (1) the 50-task random graphs -------------------------------------------------------
@needs_data
@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("graph", RANDOM_50)
def test_random_50(graph: str, m: int):
    path = STG / "50" / f"{graph}.stg"
    inst = read_stg(path, m)
    h = header(path)
    assert inst.name == f"{graph}/m={m}"
    assert inst.meta["source"] == "stg" and inst.meta["processors"] == m
    check_structure(inst, m, 50)
    cp = int(h["CP Length"])
    assert inst.meta["cp_length"] == cp
    assert critical_path(inst) == cp
    work = total_work(inst)
    assert work == expected_work(h, 50)
    assert work == pytest.approx(float(h["Parallelism"]) * cp, abs=0.01)
    # Edges: the header counts real edges plus those to/from the dummies.
    real_edges = int(h["Edges"].split()[0])
    assert inst.graph.number_of_edges() == real_edges


# ----- (2) the application graphs ---------------------------------------------------------
@needs_data
@pytest.mark.parametrize("graph", sorted(APPLICATIONS))
def test_application(graph: str):
    path = STG / "application" / f"{graph}.stg"
    inst = read_stg(path, 4)
    h = header(path)
    n = APPLICATIONS[graph]
    check_structure(inst, 4, n)
    assert inst.name == f"{graph}/m=4"
    assert critical_path(inst) == int(h["CP Length"]) == inst.meta["cp_length"]
    assert total_work(inst) == pytest.approx(float(h["Parallelism"]) * int(h["CP Length"]), abs=0.01)


# ----- (3) malformed inputs -------------------------------------------------------------
GOOD = """\
3
0 0 0
1 2 1 0
2 3 1 1
3 4 2 0 1
4 0 2 2 3
# CP Length : 6
"""


def test_good_inline():
    inst = parse_stg(GOOD, 1, "good")
    assert inst.name == "good/m=1" and len(inst.devices) == 1 and inst.links == ()
    assert [(x.id, x.consumers) for x in inst.tensors] == [("t1.out", ("t2", "t3"))]
    assert critical_path(inst) == 6 and inst.meta["cp_length"] == 6


def test_uneven_spacing_and_no_header():
    text = "  3\n   0  0 0\n1    2 1 0\n2 3   1    1\n  3 4 2 0 1\n4 0 2   2 3"
    inst = parse_stg(text, 2, "x")
    assert len(inst.tasks) == 3 and "cp_length" not in inst.meta


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("", r"empty file"),
        ("\n\n# only a comment\n", r"empty file"),
        ("3 4\n", r"line 1: .*only the task count"),
        ("x\n", r"line 1: task count n must be an integer \(got 'x'\)"),
        ("0\n0 0 0\n1 0 0\n", r"line 1: task count n must be >= 1"),
        # truncated: only 4 of the 5 task lines
        ("3\n0 0 0\n1 2 1 0\n2 3 1 1\n3 4 2 0 1\n# CP Length : 6\n", r"line 6: task 4: file ends after 4 task lines.*truncated"),
        ("3\n", r"line 2: task 0: file ends after 0 task lines"),
        # fewer predecessor fields than the count k
        ("3\n0 0 0\n1 2 1 0\n2 3 2 1\n3 4 2 0 1\n4 0 2 2 3\n", r"line 4: task 2: predecessor count is 2 but only 1"),
        ("3\n0 0 0\n1 2\n2 3 1 1\n3 4 2 0 1\n4 0 2 2 3\n", r"line 3: task 1: a task line needs"),
        ("3\n0 0 0\n1 2 1 0 0\n2 3 1 1\n3 4 2 0 1\n4 0 2 2 3\n", r"line 3: task 1: predecessor count is 1 but 2"),
        # id out of sequence
        ("3\n0 0 0\n2 3 1 0\n1 2 1 0\n3 4 2 0 1\n4 0 2 2 3\n", r"line 3: task id 2 out of sequence \(expected 1\)"),
        # predecessor not lower than the task's own id
        ("3\n0 0 0\n1 2 1 0\n2 3 1 3\n3 4 2 0 1\n4 0 2 2 3\n", r"line 4: task 2: predecessor 3 is not lower than the task's own id"),
        ("3\n0 0 0\n1 2 1 0\n2 3 1 2\n3 4 2 0 1\n4 0 2 2 3\n", r"line 4: task 2: predecessor 2 is not lower"),
        ("3\n0 0 0\n1 2 1 -1\n2 3 1 1\n3 4 2 0 1\n4 0 2 2 3\n", r"line 3: task 1: predecessor -1 is not lower"),
        # a real task refers to the exit dummy n+1
        ("3\n0 0 0\n1 2 1 0\n2 3 1 4\n3 4 2 0 1\n4 0 2 2 3\n", r"line 4: task 2: refers to the dummy exit task 4"),
        # a real task with processing time 0
        ("3\n0 0 0\n1 2 1 0\n2 0 1 1\n3 4 2 0 1\n4 0 2 2 3\n", r"line 4: task 2: processing time 0 .*duration >= 1"),
        ("3\n0 0 0\n1 -2 1 0\n2 3 1 1\n3 4 2 0 1\n4 0 2 2 3\n", r"line 3: task 1: processing time must be >= 0"),
        # non-integer tokens
        ("3\n0 0 0\n1 2.5 1 0\n2 3 1 1\n3 4 2 0 1\n4 0 2 2 3\n", r"line 3: task 1: processing time must be an integer \(got '2.5'\)"),
        ("3\n0 0 0\n1 2 1 0\n2 3 one 1\n3 4 2 0 1\n4 0 2 2 3\n", r"line 4: task 2: predecessor count must be an integer"),
        ("3\n0 0 0\n1 2 1 0\n2 3 1 a\n3 4 2 0 1\n4 0 2 2 3\n", r"line 4: task 2: predecessor id must be an integer \(got 'a'\)"),
        ("3\n0 0 0\nx 2 1 0\n2 3 1 1\n3 4 2 0 1\n4 0 2 2 3\n", r"line 3: task 1: task id must be an integer"),
        # other format rules
        ("3\n0 5 0\n1 2 1 0\n2 3 1 1\n3 4 2 0 1\n4 0 2 2 3\n", r"line 2: task 0: the dummy entry task must have processing time 0"),
        ("3\n0 0 0\n1 2 1 0\n2 3 1 1\n3 4 2 0 1\n4 7 2 2 3\n", r"line 6: task 4: the dummy exit task must have processing time 0"),
        ("3\n0 0 0\n1 2 1 0\n2 3 2 1 1\n3 4 2 0 1\n4 0 2 2 3\n", r"line 4: task 2: predecessor 1 is listed twice"),
        ("3\n0 0 0\n1 2 1 0\n2 3 1 1\n3 4 2 0 1\n4 0 2 2 3\n5 1 0\n", r"line 7: unexpected content after the exit task 4"),
    ],
)
def test_malformed(text: str, pattern: str):
    with pytest.raises(InputError, match=pattern) as info:
        parse_stg(text, 2, "bad")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("processors, pattern", [
    (0, r"processors must be >= 1 \(got 0\)"),
    (-3, r"processors must be >= 1"),
    (2.0, r"processors must be an integer \(got 2.0\)"),
    ("2", r"processors must be an integer"),
    (True, r"processors must be an integer"),
])
def test_bad_processors(processors, pattern: str):
    with pytest.raises(InputError, match=pattern):
        parse_stg(GOOD, processors, "good")


def test_read_stg_prefixes_path(tmp_path: Path):
    bad = tmp_path / "broken.stg"
    bad.write_text("3\n0 0 0\n1 2 1 0\n2 0 1 1\n3 4 2 0 1\n4 0 2 2 3\n")
    with pytest.raises(InputError) as info:
        read_stg(bad, 2)
    assert str(info.value).startswith(f"{bad}: line 4: task 2: processing time 0")
    with pytest.raises(InputError, match=r"no such file"):
        read_stg(tmp_path / "missing.stg", 2)
    good = tmp_path / "good.stg"
    good.write_text(GOOD)
    assert read_stg(str(good), 3).name == "good/m=3"


# ----- (4) round trip --------------------------------------------------------------------
def _roundtrip(inst: Instance) -> None:
    data = inst.to_dict()
    back = Instance.from_dict(data)
    assert back.to_dict() == data
    assert back.name == inst.name and dict(back.meta) == dict(inst.meta)
    assert back.tasks == inst.tasks and back.tensors == inst.tensors and back.links == inst.links


def test_roundtrip_inline():
    _roundtrip(parse_stg(GOOD, 3, "good"))


@needs_data
@pytest.mark.parametrize("rel, m", [("50/rand0000.stg", 4), ("application/robot.stg", 2)])
def test_roundtrip_files(rel: str, m: int):
    _roundtrip(read_stg(STG / rel, m))
