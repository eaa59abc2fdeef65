"""Benchmark suites: load a suite YAML, solve its entries in worker processes, tabulate the rows.

A suite (format: ``instances/README.md``) lists inputs: STG globs on ``m``
processors, ONNX models on a platform, instance JSON files, each with an
optional known optimum or known range of the first objective.  The runner
loads and solves every entry with the front door (:func:`cpsched.api.load`,
:func:`cpsched.api.solve`: the same warm start and pipeline as ``cpsched
solve``), checks every schedule with :func:`cpsched.validator.validate` and
compares the result with the known value (:func:`match`).  Entries run in parallel in
``spawn``-started processes (OR-Tools threads and ``fork`` do not mix) or on a
dask cluster; the rows come back in suite order.

>>> match("optimal", 131, Known(131, 131)), match("feasible", 140, Known(135, 143))
('yes', 'improved')
"""

from __future__ import annotations

import csv
import functools
import glob
import io
import multiprocessing
import os
import re
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any


from cpsched import api
from cpsched.checks import check_mapping
from cpsched.errors import InputError
from cpsched.files import is_dir, is_file, read_json, read_text, read_yaml, write_json, write_text
from cpsched.inputs import FUSE_MODES
from cpsched.io.bundled import BUNDLED
from cpsched.platforms import PRESETS
from cpsched.schedule import MODE_OBJECTIVES, OBJECTIVES, Schedule, Status
from cpsched.validator import validate

ERROR = "error"
"""Row status of an entry that raised or produced an invalid schedule (beside the Status words)."""

DATA_ENV = "CPSCHED_DATA"
"""Environment variable that replaces a suite's declared ``data:`` folder."""

TABLE_COLUMNS = ("n_tasks", "graph", "processors", "optimal", "lower_bound", "best_found", "status")
"""Columns of a ``known_table`` CSV (the STG optimum table, ``shared/data/stg/README.md``)."""
OPTIMA_COLUMNS = ("graph_file", "optimal_schedule_length")
"""Columns of a ``known_table`` of optima (``processors`` optional), like Sinnen's table."""


# ----- known values and the match rules ---------------------------------------------------


@dataclass(frozen=True)
class Known:
    """What is known of the first objective's optimum: exactly ``lower`` when ``lower == upper``,
    else a range: ``lower`` a proven lower bound, ``upper`` the best value found so far."""

    lower: int
    upper: int

    @property
    def exact(self) -> bool:
        return self.lower == self.upper

    def __str__(self) -> str:
        return str(self.lower) if self.exact else f"{self.lower}-{self.upper}"


def match(status: str, value: int | None, known: Known | None) -> str:
    """Compare a result with what is known; the words are defined in ``instances/README.md``.

    Known optimum K: ``yes`` (optimal, = K), ``found`` (feasible, = K: matched, not proven),
    ``unproven`` (feasible above K, or no schedule in the limit), ``no`` (a contradiction:
    an optimum other than K, a valid schedule below K, or infeasible).  Known range
    [lb, ub]: ``closed`` (optimal within it), ``improved`` (feasible below ub), ``open``
    (otherwise), ``no`` (optimal outside the range, a schedule below lb, or infeasible).
    Empty without a known value or for an error row.
    """
    if known is None or status == ERROR:
        return ""
    if status == Status.INFEASIBLE or (value is not None and value < known.lower):
        return "no"
    if known.exact:
        if status == Status.OPTIMAL:
            return "yes" if value == known.lower else "no"
        return "found" if status == Status.FEASIBLE and value == known.lower else "unproven"
    if status == Status.OPTIMAL:
        return "closed" if value <= known.upper else "no"
    return "improved" if status == Status.FEASIBLE and value < known.upper else "open"


# ----- suites --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One solve: an input with its settings, everything a worker process needs (picklable)."""

    suite: str
    index: int  # position in the suite: the row order
    input: str  # the path (absolute) or bundled model name load_input reads
    label: str  # the input as the table shows it: relative to the data / suite folder, or a model name
    objectives: tuple[str, ...]
    time_limit: float
    decompose: str | int
    processors: int | None = None
    contention: bool = False  # task graphs with communication costs: exclusive links
    platform: str | None = None
    dims: tuple[tuple[str, int], ...] = ()
    fuse: str = "none"
    workers: int | None = None
    seed: int = 0
    known: Known | None = None
    epsilon: str | None = None  # set: the entry is a Pareto front over ``objectives``, this one stepped
    #: seconds the MILP engine gets to prove each optimum CP-SAT proves again, in its own formulation
    confirm: float | None = None


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its entries expanded (one per STG file x processor count) and checked."""

    name: str
    description: str
    path: Path
    entries: tuple[Entry, ...]


_TOP_KEYS = ("name", "description", "time_limit", "objectives", "decompose", "workers", "seed", "epsilon", "confirm",
             "data", "entries")
_SETTINGS = ("time_limit", "objectives", "decompose", "workers", "seed", "epsilon",
             "confirm")  # defaults an entry may override
_KINDS = {  # entry kind -> the keys it accepts besides the settings and `known`
    "stg": ("processors", "known_table"),
    "graph": ("processors", "known_table", "contention", "distinct"),
    "model": ("platform", "dims", "fuse"),
    "instance": (),
}


def suite_dirs() -> list[Path]:
    """Where suites are found by name: ``instances/`` in the working folder, then in the source
    checkout this package lives in (the suites and their data are not part of the wheel)."""
    checkout = Path(__file__).resolve().parent.parent / "instances"
    return list(dict.fromkeys(p for p in (Path.cwd() / "instances", checkout) if p.is_dir()))


def find_suite(spec: str | Path) -> Path:
    """A suite file: ``spec`` itself when it exists, else ``<spec>.yaml`` in :func:`suite_dirs`."""
    path = Path(spec)
    if is_file(path):
        return path
    if path.suffix == "" and path.name == str(spec):
        for folder in suite_dirs():
            if is_file(folder / f"{spec}.yaml"):
                return folder / f"{spec}.yaml"
    known = sorted({p.stem for folder in suite_dirs() for p in folder.glob("*.yaml")})
    listed = f" (suites: {', '.join(known)})" if known else " (no instances/ folder here or in the checkout)"
    raise InputError(f"unknown suite {str(spec)!r}: no such file, nor a suite name{listed}")


def load_suite(path: str | Path) -> Suite:
    """Read and validate a suite file, expanding its globs; every problem is a one-line
    :class:`InputError` naming the file and the entry / field."""
    path = Path(path)
    data = read_yaml(path)
    try:
        return _suite(data, path)
    except InputError as exc:
        raise exc.in_file(path) from None


def _suite(data: Any, path: Path) -> Suite:
    top = check_mapping(data, "the suite", _TOP_KEYS)
    if "entries" not in top:
        raise InputError("missing field 'entries'")
    name = _text(top.get("name", path.stem), "name")
    if not re.fullmatch(r"[\w.-]+", name):
        raise InputError(f"name must be letters, digits, '.', '_' or '-' (got {name!r}): it names record files")
    description = top.get("description", "")
    if not isinstance(description, str):
        raise InputError(f"description must be a string (got {description!r})")
    here = path.resolve().parent
    data_dir = here
    if "data" in top:
        declared = os.environ.get(DATA_ENV) or here / _text(top["data"], "data")
        data_dir = Path(declared).resolve()
        if not is_dir(data_dir):
            raise InputError(f"data: no folder {data_dir} (set {DATA_ENV} to the shared data folder)")
    defaults = _settings(top, "", {})
    raw = top["entries"]
    if not isinstance(raw, list) or not raw:
        raise InputError("entries must be a non-empty list")
    tables: dict[Path, dict[tuple[str, int], Known]] = {}
    entries: list[Entry] = []
    for i, item in enumerate(raw):
        entries += _expand(item, f"entries[{i}]", name, here, data_dir, defaults, tables, len(entries))
    return Suite(name, description.strip(), path, tuple(entries))


def _expand(item: Any, where: str, suite: str, here: Path, data_dir: Path, defaults: dict,
            tables: dict, start: int) -> list[Entry]:
    """The entries one YAML entry stands for (an STG glob x processors gives several)."""
    kinds = [k for k in _KINDS if isinstance(item, dict) and k in item]
    if len(kinds) != 1:
        raise InputError(f"{where}: give exactly one of {', '.join(_KINDS)}")
    kind = kinds[0]
    d = check_mapping(item, where, (kind, "known", *_KINDS[kind], *_SETTINGS))
    settings = _settings(d, f"{where}.", defaults)
    if "time_limit" not in settings:
        raise InputError(f"{where}: no time_limit (set one here or at the top of the suite)")
    known = _known(d["known"], f"{where}.known") if "known" in d else None
    spec = _text(d[kind], f"{where}.{kind}")
    entry = Entry(suite=suite, index=start, input=spec, label=spec, known=known, **settings)
    if kind == "instance":  # a file, or a glob of files
        files = sorted(Path(p) for p in glob.glob(str(here / spec)) if is_file(p))
        if not files:
            raise InputError(f"{where}.instance: no file matches {here / spec}" if glob.has_magic(spec) else
                             f"{where}.instance: no such file {here / spec}")
        return [replace(entry, index=start + k, input=str(f.resolve()), label=_relative(f, here) or str(f))
                for k, f in enumerate(files)]
    if kind == "model":
        return [_model(entry, d, where, here)]
    return _graphs(entry, d, where, data_dir, tables, kind)


def _model(entry: Entry, d: dict, where: str, here: Path) -> Entry:
    """``entry`` with the model file (unless bundled), the platform, dims and fusion of ``d``."""
    spec = entry.input
    if spec not in BUNDLED:
        if not spec.lower().endswith(".onnx"):
            raise InputError(f"{where}.model: {spec!r} is neither a bundled model ({', '.join(BUNDLED)}) "
                             f"nor an .onnx file")
        spec = str(_file(here / spec, f"{where}.model"))
    if "platform" not in d:
        raise InputError(f"{where}: a model needs a platform ({', '.join(PRESETS)} or a YAML file)")
    platform = _text(d["platform"], f"{where}.platform")
    if platform not in PRESETS:
        platform = str(_file(here / platform, f"{where}.platform"))
    fuse = d.get("fuse", "none")
    if fuse not in FUSE_MODES:
        raise InputError(f"{where}.fuse must be one of {', '.join(FUSE_MODES)} (got {fuse!r})")
    dims = d.get("dims", {})
    if not isinstance(dims, dict) or not all(isinstance(k, str) and _is_int(v) and v >= 1 for k, v in dims.items()):
        raise InputError(f"{where}.dims must map dim names to integers >= 1 (got {dims!r})")
    return replace(entry, input=spec, platform=platform, dims=tuple(dims.items()), fuse=fuse)


def _graphs(entry: Entry, d: dict, where: str, data_dir: Path, tables: dict, kind: str) -> list[Entry]:
    """One copy of ``entry`` per file of the glob x processor count, each with its known value.

    ``processors`` is required for STG and DOT graphs (identical processors); without it,
    an entry with a ``known_table`` takes the processor counts the table lists for each
    graph.  ``distinct: true`` keeps one file of each content (sets that copy a graph
    under several names).
    """
    pattern = data_dir / entry.input
    files = sorted(Path(p) for p in glob.glob(str(pattern)) if is_file(p))
    if not files:
        raise InputError(f"{where}.{kind}: no file matches {pattern} (set {DATA_ENV} to the shared data folder)")
    if d.get("distinct", False) is True:
        files = list({_body(f): f for f in reversed(files)}.values())[::-1]
    elif "distinct" in d and d["distinct"] is not False:
        raise InputError(f"{where}.distinct must be true or false (got {d['distinct']!r})")
    contention = d.get("contention", False)
    if not isinstance(contention, bool):
        raise InputError(f"{where}.contention must be true or false (got {contention!r})")
    counts: list[int | None] | None = None
    if "processors" in d:
        counts = d["processors"] if isinstance(d["processors"], list) else [d["processors"]]
        if not counts or not all(_is_int(m) and m >= 1 for m in counts):
            raise InputError(f"{where}.processors must be a non-empty list of integers >= 1 "
                             f"(got {d['processors']!r})")
    elif kind == "stg" or "known_table" not in d and any(f.suffix.lower() in (".stg", ".dot") for f in files):
        raise InputError(f"{where}: an STG or DOT graph needs processors (a list of processor counts)")
    if "known_table" in d and entry.known is not None:
        raise InputError(f"{where}: give known or known_table, not both")
    if entry.known is not None and len(files) * len(counts or [None]) != 1:
        raise InputError(f"{where}.known: applies to one graph on one processor count "
                         f"(this entry has {len(files)} x {len(counts or [None])}; use known_table)")
    table, table_dir = None, None
    if "known_table" in d:
        path = _file(data_dir / _text(d["known_table"], f"{where}.known_table"), f"{where}.known_table")
        if path not in tables:
            tables[path] = _read_table(path, f"{where}.known_table")
        table, table_dir = tables[path], path.parent
    out = []
    for file in files:
        label = (_relative(file, data_dir) or str(file)) + (" --contention" if contention else "")
        graph = table_dir and _relative(file, table_dir)
        listed = counts or ([None] if table is None else
                            sorted((m for g, m in table if g == graph), key=lambda m: -1 if m is None else m))
        if not listed:
            raise InputError(f"{where}.known_table: no row for graph {graph} (give processors)")
        for m in listed:
            known = entry.known
            if table is not None:
                if (graph, m) not in table:
                    raise InputError(f"{where}.known_table: no row for graph {graph or file} on {m} processors "
                                     f"(graph: the file's path from the table's folder)")
                known = table[(graph, m)]
            out.append(replace(entry, index=entry.index + len(out), input=str(file), label=label,
                               processors=m, known=known, contention=contention))
    return out


def _body(path: Path) -> str:
    """A graph file's text without its first line (DOT files repeat a graph under other names)."""
    return read_text(path).split("\n", 1)[-1]


def _settings(d: dict, prefix: str, defaults: dict) -> dict:
    """The solve settings ``d`` gives, over ``defaults``, as Entry fields."""
    out = dict(defaults)
    for key in ("time_limit", "confirm"):
        if key in d:
            t = d[key]
            if isinstance(t, bool) or not isinstance(t, (int, float)) or t <= 0:
                raise InputError(f"{prefix}{key} must be a number of seconds > 0 (got {t!r})")
            out[key] = float(t)
    if "objectives" in d:
        objs = d["objectives"]
        names = OBJECTIVES + MODE_OBJECTIVES
        if (not isinstance(objs, list) or not objs or not all(isinstance(o, str) and o in names for o in objs)
                or len(set(objs)) != len(objs)):
            raise InputError(f"{prefix}objectives must be a list of distinct names from "
                             f"{', '.join(names)} (got {objs!r})")
        out["objectives"] = tuple(objs)
    out.setdefault("objectives", ("latency",))
    if "epsilon" in d:
        if d["epsilon"] != "auto" and d["epsilon"] not in OBJECTIVES + MODE_OBJECTIVES:
            raise InputError(f"{prefix}epsilon must be auto or an objective name (got {d['epsilon']!r})")
        out["epsilon"] = d["epsilon"]
    if out.get("epsilon") is not None and len(out["objectives"]) < 2:
        raise InputError(f"{prefix}epsilon: a front needs 2 or 3 objectives (got {list(out['objectives'])})")
    if "decompose" in d:
        value = "off" if d["decompose"] is False else d["decompose"]  # YAML 1.1 reads `off` as false
        if value not in ("auto", "off") and not (_is_int(value) and value >= 1):
            raise InputError(f"{prefix}decompose must be auto, off or a window size >= 1 (got {d['decompose']!r})")
        out["decompose"] = value
    out.setdefault("decompose", "auto")
    for key, least in (("workers", 1), ("seed", 0)):
        if key in d:
            if not _is_int(d[key]) or d[key] < least:
                raise InputError(f"{prefix}{key} must be an integer >= {least} (got {d[key]!r})")
            out[key] = d[key]
    return out


def _known(value: Any, where: str) -> Known:
    """``131`` (an optimum) or ``[135, 143]`` (a lower bound and the best value found)."""
    if _is_int(value) and value >= 0:
        return Known(value, value)
    if isinstance(value, list) and len(value) == 2 and all(_is_int(v) and v >= 0 for v in value) \
            and value[0] <= value[1]:
        return Known(value[0], value[1])
    raise InputError(f"{where} must be an integer >= 0 or a range [lower, upper] (got {value!r})")


def _read_table(path: Path, where: str) -> dict[tuple[str, int | None], Known]:
    """(graph, processors) -> Known from an optimum CSV: the STG table (``optimal`` rows give
    the optimum, ``open`` rows the range [lower_bound, best_found]), or a table of optima
    (``graph_file``, ``optimal_schedule_length`` and, for identical processors, ``processors``)."""
    try:
        rows = list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{where}: cannot read {path} ({exc})") from None
    if rows and set(OPTIMA_COLUMNS) <= set(rows[0]):
        table: dict[tuple[str, int | None], Known] = {}
        for line, row in enumerate(rows, start=2):
            try:
                value = int(row["optimal_schedule_length"])
                m = int(row["processors"]) if row.get("processors") else None
            except (TypeError, ValueError) as exc:
                raise InputError(f"{where}: {path} line {line}: {exc}") from None
            table[(row["graph_file"], m)] = Known(value, value)
        return table
    if not rows or not set(TABLE_COLUMNS) <= set(rows[0]):
        raise InputError(f"{where}: {path} needs the columns {', '.join(TABLE_COLUMNS)} "
                         f"or {', '.join(OPTIMA_COLUMNS)}")
    table = {}
    for line, row in enumerate(rows, start=2):
        try:
            if row["status"] == "optimal":
                known = Known(int(row["optimal"]), int(row["optimal"]))
            elif row["status"] == "open":
                known = Known(int(row["lower_bound"]), int(row["best_found"]))
            else:
                raise ValueError(f"status {row['status']!r} is neither optimal nor open")
            table[(row["graph"], int(row["processors"]))] = known
        except (TypeError, ValueError) as exc:
            raise InputError(f"{where}: {path} line {line}: {exc}") from None
    return table


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(f"{where} must be a non-empty string (got {value!r})")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _file(path: Path, where: str) -> Path:
    if not is_file(path):
        raise InputError(f"{where}: no such file {path}")
    return path.resolve()


def _relative(path: Path, base: Path) -> str | None:
    """``path`` relative to ``base`` in / form (an STG graph's key in its table), None if outside."""
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return None


# ----- rows ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """The outcome of one entry.  ``value`` is the validator's recomputation of the first
    objective; ``bound`` a proven lower bound on it (the value itself when optimal).
    ``schedule`` (the result's JSON form) stays out of the tables and comparisons."""

    suite: str
    index: int
    input: str
    instance: str
    tasks: int | None
    processors: int | None
    platform: str | None
    objective: str
    status: str  # a Status word or ERROR
    value: int | None
    bound: int | None
    time: float | None  # seconds of the warm start and the solver (the whole attempt for an error row)
    time_limit: float
    known: Known | None
    error: str = ""
    heft: int | None = None  # the first objective of HEFT's schedule, the warm start (None: no HEFT schedule)
    #: what proved ``bound``: search (the engine), relaxation (cpsched.bounds) or series (cpsched.series)
    bound_source: str | None = None
    schedule: dict | None = field(default=None, repr=False, compare=False)
    #: a front entry (``epsilon``): its points, the proven ones, its solves and its certified gap in
    #: percent; its status is optimal exactly when the front is complete, and ``value`` is None
    points: int | None = None
    proven: int | None = None
    solves: int | None = None
    front_gap: float | None = None
    #: an optimum the entry asked to confirm (``confirm``): ``yes`` when the MILP engine proved the
    #: same value within its time, ``not in time`` when it did not finish, ``MILP failed`` when its
    #: solver stopped with an error (None: not asked)
    confirmed: str | None = None

    @property
    def gap(self) -> float | None:
        """(value - bound) / value in percent; 0 when optimal, None without both numbers."""
        if self.status == Status.OPTIMAL:
            return 0.0
        if self.value is None or self.bound is None:
            return None
        return 100.0 * (self.value - self.bound) / self.value if self.value else 0.0

    @property
    def match(self) -> str:
        return match(self.status, self.value, self.known)

    @property
    def complete(self) -> str | None:
        """A front row: ``yes`` when the sweep proved the front complete, else ``no``."""
        if self.points is None:
            return None
        return "yes" if self.status == Status.OPTIMAL else "no"


def run_entry(entry: Entry) -> Row:
    """Load, solve and check one entry; any exception becomes a row with status ``error``."""
    clock = time.monotonic()
    objective = entry.objectives[0]
    instance = None
    try:
        instance = api.load(entry.input, platform=entry.platform, dims=dict(entry.dims) or None, fuse=entry.fuse,
                            processors=entry.processors, contention=entry.contention)
        if entry.epsilon is not None:
            return _front_row(entry, instance)
        schedule = api.solve(instance, list(entry.objectives), time_limit=entry.time_limit, workers=entry.workers,
                             seed=entry.seed, decompose=entry.decompose)
        report = validate(instance, schedule)
        if not report.valid:
            raise RuntimeError("invalid schedule: " + "; ".join(map(str, report.violations)))
        value = report.objectives.get(objective) if schedule.status.has_schedule else None
        bound = value if schedule.status == Status.OPTIMAL else schedule.bounds.get(objective)
        if value is not None and bound is not None and bound > value:
            raise RuntimeError(f"the bound {bound} is above the value {value} of a valid schedule")
        confirmed = _confirm(entry, instance, schedule) if entry.confirm and schedule.status == Status.OPTIMAL else None
    except Exception as exc:  # one entry must not stop the suite: the row says what went wrong
        return error_row(entry, exc, time.monotonic() - clock, instance)
    warm = schedule.solver.get("warm_start", {})
    heft = warm.get("heft", {}).get(objective)
    return Row(**_identity(entry), instance=instance.name, tasks=len(instance.tasks), status=schedule.status.value,
               value=value, bound=bound, time=round(warm.get("wall_time", 0.0) + schedule.solver.get("wall_time", 0.0), 3),
               heft=heft, bound_source=schedule.solver.get("bound_source") if bound is not None else None,
               schedule=schedule.to_dict(), confirmed=confirmed)


def _confirm(entry: Entry, instance, optimum: Schedule) -> str:
    """Solve ``instance`` again with the MILP engine (its own formulation, hinted with CP-SAT's
    ``optimum``) for ``entry.confirm`` seconds: ``yes`` when it proves the same optimum, ``not in
    time`` when it proves nothing, ``MILP failed`` when its solver stops with an error; another
    proven value is a contradiction between the engines and raises (the row becomes an error)."""
    try:
        other = api.solve(instance, list(entry.objectives), time_limit=entry.confirm, engine="milp",
                          decompose="off", hint=optimum)
    except Exception:  # the MILP solver itself failed: no word on the optimum
        return "MILP failed"
    if other.status == Status.OPTIMAL:
        mine = [optimum.objectives[n] for n in entry.objectives]
        theirs = [other.objectives[n] for n in entry.objectives]
        if mine != theirs:
            raise RuntimeError(f"the MILP engine proves {theirs}, CP-SAT {mine}")
        return "yes"
    if other.status == Status.INFEASIBLE:
        raise RuntimeError(f"the MILP engine proves infeasible what CP-SAT solved ({optimum.objectives})")
    return "not in time"


def _front_row(entry: Entry, instance) -> Row:
    """The row of a front entry: every point validated; complete means the sweep proved it."""
    front = api.front(instance, list(entry.objectives), epsilon=entry.epsilon, time_limit=entry.time_limit,
                      workers=entry.workers, seed=entry.seed, decompose=entry.decompose)
    for p in front.points:
        report = validate(instance, p.schedule)
        if not report.valid:
            raise RuntimeError("invalid schedule in the front: " + "; ".join(map(str, report.violations)))
    return Row(**_identity(entry), instance=instance.name, tasks=len(instance.tasks),
               status=(Status.OPTIMAL if front.complete else Status.FEASIBLE).value, value=None, bound=None,
               time=round(front.meta.get("wall_time", 0.0), 3), points=len(front.points),
               proven=sum(p.status is Status.OPTIMAL for p in front.points), solves=front.meta.get("solves"),
               front_gap=None if front.gap is None else round(100 * front.gap, 3))


def error_row(entry: Entry, exc: BaseException, seconds: float, instance=None) -> Row:
    """The row of an entry that raised ``exc`` after ``seconds`` (``instance``: if it was loaded)."""
    return Row(**_identity(entry), instance=instance.name if instance else "",
               tasks=len(instance.tasks) if instance else None, status=ERROR, value=None, bound=None,
               time=round(seconds, 3), error=f"{type(exc).__name__}: {' '.join(str(exc).split())}")


def _identity(entry: Entry) -> dict:
    """The Row fields an entry fixes before it is solved."""
    return dict(suite=entry.suite, index=entry.index, input=entry.label, processors=entry.processors,
                platform=entry.platform and Path(entry.platform).stem,
                objective=",".join(entry.objectives) if entry.epsilon else entry.objectives[0],
                time_limit=entry.time_limit, known=entry.known)


# ----- running -------------------------------------------------------------------------------


def default_jobs() -> int:
    """Half the CPUs: CP-SAT runs several threads per solve."""
    return max(1, (os.cpu_count() or 1) // 2)


def run_suite(suite: Suite, jobs: int | None = None, dask_address: str | None = None,
              on_row: Callable[[Row], None] | None = None) -> list[Row]:
    """Solve every entry of ``suite``; return the rows in suite order.

    Entries run in ``jobs`` local worker processes (default :func:`default_jobs`; one job
    runs them in this process), or on the dask scheduler at ``dask_address``.  ``on_row`` is called with each row as it finishes
    (``len(suite.entries)`` rows in all).  A failing entry, or a worker that dies, gives an
    ``error`` row; the other entries go on.
    """
    entries = suite.entries
    rows: list[Row | None] = [None] * len(entries)
    clock = time.monotonic()

    def done(position: int, outcome: Callable[[], Row]) -> None:
        try:
            row = outcome()
        except Exception as exc:  # the worker itself failed (killed, unpicklable, lost)
            row = error_row(entries[position], exc, time.monotonic() - clock)
        rows[position] = row
        if on_row is not None:
            on_row(row)

    if dask_address is not None:
        from distributed import Client
        from distributed import as_completed as dask_completed

        with Client(dask_address) as client:
            futures = client.map(run_entry, entries, pure=False)
            position = {f.key: i for i, f in enumerate(futures)}
            for future in dask_completed(futures):
                done(position[future.key], future.result)
    elif jobs == 1:  # one at a time: in this process, no pool to start
        for i, entry in enumerate(entries):
            done(i, functools.partial(run_entry, entry))
    else:
        workers = min(jobs or default_jobs(), max(1, len(entries)))
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {pool.submit(run_entry, e): i for i, e in enumerate(entries)}
            for future in as_completed(futures):
                done(futures[future], future.result)
    return rows


# ----- output --------------------------------------------------------------------------------


CSV_COLUMNS = ("suite", "input", "instance", "tasks", "processors", "platform", "objective", "status",
               "value", "bound", "bound_source", "gap", "time", "time_limit", "known", "match", "heft",
               "points", "proven", "solves", "front_gap", "confirmed", "error")
_TABLE = (("input", "input"), ("instance", "instance"), ("tasks", "tasks"), ("m", "processors"),
          ("platform", "platform"), ("status", "status"), ("value", "value"), ("bound", "bound"),
          ("bound from", "bound_source"), ("gap %", "gap"), ("time s", "time"), ("known", "known"), ("match", "match"),
          ("HEFT", "heft"))
_FRONT_TABLE = (("input", "input"), ("instance", "instance"), ("tasks", "tasks"), ("objectives", "objective"),
                ("complete", "complete"), ("points", "points"), ("proven", "proven"), ("solves", "solves"),
                ("certified gap %", "front_gap"), ("time s", "time"))


def _cell(row: Row, column: str) -> str:
    value = getattr(row, column)
    if value is None:
        return ""
    if column == "gap":
        return f"{value:.1f}"
    if column == "front_gap":
        return f"{value:.2f}"
    if column == "time":
        return f"{value:.3f}" if isinstance(value, float) else str(value)
    if column == "time_limit":
        return f"{value:g}"
    return str(value)


def summary(rows: Sequence[Row]) -> list[str]:
    """The summary lines: known optima matched, open entries closed / improved, times."""
    exact = [r for r in rows if r.known is not None and r.known.exact]
    ranges = [r for r in rows if r.known is not None and not r.known.exact]

    def count(group: list[Row], word: str) -> int:
        return sum(r.match == word for r in group)

    limits = sorted({r.time_limit for r in rows})
    times = [r.time for r in rows if r.time is not None and r.status != ERROR]
    lines = [f"entries: {len(rows)}; objective: {', '.join(sorted({r.objective for r in rows}))}; "
             f"time limit per entry: {' / '.join(f'{t:g}' for t in limits)} s"]
    fronts = [r for r in rows if r.points is not None]
    if fronts:
        done = [r.time for r in fronts if r.status == Status.OPTIMAL]
        gaps = [r.front_gap for r in fronts if r.status != Status.OPTIMAL and r.front_gap is not None]
        lines.append(f"complete fronts: {len(done)}/{len(fronts)}"
                     + (f"; median time to complete {statistics.median(done):.1f} s" if done else "")
                     + (f"; the others certified within a median {statistics.median(gaps):.2f} % "
                        f"(max {max(gaps):.2f} %)" if gaps else ""))
        lines.append(f"points: {sum(r.points for r in fronts)}, proven {sum(r.proven for r in fronts)}; "
                     f"solves per point: {sum(r.solves or 0 for r in fronts) / max(1, sum(r.points for r in fronts)):.2f}")
    if exact:
        lines.append(f"known optimum matched: {count(exact, 'yes')}/{len(exact)} proven"
                     f" (+{count(exact, 'found')} found, not proven; {count(exact, 'no')} contradicting)")
    if ranges:
        lines.append(f"open entries closed: {count(ranges, 'closed')}/{len(ranges)}"
                     f" (improved: {count(ranges, 'improved')}; contradicting: {count(ranges, 'no')})")
    asked = [r for r in rows if r.confirmed is not None]
    if asked:
        lines.append(f"optima confirmed by the MILP engine's own formulation: "
                     f"{sum(r.confirmed == 'yes' for r in asked)}/{len(asked)}")
    stopped = sum(r.status in (Status.FEASIBLE, Status.UNKNOWN) for r in rows)
    lines.append(f"stopped at the time limit: {stopped}; errors: {sum(r.status == ERROR for r in rows)}")
    if times:
        lines.append(f"median time: {statistics.median(times):.3f} s (max {max(times):.3f} s)")
    return lines


def markdown(rows: Sequence[Row], description: str = "") -> str:
    """The rows as a markdown table under a heading and the :func:`summary`."""
    names = ", ".join(dict.fromkeys(r.suite for r in rows)) or "(empty)"
    out = [f"# Benchmark {names}", ""]
    if description:
        out += [description, ""]
    out += [f"- {line}" for line in summary(rows)] + [""]
    table = _FRONT_TABLE if rows and all(r.points is not None or r.status == ERROR for r in rows) else _TABLE
    if any(r.confirmed is not None for r in rows):
        table += (("MILP confirms", "confirmed"),)
    out.append("| " + " | ".join(h for h, _ in table) + " |")
    out.append("|" + "|".join(" --- " for _ in table) + "|")
    for r in rows:
        out.append("| " + " | ".join(_cell(r, c).replace("|", "\\|") for _, c in table) + " |")
    errors = [r for r in rows if r.error]
    if errors:
        out += ["", "## Errors", ""] + [f"- {r.input} ({r.instance or 'not loaded'}): {r.error}" for r in errors]
    return "\n".join(out) + "\n"


def write_results(rows: Sequence[Row], path: str | Path, description: str = "") -> tuple[Path, Path]:
    """Write the rows as CSV at ``path`` and as markdown next to it (``.md``); both atomically."""
    path = Path(path)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in rows:
        writer.writerow([_cell(r, c) for c in CSV_COLUMNS])
    md = path.with_suffix(".md")
    write_text(path, buffer.getvalue())
    write_text(md, markdown(rows, description))
    return path, md


RECORD_MATCHES = ("closed", "improved")
"""Rows whose schedules are worth keeping: they close or improve a known open range (and proven
optima of entries with no known value at all: ``new``)."""


def save_records(rows: Sequence[Row], directory: str | Path) -> list[Path]:
    """Write the schedule JSON of every closed or improved row, and of every proven optimum of an
    entry with no known value (a ``new`` record), to ``directory``; return the paths.

    A record is named after the entry, not the suite (``stg_50_rand0117-m4.json``), so runs
    of several suites over one entry keep one record: the better one (a proven optimum over
    an unproven schedule, else the lower value).  The schedule keeps its ``bounds`` and
    ``solver`` info (wall time, settings) and gains ``solver.bench``: the suite, input,
    known range and match, so the record stands alone.
    """
    directory = Path(directory)
    paths = []
    for r in rows:
        new = r.known is None and r.status == Status.OPTIMAL and r.points is None
        if not (r.match in RECORD_MATCHES or new) or r.schedule is None:
            continue
        name = _safe(str(Path(r.input).with_suffix(""))) + (f"-m{r.processors}" if r.processors else "")
        path = directory / f"{name}.json"
        if path.exists() and _rank(read_json(path)) <= _rank(r.schedule):
            continue
        record = dict(r.schedule)
        tag = {"suite": r.suite, "input": r.input, "known": "" if r.known is None else str(r.known),
               "match": "new" if new else r.match}
        if r.confirmed is not None:
            tag["milp"] = r.confirmed
        record["solver"] = {**record.get("solver", {}), "bench": tag}
        directory.mkdir(parents=True, exist_ok=True)
        write_json(path, record)
        paths.append(path)
    return paths


def _rank(schedule: dict) -> tuple:
    """Order of records: proven first, then by the first objective's value."""
    first = schedule["solver"]["objectives"][0]
    return (schedule["status"] != Status.OPTIMAL.value, schedule["objectives"][first])


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)
