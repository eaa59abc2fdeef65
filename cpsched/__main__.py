"""``python -m cpsched`` and the ``cpsched`` command's entry point.

The first thing it does is take SIGINT over (:func:`cpsched.interrupt.guard`,
which imports nothing heavy), so a Ctrl-C while the command's own imports run
sets the interrupt flag instead of breaking an import: the command then stops
at its first check with one line (exit 130) or writes what it has (exit 3).
"""

import sys


def main() -> None:
    from cpsched import interrupt

    with interrupt.guard(exiting=True):
        try:
            from cpsched.cli import main as run
        except KeyboardInterrupt:  # a second Ctrl-C while importing
            sys.stderr.write("interrupted before any result\n")
            sys.exit(130)
        run()


if __name__ == "__main__":
    main()
