"""Atomic file writes: a reader or a crash sees the old file or the new one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

TEMP_PREFIX = ".snapshotter-tmp-"


def write_atomic(path: Path, data: bytes | Iterable[bytes], *, durable: bool = False) -> int:
    """Replace ``path`` with ``data`` through a temp file and a rename; the bytes written.

    ``data`` may come in pieces, so a big file is never whole in memory.
    ``durable``: flushed to disk (file, then the rename) before returning, for
    records that must survive a power cut, such as a restore's journal.
    """
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=path.parent)
    size = 0
    try:
        with os.fdopen(fd, "wb") as f:
            for piece in (data,) if isinstance(data, bytes) else data:
                size += f.write(piece)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if durable:
            _fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return size


def remove_temp_files(directory: Path) -> int:
    """Delete temp files a killed process left behind; returns how many."""
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        if name.startswith(TEMP_PREFIX):
            with contextlib.suppress(OSError):
                os.unlink(directory / name)
                removed += 1
    return removed


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
