"""The write order across a power cut: the one place that fsyncs (issue 28).

A machine that stops loses what is still in the page cache, in any order: a
record (state.json, the stat cache, a restore's journal) written after the
objects it names can reach the disk while they do not. So the rule is:

    whatever a record names is durable before the record is written.

Writers note what they make here, with no sync of their own: ``wrote`` a file
(its bytes, and its name in its directory), ``entered`` a directory whose
entries changed (a file created, renamed or linked into it, a directory
made). Whoever is about to write a record, or to delete objects, calls
``settle`` first: everything noted is made durable at once, files before
directories, and forgotten. A record that something later depends on (the
journal before the first worktree write, the records gc reads before it
deletes what they no longer name) is itself made durable with ``sync_now``.

Batched, as git's ``core.fsyncMethod=batch``: one settle per capture, not one
sync per object. A few files are fsynced one by one; more are flushed with one
``syncfs(2)`` per filesystem (Linux), which costs what is dirty on that
filesystem rather than a journal commit per file. libgit2's own option
(``GIT_OPT_ENABLE_FSYNC_GITDIR``) is left off: it syncs every loose object
as it is written, two syncs per object. What is noted is per process (a hook
server's threads share it). A settle syncs everything pending when it starts,
the items another thread is syncing at that moment included, so its record
never waits on someone else's sync; and it holds no lock while syncing, so a
slow disk under one worktree never holds up another's events (issue 13.12).
Each note carries a generation: what was noted again during a sync stays
pending for the next settle.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

_SyncFs = Callable[[int], int]

# Up to this many files and directories are fsynced one by one; past it, one
# syncfs per filesystem is cheaper (each fsync commits the filesystem journal).
FEW = 8

_lock = threading.Lock()
# Pending paths, each with the generation it was last noted at.
_files: dict[str, int] = {}
_dirs: dict[str, int] = {}
_generation = [0]


def _forked() -> None:
    """In a forked child (the hook server forks commands): a fresh lock, which another
    thread may have held at the fork, and nothing pending (the parent syncs its own)."""
    global _lock
    _lock = threading.Lock()
    _files.clear()
    _dirs.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)


def wrote(path: str | os.PathLike[str]) -> None:
    """``path`` was written (or linked or renamed into place): its bytes and its name
    are made durable by the next ``settle``."""
    name = os.fspath(path)
    with _lock:
        _generation[0] += 1
        _files[name] = _dirs[os.path.dirname(name)] = _generation[0]


def wrote_in(directory: str, names: Iterable[str]) -> None:
    """Each of ``names`` was written (or linked) in ``directory``: ``wrote`` for many
    files at once (a first capture links thousands of loose objects)."""
    with _lock:
        _generation[0] += 1
        generation = _generation[0]
        _files.update(dict.fromkeys((f"{directory}/{name}" for name in names), generation))
        _dirs[directory] = generation


def entered(directory: str | os.PathLike[str]) -> None:
    """``directory``'s entries changed (created, renamed in, a subdirectory made): its
    listing is made durable by the next ``settle``."""
    with _lock:
        _generation[0] += 1
        _dirs[os.fspath(directory)] = _generation[0]


def settle(*also: str | os.PathLike[str]) -> None:
    """Make everything noted durable now (and the files ``also``, with their names).

    Called before a record is written and before objects are deleted. Raises
    OSError when the disk reports a failed write-back (the caller then writes
    no record: what it would name may be lost).
    """
    with _lock:
        files, dirs = dict(_files), dict(_dirs)
    for extra in (os.fspath(name) for name in also):
        if os.path.exists(extra):
            files[extra] = dirs[os.path.dirname(extra)] = 0  # not pending: nothing to forget
    if not files and not dirs:
        return
    _sync(set(files), set(dirs))
    with _lock:
        for pending, synced in ((_files, files), (_dirs, dirs)):
            for name, generation in synced.items():
                if pending.get(name) == generation:  # not noted again while we synced
                    del pending[name]


def sync_now(fd: int) -> None:
    """An open file's bytes on disk now: a record something depends on from the
    moment it is written (``sync_now_dir`` then makes its rename durable)."""
    os.fsync(fd)


def sync_now_dir(directory: str | os.PathLike[str]) -> None:
    """``directory``'s listing on disk now, after a record was renamed into it."""
    _fsync_path(os.fspath(directory))


def pending() -> int:
    """How many files and directories wait for the next settle (for tests)."""
    with _lock:
        return len(_files) + len(_dirs)


def _sync(files: set[str], dirs: set[str]) -> None:
    """Files first, then the directories naming them; one syncfs per filesystem when many."""
    if len(files) + len(dirs) > FEW and _syncfs_each(files | dirs):
        return
    for name in sorted(files):
        _fsync_path(name)
    for name in sorted(dirs, key=len, reverse=True):  # deepest first: a new subdirectory
        _fsync_path(name)


def _fsync_path(name: str) -> None:
    """fsync ``name``; one gone meanwhile (deleted, renamed on, replaced by a link that
    is not ours to follow) needs no sync."""
    fd = _open(name)
    if fd is None:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _open(name: str) -> int | None:
    try:
        return os.open(name, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            return None
        raise


def _syncfs_each(names: Iterable[str]) -> bool:
    """One ``syncfs`` per filesystem holding ``names``; False where there is none (not
    Linux), and the caller syncs file by file."""
    if not sys.platform.startswith("linux"):
        return False
    syncfs = _syncfs()
    if syncfs is None:
        return False
    devices: dict[int, list[str]] = {}
    for name in names:
        try:
            devices.setdefault(os.lstat(name).st_dev, []).append(name)
        except OSError:
            continue  # gone meanwhile: nothing of it to sync
    for on_device in devices.values():
        fd = next((fd for fd in map(_open, on_device) if fd is not None), None)
        if fd is None:
            continue  # all gone meanwhile
        try:
            if syncfs(fd) != 0:
                import ctypes

                err = ctypes.get_errno()
                raise OSError(err, os.strerror(err), on_device[0])
        finally:
            os.close(fd)
    return True


_SYNCFS: list[object] = []


def _syncfs() -> _SyncFs | None:
    """libc's syncfs, loaded on first use (ctypes is never imported by a process with
    nothing to settle, so hooks that write nothing do not pay for it)."""
    if not _SYNCFS:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            function = libc.syncfs
            function.argtypes = [ctypes.c_int]
            function.restype = ctypes.c_int
            _SYNCFS.append(function)
        except (OSError, AttributeError):
            _SYNCFS.append(None)
    found = _SYNCFS[0]
    return found if callable(found) else None


def made_dirs(deepest: Path, top: Path) -> None:
    """Directories from ``deepest`` up to ``top`` were made: each one's name in its
    parent, ``top``'s included, is made durable by the next settle."""
    current = deepest
    while True:
        entered(current.parent)
        if current == top or current.parent == current:
            return
        current = current.parent
