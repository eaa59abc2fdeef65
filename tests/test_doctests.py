"""Every docstring example in the package runs (the public functions' examples among them)."""

import doctest
import importlib
import pkgutil

import pytest

import cpsched

MODULES = sorted(m.name for m in pkgutil.walk_packages(cpsched.__path__, "cpsched.")
                 if m.name not in ("cpsched.__main__",))


@pytest.mark.parametrize("name", ["cpsched", *MODULES])
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"


def test_the_front_door_functions_carry_examples():
    from cpsched import api
    for name in ("load", "solve", "front", "select", "validate", "heuristic", "compare"):
        assert ">>> " in getattr(api, name).__doc__, name
