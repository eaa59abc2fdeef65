"""``python -m cpsched`` and the ``cpsched`` command's entry point.

Only this module is imported before the command's own imports start, so a
Ctrl-C during them ends in one line (exit 130), not a traceback.
"""

import sys


def main() -> None:
    try:
        from cpsched.cli import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted before any result\n")
        sys.exit(130)
    run()


if __name__ == "__main__":
    main()
