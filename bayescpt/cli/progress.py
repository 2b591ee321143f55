"""Progress lines for slow stages of a command, printed whether or not stderr is a terminal.

``with stage("reading DATA.csv (134 MB)"):`` prints nothing when the stage ends within
``after`` seconds; otherwise it prints the label with the seconds so far, then a line every
``every`` seconds while the stage runs, and the total when it ends. A log file or a CI console
then shows the command is working and where its time goes.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from bayescpt.cli.messages import say

__all__ = ["stage"]


@contextmanager
def stage(label: str, after: float = 3.0, every: float = 10.0, out=say):
    """Report ``label`` through ``out`` (default: a stderr line) if the block runs > ``after`` s."""
    done = threading.Event()
    t0 = time.perf_counter()
    spoke = []

    def watch():
        wait = after
        while not done.wait(wait):
            spent = time.perf_counter() - t0
            out(f"{label}: {spent:.0f} s so far" if spoke else f"{label} ... ({spent:.0f} s)")
            spoke.append(spent)
            wait = every

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        if spoke:
            out(f"{label}: done in {time.perf_counter() - t0:.1f} s")
