"""The memory packer on MiniMalloc's challenging suite: ours against the plain CP-SAT model.

    python benchmarks/minimalloc.py [--only A,B] [--time-limit 30] [--no-plain] [--peers]
                                    [--minimalloc PATH] [--data instances/data/minimalloc]
                                    [--out benchmarks/results/minimalloc.md]

For each file (A-K, capacity 1 MiB each, and ``input.12``): does a packing
within the capacity come back, and how long did it take, with

* ``cpsched.memplan.pack`` (bounds, greedy-by-size, then the canonical DFS), and
* ``cpsched.memplan.cpsat_pack``, the textbook ``NoOverlap2D`` model, with 2 and
  with 8 workers (CPSAT-NOTES section 7: the portfolio changes with the worker
  count even on 2 cores),

each under ``--time-limit`` seconds, and with ``--peers`` the allocators of
``omnimalloc`` (``pip install omnimalloc``: a peer measured here, never a
dependency of cpsched) on the same buffers: greedy by size, greedy by conflict
size, TelaMalloc and SuperMalloc.  These minimise the arena without a capacity
and have no time limit; a file counts as packed when their arena fits.  With
``--minimalloc PATH``, upstream MiniMalloc's own binary (built from
github.com/google/minimalloc; not on the package registry) packs the same
files in the same run, under the same limit.  Every packing is checked
(``check_packing``).  The markdown table goes to ``--out`` and to stdout;
progress to stderr.  Upstream MiniMalloc (C++) needs 0.6-5.4 s per file on a
2-core machine (data README).
"""

from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from cpsched.memplan import check_packing, cpsat_pack, live_peak, pack, read_csv
from cpsched.schedule import Status

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "instances" / "data" / "minimalloc"


def files(data: Path, only: list[str] | None) -> list[tuple[str, Path, int]]:
    out = []
    for path in sorted(data.glob("*.csv")):
        m = re.match(r"(.+)\.(\d+)\.csv$", path.name)
        if not m:
            continue
        name, capacity = m.group(1), int(m.group(2))
        if name == "input":
            name = "input.12"
        if only and name not in only:
            continue
        out.append((name, path, capacity))
    return out


#: the omnimalloc allocators compared with --peers
PEERS = ("greedy_by_size", "greedy_by_conflict_size", "telamalloc", "supermalloc")


@dataclass
class Peer:
    """A peer allocator's answer in the shape of ``cpsched.memplan.pack``'s."""

    status: Status
    arena: int
    offsets: dict


def peer(name: str, blocks, capacity: int) -> Peer:
    import omnimalloc

    allocations = [omnimalloc.Allocation(id=b.id, size=b.size, start=b.lower, end=b.upper) for b in blocks]
    placed = omnimalloc.allocate(allocations, name)
    arena = max((a.offset + a.size for a in placed), default=0)
    return Peer(Status.FEASIBLE if arena <= capacity else Status.UNKNOWN, arena,
                {a.id: a.offset for a in placed})


def upstream(binary: Path, path: Path, blocks, capacity: int, limit: float) -> Peer:
    """Upstream MiniMalloc's answer for the file at ``path`` (its CLI writes the offsets as CSV)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.csv"
        done = subprocess.run([str(binary), f"--capacity={capacity}", f"--input={path}", f"--output={out}",
                               f"--timeout={limit:g}s"], capture_output=True, timeout=limit + 30)
        if done.returncode != 0 or not out.exists():
            return Peer(Status.UNKNOWN, 0, {})
        offsets = {row["id"]: int(row["offset"]) for row in csv.DictReader(out.read_text().splitlines())}
    arena = max((offsets[b.id] + b.size for b in blocks), default=0)
    return Peer(Status.FEASIBLE if arena <= capacity else Status.UNKNOWN, arena, offsets)


def cell(result, seconds: float, limit: float) -> str:
    if isinstance(result, Peer) and not result.status.has_schedule and result.arena:
        return f"arena {result.arena:,} > capacity ({seconds:.2f} s)"
    if result.status.has_schedule:
        return f"packed {seconds:.2f} s"
    if result.status is Status.INFEASIBLE:
        return f"infeasible (proven) {seconds:.2f} s"
    return f"none in {limit:g} s"


def run(data: Path, only: list[str] | None, limit: float, plain: bool, peers: bool,
        binary: Path | None = None) -> list[str]:
    engines = {"cpsched pack": lambda b, c, path: pack(b, c, limit)}
    if plain:
        engines["CP-SAT plain, 2 workers"] = lambda b, c, path: cpsat_pack(b, c, limit, workers=2)
        engines["CP-SAT plain, 8 workers"] = lambda b, c, path: cpsat_pack(b, c, limit, workers=8)
    if binary is not None:
        engines["MiniMalloc (C++)"] = lambda b, c, path: upstream(binary, path, b, c, limit)
    if peers:
        for name in PEERS:
            engines[f"omnimalloc {name}"] = lambda b, c, path, name=name: peer(name, b, c)
    names = list(engines)
    rows, packed = [], {n: 0 for n in names}
    chosen = files(data, only)
    for name, path, capacity in chosen:
        blocks = read_csv(path)
        cells = []
        for engine in names:
            t0 = time.monotonic()
            result = engines[engine](blocks, capacity, path)
            dt = time.monotonic() - t0
            if result.status.has_schedule:
                check_packing(blocks, result.offsets, capacity)
                packed[engine] += 1
            cells.append(cell(result, dt, limit))
            print(f"{name} {engine}: {result.status} arena {result.arena} ({dt:.2f} s)",
                  file=sys.stderr, flush=True)
        peak = live_peak(blocks)
        rows.append(f"| {name} | {len(blocks)} | {capacity:,} | {capacity - peak:,} | " + " | ".join(cells) + " |")
    head = [
        f"# MiniMalloc challenging suite: packing within the capacity ({limit:g} s per file and engine)",
        "",
        "Slack = capacity - peak of live bytes (0: every byte of the peak section is used).",
        "",
        "| file | buffers | capacity | slack | " + " | ".join(names) + " |",
        "| --- | ---: | ---: | ---: | " + " | ".join("---" for _ in names) + " |",
    ]
    foot = ["", "packed: " + ", ".join(f"{n} {packed[n]} of {len(chosen)}" for n in names)]
    return head + rows + foot


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--only", help="comma-separated file names, e.g. A,B,input.12")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--no-plain", action="store_true", help="skip the plain CP-SAT model")
    ap.add_argument("--peers", action="store_true", help="add omnimalloc's allocators (pip install omnimalloc)")
    ap.add_argument("--minimalloc", type=Path, help="upstream MiniMalloc's binary, run as a peer")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "minimalloc.md")
    args = ap.parse_args()
    only = [s.strip() for s in args.only.split(",")] if args.only else None
    lines = run(args.data, only, args.time_limit, not args.no_plain, args.peers, args.minimalloc)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
