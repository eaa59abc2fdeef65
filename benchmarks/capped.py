"""Latency under a memory cap: every bound the engine has there against the proven optimum.

    python benchmarks/capped.py [--model squeezenet] [--fuse none] [--platform edge] [--time-limit 60]
                                [--caps 7370847,7172959,...] [--out benchmarks/results/capped-squeezenet.md]

A latency/memory front's steps minimise latency under a memory cap; where the
cap binds, a step is proven only when its bound reaches the optimum. Per cap
this records, side by side:

* ``relaxation``: the whole model's latency bound (critical path, load, series
  decomposition), which no cap changes;
* ``placed``: the placement relaxation under the cap
  (:func:`cpsched.residency.placed`: weights and running bytes within the cap
  per device, one placement per segment between cut tasks with its span's
  bound: paths, single-machine heads and tails, link loads);
* ``series, priced``: the series bound under the cap, priced where its device
  choice overfills a device (what a front's capped step gets,
  :func:`cpsched.decompose._price_under`);
* the step itself (``cpsched.solve``, latency then memory under the cap): its
  status, latency, bound and time.

The default caps are the hard stretch of squeezenet's exact front on ``edge``
(each a point's memory minus one, so the answer is the next point): the bound
gap there, not the sweep, is what keeps that front from completing in 120 s.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import cpsched
from cpsched import decompose, residency
from cpsched.bounds import relaxation_bounds, usable_devices
from cpsched.engines import Options, get

#: squeezenet (edge): each cap is a point's memory minus one on the exact front (fronts-squeezenet-600s.md)
CAPS = (7_370_847, 7_239_519, 7_172_959, 7_140_959, 7_103_327, 7_058_687, 7_041_855, 6_939_743)
#: seconds the series bound and its pricing get per cap (a front's step gives it 0.3 of its time)
PRICE_BUDGET = 20.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="squeezenet")
    ap.add_argument("--fuse", default="none")
    ap.add_argument("--platform", default="edge")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--caps", default=",".join(map(str, CAPS)))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    instance = cpsched.load(args.model, platform=args.platform, fuse=args.fuse)
    usable = usable_devices(instance)
    floor = relaxation_bounds(instance, usable)["latency"]
    out = args.out or Path(f"benchmarks/results/capped-{args.model}.md")
    lines = [f"# Latency under a memory cap: {args.model} (fuse {args.fuse}) on `{args.platform}`", "",
             f"Run {time.strftime('%Y-%m-%d %H:%M')} on this machine (2 cores), nothing else running "
             f"(`python benchmarks/capped.py`). Each solve {args.time_limit:g} s; the series bound and its "
             f"pricing {PRICE_BUDGET:g} s; the placement relaxation {residency.LIMIT:g} s. Latency in us; "
             f"the whole model's bound without a cap is {floor:,}.", "",
             "| cap (bytes) | placed | series, priced | solve | latency | its bound | time (s) "
             "| best bound / latency |",
             "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for cap in (int(c) for c in args.caps.split(",")):
        limits = {"memory": cap}
        placed = residency.placed(instance, cap)
        _, priced, _ = decompose._price_under(instance, usable, Options(), get("cpsat"), limits, PRICE_BUDGET)
        clock = time.monotonic()
        found = cpsched.solve(instance, ["latency", "memory"], limits=limits, time_limit=args.time_limit)
        spent = time.monotonic() - clock
        latency = found.objectives.get("latency")
        bound = found.bounds.get("latency", latency)
        best = max(b for b in (floor, placed and placed.bound, priced) if b is not None)
        share = "" if not latency else f"{best / latency:.1%}"
        lines.append(f"| {cap:,} | {_n(placed and placed.bound)} | {_n(priced)} | {found.status.value} "
                     f"| {_n(latency)} | {_n(bound)} | {spent:.1f} | {share} |")
        print(lines[-1], flush=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


def _n(value: int | None) -> str:
    """A table cell: the integer with thousands separators, or a dash for none."""
    return "-" if value is None else f"{value:,}"


if __name__ == "__main__":
    main()
