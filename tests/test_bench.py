"""The benchmark runner: suite loading and validation, the match rules, local and dask runs,
the result tables and records, and the known optima the smoke suite relies on."""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import itertools
import json
import shutil
from functools import lru_cache
from pathlib import Path

import pytest

from cpsched import bench
from cpsched.bench import ERROR, Known, load_suite, match, run_entry, run_suite, save_records, write_results
from cpsched.errors import InputError
from cpsched.inputs import load_input
from cpsched.instance import Instance
from cpsched.io.stg import parse_stg, read_stg
from cpsched.schedule import Placement, Schedule, Status, load_schedule
from cpsched.validator import validate
from oracle import brute_force_latency

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "instances" / "smoke.yaml"
GRAPHS = ROOT / "instances" / "smoke"
TINYCNN = ROOT / "instances" / "examples" / "tinycnn-edge.json"
DATA = ROOT.parent / "shared" / "data"
needs_data = pytest.mark.skipif(not (DATA / "stg").is_dir(), reason="shared/data not present")


def _timeless(rows):
    return [dataclasses.replace(r, time=None) for r in rows]


# ----- the smoke suite ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def smoke():
    suite = load_suite(SMOKE)
    return suite, run_suite(suite, jobs=2)


def test_smoke_suite_matches_every_known_optimum(smoke, tmp_path):
    suite, rows = smoke
    assert len(rows) == len(suite.entries) == 8
    assert [r.instance for r in rows] == ["tinycnn@edge", "alexnet@edge", "g12/m=2", "g12/m=3",
                                          "g16/m=2", "g16/m=3", "g20/m=2", "g20/m=3"]  # suite order
    assert [r.index for r in rows] == list(range(8))
    assert [(r.status, r.match) for r in rows] == [("optimal", "yes")] * 8, [r.error for r in rows]
    assert all(r.value == r.bound == r.known.lower and r.gap == 0.0 for r in rows)

    csv_path, md_path = write_results(rows, tmp_path / "out" / "smoke.csv", suite.description)
    assert md_path == tmp_path / "out" / "smoke.md"
    table = list(csv.DictReader(csv_path.read_text().splitlines()))
    assert list(table[0]) == list(bench.CSV_COLUMNS)
    assert [(t["instance"], t["value"], t["known"], t["match"]) for t in table] == \
        [(r.instance, str(r.value), str(r.known), "yes") for r in rows]
    md = md_path.read_text()
    assert "known optimum matched: 8/8 proven" in md
    for r in rows:
        assert f"| {r.input} | {r.instance} | {r.tasks} |" in md
    assert not list((tmp_path / "out").glob(".*.tmp"))  # no temporary file left behind
    assert save_records(rows, tmp_path / "records") == []  # nothing closed or improved


def _schedulable(instance: Instance, horizon: int) -> bool:
    """Whether the STG instance (identical processors, no communication) has a schedule of
    makespan <= ``horizon``: an exhaustive search, independent of CP-SAT.

    Complete because a schedule can be shifted left until every task starts at 0 or at
    some task's end, and on identical processors only how many tasks run at once matters.
    """
    m = len(instance.devices)
    dur = {t.id: next(iter(t.modes.values())).duration for t in instance.tasks}
    preds = {t: frozenset(x.producer for x in instance.tensors if t in x.consumers) for t in dur}
    tail: dict[str, int] = {}
    for v in reversed(instance.topological_order):
        tail[v] = max((dur[s] + tail[s] for s in dur if v in preds[s]), default=0)
    everything = frozenset(dur)

    @lru_cache(maxsize=None)
    def search(t: int, running: frozenset, done: frozenset) -> bool:
        started = done | {v for _, v in running}
        if started == everything:
            return True  # every task was started with end + tail <= horizon
        if sum(dur[v] for v in everything - started) + sum(e - t for e, _ in running) > m * (horizon - t):
            return False
        ready = sorted(v for v in everything - started if preds[v] <= done)
        for k in range(min(m - len(running), len(ready)), -1, -1):
            for chosen in itertools.combinations(ready, k):
                now = running | {(t + dur[v], v) for v in chosen}
                if not now or any(t + dur[v] + tail[v] > horizon for v in chosen):
                    continue
                nxt = min(e for e, _ in now)
                if any(nxt + dur[v] + tail[v] > horizon for v in ready if v not in chosen):
                    continue
                ended = frozenset(v for e, v in now if e == nxt)
                if search(nxt, frozenset(x for x in now if x[0] > nxt), done | ended):
                    return True
        return False

    return search(0, frozenset(), frozenset())


def _make_graphs():
    spec = importlib.util.spec_from_file_location("make_graphs", GRAPHS / "make_graphs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("seed,m", [(s, m) for s in range(4) for m in (2, 3)])
def test_the_exhaustive_check_agrees_with_the_oracle(seed, m):
    """The search that certifies the smoke optima, against tests/oracle.py on 6-task graphs."""
    graphs = _make_graphs()
    times, preds = graphs.layered_graph(seed, 6, 3)
    instance = parse_stg(graphs.stg_text("tiny", seed, times, preds), m, "tiny")
    best = brute_force_latency(instance)
    assert _schedulable(instance, best) and not _schedulable(instance, best - 1)


def test_the_smoke_graph_optima_are_exact():
    """Each STG row of smoke.yaml: a schedule of length `known` exists, none shorter."""
    entries = [e for e in load_suite(SMOKE).entries if e.processors is not None]
    assert len(entries) == 6
    for e in entries:
        instance = read_stg(e.input, e.processors)
        assert _schedulable(instance, e.known.lower) and not _schedulable(instance, e.known.lower - 1), e.label
    assert brute_force_latency(read_stg(GRAPHS / "g12.stg", 2)) == 35


def test_the_smoke_graphs_are_what_the_script_writes(tmp_path):
    graphs = _make_graphs()
    for name, seed, n, layers in graphs.GRAPHS:
        text = graphs.stg_text(name, seed, *graphs.layered_graph(seed, n, layers))
        assert (GRAPHS / f"{name}.stg").read_text() == text


# ----- a tiny suite with a known range, an error and the dask path -----------------------------


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """g12 on 2 processors against an open range (closed by the solve), on 3 against its
    optimum, and a broken instance file (an error row)."""
    folder = tmp_path_factory.mktemp("tiny")
    (folder / "graphs").mkdir()
    shutil.copy(GRAPHS / "g12.stg", folder / "graphs" / "g12.stg")
    (folder / "table.csv").write_text(
        "n_tasks,graph,processors,optimal,lower_bound,best_found,status\n"
        "12,graphs/g12.stg,2,,34,36,open\n"
        "12,graphs/g12.stg,3,27,27,27,optimal\n")
    (folder / "broken.json").write_text('{"format": "cpsched-instance/1", "name": "broken"}')
    (folder / "tiny.yaml").write_text(
        "name: tiny\ntime_limit: 10\ndecompose: off\n"
        "entries:\n"
        "  - stg: graphs/*.stg\n    processors: [2, 3]\n    known_table: table.csv\n"
        "  - instance: broken.json\n    known: 5\n")
    suite = load_suite(folder / "tiny.yaml")
    return suite, run_suite(suite, jobs=2)


def test_a_known_table_range_is_closed_and_an_error_stays_in_its_row(tiny):
    _, rows = tiny
    assert [(r.instance, r.known, r.status, r.value, r.match) for r in rows[:2]] == [
        ("g12/m=2", Known(34, 36), "optimal", 35, "closed"),
        ("g12/m=3", Known(27, 27), "optimal", 27, "yes")]
    broken = rows[2]
    assert (broken.status, broken.match, broken.value, broken.input) == (ERROR, "", None, "broken.json")
    assert broken.error.startswith("InputError: ") and "broken.json" in broken.error


def test_records_are_written_for_closed_and_improved_rows_only(tiny, tmp_path):
    _, rows = tiny
    closed = rows[0]
    improved = dataclasses.replace(closed, input="graphs/g12b.stg", status="feasible", known=Known(30, 36))
    still_open = dataclasses.replace(closed, input="graphs/g12c.stg", status="feasible", known=Known(30, 35))
    assert (improved.match, still_open.match) == ("improved", "open")
    paths = save_records([*rows, improved, still_open], tmp_path)
    assert paths == [tmp_path / "graphs_g12-m2.json", tmp_path / "graphs_g12b-m2.json"]
    # a later run over the same entry keeps the better record: the proven one
    unproven = dict(closed.schedule, status="feasible", objectives={**closed.schedule["objectives"], "latency": 35})
    worse = dataclasses.replace(closed, status="feasible", known=Known(30, 36), schedule=unproven)
    assert worse.match == "improved" and save_records([worse], tmp_path) == []
    assert sorted(tmp_path.iterdir()) == sorted(paths)
    record = json.loads(paths[0].read_text())
    assert record["solver"]["bench"] == {"suite": "tiny", "input": "graphs/g12.stg", "known": "34-36",
                                         "match": "closed"}
    warm = record["solver"]["warm_start"]
    assert warm["engine"] == "fbi" and warm["objectives"]["latency"] <= warm["heft"]["latency"] == closed.heft
    assert round(record["solver"]["wall_time"] + warm["wall_time"], 3) == closed.time
    schedule = Schedule.from_dict(record)
    assert schedule.status is Status.OPTIMAL and schedule.objectives["latency"] == 35
    assert validate(read_stg(GRAPHS / "g12.stg", 2), schedule).valid


def test_the_dask_path_gives_the_rows_of_the_local_run(tiny):
    distributed = pytest.importorskip("distributed")
    suite, local = tiny
    seen = []
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        rows = run_suite(suite, dask_address=cluster.scheduler_address, on_row=seen.append)
    assert _timeless(rows) == _timeless(local)
    assert sorted(r.index for r in seen) == [0, 1, 2]


# ----- rows that must fail loudly ----------------------------------------------------------


def _g12_entry() -> bench.Entry:
    return load_suite(SMOKE).entries[2]


def test_an_invalid_schedule_is_an_error_row(monkeypatch):
    entry = _g12_entry()

    def overlapping(instance, *args, **kwargs):  # every task at time 0 on one processor
        return Schedule(instance.name, Status.OPTIMAL, {t.id: Placement("p0", 0) for t in instance.tasks})

    monkeypatch.setattr(bench.api, "solve", overlapping)
    row = run_entry(entry)
    assert (row.status, row.value, row.match) == (ERROR, None, "")
    assert row.error.startswith("RuntimeError: invalid schedule: ") and row.instance == "g12/m=2"


def test_a_bound_above_a_valid_value_is_an_error_row(monkeypatch):
    entry = _g12_entry()
    real = bench.api.solve

    def boasting(instance, *args, **kwargs):
        s = real(instance, *args, **kwargs)
        return dataclasses.replace(s, status=Status.FEASIBLE, bounds={"latency": s.objectives["latency"] + 1})

    monkeypatch.setattr(bench.api, "solve", boasting)
    row = run_entry(entry)
    assert row.status == ERROR and "the bound 36 is above the value 35" in row.error


# ----- the match rules ---------------------------------------------------------------------


@pytest.mark.parametrize("status,value,known,expected", [
    ("optimal", 131, Known(131, 131), "yes"),
    ("optimal", 132, Known(131, 131), "no"),
    ("feasible", 130, Known(131, 131), "no"),  # a valid schedule below a published optimum
    ("feasible", 131, Known(131, 131), "found"),
    ("feasible", 140, Known(131, 131), "unproven"),
    ("unknown", None, Known(131, 131), "unproven"),
    ("infeasible", None, Known(131, 131), "no"),
    ("optimal", 135, Known(135, 143), "closed"),
    ("optimal", 143, Known(135, 143), "closed"),
    ("optimal", 134, Known(135, 143), "no"),
    ("optimal", 144, Known(135, 143), "no"),  # PDF/IHS found 143: the optimum is no larger
    ("feasible", 140, Known(135, 143), "improved"),
    ("feasible", 143, Known(135, 143), "open"),
    ("feasible", 150, Known(135, 143), "open"),
    ("feasible", 134, Known(135, 143), "no"),
    ("unknown", None, Known(135, 143), "open"),
    ("infeasible", None, Known(135, 143), "no"),
    ("optimal", 7, None, ""),
    ("feasible", 7, None, ""),
    (ERROR, None, Known(131, 131), ""),
])
def test_match(status, value, known, expected):
    assert match(status, value, known) == expected


def test_known_prints_as_in_the_table():
    assert (str(Known(131, 131)), str(Known(135, 143))) == ("131", "135-143")


# ----- suite validation --------------------------------------------------------------------


def _suite_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(f"time_limit: 1\ndata: {GRAPHS}\n{text}")
    return path


@pytest.mark.parametrize("text,message", [
    ("colour: red\nentries:\n  - stg: g12.stg\n    processors: [2]\n",
     "s.yaml: the suite: unknown key 'colour'"),
    ("entries:\n  - stg: g12.stg\n    processors: [2]\n    knwon: 3\n",
     "s.yaml: entries[0]: unknown key 'knwon'"),
    ("entries:\n  - instance: x.json\n    processors: [2]\n", "s.yaml: entries[0]: unknown key 'processors'"),
    ("entries:\n  - stg: nothing/*.stg\n    processors: [2]\n",
     f"s.yaml: entries[0].stg: no file matches {GRAPHS}/nothing/*.stg (set CPSCHED_DATA"),
    ("entries:\n  - stg: g12.stg\n    processors: [2]\n  - instance: missing.json\n",
     "s.yaml: entries[1].instance: no such file"),
    ("entries:\n  - model: alexnet\n    platform: nowhere.yaml\n", "s.yaml: entries[0].platform: no such file"),
    ("entries:\n  - model: nomodel\n    platform: edge\n", "s.yaml: entries[0].model: 'nomodel' is neither"),
    ("entries:\n  - stg: g12.stg\n    processors: [2]\n    known_table: none.csv\n",
     "s.yaml: entries[0].known_table: no such file"),
    ("entries:\n  - stg: g12.stg\n", "s.yaml: entries[0]: an STG or DOT graph needs processors"),
    ("entries:\n  - stg: g12.stg\n    processors: [0]\n", "s.yaml: entries[0].processors must be"),
    ("entries:\n  - stg: '*.stg'\n    processors: [2]\n    known: 3\n", "s.yaml: entries[0].known: applies to one"),
    ("entries:\n  - stg: g12.stg\n    processors: [2]\n    known: [5, 3]\n", "s.yaml: entries[0].known must be"),
    ("entries:\n  - stg: g12.stg\n    processors: [2]\n    time_limit: fast\n",
     "s.yaml: entries[0].time_limit must be"),
    ("decompose: on\nentries:\n  - stg: g12.stg\n    processors: [2]\n", "s.yaml: decompose must be"),
    ("confirm: 0\nentries:\n  - stg: g12.stg\n    processors: [2]\n", "s.yaml: confirm must be a number of seconds"),
    ("objectives: [speed]\nentries:\n  - stg: g12.stg\n    processors: [2]\n", "s.yaml: objectives must be"),
    ("entries: []\n", "s.yaml: entries must be a non-empty list"),
    ("entries:\n  - {stg: g12.stg, instance: x.json}\n", "s.yaml: entries[0]: give exactly one of"),
    ("entries: [\n", "s.yaml: invalid YAML"),
])
def test_a_bad_suite_is_one_input_error_naming_the_field(tmp_path, text, message):
    with pytest.raises(InputError) as info:
        load_suite(_suite_file(tmp_path, text))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_table_without_the_graph_is_an_input_error(tmp_path):
    (tmp_path / "g12.stg").write_text((GRAPHS / "g12.stg").read_text())
    (tmp_path / "t.csv").write_text("n_tasks,graph,processors,optimal,lower_bound,best_found,status\n"
                                    "12,g12.stg,2,35,35,35,optimal\n")
    path = tmp_path / "s.yaml"
    path.write_text("time_limit: 1\nentries:\n  - stg: g12.stg\n    processors: [2, 3]\n    known_table: t.csv\n")
    with pytest.raises(InputError, match=r"entries\[0\].known_table: no row for graph g12.stg on 3 processors"):
        load_suite(path)


def test_cpsched_data_replaces_the_declared_data_folder(tmp_path, monkeypatch):
    path = tmp_path / "s.yaml"
    path.write_text("time_limit: 1\ndata: not/here\ndecompose: off\n"
                    "entries:\n  - stg: g1*.stg\n    processors: 2\n")
    monkeypatch.delenv(bench.DATA_ENV, raising=False)
    with pytest.raises(InputError, match="s.yaml: data: no folder .*not/here .set CPSCHED_DATA"):
        load_suite(path)
    monkeypatch.setenv(bench.DATA_ENV, str(GRAPHS))
    suite = load_suite(path)
    assert [(e.label, e.processors, e.decompose) for e in suite.entries] == [
        ("g12.stg", 2, "off"), ("g16.stg", 2, "off")]


def test_smoke_needs_no_outside_data(monkeypatch, tmp_path):
    monkeypatch.setenv(bench.DATA_ENV, str(tmp_path))  # not where the smoke graphs are
    suite = load_suite(SMOKE)
    assert all(Path(e.input).is_relative_to(ROOT / "instances") for e in suite.entries if e.processors)
    assert all(e.known is not None and e.known.exact for e in suite.entries)


def test_the_shipped_suites_load():
    cnn = load_suite(ROOT / "instances" / "cnn-edge.yaml")
    assert [e.label for e in cnn.entries] == list(bench.BUNDLED)
    assert {(e.platform, e.time_limit, e.decompose) for e in cnn.entries} == {("edge", 60.0, "auto")}


@needs_data
@pytest.mark.parametrize("size", [50, 100, 300])
def test_the_stg_suites_cover_the_table(size, monkeypatch):
    monkeypatch.delenv(bench.DATA_ENV, raising=False)
    suite = load_suite(ROOT / "instances" / f"stg{size}.yaml")
    assert len(suite.entries) == 720
    assert {(e.time_limit, e.decompose) for e in suite.entries} == {(2.0, "off")}
    known = {(e.label, e.processors): e.known for e in suite.entries}
    if size == 50:
        assert known[("stg/50/rand0000.stg", 2)] == Known(131, 131)
        assert known[("stg/50/rand0117.stg", 4)] == Known(135, 143)
        assert sum(not k.exact for k in known.values()) == 17 + 18 + 16


# ----- the command -------------------------------------------------------------------------


def test_cli_bench_smoke_every_row_matches(tmp_path):
    """What CI runs: ``cpsched bench instances/smoke.yaml``; every row must match its optimum."""
    from typer.testing import CliRunner

    from cpsched.cli import app

    out = tmp_path / "smoke.csv"
    result = CliRunner().invoke(app, ["bench", str(SMOKE), "-j", "2", "-o", str(out)])
    assert result.exit_code == 0, result.output
    table = list(csv.DictReader(out.read_text().splitlines()))
    assert len(table) == 8 and all(t["match"] == "yes" for t in table), table
    assert out.with_suffix(".md").read_text().count("| yes |") == 8


def test_cli_bench_bad_suite_exits_2_with_one_line(tmp_path):
    from typer.testing import CliRunner

    from cpsched.cli import app

    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntime_limit: 1\nentries:\n  - instance: missing.json\n")
    result = CliRunner().invoke(app, ["bench", str(bad)])
    assert result.exit_code == 2
    assert result.output.strip().count("\n") == 0 and "missing.json" in result.output


def test_an_optimum_with_no_known_value_is_confirmed_by_the_milp_and_recorded(tmp_path):
    """``confirm``: the MILP engine proves the same optimum in its own formulation (``yes``); the
    row is a ``new`` record carrying that word, and the table and summary say it."""
    entry = bench.Entry(suite="tiny", index=0, input=str(GRAPHS / "g12.stg"), label="g12.stg",
                        objectives=("latency",), time_limit=10.0, decompose="off", processors=2, confirm=30.0)
    row = run_entry(entry)
    assert (row.status, row.value, row.known, row.confirmed) == ("optimal", 35, None, "yes")
    assert "MILP confirms" in bench.markdown([row])
    assert "optima confirmed by the MILP engine's own formulation: 1/1" in bench.summary([row])
    unasked = run_entry(dataclasses.replace(entry, confirm=None))
    assert unasked.confirmed is None and "MILP confirms" not in bench.markdown([unasked])
    [path] = save_records([row], tmp_path)
    record = json.loads(path.read_text())
    assert record["solver"]["bench"] == {"suite": "tiny", "input": "g12.stg", "known": "", "match": "new",
                                         "milp": "yes"}
    assert save_records([dataclasses.replace(row, status="feasible")], tmp_path / "none") == []


def test_a_failing_milp_solver_leaves_the_optimum_in_its_row(monkeypatch):
    """The MILP solver stopping with an error says nothing about the optimum: the row keeps
    CP-SAT's proof and says ``MILP failed``."""
    solve = bench.api.solve

    def milp_breaks(instance, objectives, **kw):
        if kw.get("engine") == "milp":
            raise RuntimeError("the solver crashed")
        return solve(instance, objectives, **kw)

    monkeypatch.setattr(bench.api, "solve", milp_breaks)
    entry = bench.Entry(suite="tiny", index=0, input=str(GRAPHS / "g12.stg"), label="g12.stg",
                        objectives=("latency",), time_limit=10.0, decompose="off", processors=2, confirm=30.0)
    row = run_entry(entry)
    assert (row.status, row.value, row.confirmed) == ("optimal", 35, "MILP failed")


def test_a_milp_optimum_other_than_cpsats_is_an_error_row(monkeypatch):
    """Two engines that prove different optima contradict each other: the row says so."""
    solve = bench.api.solve

    def milp_off_by_one(instance, objectives, **kw):
        result = solve(instance, objectives, **kw)
        if kw.get("engine") != "milp":
            return result
        return dataclasses.replace(result, objectives={**result.objectives, "latency": result.objectives["latency"] + 1})

    monkeypatch.setattr(bench.api, "solve", milp_off_by_one)
    entry = bench.Entry(suite="tiny", index=0, input=str(GRAPHS / "g12.stg"), label="g12.stg",
                        objectives=("latency",), time_limit=10.0, decompose="off", processors=2, confirm=30.0)
    row = run_entry(entry)
    assert row.status == ERROR and "the MILP engine proves [36], CP-SAT [35]" in row.error


# ----- the shipped records -------------------------------------------------------------------

RECORDS = sorted((ROOT / "instances" / "records").glob("*.json"))
STG_RECORDS = [p for p in RECORDS if p.name.startswith("stg_")]


def _checked(path: Path) -> tuple[Schedule, dict, int]:
    """A shipped record, its ``solver.bench`` tag and its latency, which the validator
    recomputes from the record's STG or DOT file and finds equal to the record's own."""
    schedule = load_schedule(path)
    tag = schedule.solver["bench"]
    processors = int(schedule.instance.rsplit("m=", 1)[1])
    report = validate(load_input(DATA / tag["input"], processors=processors), schedule)
    assert report.valid, (path.name, report.violations[:3])
    latency = report.objectives["latency"]
    assert latency == schedule.objectives["latency"], path.name
    return schedule, tag, latency


@needs_data
@pytest.mark.parametrize("path", STG_RECORDS, ids=[p.stem for p in STG_RECORDS])
def test_shipped_record_is_a_checked_schedule_within_its_table_range(path):
    """Every STG record in ``instances/records`` passes the validator on its STG file; a closed
    one is proven and lies in the official range, an improved one beats its upper end."""
    schedule, tag, latency = _checked(path)
    lo, hi = (int(v) for v in tag["known"].split("-"))
    assert lo <= latency  # the table's lower end is a published bound
    if tag["match"] == "closed":
        assert schedule.status is Status.OPTIMAL and schedule.bounds["latency"] == latency
        assert latency <= hi
    else:
        assert tag["match"] == "improved" and latency < hi
        assert schedule.bounds["latency"] <= latency


@needs_data
def test_shipped_new_optima_are_checked_proven_schedules():
    """Every other record (an optimum where none is published: Sinnen's larger graphs) passes the
    validator on its graph file, is proven, and says whether the MILP engine confirmed it."""
    others = [p for p in RECORDS if p not in STG_RECORDS]
    for path in others:
        schedule, tag, latency = _checked(path)
        assert (tag["match"], tag["known"]) == ("new", "") and tag.get("milp") in (None, "yes", "not in time", "MILP failed")
        assert schedule.status is Status.OPTIMAL and schedule.bounds.get("latency", latency) == latency


def test_the_heft_canonical_suite_proves_73_and_shows_heft_80():
    suite = load_suite(ROOT / "instances" / "heft-canonical.yaml")
    rows = [run_entry(e) for e in suite.entries]
    assert [(r.status, r.value, r.heft, r.match) for r in rows][0] == ("optimal", 73, 80, "yes")
    assert rows[1].status == "optimal" and rows[1].value >= 73 and suite.entries[1].contention


def test_graph_entries_take_processors_from_an_optima_table_and_drop_copies(tmp_path):
    text = 'digraph "g" {\n a [Weight=2];\n b [Weight=3];\n a -> b [Weight=1];\n}\n'
    (tmp_path / "2p_g.dot").write_text(text)
    (tmp_path / "4p_g.dot").write_text(text.replace('"g"', '"g copy"'))  # the same graph, renamed
    (tmp_path / "optima.csv").write_text("graph_file,processors,optimal_schedule_length\n2p_g.dot,2,5\n"
                                         "2p_g.dot,3,5\n4p_g.dot,4,5\n")
    path = tmp_path / "s.yaml"
    path.write_text("time_limit: 5\ndata: .\nentries:\n  - graph: '*.dot'\n    known_table: optima.csv\n")
    suite = load_suite(path)
    assert [(e.label, e.processors, str(e.known)) for e in suite.entries] == [
        ("2p_g.dot", 2, "5"), ("2p_g.dot", 3, "5"), ("4p_g.dot", 4, "5")]
    rows = [run_entry(e) for e in suite.entries]
    assert all(r.match == "yes" for r in rows)
    path.write_text("time_limit: 5\ndata: .\nentries:\n  - graph: '*.dot'\n    processors: [2]\n"
                    "    distinct: true\n")
    assert [e.label for e in load_suite(path).entries] == ["2p_g.dot"]


@pytest.mark.skipif(not (DATA / "sinnen_dot").is_dir(), reason="shared/data not present")
def test_the_task_graph_suites_cover_their_sets():
    assert len(load_suite(ROOT / "instances" / "sinnen10.yaml").entries) == 286
    wide = load_suite(ROOT / "instances" / "sinnen-21-30.yaml")
    assert len(wide.entries) == 4 * 96 and {e.processors for e in wide.entries} == {2, 4, 8, 16}
    santiago = load_suite(ROOT / "instances" / "santiago.yaml")
    assert len(santiago.entries) == 16 and sum(e.known is not None for e in santiago.entries) == 14
