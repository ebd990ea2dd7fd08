"""Files read and written safely: atomic writes, temp names and their cleanup,
reads that never block on what is not a regular file, paths reached only
through real directories.

Each of these had copies that drifted (issue 23: some reads without
``O_NOFOLLOW`` or ``O_CLOEXEC``, three temp-name prefixes, five cleaners);
this module is their one definition.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

from snapshotter.durable import sync_now, sync_now_dir

# Every temp file we write starts so: a file being written, renamed into place
# when complete, and a leftover to delete once its writer is gone.
TEMP_PREFIX = ".snapshotter-tmp-"
# Temp names of earlier versions, still recognised so that stores they wrote
# get their leftovers cleaned too: packs were written as ``tmp_snapshotter_*``.
# (Session records' temps were ``.<record>.<hex>``: the sessions folder's
# retention, history/sessions.py, drops any old entry whatever its name.)
OLD_TEMP_PREFIXES = ("tmp_snapshotter_",)


def temp_name() -> str:
    """A fresh temp file name: ``TEMP_PREFIX`` and random hex (``os.urandom``, as
    ``secrets`` does, without its imports: hmac, hashlib, random, ~6 ms a process)."""
    return f"{TEMP_PREFIX}{os.urandom(6).hex()}"


def create_temp(directory: Path) -> tuple[int, str]:
    """A new file of ours in ``directory``, opened for writing, private (0600); its
    descriptor and path. ``tempfile.mkstemp``'s contract without its imports
    (shutil, random: ~5 ms of every process that writes a record)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    while True:
        path = os.path.join(directory, temp_name())
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:  # (48 random bits: practically never)
            continue


def is_temp(name: str) -> bool:
    """Whether ``name`` is one of our temp names, this version's or an earlier one's."""
    return name.startswith((TEMP_PREFIX, *OLD_TEMP_PREFIXES))


def write_atomic(path: Path, data: bytes | Iterable[bytes], *, durable: bool = False) -> int:
    """Replace ``path`` with ``data`` through a temp file and a rename; the bytes written.

    ``data`` may come in pieces, so a big file is never whole in memory.
    ``durable``: on disk (file, then the rename) before returning, for a record
    something depends on from the moment it is written, such as a restore's
    journal (durable.py owns the syncs and the write order).
    """
    fd, tmp = create_temp(path.parent)
    size = 0
    try:
        with os.fdopen(fd, "wb") as f:
            for piece in (data,) if isinstance(data, bytes) else data:
                size += f.write(piece)
            if durable:
                f.flush()
                sync_now(f.fileno())
        os.replace(tmp, path)
        if durable:
            sync_now_dir(path.parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return size


def remove_leftovers(directory: Path, leftover: Callable[[str], bool] = is_temp) -> int:
    """Delete what killed writers left in ``directory``: each entry whose name
    ``leftover`` accepts (by default, our temp files), a directory with all below
    it. Returns how many went. The caller makes sure no live writer owns them
    (it holds the lock their writers hold).
    """
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return 0
    for name in names:
        if not leftover(name):
            continue
        path = directory / name
        try:
            if stat.S_ISDIR(os.lstat(path).st_mode):
                import shutil

                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            continue
        removed += 1
    return removed


def read_regular(
    path: str | os.PathLike[str], *, follow_symlinks: bool = False, max_size: int = -1
) -> bytes | None:
    """The bytes of the regular file at ``path``; None for anything else, or for one
    larger than ``max_size`` (when not negative).

    Opened non-blocking, close-on-exec and (unless ``follow_symlinks``, for a
    file git itself reads through a link, such as ``core.excludesFile``) never
    through a symbolic link, then checked with ``fstat``: a FIFO or a device
    put there is never read, so it cannot hang us (issue 13). Raises OSError
    when the file cannot be opened (missing, a link, no permission) or read.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow_symlinks else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or 0 <= max_size < st.st_size:
            return None
        # One read for the whole file, and one byte more: a short read of a
        # regular file is its end. A file growing meanwhile is read to its end.
        data = os.read(fd, st.st_size + 1)
        if len(data) <= st.st_size:
            return data
        chunks = [data]
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def lstat_within(root: str | os.PathLike[str], rel: str) -> os.stat_result | None:
    """``lstat`` of ``rel`` (``/``-separated, below ``root``) reached through real
    directories only: None when it is absent or a parent is a symbolic link or
    not a directory (what is only reachable through a link is never ours to
    read or write). Raises OSError for other failures, such as no permission.
    """
    if not real_parents(root, rel):
        return None
    try:
        return os.lstat(os.path.join(root, rel))
    except FileNotFoundError:
        return None


def real_parents(root: str | os.PathLike[str], rel: str) -> bool:
    """Whether every directory above ``rel`` (below ``root``) is a real directory.

    Each parent is checked with ``lstat``, one component at a time, so a
    symbolic link to a directory counts as no directory. Raises OSError for
    failures other than a missing component.
    """
    current = os.fspath(root)
    for part in rel.split("/")[:-1]:
        current = os.path.join(current, part)
        try:
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return False
        except FileNotFoundError:
            return False
    return True
