"""Readers for classic DAG-scheduling graphs with communication costs.

Three formats of the academic literature, each onto the same kind of instance
(``P|prec,c_ij|Cmax`` with identical processors, or its heterogeneous form
with a cost per task and machine):

* **Sinnen DOT** (Oliver Sinnen's task graphs; :func:`parse_dot`): ``id
  [Weight=w];`` is a task of duration ``w``, ``u -> v [Weight=c];`` an edge with
  communication cost ``c``; on ``processors`` identical processors;
* **HEFT CSV** (the Topcuoglu et al. 2002 sample graph as ``mackncheesiest/heft``
  ships it; :func:`read_heft_csv`): ``*_task_exe_time.csv`` (a row per task, a
  column per processor) beside ``*_task_connectivity.csv`` (an adjacency matrix
  of data volumes) and optionally ``*_resource_BW.csv`` (bandwidths, 1 if absent);
* **Santiago** (``AASantiago/SchedulingInstances``; :func:`parse_santiago`):
  ``#tasks`` then ``i: c_0, c_1, ...`` (cost per machine), ``#edges`` then
  ``k: u, v, c``, ``#end``.  Costs may have decimals: every number is scaled by
  the same power of ten so that all are integers (``meta.scale``; the published
  values divide back).

The mapping (:func:`build`): devices ``p0 .. p{m-1}`` (``p0`` is the host),
memory and static power that never matter; one tensor per edge of size ``c``
(so a transfer costs ``c`` exactly when the two tasks' devices differ, and an
edge of cost 0 is a pure precedence); links of latency 0 and bandwidth 1 with
unlimited channels (the contention-free model of the published values) or, with
``contention``, one channel each (cpsched's exclusive links, whose optima can
only be higher).

>>> inst = parse_dot('digraph "g" { a [Weight=2]; b [Weight=3]; a -> b [Weight=4]; }', 2, "g")
>>> inst.name, [(t.id, t.modes["p1"].duration) for t in inst.tasks], [(x.id, x.size) for x in inst.tensors]
('g/m=2', [('a', 2), ('b', 3)], [('a->b', 4)])
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from pathlib import Path

from cpsched.checks import check_int, parse_int
from cpsched.errors import InputError
from cpsched.files import exists, read_text
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor

MEMORY = 10**15
"""Memory of every device: large enough never to bind."""


def build(name: str, costs: Mapping[str, Sequence[int]], edges: Sequence[tuple[str, str, int]],
          contention: bool = False, meta: Mapping | None = None,
          bandwidth: Mapping[tuple[int, int], int] | None = None) -> Instance:
    """The instance of tasks with a duration per device (``costs[task][i]`` on ``p{i}``) and
    edges ``(u, v, c)``; ``bandwidth`` maps device index pairs to a bandwidth other than 1."""
    width = len(next(iter(costs.values()))) if costs else 1
    devices = tuple(Device(id=f"p{i}", memory=MEMORY, static_power=0, host=(i == 0)) for i in range(width))
    links = tuple(Link(src=f"p{a}", dst=f"p{b}", latency=0, bandwidth=(bandwidth or {}).get((a, b), 1),
                       energy_per_byte=0, channels=1 if contention else 0)
                  for a in range(width) for b in range(width) if a != b)
    tasks = tuple(Task(id=v, op="task", modes={f"p{i}": Mode(duration=d, energy=0) for i, d in enumerate(row)})
                  for v, row in costs.items())
    tensors = tuple(Tensor(id=f"{u}->{v}", size=c, producer=u, consumers=(v,)) for u, v, c in edges)
    info = {**(meta or {}), "contention": contention}
    return Instance(name=name, devices=devices, links=links, tasks=tasks, tensors=tensors, meta=info)


def _read(path: str | Path, parse, *args) -> Instance:
    path = Path(path)
    try:
        return parse(read_text(path), *args)
    except InputError as exc:
        raise exc.in_file(path) from None


# ----- Sinnen DOT ------------------------------------------------------------------------

_NAME = re.compile(r'^\s*(?:strict\s+)?digraph\s+(?:"([^"]*)"|(\w+))?\s*\{', re.IGNORECASE)
_STATEMENT = re.compile(r'("[^"]*"|[\w.]+)\s*(?:->\s*("[^"]*"|[\w.]+)\s*)?\[([^\]]*)\]')
_DEFAULTS = ("graph", "node", "edge")  # attribute statements that declare no node
_WEIGHT = re.compile(r'\bWeight\s*=\s*"?(-?\w+)"?', re.IGNORECASE)


def read_dot(path: str | Path, processors: int, contention: bool = False) -> Instance:
    """Read a Sinnen DOT graph onto ``processors`` identical processors; errors name the file."""
    return _read(path, parse_dot, processors, Path(path).stem, contention)


def parse_dot(text: str, processors: int, name: str, contention: bool = False) -> Instance:
    """Parse the text of a Sinnen DOT graph (see the module docstring); the instance is called
    ``f"{name}/m={processors}"``.  Raises a one-line InputError naming the statement."""
    check_int(processors, "processors", minimum=1)
    head = _NAME.match(text)
    if head is None:
        raise InputError("not a DOT digraph: the text must start with 'digraph NAME {'")
    body = text[head.end():]
    if "}" not in body:
        raise InputError("the digraph is not closed by '}'")
    body = body[:body.rindex("}")]
    weights: dict[str, int] = {}
    edges: list[tuple[str, str, int]] = []
    at = 0
    for match in _STATEMENT.finditer(body):
        _between(body[at:match.start()])
        at = match.end()
        u, v = (x.strip('"') if x else x for x in match.group(1, 2))
        if v is None and u.lower() in _DEFAULTS:
            continue
        weight = _WEIGHT.search(match.group(3))
        if weight is None:
            raise InputError(f"statement {match.group(0)[:60]!r}: expected 'id [Weight=w]' or 'u -> v [Weight=c]'")
        w = parse_int(weight.group(1), f"{'edge ' + u + ' -> ' + v if v else 'node ' + u}: Weight", minimum=0)
        if v is None:
            if u in weights:
                raise InputError(f"node {u!r} is declared twice")
            if w < 1:
                raise InputError(f"node {u!r}: Weight must be >= 1 (got {w})")
            weights[u] = w
        else:
            edges.append((u, v, w))
    _between(body[at:])
    if not weights:
        raise InputError("the graph has no nodes")
    seen = set()
    for u, v, _ in edges:
        for end in (u, v):
            if end not in weights:
                raise InputError(f"edge {u} -> {v}: node {end!r} has no declaration with a Weight")
        if (u, v) in seen:
            raise InputError(f"edge {u} -> {v} appears twice")
        seen.add((u, v))
    graph = head.group(1) or head.group(2) or name
    return build(f"{name}/m={processors}", {v: [w] * processors for v, w in weights.items()}, edges, contention,
                 {"source": "dot", "graph": graph, "processors": processors})


def _between(text: str) -> None:
    """Between statements only separators and comments may stand."""
    rest = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S).replace(";", "").strip()
    if rest:
        raise InputError(f"statement {rest[:60]!r}: expected 'id [Weight=w]' or 'u -> v [Weight=c]'")


# ----- Santiago --------------------------------------------------------------------------

def read_santiago(path: str | Path, contention: bool = False) -> Instance:
    """Read a Santiago heterogeneous graph (``.txt`` or ``.dag``); errors name the file."""
    return _read(path, parse_santiago, Path(path).stem, contention)


def is_santiago(text: str) -> bool:
    """True when ``text`` has the sections of the Santiago format."""
    return "#tasks" in text and "#edges" in text


def parse_santiago(text: str, name: str, contention: bool = False) -> Instance:
    """Parse the text of a Santiago graph (see the module docstring)."""
    sections: dict[str, list[tuple[int, str]]] = {}
    current = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            current = stripped[1:].strip().lower()
            sections.setdefault(current, [])
        elif stripped and current is not None:
            sections[current].append((lineno, stripped))
    for needed in ("tasks", "edges"):
        if needed not in sections:
            raise InputError(f"no #{needed} section")
    rows: dict[str, list[str]] = {}
    for lineno, line in sections["tasks"]:
        key, values = _entry(lineno, line)
        if key in rows:
            raise InputError(f"line {lineno}: task {key} is listed twice")
        rows[key] = values
    if not rows:
        raise InputError("the #tasks section is empty")
    width = {len(v) for v in rows.values()}
    if len(width) != 1:
        raise InputError(f"tasks have costs on different numbers of machines ({sorted(width)})")
    raw_edges = []
    for lineno, line in sections["edges"]:
        _, values = _entry(lineno, line)
        if len(values) != 3:
            raise InputError(f"line {lineno}: an edge needs 'k: from, to, cost' (got {line!r})")
        raw_edges.append((lineno, values))
    numbers = [x for v in rows.values() for x in v] + [e[2] for _, e in raw_edges]
    scale = 10 ** max(_decimals(x) for x in numbers)
    costs = {f"t{k}": [_scaled(x, scale, f"task {k}", minimum=1) for x in v] for k, v in rows.items()}
    edges = []
    for lineno, (u, v, c) in raw_edges:
        for end in (u, v):
            if end not in rows:
                raise InputError(f"line {lineno}: edge names task {end}, which #tasks does not list")
        edges.append((f"t{u}", f"t{v}", _scaled(c, scale, f"line {lineno}: edge cost", minimum=0)))
    return build(name, costs, edges, contention, {"source": "santiago", "scale": scale})


def _entry(lineno: int, line: str) -> tuple[str, list[str]]:
    key, sep, rest = line.partition(":")
    if not sep:
        raise InputError(f"line {lineno}: expected 'k: value, value, ...' (got {line!r})")
    values = [x for x in re.split(r"[,\s]+", rest.strip()) if x]
    return key.strip(), values


def _decimals(token: str) -> int:
    try:
        exponent = Decimal(token).normalize().as_tuple().exponent
    except InvalidOperation:
        raise InputError(f"{token!r} is not a number") from None
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _scaled(token: str, scale: int, where: str, minimum: int) -> int:
    value = Decimal(token) * scale
    if value != value.to_integral_value() or value < minimum:
        raise InputError(f"{where}: {token} must be a number >= {minimum}")
    return int(value)


# ----- HEFT CSV --------------------------------------------------------------------------

EXE_SUFFIX = "task_exe_time.csv"


def read_heft_csv(path: str | Path, contention: bool = False) -> Instance:
    """Read the HEFT CSV graph whose ``*_task_exe_time.csv`` is ``path``; its connectivity
    (and bandwidth) files are found beside it by name.  Errors name the file."""
    path = Path(path)
    if not path.name.endswith(EXE_SUFFIX):
        raise InputError(f"{path}: a HEFT CSV graph is named by its '*_{EXE_SUFFIX}' file")
    stem = path.name[:-len(EXE_SUFFIX)]
    edges_file = path.with_name(stem + "task_connectivity.csv")
    bw_file = path.with_name(stem + "resource_BW.csv")
    costs = _read(path, _matrix, "task")
    if not costs or any(c < 1 for row in costs.values() for c in row):
        raise InputError(f"{path}: every task needs a cost >= 1 on every processor")
    matrix = _read(edges_file, _matrix, "task")
    bandwidth = _read(bw_file, _matrix, "processor") if exists(bw_file) else None
    names = list(costs)
    for where, rows, width in ((edges_file, matrix, len(names)),
                               (bw_file, bandwidth or {}, len(next(iter(costs.values()))))):
        if rows and (len(rows) != width or any(len(r) != width for r in rows.values())):
            raise InputError(f"{where}: expected a {width} x {width} matrix (got {len(rows)} rows)")
    edges = [(names[i], names[j], row[j]) for i, row in enumerate(matrix.values()) for j in range(len(names))
             if row[j] > 0]
    links = {(a, b): bw for a, row in enumerate((bandwidth or {}).values()) for b, bw in enumerate(row)
             if a != b and bw != 1}
    if any(bw < 1 for bw in links.values()):
        raise InputError(f"{bw_file}: every bandwidth between two processors must be >= 1")
    return build(path.name[:-len(EXE_SUFFIX)].rstrip("_") or path.stem, costs, edges, contention,
                 {"source": "heft-csv"}, links)


def _matrix(text: str, kind: str) -> dict[str, list[int]]:
    """Rows of a CSV matrix with a header line and a label column, as integers."""
    rows = list(csv.reader(io.StringIO(text)))
    if len(rows) < 2:
        raise InputError("expected a header line and at least one row")
    out: dict[str, list[int]] = {}
    for lineno, row in enumerate(rows[1:], start=2):
        if not row or not row[0].strip():
            continue
        if row[0] in out:
            raise InputError(f"line {lineno}: {kind} {row[0]!r} is listed twice")
        out[row[0].strip()] = [parse_int(x.strip(), f"line {lineno}: {kind} {row[0]}", minimum=0) for x in row[1:]]
    return out
