"""Quantities with units: parsing user limits (``64MiB``, ``5ms``, ``2mJ``) into an instance's
integer units, and showing integers readably (``7.28 ms``, ``210.2 MiB``, ``31.04 mJ``).

Results keep the raw integers; only tables and plots scale them.
"""

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


_SIZE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")
_ENERGY_UNITS = (("pJ", 1e-12), ("nJ", 1e-9), ("µJ", 1e-6), ("mJ", 1e-3), ("J", 1.0))
_TIME_UNITS = (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0))
KIND = {"latency": "time", "energy": "energy", "memory": "size", "arena": "size"}  # objective -> unit kind


def scale(kind: str, unit: str, magnitude: float) -> tuple[float, str]:
    """(factor, display unit) to show values of ``magnitude`` in ``unit`` readably.

    Bytes become B/KiB/MiB/GiB; energies and times in a known unit get an SI
    prefix (times up to seconds); anything else (unknown units) is left as it is.

    >>> scale("time", "us", 7280)
    (0.001, 'ms')
    """
    magnitude = abs(magnitude)
    if kind == "size" and unit.lower() in ("byte", "bytes", "b", ""):
        k = 0
        while k + 1 < len(_SIZE_UNITS) and magnitude >= 1024 ** (k + 1):
            k += 1
        return 1024.0 ** -k, _SIZE_UNITS[k]
    for table, units in (("energy", _ENERGY_UNITS), ("time", _TIME_UNITS)):
        per_unit = (ENERGY if table == "energy" else TIME).get(unit.lower())
        if kind == table and per_unit is not None:
            amount = magnitude * per_unit
            name, per = next((n, p) for n, p in units if p >= per_unit)
            for cand, cand_per in units:
                if amount >= cand_per and cand_per >= per_unit:
                    name, per = cand, cand_per
            return per_unit / per, name
    return 1.0, unit


def human(value: float, kind: str, unit: str) -> str:
    """``value`` (in ``unit``) as readable text.

    >>> human(7280, "time", "us"), human(220376064, "size", "byte"), human(31041215552, "energy", "pJ")
    ('7.28 ms', '210.2 MiB', '31.04 mJ')
    """
    factor, shown = scale(kind, unit, value)
    if factor == 1.0:
        text = f"{value:,.0f}" if float(value).is_integer() else f"{value:,.4g}"
    else:
        scaled = value * factor
        text = f"{scaled:,.4g}" if abs(scaled) < 1000 else f"{scaled:,.0f}"
    return f"{text} {shown}".rstrip()
