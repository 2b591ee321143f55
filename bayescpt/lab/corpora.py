"""The lab's two text distributions, read from files on this machine, split deterministically.

A corpus is the byte concatenation of the files matched by ``paths`` (glob patterns, ``**``
allowed), sorted by path, minus files with a directory component in ``exclude``; ``.gz`` files
are decompressed. Each file is followed by a ``\\n\\n`` separator. Tokens are bytes (0..255).

Split: the byte stream is cut into blocks of ``block_bytes``; every ``val_every``-th block
(blocks ``val_every - 1``, ``2 * val_every - 1``, ...) is held out for validation, the rest is
concatenated into the training stream. The same files give the same split on every machine.

The sha256 of the whole stream (before splitting) and of the file list are recorded in the
manifest; a corpus config may pin ``sha256`` (the digest or a prefix of it) so that a run on a
machine whose files differ fails with a clear message rather than silently producing other data.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import os
from dataclasses import dataclass

import numpy as np

SEPARATOR = b"\n\n"


@dataclass(frozen=True)
class Corpus:
    """A corpus split into ``train`` and ``val`` byte streams (uint8 arrays)."""

    name: str
    train: np.ndarray
    val: np.ndarray
    files: tuple[str, ...]
    sha256: str
    files_sha256: str

    def describe(self) -> dict:
        return {
            "name": self.name,
            "files": len(self.files),
            "train_bytes": int(self.train.size),
            "val_bytes": int(self.val.size),
            "sha256": self.sha256,
            "files_sha256": self.files_sha256,
        }


def _matching_files(paths, exclude) -> list[str]:
    found = set()
    for pattern in paths:
        found.update(f for f in glob.glob(pattern, recursive=True) if os.path.isfile(f))
    excluded = set(exclude)
    return sorted(f for f in found if not excluded & set(os.path.normpath(f).split(os.sep)[:-1]))


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        raw = fh.read()
    return gzip.decompress(raw) if path.endswith(".gz") else raw


def load_corpus(name: str, spec: dict) -> Corpus:
    """Build a corpus from its config table (``paths``, ``exclude``, ``block_bytes``,
    ``val_every``, optional ``sha256``). Raises ValueError with one line on any problem."""
    paths = spec.get("paths")
    if not paths or isinstance(paths, str):
        raise ValueError(f"corpus {name!r}: 'paths' must be a non-empty list of glob patterns")
    files = _matching_files(paths, spec.get("exclude", []))
    if not files:
        raise ValueError(f"corpus {name!r}: no file matches {paths} on this machine")
    stream = b"".join(_read(f) + SEPARATOR for f in files)
    digest = hashlib.sha256(stream).hexdigest()
    files_digest = hashlib.sha256("\n".join(files).encode()).hexdigest()
    pinned = spec.get("sha256")
    if pinned and not digest.startswith(str(pinned).lower()):
        raise ValueError(
            f"corpus {name!r}: the {len(files)} files matching {paths} hash to "
            f"{digest[:16]}..., not the pinned {pinned[:16]}...; the files on this "
            "machine differ from the ones the config was made with (remove 'sha256' "
            "from the config to accept them)"
        )
    block = int(spec.get("block_bytes", 4096))
    every = int(spec.get("val_every", 20))
    if block < 64 or every < 2:
        raise ValueError(f"corpus {name!r}: expected block_bytes >= 64 and val_every >= 2")
    data = np.frombuffer(stream, dtype=np.uint8)
    n_blocks = -(-data.size // block)
    is_val = (np.arange(n_blocks) % every) == every - 1
    block_of = np.arange(data.size) // block
    val_mask = is_val[block_of]
    return Corpus(
        name, data[~val_mask].copy(), data[val_mask].copy(), tuple(files), digest, files_digest
    )
