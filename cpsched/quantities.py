"""Parsing user quantities with units into an instance's integer units (``64MiB``, ``5ms``, ``2mJ``)."""

from __future__ import annotations

import re

from cpsched.errors import InputError

SIZE = {"b": 1, "byte": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
        "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
TIME = {"ps": 1e-12, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
ENERGY = {"pj": 1e-12, "nj": 1e-9, "uj": 1e-6, "mj": 1e-3, "j": 1.0}
_TABLE = {"memory": SIZE, "latency": TIME, "energy": ENERGY}
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse(text: str, objective: str, unit_of_objective: str, option: str) -> int:
    """``text`` as an integer in ``unit_of_objective`` (rounded down: it is a limit).

    A bare number is already in that unit.

    >>> parse("64MiB", "memory", "byte", "--max-memory")
    67108864
    >>> parse("2ms", "latency", "us", "--max-latency")
    2000
    """
    match = _NUMBER.match(text)
    if not match:
        raise InputError(f"{option}: cannot read {text!r} as a number with an optional unit")
    value, unit = float(match.group(1)), match.group(2).lower()
    if not unit:
        return int(value)
    table, base = _TABLE[objective], unit_of_objective.lower()
    if unit not in table or base not in table:
        raise InputError(f"{option}: unknown unit {match.group(2)!r} (use one of {', '.join(table)}; "
                         f"the values are in {unit_of_objective or '?'})")
    return int(value * table[unit] / table[base] + 1e-9)
