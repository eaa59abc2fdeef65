"""Fuzzing helpers (imported by tests/test_fuzz.py and benchmarks/fuzz.py): profiles, the
example log, and mutations of input files of every kind.

Profiles (``CPSCHED_FUZZ``): ``ci`` (the default, sized for the test suite on 2
cores) and ``long`` (benchmarks/fuzz.py).  With ``CPSCHED_FUZZ_LOG`` set, every
example that passed its checks appends one JSON line there, so a long run can
be counted afterwards.
"""

from __future__ import annotations

import copy
import json
import os
import random
from typing import Any

import yaml

PROFILE = os.environ.get("CPSCHED_FUZZ", "ci")
#: examples per property and profile
EXAMPLES = {
    "ci": {"instances": 60, "fronts": 20, "interrupted": 10, "mutations": 160},
    "long": {"instances": 1500, "fronts": 300, "interrupted": 100, "mutations": 3000},
}[PROFILE]


def record(kind: str, **info: Any) -> None:
    """Append one passed example to the log (when ``CPSCHED_FUZZ_LOG`` names a file)."""
    path = os.environ.get("CPSCHED_FUZZ_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"kind": kind, **info}) + "\n")


# ----- mutations ---------------------------------------------------------------------------

#: values that are wrong for almost every field: strings that look like other types, wrong
#: containers, non-integers, out-of-range integers
BAD_VALUES = ("false", "true", "1", "", "no", None, True, False, [], {}, 1.5, -1, -(2**31), 2**62, 2**53,
              float("nan"), "x" * 300)


def _paths(tree: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value in a JSON-like tree (the root is ``()``)."""
    out = [prefix]
    if isinstance(tree, dict):
        for k, v in tree.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            out += _paths(v, prefix + (i,))
    return out


def _get(tree: Any, path: tuple) -> Any:
    for k in path:
        tree = tree[k]
    return tree


def mutate_tree(tree: Any, rng: random.Random) -> tuple[Any, str]:
    """One mutation of a parsed JSON/YAML document: a value replaced, a key deleted, a list
    element duplicated or deleted, a value wrapped deep in lists; returns (tree, what)."""
    tree = copy.deepcopy(tree)
    path = rng.choice(_paths(tree)[1:] or [()])
    op = rng.choice(("replace", "replace", "delete", "duplicate", "wrap"))
    if not path:
        return rng.choice(BAD_VALUES), "root replaced"
    parent, key = _get(tree, path[:-1]), path[-1]
    where = ".".join(map(str, path))
    if op == "replace":
        parent[key] = rng.choice(BAD_VALUES)
        return tree, f"{where} = {parent[key]!r}"[:80]
    if op == "delete":
        del parent[key]
        return tree, f"{where} deleted"
    if op == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(parent[key]))
        return tree, f"{where} duplicated"
    value = parent[key]
    for _ in range(rng.choice((2, 70, 200))):
        value = [value]
    parent[key] = value
    return tree, f"{where} wrapped"


def mutate_text(text: str, rng: random.Random) -> tuple[bytes, str]:
    """One mutation of a file's text: truncated, a line deleted, a number replaced by a
    non-number or a huge one, a byte that is not UTF-8 inserted."""
    op = rng.choice(("truncate", "line", "number", "digits", "bytes"))
    data = text.encode("utf-8")
    if op == "truncate":
        cut = rng.randrange(len(data) + 1)
        return data[:cut], f"truncated at {cut}"
    lines = text.splitlines(keepends=True)
    if op == "line" and lines:
        k = rng.randrange(len(lines))
        return "".join(lines[:k] + lines[k + 1:]).encode(), f"line {k + 1} deleted"
    digits = [i for i, c in enumerate(text) if c.isdigit()]
    if op in ("number", "digits") and digits:
        i = rng.choice(digits)
        j = i
        while j < len(text) and text[j].isdigit():
            j += 1
        new = rng.choice(("x", "-7", "1e999", "3.5")) if op == "number" else "9" * rng.choice((30, 5000))
        return (text[:i] + new + text[j:]).encode(), f"number at {i} -> {new[:12]}"
    k = rng.randrange(len(data) + 1)
    return data[:k] + b"\xff\xfe" + data[k:], f"bytes at {k}"


def mutate_file(text: str, kind: str, rng: random.Random) -> tuple[bytes, str]:
    """A mutated version of a file of ``kind`` (json / yaml / text)."""
    if kind in ("json", "yaml") and rng.random() < 0.7:
        tree = json.loads(text) if kind == "json" else yaml.safe_load(text)
        tree, what = mutate_tree(tree, rng)
        if kind == "json":
            return json.dumps(tree, allow_nan=True).encode(), what
        return yaml.safe_dump(tree).encode(), what
    return mutate_text(text, rng)
