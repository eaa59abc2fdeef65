"""Write the smoke suite's own STG-format graphs (``python instances/smoke/make_graphs.py``).

Each graph is a layered random DAG drawn from ``random.Random(seed)``: the
``n`` tasks are dealt into ``layers`` layers in id order, every task after the
first layer gets 1-2 predecessors from earlier layers (one of them always from
the layer just before, so the layers are real), and processing times are 1-9.
The files follow the Kasahara STG format (``shared/data/stg/README.md``):
``n``, then the dummy entry 0, tasks ``1..n``, the dummy exit ``n + 1`` whose
predecessors are the sinks, then a ``#`` information part with the critical
path length.  Rerunning the script rewrites identical files.
"""

from __future__ import annotations

import random
from pathlib import Path

#: (file stem, seed, tasks, layers)
GRAPHS = (("g12", 12, 12, 4), ("g16", 16, 16, 5), ("g20", 20, 20, 6))


def layered_graph(seed: int, n: int, layers: int) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Processing time and predecessors (STG ids, 0 for "none") of tasks ``1..n``."""
    rng = random.Random(seed)
    layer_of = {v: (v - 1) * layers // n for v in range(1, n + 1)}
    times = {v: rng.randint(1, 9) for v in range(1, n + 1)}
    preds: dict[int, list[int]] = {}
    for v in range(1, n + 1):
        if layer_of[v] == 0:
            preds[v] = [0]
            continue
        before = [u for u in range(1, v) if layer_of[u] == layer_of[v] - 1]
        earlier = [u for u in range(1, v) if layer_of[u] < layer_of[v] - 1]
        chosen = {rng.choice(before)}
        if rng.random() < 0.5:
            chosen.add(rng.choice(before + earlier))
        preds[v] = sorted(chosen)
    return times, preds


def stg_text(name: str, seed: int, times: dict[int, int], preds: dict[int, list[int]]) -> str:
    """The graph in STG format, with its critical path length in the information part."""
    n = len(times)
    finish: dict[int, int] = {}
    for v in range(1, n + 1):
        finish[v] = times[v] + max((finish[p] for p in preds[v] if p), default=0)
    has_succ = {p for ps in preds.values() for p in ps}
    sinks = [v for v in range(1, n + 1) if v not in has_succ]
    rows = [(0, 0, []), *((v, times[v], preds[v]) for v in range(1, n + 1)), (n + 1, 0, sinks)]
    lines = [f"{n:11d}"]
    lines += ["".join(f"{x:11d}" for x in (v, t, len(ps), *ps)) for v, t, ps in rows]
    lines += [
        "# cpsched smoke graph (not from the Kasahara set): instances/smoke/make_graphs.py",
        f"# Graph {name}: layered random DAG, random.Random({seed})",
        f"#   Tasks             : {n} (+dummy tasks : 2)",
        f"#   Total work        : {sum(times.values())}",
        f"# CP Length           : {max(finish.values())}",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    here = Path(__file__).resolve().parent
    for name, seed, n, layers in GRAPHS:
        times, preds = layered_graph(seed, n, layers)
        (here / f"{name}.stg").write_text(stg_text(name, seed, times, preds), encoding="utf-8")


if __name__ == "__main__":
    main()
