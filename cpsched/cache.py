"""A result cache: identical requests return the stored answer without solving.

The key hashes the instance's content, the request (objectives, engine
options) and the cpsched version; entries are plain JSON files in a user cache
directory (``$CPSCHED_CACHE_DIR``, else ``$XDG_CACHE_HOME/cpsched``, else
``~/.cache/cpsched``).  Only proven answers are stored (an optimal or
infeasible schedule, a complete front), so a hit never replaces a longer
search.  A corrupt entry is ignored and rewritten.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from cpsched import __version__
from cpsched.instance import Instance, write_json


def directory() -> Path:
    if os.environ.get("CPSCHED_CACHE_DIR"):
        return Path(os.environ["CPSCHED_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cpsched"


def key(instance: Instance, request: dict[str, Any]) -> str:
    """A content hash of the instance, the request and the cpsched version."""
    blob = json.dumps({"instance": instance.to_dict(), "request": request, "version": __version__},
                      sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def get(k: str) -> dict | None:
    path = directory() / f"{k}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        path.unlink(missing_ok=True)
        return None
    return data if isinstance(data, dict) else None


def put(k: str, data: dict) -> None:
    folder = directory()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / f"{k}.json", data)
    except OSError:
        pass  # a cache that cannot be written is only a slower run
