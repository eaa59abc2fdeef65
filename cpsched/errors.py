"""Exceptions that the CLI turns into one-line messages and exit codes.

Library errors name Python parameters (``epsilon='energy' ...``); the CLI
names its flags instead (``--epsilon energy: ...``), through
:meth:`ParameterError.as_option`.
"""

from __future__ import annotations

from typing import Any


class InputError(ValueError):
    """Bad user input: a file, a field, an id or an option. The CLI exits 2.

    The message is one line naming what is wrong (file, node or field); callers
    that know the file prefix it with :meth:`in_file`.
    """

    def in_file(self, path) -> "InputError":
        """The same error with the file name in front of the message."""
        return InputError(f"{path}: {self}")


class ParameterError(InputError):
    """A function parameter with a bad value: ``param=value: problem``.

    >>> str(ParameterError("epsilon", "energy", "is not one of the objectives latency, memory"))
    "epsilon='energy': is not one of the objectives latency, memory"
    >>> ParameterError("time_limit", -1, "must be > 0").as_option()
    '--time-limit -1: must be > 0'
    """

    def __init__(self, param: str, value: Any, problem: str, where: str | None = None):
        self.param, self.value, self.problem, self.where = param, value, problem, where
        prefix = f"{where}: " if where else ""
        super().__init__(f"{prefix}{param}={value!r}: {problem}")

    def in_file(self, path) -> "ParameterError":
        return ParameterError(self.param, self.value, self.problem, f"{path}: {self.where}" if self.where
                              else str(path))

    def as_option(self, flag: str | None = None) -> str:
        """The message as the CLI says it, naming ``flag`` (default ``--param-name``)."""
        prefix = f"{self.where}: " if self.where else ""
        value = self.value
        if isinstance(value, dict):
            value = ",".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            value = ",".join(map(str, value))
        shown = "" if value is None or value is True else f" {value}"
        return f"{prefix}{flag or '--' + self.param.replace('_', '-')}{shown}: {self.problem}"


class CapabilityError(InputError):
    """An engine was asked for something it declares it lacks (:class:`cpsched.engines.Capabilities`)."""

    def __init__(self, engine: str, capability: str, detail: str):
        self.engine, self.capability = engine, capability
        super().__init__(f"engine {engine!r} lacks the capability {capability!r}: {detail}")


class ModesUnsupported(InputError):
    """A method written for one mode per device met a task with named modes (PROBLEM.md section 6)."""


class NoSchedule(Exception):
    """A heuristic found no schedule that satisfies the instance; the message says why."""
