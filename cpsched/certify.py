"""Certified fronts: the proven lower set of a sweep and its gap (PROBLEM.md section 5).

Every stage of every sub-solve proves a *statement*: "every schedule whose
objectives satisfy ``given`` (upper limits) has ``objective >= at_least``", or,
for a proven infeasible sub-solve, "no schedule satisfies ``given``".  Each
statement forbids a box of objective vectors, ``{y : y_i <= given_i, y_o <=
at_least - 1}`` (the coordinates it does not name are free), and the feasible
vectors lie in what remains above the objectives' floors: a set closed upwards,
whose minimal points are the **lower set** ``L``: every feasible ``y`` has some
``l`` in ``L`` with ``l <= y``.  :class:`LowerSet` keeps ``L`` exact under each
new statement (the local-bound update of Klamroth, Lacour and Vanderpooten,
EJOR 2015: a point inside the removed box is replaced by its raises out of the
box along each bounded coordinate, then only the minimal points are kept).

``L`` certifies a front: when ``L`` equals the set of found points, no
schedule is better anywhere, so the front is complete; otherwise the
**gap** (:func:`gap`) is the hypervolume between ``L`` and the points relative
to ``L``'s, with the reference point one above the worst value of either:
``0 <= gap < 1``, 0 exactly when the front is complete.

>>> lower = LowerSet((0, 0))
>>> lower.forbid({1: 4}, 0, 10)        # every y with y2 <= 4 has y1 >= 10
>>> lower.forbid({}, 1, 4)             # every y has y2 >= 4
>>> lower.points                       # (10, 4), or anything with y2 >= 5
[(0, 5), (10, 4)]
>>> lower.forbid({}, 0, 10)            # every y has y1 >= 10
>>> lower.points
[(10, 4)]
>>> gap([(10, 4)], [(10, 4)]), round(gap([(9, 4)], [(10, 4)]), 3)
(0.0, 0.5)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

Vector = tuple[int, ...]


class LowerSet:
    """The minimal points of the vectors not excluded by any statement, above ``floors``."""

    def __init__(self, floors: Sequence[int], points: Iterable[Sequence[int]] | None = None):
        self.dims = len(floors)
        self.points: list[Vector] = _minimal([tuple(p) for p in points] if points is not None
                                             else [tuple(floors)])

    def forbid(self, given: Mapping[int, int], objective: int | None, at_least: int | None) -> None:
        """Add the statement: every ``y`` with ``y[i] <= given[i]`` has ``y[objective] >= at_least``
        (``objective`` None: no ``y`` satisfies ``given`` at all)."""
        box = dict(given)
        if objective is not None:
            if at_least is None:
                return
            box[objective] = min(box.get(objective, math.inf), at_least - 1)
        out = []
        for lo in self.points:
            if any(lo[i] > c for i, c in box.items()):
                out.append(lo)
                continue
            for i, c in box.items():  # raise ``lo`` just out of the box along each bounded coordinate
                raised = list(lo)
                raised[i] = c + 1
                out.append(tuple(raised))
        self.points = _minimal(out)

    def covers(self, point: Sequence[int]) -> bool:
        """True when some lower point is <= ``point`` (every feasible vector is covered)."""
        return any(all(a <= b for a, b in zip(lo, point)) for lo in self.points)


def _minimal(points: list[Vector]) -> list[Vector]:
    """The distinct points no other point is <= to (sorted)."""
    unique = sorted(set(points))
    keep = []
    if unique and len(unique[0]) == 2:  # sorted, a pair is dominated exactly by an earlier one with no larger y2
        least = math.inf
        for p in unique:
            if p[1] < least:
                keep.append(p)
                least = p[1]
        return keep
    for p in unique:
        if not any(q != p and all(a <= b for a, b in zip(q, p)) for q in unique):
            keep.append(p)
    return keep


def gap(lower: Sequence[Sequence[int]], points: Sequence[Sequence[int]]) -> float | None:
    """(HV(lower) - HV(points)) / HV(lower), both with the reference point ``worst + 1``.

    ``worst`` is the worst value per objective over the points *and* the lower set:
    with the points' nadir alone (PROBLEM.md section 5's wording), a lower point
    beyond it in some objective would count for nothing, and an incomplete front
    could show a gap of 0.  So: 0 exactly when ``lower`` equals the points'
    minimal set (a complete front), else in (0, 1); None without points.
    """
    if not points:
        return None
    import moocore
    import numpy as np

    both = np.asarray([*points, *lower], dtype=float)
    ref = both.max(axis=0) + 1
    hv_lower = float(moocore.hypervolume(np.asarray(lower, dtype=float), ref=ref)) if len(lower) else 0.0
    hv_points = float(moocore.hypervolume(np.asarray(points, dtype=float), ref=ref))
    if hv_lower <= hv_points:
        return 0.0
    return (hv_lower - hv_points) / hv_lower
