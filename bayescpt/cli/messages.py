"""What a command tells its user besides its results: status lines on stderr, warnings held back
until the command goes on past reading its inputs, and the exit codes.

Exit codes: 0 success, 1 diagnostics failed under --strict (:data:`EXIT_STRICT`), 2 bad input or
usage (:data:`EXIT_INPUT`), 3 internal error (:data:`EXIT_INTERNAL`), 130 interrupted by Ctrl-C
(:data:`EXIT_INTERRUPTED`), 141 standard output closed by its reader (:data:`EXIT_PIPE`).
"""

from __future__ import annotations

import sys

EXIT_STRICT = 1
EXIT_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a command stopped by Ctrl-C
EXIT_PIPE = 141  # 128 + SIGPIPE: the reader of stdout went away (``| head``)


#: warning lines about the inputs a command uses (a fit that failed its diagnostics), held back
#: until the command goes on past reading its inputs: printed before its next status line or at
#: its end, dropped when it stops on bad input (whose one line is then the only one)
_PENDING: list[str] = []


def warn_later(msg: str) -> None:
    """Hold ``warning: msg`` back until the command's next status line (see ``_PENDING``)."""
    _PENDING.append(msg)


def flush_pending(drop: bool = False) -> None:
    """Print (or with ``drop`` forget) the held-back warning lines."""
    while _PENDING:
        msg = _PENDING.pop(0)
        if not drop:
            print(f"warning: {msg}", file=sys.stderr, flush=True)


def say(msg: str) -> None:
    """A progress or status line, on stderr (stdout holds the results)."""
    flush_pending()
    print(msg, file=sys.stderr, flush=True)


def progress(quiet: bool):
    """What a command hands a library for its progress lines: :func:`say`, or with ``quiet``
    (``--quiet``) a function that prints nothing."""
    return (lambda msg: None) if quiet else say
