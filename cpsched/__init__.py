"""cpsched: exact scheduling of DNN computation graphs onto heterogeneous devices.

The front door (:mod:`cpsched.api`), loaded on first use so that ``import
cpsched`` stays cheap:

>>> import cpsched
>>> inst = cpsched.load("alexnet", platform="edge")
>>> cpsched.solve(inst).objectives["latency"]
7280

``load``, ``solve``, ``front``, ``select``, ``validate``, ``heuristic``,
``compare``, ``export``, ``run`` and ``run_front`` are the functions; ``Instance``, ``Schedule``, ``Front``,
``Point`` and ``Status`` the types they return.
"""

__version__ = "0.1.0"

_EXPORTS = {
    "load": "cpsched.api", "solve": "cpsched.api", "front": "cpsched.api", "select": "cpsched.api",
    "validate": "cpsched.api", "heuristic": "cpsched.api", "compare": "cpsched.api",
    "export": "cpsched.api", "run": "cpsched.api", "run_front": "cpsched.api",
    "Instance": "cpsched.instance", "Schedule": "cpsched.schedule", "Front": "cpsched.schedule",
    "Point": "cpsched.schedule", "Status": "cpsched.schedule",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'cpsched' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
