"""Writing output files so that nothing is lost: every file appears whole or not at all.

A writer never writes its target directly. It writes a temporary file in the target's folder, named
``.NAME.PID.hHOSTHASH.XXXXXXXX.tmp`` (NAME the target's file name, PID the writing process, HOSTHASH
its host, the rest random and unique), flushes it to disk (``fsync``), then moves it over the target
with ``os.replace`` (atomic within one file system) and syncs the folder. A reader therefore sees
the old file or the complete new one, whatever other writers or interrupts do; two processes writing
the same target at once each write their own temporary, and the last rename wins.

Temporaries left behind by a killed writer are ours by their name; the next write to the same
target removes them. The name carries the writer's host (``.NAME.PID.hHOSTHASH.XXXXXXXX.tmp``), so
a writer on this host whose process is gone is known dead at once (a sweep's worker killed
mid-write on this machine); one from another host sharing the folder is removed only once older
than :data:`STALE_SECONDS`, as its process cannot be seen from here. Names without a host (written
before it was recorded) count as dead once their process is gone here for
:data:`DEAD_GRACE_SECONDS`.

:func:`write_outputs` writes several files all or none: every temporary is written first, and
only when all succeeded are they moved into place. :func:`check_output` and
:func:`check_not_input` are the checks a command runs on its output paths before any work.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import contextmanager
from pathlib import Path

STALE_SECONDS = 3600.0  # a temporary this old is stale whoever wrote it
DEAD_GRACE_SECONDS = 60.0  # a dead writer's temporary is stale once this old (pid reuse, NFS)


def host_tag() -> str:
    """This host in temporaries' names: ``h`` and 8 hex digits of its name's SHA-1."""
    return "h" + hashlib.sha1(socket.gethostname().encode()).hexdigest()[:8]


def temp_pattern(path) -> re.Pattern:
    """The names of our temporaries for ``path``: ``.NAME.PID[.hHOST][.RANDOM].tmp``; group 1 is
    the writer's process id, group 2 its host tag (:func:`host_tag`) or None."""
    return re.compile(
        rf"^\.{re.escape(Path(path).name)}\.(\d+)(?:\.(h[0-9a-f]{{8}}))?"
        r"(?:\.[A-Za-z0-9_]+)?\.tmp$"
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    except (OverflowError, ValueError):
        return False
    return pid > 0


def clean_stale_temporaries(path, now: float | None = None) -> list[Path]:
    """Remove our temporaries for ``path`` that are stale: older than :data:`STALE_SECONDS`;
    written on this host by a process that is gone; or, with no host in the name, older than
    :data:`DEAD_GRACE_SECONDS` with their writing process gone here. The old fixed name
    ``NAME.tmp`` counts when older than :data:`STALE_SECONDS`. Returns the removed paths;
    never raises for a file it cannot remove."""
    path = Path(path)
    folder = path.parent
    now = time.time() if now is None else now
    pattern = temp_pattern(path)
    here = host_tag()
    removed = []
    try:
        names = os.listdir(folder if str(folder) else ".")
    except OSError:
        return removed
    for name in names:
        m = pattern.match(name)
        if m is None and name != path.name + ".tmp":
            continue
        tmp = folder / name
        try:
            age = now - tmp.stat().st_mtime
        except OSError:
            continue
        if age > STALE_SECONDS:
            stale = True
        elif m is None or (m.group(2) is not None and m.group(2) != here):
            stale = False  # the fixed name, or another host's writer: only by age
        elif m.group(2) == here:
            stale = not _pid_alive(int(m.group(1)))
        else:
            stale = age > DEAD_GRACE_SECONDS and not _pid_alive(int(m.group(1)))
        if stale:
            try:
                tmp.unlink()
                removed.append(tmp)
            except OSError:
                pass
    return removed


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync(path: Path, directory: bool = False) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0))
    except OSError:
        if directory:  # some systems cannot open folders; the data itself is synced
            return
        raise
    try:
        os.fsync(fd)
    except OSError:
        if not directory:
            raise
    finally:
        os.close(fd)


def _new_temporary(path: Path) -> Path:
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.{os.getpid()}.{host_tag()}.", suffix=".tmp", dir=path.parent
    )
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # the mode a plain open() would have given
    return Path(tmp)


_KINDS = (
    (stat.S_ISDIR, "folder"),
    (stat.S_ISFIFO, "fifo"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def not_a_file(path) -> str | None:
    """What ``path`` is when it exists (links followed) and is not a regular file: "folder",
    "fifo", "character device", "block device", "socket" or "special file"; None when it is a
    regular file or does not exist."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "special file")


def refuse_special(path, option: str | None = None) -> None:
    """Raise ValueError when ``path`` exists and is not a regular file (a device such as
    /dev/null, a fifo, a socket, a folder, or a link to one): a writer moving its temporary over
    it would replace the node itself with a regular file."""
    kind = not_a_file(path)
    if kind is not None:
        where = f"{option} {path}" if option else str(path)
        raise ValueError(
            f"{where}: is a {kind}, not a regular file; an output is only ever "
            "written to a regular file: give a file name"
        )


def write_outputs(writers: Mapping[object, Callable[[Path], object]]) -> list[Path]:
    """Write several files all or none. ``writers`` maps each target path to a function that
    writes the whole file to the path it is given (a fresh temporary in the target's folder).

    Every temporary is written and synced first; if any writer fails, every temporary is removed,
    no target is touched and the error propagates (also on KeyboardInterrupt). Then each is moved
    over its target with ``os.replace``. Returns the target paths."""
    targets = [Path(p) for p in writers]
    for target in targets:
        refuse_special(target)
    for target in targets:
        clean_stale_temporaries(target)
    temps: list[Path] = []
    try:
        for target, write in zip(targets, writers.values()):
            tmp = _new_temporary(target)
            temps.append(tmp)
            write(tmp)
            _fsync(tmp)
        for target, tmp in zip(targets, temps):
            os.replace(tmp, target)
        for folder in {t.parent for t in targets}:
            _fsync(folder, directory=True)
    finally:
        for tmp in temps:
            tmp.unlink(missing_ok=True)
    return targets


@contextmanager
def atomic_output(path):
    """``with atomic_output(path) as tmp:`` write the whole file to ``tmp``; on leaving the block
    it is synced and moved over ``path`` (on an error it is removed, ``path`` untouched)."""
    path = Path(path)
    refuse_special(path)
    clean_stale_temporaries(path)
    tmp = _new_temporary(path)
    try:
        yield tmp
        _fsync(tmp)
        os.replace(tmp, path)
        _fsync(path.parent, directory=True)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically. Returns the path."""
    with atomic_output(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def check_output(path, option: str = "--out") -> None:
    """Raise ValueError, naming ``option`` and the path, unless ``path`` can be written: its
    folder exists, is a folder and accepts a new file (tried by creating and removing one of our
    temporaries), and ``path``, when it exists, is a regular file (not a folder, a device, a
    fifo, a socket, or a link to one). None: nothing to check."""
    if path is None:
        return
    path = Path(path)
    folder = path.parent
    refuse_special(path, option)
    if not folder.exists():
        raise ValueError(f"{option} {path}: folder {folder} does not exist")
    if not folder.is_dir():
        raise ValueError(f"{option} {path}: {folder} is not a folder")
    try:
        _new_temporary(path).unlink()
    except OSError as err:
        raise ValueError(
            f"{option} {path}: cannot write in folder {folder} "
            f"({err.strerror or type(err).__name__})"
        ) from None


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except OSError:
        return False


def check_not_input(
    outputs: Mapping[str, object], inputs: Mapping[str, object] | Iterable[tuple[str, object]]
) -> None:
    """Raise ValueError when an output path is one of the inputs or two outputs are the same file
    (paths resolved: links, ``..`` and hard links count). ``outputs`` maps a label (an option or
    argument name) to a path; ``inputs`` too, or is (label, path) pairs (labels may repeat: "log
    file" for each file read inside a source); None entries are skipped."""
    outs = [(k, Path(v)) for k, v in outputs.items() if v is not None]
    pairs = inputs.items() if isinstance(inputs, Mapping) else inputs
    ins = [(k, Path(v)) for k, v in pairs if v is not None]
    for i, (label, out) in enumerate(outs):
        for in_label, src in ins:
            if _same_file(out, src):
                raise ValueError(
                    f"{label} {out} is the input {in_label} {src}: an output may "
                    "never replace an input; choose another path"
                )
        for other_label, other in outs[i + 1 :]:
            if _same_file(out, other):
                raise ValueError(
                    f"{label} {out} and {other_label} {other} are the same file; "
                    "choose different paths"
                )
