"""Layer-level decomposition for graphs too large to prove whole (work in progress)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cpsched.engines import cpsat
from cpsched.instance import Instance
from cpsched.schedule import Schedule


def solve(instance: Instance, objectives: Sequence[str] = ("latency",), options: cpsat.Options = cpsat.Options(),
          hint: Schedule | None = None, limits: Mapping[str, int] | None = None,
          decompose: str | int = "auto") -> Schedule:
    """:func:`cpsched.engines.cpsat.solve`, decomposing the graph when ``decompose`` asks for it."""
    return cpsat.solve(instance, objectives, options, hint=hint, limits=limits)
