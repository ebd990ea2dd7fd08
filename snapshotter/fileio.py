"""Atomic file writes: a reader or a crash sees the old file or the new one."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

TEMP_PREFIX = ".snapshotter-tmp-"


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` through a temp file and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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
