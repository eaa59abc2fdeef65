"""Reading and writing the project's JSON and text files, safely.

* :func:`read_json` parses a file or reports, in one line naming the file,
  why it cannot: missing, unreadable, not UTF-8, malformed JSON, nested deeper
  than :data:`MAX_DEPTH`, or holding an integer of more digits than Python
  converts (``sys.get_int_max_str_digits``);
* :func:`load_json` parses with a ``from_dict`` function and puts the file's
  name in front of any :class:`~cpsched.errors.InputError` it raises;
* :func:`write_text` / :func:`write_json` write atomically through a temporary
  file with a unique name in the target's folder, so a crash leaves the old
  file or the new one, and two processes writing the same path each leave a
  complete file (the last rename wins);
* :func:`check_target` refuses, before any work, an output path that cannot
  be written (a directory, a path under a regular file, a read-only folder).

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> write_json(folder / "a.json", {"x": [1, 2]}); read_json(folder / "a.json")
{'x': [1, 2]}
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cpsched.errors import InputError

#: JSON nested deeper than this is refused (cpsched's own files are at most about 8 deep)
MAX_DEPTH = 64


def _looked_up(check: Callable[[Path], bool], path: str | Path) -> bool:
    """``check(Path(path))``, False for a name the system cannot even look up (too long, ...)."""
    try:
        return check(Path(path))
    except (OSError, ValueError):
        return False


def exists(path: str | Path) -> bool:
    """``Path(path).exists()``, False for a name the system cannot look up."""
    return _looked_up(Path.exists, path)


def is_file(path: str | Path) -> bool:
    """``Path(path).is_file()``, False for a name the system cannot look up."""
    return _looked_up(Path.is_file, path)


def is_dir(path: str | Path) -> bool:
    """``Path(path).is_dir()``, False for a name the system cannot look up."""
    return _looked_up(Path.is_dir, path)


def read_text(path: str | Path, encoding: str = "utf-8") -> str:
    """A text file's contents; missing, a directory, unreadable or not ``encoding``: a one-line
    :class:`InputError` naming the file."""
    try:
        with open(path, encoding=encoding) as fh:
            return fh.read()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({_one_line(exc)})") from None


def read_json(path: str | Path) -> Any:
    """Parse a JSON file; every problem is a one-line :class:`InputError` naming the file."""
    text = read_text(path)
    try:
        return parse_json(text)
    except InputError as exc:
        raise exc.in_file(path) from None


def read_yaml(path: str | Path, loader: Any = None) -> Any:
    """Parse a YAML file (with ``loader``, default ``yaml.SafeLoader``); every problem is a
    one-line :class:`InputError` naming the file, with the line and column when YAML gives them."""
    import yaml

    text = read_text(path)
    depth = _max_depth(text)
    if depth > MAX_DEPTH:
        raise InputError(f"{path}: YAML nested {depth} deep (at most {MAX_DEPTH} allowed)")
    try:
        return yaml.load(text, Loader=loader or yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
        detail = f"line {mark.line + 1}, column {mark.column + 1}: {problem}" if mark and problem else _one_line(exc)
        raise InputError(f"{path}: invalid YAML ({detail})") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4300 digits
        raise InputError(f"{path}: invalid YAML ({_one_line(exc)})") from None


def parse_json(text: str) -> Any:
    """Parse JSON text with the same limits as :func:`read_json` (depth, digits)."""
    depth = _max_depth(text)
    if depth > MAX_DEPTH:
        raise InputError(f"JSON nested {depth} deep (at most {MAX_DEPTH} allowed)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4300 digits
        raise InputError(f"invalid JSON ({_one_line(exc)})") from None


def _max_depth(text: str) -> int:
    """The deepest nesting of ``[`` / ``{`` outside strings (a scan, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def load_json(path: str | Path, parse: Callable[[Any], Any]) -> Any:
    """Read a JSON file and parse it with ``parse``; every error is one line naming the file."""
    data = read_json(path)
    try:
        return parse(data)
    except InputError as exc:
        raise exc.in_file(path) from None


def check_target(path: str | Path, what: str = "output") -> Path:
    """``path`` if a file can be written there, else a one-line :class:`InputError`.

    Checked before any work: a directory, a path under a regular file, or a
    folder where no file can be created (probed with a temporary file, so a
    read-only file system or a pseudo file system is caught, root or not) is
    refused at once.
    """
    path = Path(path)
    if is_dir(path):
        raise InputError(f"{what} {path}: is a directory (give a file name)")
    for parent in path.parents:
        if not exists(parent):
            continue
        if not is_dir(parent):
            raise InputError(f"{what} {path}: {parent} is a file, not a folder")
        try:
            fd, probe = tempfile.mkstemp(prefix=".cpsched-probe.", dir=parent)
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise InputError(f"{what} {path}: cannot write in {parent} ({exc.strerror or exc})") from None
        break
    if exists(path) and not os.access(path, os.W_OK):
        raise InputError(f"{what} {path}: the file is read-only")
    return path


def write_text(path: str | Path, text: str) -> None:
    """Write text atomically through a uniquely named temporary file in the same folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_json(path: str | Path, data: Any) -> None:
    """Write JSON atomically (see :func:`write_text`)."""
    write_text(path, json.dumps(data, indent=1) + "\n")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
