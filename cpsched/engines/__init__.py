"""Exact engines behind one protocol (:mod:`cpsched.engines.protocol`), looked up by name.

Each engine module is imported only when its engine is asked for, so the
MILP engine works without importing OR-Tools and the other way round.

>>> get("milp").capabilities.memory, get("cpsat").capabilities.memory
(False, True)
"""

from __future__ import annotations

from cpsched.engines.protocol import Capabilities, Engine, Options, Progress
from cpsched.errors import ParameterError

ENGINES = ("cpsat", "milp", "milp-highs")

__all__ = ["ENGINES", "Capabilities", "Engine", "Options", "Progress", "get"]


def get(name: str | Engine) -> Engine:
    """The engine ``name``: ``cpsat``, ``milp`` (PuLP + CBC) or ``milp-highs``; an Engine passes through."""
    if not isinstance(name, str):
        return name
    if name == "cpsat":
        from cpsched.engines.cpsat import CpSatEngine
        return CpSatEngine()
    if name in ("milp", "milp-highs"):
        from cpsched.engines.milp import MilpEngine
        return MilpEngine("highs" if name == "milp-highs" else "cbc")
    raise ParameterError("engine", name, f"expected one of {', '.join(ENGINES)}")
