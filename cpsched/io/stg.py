"""Reader for the Kasahara Standard Task Graph Set (STG), the variant without communication costs.

An STG file (Tobita & Kasahara, J. Scheduling 5(5), 2002) holds ``n`` on its
first line, then ``n + 2`` task lines ``id processing_time k pred_1 ... pred_k``
for tasks ``0 .. n+1`` in id order, then an information part of ``#`` lines.
Task 0 (entry) and task ``n + 1`` (exit) are dummies of processing time 0.

The mapping onto cpsched (``shared/data/stg/README.md``, "Mapping onto
cpsched") gives P|prec|Cmax on ``processors`` identical devices:

* devices ``p0 .. p{M-1}`` (``p0`` is the host), memory ``10**15``, static power 0;
* a link between every ordered pair of devices with latency 0, bandwidth 1,
  energy 0 and unlimited channels, so no transfer ever costs time;
* tasks ``t1 .. tn`` (op ``"stg"``), each with the same mode
  ``{duration: processing_time, energy: 0}`` on every device;
* the dummies are dropped: the entry has no real predecessors and the exit no
  real successors, so the precedences they imply are none;
* one size-0 tensor ``t<k>.out`` per task with real successors, consumed by
  those successors in id order.

>>> inst = parse_stg("2\\n0 0 0\\n1 3 1 0\\n2 4 1 1\\n3 0 1 2\\n# CP Length : 7\\n", 2, "tiny")
>>> inst.name, [t.id for t in inst.tasks], [(x.id, x.consumers) for x in inst.tensors]
('tiny/m=2', ['t1', 't2'], [('t1.out', ('t2',))])
>>> dict(inst.meta)
{'source': 'stg', 'processors': 2, 'cp_length': 7}
"""

from __future__ import annotations

import re
from pathlib import Path

from cpsched.checks import parse_int
from cpsched.errors import InputError
from cpsched.files import read_text
from cpsched.instance import Device, Instance, Link, Mode, Task, Tensor

MEMORY = 10**15
"""Memory of every device: large enough never to bind."""

_CP_LENGTH = re.compile(r"^#\s*CP\s+Length\s*:\s*(\d+)\s*$", re.IGNORECASE)


def read_stg(path: str | Path, processors: int) -> Instance:
    """Read an STG file onto ``processors`` identical devices; errors name the file.

    The instance is named after the file stem, e.g. ``rand0000/m=4``.
    """
    path = Path(path)
    text = read_text(path)
    try:
        return parse_stg(text, processors, path.stem)
    except InputError as exc:
        raise exc.in_file(path) from None


def parse_stg(text: str, processors: int, name: str) -> Instance:
    """Parse the text of an STG file onto ``processors`` identical devices.

    ``name`` is the graph's name (read_stg passes the file stem); the instance
    is called ``f"{name}/m={processors}"``.  Raises a one-line
    :class:`InputError` naming the line (1-based) and the task.
    """
    if isinstance(processors, bool) or not isinstance(processors, int):
        raise InputError(f"processors must be an integer (got {processors!r})")
    if processors < 1:
        raise InputError(f"processors must be >= 1 (got {processors})")

    # (line number, tokens) of every line that is neither blank nor a '#' comment.
    content: list[tuple[int, list[str]]] = []
    cp_length: int | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            match = _CP_LENGTH.match(stripped)
            if match and cp_length is None:
                cp_length = parse_int(match.group(1), f"line {lineno}: CP length")
            continue
        content.append((lineno, stripped.split()))

    if not content:
        raise InputError("empty file: no task count n on the first line")
    lineno, tokens = content[0]
    if len(tokens) != 1:
        raise InputError(f"line {lineno}: the first line must hold only the task count n (got {' '.join(tokens)!r})")
    n = _int(tokens[0], f"line {lineno}: task count n")
    if n < 1:
        raise InputError(f"line {lineno}: task count n must be >= 1 (got {n})")
    exit_id = n + 1

    task_lines = content[1:]
    if len(task_lines) < n + 2:
        missing = len(task_lines)
        after = task_lines[-1][0] if task_lines else lineno
        raise InputError(
            f"line {after + 1}: task {missing}: file ends after {missing} task lines "
            f"(truncated? n={n} needs {n + 2} task lines, tasks 0..{exit_id})"
        )
    if len(task_lines) > n + 2:
        extra_line, extra = task_lines[n + 2]
        raise InputError(
            f"line {extra_line}: unexpected content after the exit task {exit_id} "
            f"(n={n} needs exactly {n + 2} task lines): {' '.join(extra)!r}"
        )

    times: dict[int, int] = {}
    preds: dict[int, list[int]] = {}
    for expected, (lineno, tokens) in enumerate(task_lines):
        where = f"line {lineno}: task {expected}"
        if len(tokens) < 3:
            raise InputError(
                f"{where}: a task line needs 'id processing_time k pred_1 .. pred_k' (got {' '.join(tokens)!r})"
            )
        task_id = _int(tokens[0], f"{where}: task id")
        if task_id != expected:
            raise InputError(f"line {lineno}: task id {task_id} out of sequence (expected {expected})")
        time = _int(tokens[1], f"{where}: processing time")
        k = _int(tokens[2], f"{where}: predecessor count")
        if time < 0:
            raise InputError(f"{where}: processing time must be >= 0 (got {time})")
        if k < 0:
            raise InputError(f"{where}: predecessor count must be >= 0 (got {k})")
        fields = tokens[3:]
        if len(fields) < k:
            raise InputError(f"{where}: predecessor count is {k} but only {len(fields)} predecessor ids follow")
        if len(fields) > k:
            raise InputError(f"{where}: predecessor count is {k} but {len(fields)} predecessor ids follow")
        plist: list[int] = []
        for tok in fields:
            p = _int(tok, f"{where}: predecessor id")
            if task_id != exit_id and p == exit_id:
                raise InputError(f"{where}: refers to the dummy exit task {exit_id} (n={n}) as a predecessor")
            if p < 0 or p >= task_id:
                raise InputError(
                    f"{where}: predecessor {p} is not lower than the task's own id "
                    f"(the STG format lists every task after its predecessors)"
                )
            if p in plist:
                raise InputError(f"{where}: predecessor {p} is listed twice")
            plist.append(p)
        if task_id in (0, exit_id):
            if time != 0:
                kind = "entry" if task_id == 0 else "exit"
                raise InputError(f"{where}: the dummy {kind} task must have processing time 0 (got {time})")
        elif time == 0:
            raise InputError(
                f"{where}: processing time 0 on a real task (cpsched requires duration >= 1; "
                f"only the dummy tasks 0 and {exit_id} may take 0)"
            )
        times[task_id] = time
        preds[task_id] = plist

    # Real successors of every real task, in id order (the dummies are dropped).
    succs: dict[int, list[int]] = {i: [] for i in range(1, n + 1)}
    for v in range(1, n + 1):
        for p in preds[v]:
            if p != 0:
                succs[p].append(v)

    devices = tuple(
        Device(id=f"p{i}", memory=MEMORY, static_power=0, host=(i == 0)) for i in range(processors)
    )
    links = tuple(
        Link(src=a.id, dst=b.id, latency=0, bandwidth=1, energy_per_byte=0, channels=0)
        for a in devices for b in devices if a.id != b.id
    )
    tasks = tuple(
        Task(id=f"t{v}", op="stg", modes={d.id: Mode(duration=times[v], energy=0) for d in devices})
        for v in range(1, n + 1)
    )
    tensors = tuple(
        Tensor(id=f"t{v}.out", size=0, producer=f"t{v}", consumers=tuple(f"t{s}" for s in sorted(succs[v])))
        for v in range(1, n + 1) if succs[v]
    )
    meta: dict = {"source": "stg", "processors": processors}
    if cp_length is not None:
        meta["cp_length"] = cp_length
    return Instance(
        name=f"{name}/m={processors}", devices=devices, links=links, tasks=tasks, tensors=tensors, meta=meta
    )


def _int(token: str, where: str) -> int:
    """The token as an int (decimal digits with an optional sign), else an InputError naming ``where``."""
    return parse_int(token, where, minimum=None)
