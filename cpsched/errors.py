"""Exceptions that the CLI turns into one-line messages and exit codes."""


class InputError(ValueError):
    """Bad user input: a file, a field, an id or an option. The CLI exits 2.

    The message is one line naming what is wrong (file, node or field); callers
    that know the file prefix it with :meth:`in_file`.
    """

    def in_file(self, path) -> "InputError":
        """The same error with the file name in front of the message."""
        return InputError(f"{path}: {self}")


class NoSchedule(Exception):
    """A heuristic found no schedule that satisfies the instance; the message says why."""
