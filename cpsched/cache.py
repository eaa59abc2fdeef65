"""A result cache: identical requests return the stored answer without solving.

The key hashes the instance's content, the request (objectives, engine
options) and the cpsched version; entries are plain JSON files in a user cache
directory (``$CPSCHED_CACHE_DIR``, else ``$XDG_CACHE_HOME/cpsched``, else
``~/.cache/cpsched``).  Only proven answers are stored (an optimal or
infeasible schedule, a complete front), so a hit never replaces a longer
search.  An entry that fails to load or to validate is a miss: deleted, with
one warning line, and computed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from cpsched import __version__
from cpsched.errors import InputError
from cpsched.files import read_json, write_json
from cpsched.instance import Instance

T = TypeVar("T")


def directory() -> Path:
    if os.environ.get("CPSCHED_CACHE_DIR"):
        return Path(os.environ["CPSCHED_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cpsched"


def key(instance: Instance, request: dict[str, Any]) -> str:
    """A content hash of the instance, the request and the cpsched version."""
    blob = json.dumps({"instance": instance.content_hash, "request": request, "version": __version__},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def get(k: str, parse: Callable[[Any], T], usable: Callable[[T], bool]) -> T | None:
    """The stored answer under key ``k``, parsed and checked, or None.

    An entry that fails to parse or to pass ``usable`` (e.g. its schedule does
    not validate against the instance) is a miss: it is deleted, with one
    warning line, and the caller computes the answer again.
    """
    path = directory() / f"{k}.json"
    if not path.exists():
        return None
    try:
        value = parse(read_json(path))
        if usable(value):
            return value
        why = "it does not validate against its instance"
    except (InputError, OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        why = " ".join(str(exc).split()).removeprefix(f"{path}: ")
    warnings.warn(f"cache entry {path} is unusable ({why}): deleted, computing again", stacklevel=2)
    path.unlink(missing_ok=True)
    return None


def put(k: str, data: dict) -> None:
    """Store ``data`` under ``k`` (atomically; a cache that cannot be written is only a slower run)."""
    folder = directory()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / f"{k}.json", data)
    except OSError:
        pass
