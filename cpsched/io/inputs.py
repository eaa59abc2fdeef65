"""One entry point for every input a command accepts: instance JSON or STG, by suffix."""

from __future__ import annotations

from pathlib import Path

from cpsched.errors import InputError
from cpsched.instance import Instance, load_instance
from cpsched.io.stg import read_stg

SUFFIXES = (".json", ".stg")


def load_input(path: str | Path, processors: int | None = None) -> Instance:
    """Read ``path`` as an instance: ``.json`` (cpsched-instance/1) or ``.stg`` (needs ``processors``)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".stg":
        if processors is None:
            raise InputError(f"{path}: an STG graph needs --processors M (the number of identical processors)")
        return read_stg(path, processors)
    if processors is not None:
        raise InputError(f"{path}: --processors applies only to STG input")
    if suffix == ".json":
        return load_instance(path)
    raise InputError(f"{path}: unknown input type {suffix or '(no suffix)'!r} (expected one of {', '.join(SUFFIXES)})")
