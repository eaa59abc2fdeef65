"""Guards against the solver itself: answers that a CP-SAT change would alter are pinned here.

CP-SAT 9.15 has been seen to prove infeasible a satisfiable model of a form
related to cpsched's memory model (optional intervals of variable size in a
cumulative, with max-equalities and products).  Three guards:

* pinned answers on memory-bound instances, each established by the
  brute-force (latency, memory) front of tests/oracle_front.py filtered by the
  capacity, by CP-SAT's default memory model and by its second one;
* planted-witness canaries: random CP-SAT models of exactly that form, each
  built around a known solution, must never come back infeasible (1, 2 or 8
  workers);
* every result records the OR-Tools version, and an ``infeasible`` answer
  under memory capacities records its confirmation by the second formulation.
"""

import random

import ortools
import pytest
from ortools.sat.python import cp_model

import cpsched
from cpsched import lexico
from cpsched.engines import Options
from cpsched.engines.cpsat import CpSatEngine
from cpsched.generate import random_instance

#: (seed, memory, optimal latency or None: infeasible) of random_instance(seed, 4, 2, memory=memory),
#: memory binding in every one; established as the module docstring says
PINNED = [(0, 14, 20), (0, 18, 16), (1, 10, None), (1, 14, 8), (1, 18, 8), (3, 14, 19), (3, 18, 14),
          (4, 10, None), (4, 14, 10), (4, 18, 10), (5, 18, 11), (6, 10, None), (6, 14, 22), (6, 18, 22),
          (7, 14, None), (7, 18, 17)]


@pytest.mark.parametrize("seed, memory, latency", PINNED, ids=[f"{s}-m{m}" for s, m, _ in PINNED])
def test_pinned_answers_under_memory_capacities(seed, memory, latency):
    inst = random_instance(seed, 4, 2, channels=(1,), memory=memory)
    for engine in (CpSatEngine("optional"), CpSatEngine("demand")):
        s = lexico.solve(inst, ["latency"], Options(time_limit=30), engine=engine)
        assert s.solver["ortools"] == ortools.__version__
        if latency is None:
            assert s.status.value == "infeasible", (engine.memory_model, s.status)
        else:
            assert (s.status.value, s.objectives["latency"]) == ("optimal", latency), engine.memory_model
    front_door = cpsched.solve(inst)
    if latency is None:
        assert front_door.solver["infeasible"]["confirmed_by"] == "confirmed by the cpsat, demand memory model"
    assert "contradiction" not in front_door.solver


def planted(seed: int) -> cp_model.CpModel:
    """A satisfiable model of the memory model's form, built around a random witness: optional
    intervals of variable size whose ends are max-equalities, demands by products with the
    presence, a cumulative whose variable capacity is capped at the witness's peak."""
    rng = random.Random(seed)
    m, horizon = cp_model.CpModel(), 40
    intervals, demands, spans, ends = [], [], [], []
    for i in range(rng.randint(3, 9)):
        start_value, present = rng.randint(0, 15), rng.random() < 0.6
        start, x = m.new_int_var(0, horizon, f"s{i}"), m.new_bool_var(f"x{i}")
        base = rng.randint(1, 6)
        terms, end_value = [start + base], start_value + base
        for j in rng.sample(range(len(ends)), min(len(ends), rng.randint(0, 2))):
            gap = rng.randint(0, 3)
            terms.append(ends[j][0] + gap)
            end_value = max(end_value, ends[j][1] + gap)
        end = m.new_int_var(0, 2 * horizon, f"e{i}")
        m.add_max_equality(end, terms)
        size = m.new_int_var(0, 2 * horizon, f"d{i}")
        m.add(start + size == end)
        intervals.append(m.new_optional_interval_var(start, size, end, x, f"iv{i}"))
        q_value = rng.randint(1, 9)
        q = m.new_int_var(0, 9, f"q{i}")
        demand = m.new_int_var(0, 9, f"dem{i}")
        m.add_multiplication_equality(demand, [x, q])
        use_var = rng.random() < 0.5
        demands.append(q if use_var else q_value)
        for var, value, share in ((q, q_value, 0.3), (x, present, 0.3), (start, start_value, 0.5)):
            if rng.random() < share:  # pin part of the witness, leave the rest to the search
                m.add(var == value)
        spans.append((start_value, end_value, q_value, present))
        ends.append((end, end_value))
    peak = max([sum(q for a, b, q, p in spans if p and a <= t < b) for t in range(2 * horizon)] + [0])
    capacity = m.new_int_var(0, 100, "capacity")
    m.add_cumulative(intervals, demands, capacity)
    m.add(capacity <= peak)
    m.minimize(capacity)
    return m


@pytest.mark.parametrize("workers", [1, 2, 8])
def test_planted_witness_models_are_never_called_infeasible(workers):
    bad = []
    for seed in range(40):
        solver = cp_model.CpSolver()
        solver.parameters.num_workers = workers
        solver.parameters.max_time_in_seconds = 10
        status = solver.solve(planted(seed))
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            bad.append((seed, solver.status_name(status)))
    assert bad == [], f"OR-Tools {ortools.__version__} rejects satisfiable models: {bad}"
