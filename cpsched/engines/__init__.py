"""Exact engines: model builders behind one front door per backend (solve -> Schedule).

Every engine's ``solve(instance, objectives, options, hint=None, limits=None)``
has the signature and status semantics of :func:`cpsched.engines.cpsat.solve`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from cpsched.errors import InputError

ENGINES = ("cpsat", "milp", "milp-highs")


def get(name: str) -> Callable:
    """The solve function of an engine: ``cpsat``, ``milp`` (PuLP + CBC) or ``milp-highs``."""
    if name == "cpsat":
        from cpsched.engines.cpsat import solve
        return solve
    if name in ("milp", "milp-highs"):
        from cpsched.engines.milp import solve
        return functools.partial(solve, backend="highs" if name == "milp-highs" else "cbc")
    raise InputError(f"--engine: expected one of {', '.join(ENGINES)} (got {name!r})")
