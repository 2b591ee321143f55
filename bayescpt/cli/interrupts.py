"""Ctrl-C (SIGINT) while a command works: :func:`interrupt_guard` records an interrupt even where
a library catches it (a sampler returning its partial trace), and :class:`Interrupted` is how a
command stops on one, saying what was (not) written (exit code 130,
:data:`~bayescpt.cli.messages.EXIT_INTERRUPTED`)."""

from __future__ import annotations

import _thread
import signal
import sys
import threading
from contextlib import contextmanager


class Interrupted(Exception):
    """The command was interrupted (Ctrl-C); the message says what was (not) written. Exit code
    :data:`~bayescpt.cli.messages.EXIT_INTERRUPTED`."""


@contextmanager
def interrupt_guard(repeat_s: float = 0.5):
    """Within the block, SIGINT (Ctrl-C) raises KeyboardInterrupt as usual and is also recorded:
    the yielded list is non-empty once one arrived, so an interrupt that a library caught (a
    sampler returning its partial trace) is still seen afterwards. An interrupt that arrived
    where Python cannot raise it (a finaliser during compilation: "Exception ignored") would be
    lost, so after the first one KeyboardInterrupt is raised again every ``repeat_s`` seconds
    until the block is left, and such ignored interrupts print nothing. An ignored SIGINT (a
    background job's) stays ignored, as in the sweep's
    :func:`~bayescpt.parallel.engine._deferred_sigint`; outside the main thread (no signal
    handlers there) nothing is installed either."""
    hits: list[int] = []
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    ):
        yield hits
        return
    done = threading.Event()
    repeater: list[threading.Thread] = []

    def repeat():
        while not done.wait(repeat_s):
            _thread.interrupt_main()

    def handler(signum, frame):
        if not repeater:
            repeater.append(threading.Thread(target=repeat, daemon=True))
            repeater[0].start()
        hits.append(signum)
        raise KeyboardInterrupt

    def quiet_hook(unraisable):
        if not isinstance(unraisable.exc_value, KeyboardInterrupt):
            old_hook(unraisable)

    old_hook, sys.unraisablehook = sys.unraisablehook, quiet_hook
    old = signal.signal(signal.SIGINT, handler)
    try:
        yield hits
    finally:
        done.set()
        try:  # a last repeated interrupt lands here, still in our handler
            for t in repeater:
                t.join()
        finally:
            signal.signal(signal.SIGINT, old)
            sys.unraisablehook = old_hook
