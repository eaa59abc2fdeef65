"""Indicators: self-comparison, a hand-computed 2-D case, degenerate fronts, errors."""

from __future__ import annotations

import json

import pytest

from cpsched.indicators import compare, hypervolume, normalise
from cpsched.schedule import Front, Point, Schedule, Status


def front(*vectors, objectives=("latency", "memory")) -> Front:
    schedule = Schedule("x", Status.FEASIBLE)
    return Front("x", objectives, tuple(Point(tuple(v), Status.FEASIBLE, schedule) for v in vectors), False)


REFERENCE = front((1, 4), (2, 2), (4, 1))


def test_a_front_against_itself():
    c = compare(REFERENCE, REFERENCE)
    assert c["hypervolume_ratio"] == pytest.approx(1.0, abs=1e-12)
    assert c["igd_plus"] == 0.0 and c["epsilon_additive"] == 0.0
    assert c["found_exactly"] == c["reference_points"] == 3
    assert c["ref"] == [1.1, 1.1] and c["ideal"] == [1, 1] and c["nadir"] == [4, 4]
    json.dumps(c)  # plain data


def test_hand_computed_two_dimensional_case():
    # ideal (1, 1), nadir (4, 4), range 3: reference -> (0, 1), (1/3, 1/3), (1, 0);
    # other {(2, 4), (4, 2)} -> a = (1/3, 1), b = (1, 1/3); ref point (1.1, 1.1).
    # HV(reference), slabs left to right: (1/3 - 0) * (1.1 - 1) + (1 - 1/3) * (1.1 - 1/3) + (1.1 - 1) * 1.1
    #   = 1/30 + 46/90 + 0.11 = 58.9 / 90
    # HV(other): (1 - 1/3) * (1.1 - 1) + (1.1 - 1) * (1.1 - 1/3) = 2/30 + 2.3/30 = 4.3 / 30
    # IGD+: d+((0,1)) = min(|(1/3, 0)|, |(1, 0)|) = 1/3; d+((1/3,1/3)) = min(2/3, 2/3) = 2/3;
    #   d+((1,0)) = min(|(0, 1)|, |(0, 1/3)|) = 1/3; mean = (1/3 + 2/3 + 1/3) / 3 = 4/9
    # eps+: max over r of min over a of max_i (a_i - r_i) = max(1/3, 2/3, 1/3) = 2/3
    c = compare(REFERENCE, front((2, 4), (4, 2)))
    assert c["hypervolume"]["reference"] == pytest.approx(58.9 / 90, abs=1e-9)
    assert c["hypervolume"]["other"] == pytest.approx(4.3 / 30, abs=1e-9)
    assert c["hypervolume_ratio"] == pytest.approx((4.3 / 30) / (58.9 / 90), abs=1e-9)
    assert c["igd_plus"] == pytest.approx(4 / 9, abs=1e-9)
    assert c["epsilon_additive"] == pytest.approx(2 / 3, abs=1e-9)
    assert c["found_exactly"] == 0 and c["reference_points"] == 3


def test_points_outside_the_box_count_for_distances_but_not_volume():
    # (1, 4) found exactly; (7, 1) normalises to (2, 0), beyond the ref point
    c = compare(REFERENCE, front((1, 4), (7, 1)))
    assert c["found_exactly"] == 1
    assert c["hypervolume"]["other"] == pytest.approx(1.1 * 0.1, abs=1e-12)
    assert c["epsilon_additive"] == pytest.approx(1.0, abs=1e-12)  # r = (1, 0) needs a shift of 1 from either point
    assert hypervolume(normalise([[7, 7]], [1, 1], [4, 4]), [1.1, 1.1]) == 0.0


def test_one_point_front_has_zero_range_counted_as_one():
    one = front((5, 3))
    assert normalise([[5, 3], [6, 5]], one.ideal, one.nadir).tolist() == [[0.0, 0.0], [1.0, 2.0]]
    c = compare(one, front((6, 3), (5, 4)))
    assert c["hypervolume"]["reference"] == pytest.approx(1.21)
    assert c["hypervolume"]["other"] == pytest.approx(2 * 0.1 * 1.1 - 0.01)
    assert c["igd_plus"] == pytest.approx(1.0) and c["epsilon_additive"] == pytest.approx(1.0)
    assert compare(one, one)["hypervolume_ratio"] == pytest.approx(1.0)


def test_ref_is_used_and_written():
    c = compare(REFERENCE, REFERENCE, ref=[2.0, 1.5])
    assert c["ref"] == [2.0, 1.5]
    # (0,1): 1/3 * 0.5; (1/3,1/3): 2/3 * (1.5 - 1/3); (1,0): 1 * 1.5
    assert c["hypervolume"]["reference"] == pytest.approx(1 / 6 + 2 / 3 * 7 / 6 + 1.5)
    assert compare(REFERENCE, REFERENCE, ref=1.2)["ref"] == [1.2, 1.2]


def test_empty_other_and_errors():
    c = compare(REFERENCE, front())
    assert c["hypervolume_ratio"] == 0.0 and c["igd_plus"] is None and c["found_exactly"] == 0
    with pytest.raises(ValueError, match="different objectives"):
        compare(REFERENCE, front((1, 1), objectives=("latency", "energy")))
    with pytest.raises(ValueError, match="no points"):
        compare(front(), REFERENCE)
    with pytest.raises(ValueError, match="one value per objective"):
        compare(REFERENCE, REFERENCE, ref=[1.1])


def test_three_objectives():
    ref = front((0, 0, 2), (2, 2, 0), objectives=("latency", "energy", "memory"))
    c = compare(ref, ref)
    assert c["hypervolume_ratio"] == pytest.approx(1.0) and c["found_exactly"] == 2
