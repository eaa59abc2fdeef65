"""Field checks shared by every reader: each raises a one-line InputError naming the field.

No silent coercion: an integer field takes a JSON integer (or a float with an
integral value) within ``[minimum, MAX_VALUE]``, a boolean field takes a JSON
boolean, a mapping field a JSON object.

>>> check_int(3, "tasks[0].duration", minimum=1)
3
>>> check_bool("no", "device 'cpu': host")
Traceback (most recent call last):
...
cpsched.errors.InputError: device 'cpu': host must be true or false (got 'no')
"""

from __future__ import annotations

import re
from typing import Any

from cpsched.errors import InputError

#: The largest integer any field may hold: 2^53 - 1, exact in every JSON reader, and small
#: enough that the engines' sums of a few thousand such terms stay far inside int64
#: (an instance's totals are checked separately, see cpsched.bounds.check_magnitude).
MAX_VALUE = 2**53 - 1


def check_int(value: Any, where: str, minimum: int = 0, maximum: int = MAX_VALUE) -> int:
    """``value`` as an int if it is an integer in ``[minimum, maximum]``, else an InputError."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise InputError(f"{where} must be an integer (got {_short(value)})")
    if value < minimum:
        raise InputError(f"{where} must be >= {minimum} (got {value})")
    if value > maximum:
        raise InputError(f"{where} must be <= {maximum} (got {_short(value)})")
    return value


def parse_int(token: str, where: str, minimum: int | None = 0, maximum: int = MAX_VALUE) -> int:
    """An integer written in text (decimal digits, an optional sign) within ``[minimum, maximum]``.

    >>> parse_int("-3", "row 2: lower", minimum=None)
    -3
    """
    token = token.strip()
    if not re.fullmatch(r"[+-]?[0-9]+", token):
        raise InputError(f"{where} must be an integer (got {_short(token)})")
    if len(token.lstrip("+-").lstrip("0")) > len(str(maximum)):
        raise InputError(f"{where} must be <= {maximum} (got a number of {len(token)} digits)")
    return check_int(int(token), where, minimum if minimum is not None else -maximum, maximum)


def check_bool(value: Any, where: str) -> bool:
    """``value`` if it is a JSON boolean; strings, numbers and lists are refused."""
    if not isinstance(value, bool):
        raise InputError(f"{where} must be true or false (got {_short(value)})")
    return value


def check_str(value: Any, where: str) -> str:
    """``value`` if it is a non-empty string."""
    if not isinstance(value, str) or not value:
        raise InputError(f"{where} must be a non-empty string (got {_short(value)})")
    return value


def check_mapping(value: Any, where: str, keys: tuple[str, ...] = (), required: tuple[str, ...] = ()) -> dict:
    """``value`` if it is a mapping with the ``required`` keys and, if ``keys``, no others."""
    if not isinstance(value, dict):
        raise InputError(f"{where} must be a mapping")
    for key in value:
        if keys and key not in keys:
            raise InputError(f"{where}: unknown key {key!r} (expected one of {', '.join(keys)})")
    for key in required:
        if key not in value:
            raise InputError(f"{where}: missing field {key!r}")
    return value


def check_format(data: Any, fmt: str, what: str) -> None:
    """Refuse anything but a JSON object whose ``format`` is ``fmt``."""
    if not isinstance(data, dict):
        raise InputError(f"{what} must be a JSON object")
    if data.get("format") != fmt:
        raise InputError(f"format must be {fmt!r} (got {_short(data.get('format'))})")


def _short(value: Any) -> str:
    """A value for an error message, cut to one short line (a huge integer or list stays short)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
