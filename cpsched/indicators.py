"""Quality indicators of one front against a reference front, as pure functions over plain data.

The mathematics is moocore's (:func:`moocore.hypervolume`,
:func:`moocore.igd_plus`, :func:`moocore.epsilon_additive`); this module only
normalises and packages.  Every objective is minimised and normalised by the
*reference* front's ideal and nadir points, ``(x - ideal) / (nadir - ideal)``,
a zero range (a one-point front, or all points equal in one objective)
counting as 1.  So the reference front lies in ``[0, 1]`` per objective and the
hypervolume reference point defaults to 1.1 in every normalised objective.
Points of the other front outside that box still count for IGD+ and epsilon;
the hypervolume ignores the parts beyond the reference point.

>>> from cpsched.schedule import Front, Point, Schedule, Status
>>> def front(*vectors):
...     s = Schedule("x", Status.FEASIBLE)
...     return Front("x", ("latency", "memory"), tuple(Point(v, Status.FEASIBLE, s) for v in vectors), False)
>>> c = compare(front((1, 4), (2, 2), (4, 1)), front((1, 4), (2, 2), (4, 1)))
>>> c["hypervolume_ratio"], c["igd_plus"], c["epsilon_additive"], c["found_exactly"]
(1.0, 0.0, 0.0, 3)
"""

from __future__ import annotations

from collections.abc import Sequence

import moocore
import numpy as np

from cpsched.schedule import Front

#: The default hypervolume reference point, per normalised objective.
DEFAULT_REF = 1.1


def normalise(points: Sequence[Sequence[float]], ideal: Sequence[float], nadir: Sequence[float]) -> np.ndarray:
    """``(points - ideal) / (nadir - ideal)`` row by row, a zero (or negative) range counting as 1.

    >>> normalise([[1, 4], [4, 4]], ideal=[1, 4], nadir=[4, 4]).tolist()
    [[0.0, 0.0], [1.0, 0.0]]
    """
    ideal = np.asarray(ideal, dtype=float)
    span = np.asarray(nadir, dtype=float) - ideal
    span[span <= 0] = 1.0
    arr = np.asarray(points, dtype=float).reshape(-1, len(ideal))
    return (arr - ideal) / span


def hypervolume(points: np.ndarray, ref: Sequence[float]) -> float:
    """Volume dominated by ``points`` and bounded by ``ref`` (0 for no points; parts beyond ``ref`` ignored)."""
    points = np.asarray(points, dtype=float)
    if points.size == 0:
        return 0.0
    return float(moocore.hypervolume(points, ref=np.asarray(ref, dtype=float)))


def igd_plus(points: np.ndarray, reference: np.ndarray) -> float | None:
    """Mean over ``reference`` of the distance to ``points`` counting only where they are worse (None: no points)."""
    points = np.asarray(points, dtype=float)
    if points.size == 0:
        return None
    return float(moocore.igd_plus(points, ref=np.asarray(reference, dtype=float)))


def epsilon_additive(points: np.ndarray, reference: np.ndarray) -> float | None:
    """Smallest shift that makes ``points`` weakly dominate every ``reference`` point (None: no points)."""
    points = np.asarray(points, dtype=float)
    if points.size == 0:
        return None
    return float(moocore.epsilon_additive(points, ref=np.asarray(reference, dtype=float)))


def compare(reference: Front, other: Front, ref: Sequence[float] | float | None = None) -> dict:
    """Indicators of ``other`` against ``reference`` in the reference's normalised space, as plain data.

    ``ref`` is the hypervolume reference point in normalised space (default
    1.1 per objective; a single number applies to all).  Raises ValueError when
    the fronts have different objectives, the reference is empty, or ``ref``
    has the wrong length.  ``hypervolume_ratio`` is ``other / reference``;
    ``igd_plus`` and ``epsilon_additive`` are None when ``other`` is empty;
    ``found_exactly`` counts the reference points whose objective vector is in ``other``.
    """
    names = tuple(reference.objectives)
    if tuple(other.objectives) != names:
        raise ValueError(f"the fronts have different objectives: {','.join(names)} vs "
                         f"{','.join(other.objectives)}")
    if not reference.points:
        raise ValueError("the reference front has no points")
    if ref is None:
        ref = DEFAULT_REF
    ref_point = [float(ref)] * len(names) if isinstance(ref, (int, float)) else [float(r) for r in ref]
    if len(ref_point) != len(names):
        raise ValueError(f"ref must have one value per objective ({len(names)}), got {len(ref_point)}")
    ideal, nadir = reference.ideal, reference.nadir
    ref_norm = normalise([p.values for p in reference.points], ideal, nadir)
    other_norm = normalise([p.values for p in other.points], ideal, nadir)
    hv_ref = hypervolume(ref_norm, ref_point)
    hv_other = hypervolume(other_norm, ref_point)
    found = {tuple(p.values) for p in other.points}
    return {
        "objectives": list(names),
        "ideal": list(ideal),
        "nadir": list(nadir),
        "ref": ref_point,
        "hypervolume": {"reference": hv_ref, "other": hv_other},
        "hypervolume_ratio": hv_other / hv_ref if hv_ref > 0 else None,
        "igd_plus": igd_plus(other_norm, ref_norm),
        "epsilon_additive": epsilon_additive(other_norm, ref_norm),
        "reference_points": len(reference.points),
        "other_points": len(other.points),
        "found_exactly": sum(tuple(p.values) in found for p in reference.points),
    }
