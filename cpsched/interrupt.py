"""cpsched owns Ctrl-C (SIGINT) while it solves.

Inside :func:`guard` (the front door and the CLI enter it), SIGINT never
reaches a solver's own handler and never ends the process by a signal:

* during a solve started through :func:`run`, the handler calls that solve's
  stop function (CP-SAT's ``stop_search``), so the solver returns its best
  schedule at once, and sets the flag :func:`requested`;
* between solves it only sets the flag; the drivers (lexicographic stages,
  sweeps, decomposition windows) check it and stop with what they have;
* a second SIGINT while no solve runs raises ``KeyboardInterrupt`` (a way out
  of a long computation that does not check the flag).

:func:`run` executes the solve in a helper thread while the main thread waits
in short joins, because Python runs signal handlers only in the main thread
and only between bytecodes, never while a native call blocks it.  Outside a
guard, or off the main thread, :func:`run` just calls.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_requested = threading.Event()
_stoppers: list[Callable[[], None]] = []
_lock = threading.Lock()
_active = False


def requested() -> bool:
    """True once SIGINT arrived inside the current :func:`guard`."""
    return _requested.is_set()


def request() -> None:
    """Act as if SIGINT arrived: stop the running solve and set the flag (tests, embedding code)."""
    _requested.set()
    with _lock:
        stoppers = list(_stoppers)
    for stop in stoppers:
        stop()


def _handler(signum, frame) -> None:
    with _lock:
        solving = bool(_stoppers)
    if _requested.is_set() and not solving:
        raise KeyboardInterrupt
    request()


@contextmanager
def guard(exiting: bool = False) -> Iterator[None]:
    """Own SIGINT for the duration (main thread only; nested guards share the outer one).

    The flag is cleared on entry and on exit: each guarded call starts
    uninterrupted, and what it returns says whether it was stopped.  With
    ``exiting`` (a process's entry point) SIGINT is ignored after the guard
    instead of restored: the results are written, and a late Ctrl-C must not
    end the interpreter's shutdown by a signal.
    """
    global _active
    if _active or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    _requested.clear()
    signal.signal(signal.SIGINT, _handler)
    _active = True
    try:
        yield
    finally:
        _active = False
        _requested.clear()
        signal.signal(signal.SIGINT, signal.SIG_IGN if exiting else previous)


def run(call: Callable[[], T], stop: Callable[[], None]) -> T:
    """``call()``, with ``stop`` as what SIGINT does while it runs (see the module docstring)."""
    with _lock:
        _stoppers.append(stop)
    try:
        if not _active or threading.current_thread() is not threading.main_thread():
            return call()
        box: dict[str, object] = {}

        def work() -> None:
            try:
                box["value"] = call()
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
                box["error"] = exc

        helper = threading.Thread(target=work, name="cpsched-solve", daemon=True)
        helper.start()
        while helper.is_alive():
            helper.join(0.25)
            if _requested.is_set():
                stop()  # again: a SIGINT that came before the solver could take it must not be lost
        if "error" in box:
            raise box["error"]  # type: ignore[misc]
        return box["value"]  # type: ignore[return-value]
    finally:
        with _lock:
            _stoppers.remove(stop)
