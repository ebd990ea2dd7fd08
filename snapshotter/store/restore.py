"""Putting paths back the way a tree has them, without ever leaving the worktree.

Only files whose bytes, mode or link target differ are written (so untouched
files keep their mtimes); each write goes to a temp file in the same directory
and is renamed over the target, so a kill leaves the old or the new file.
Parents are checked with ``lstat`` one component at a time: a symlinked
directory is never written through and a destination symlink is replaced,
never followed.

A restore run from a journal (journal.py) names its temp files in advance
and, given the safety tree, writes or removes a path only while it still is
as that tree has it: what the user changed meanwhile is never clobbered.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from snapshotter import durable, progress
from snapshotter.errors import UnsafePath, WorktreeWriteFailed
from snapshotter.fileio import TEMP_PREFIX, lstat_within, real_parents, temp_name
from snapshotter.git.kinds import MODE_EXEC, MODE_FILE, MODE_LINK, git_mode
from snapshotter.git.objects import hash_bytes, hash_file
from snapshotter.store.shadow import Store

Entry = tuple[int, bytes]  # (git mode, raw blob id)


@dataclass
class RestoreResult:
    restored: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # changed since the safety tree: left alone
    failed: list[str] = field(default_factory=list)  # ``tolerant`` runs: could not be restored


def check_path(rel: str) -> None:
    """Reject a stored path that could point outside the worktree."""
    parts = rel.split("/")
    # A backslash is an ordinary file-name character on POSIX (git allows it);
    # only where it separates paths could it smuggle in a ``..``.
    if (
        not rel
        or rel.startswith("/")
        or ("\\" in rel and "\\" in (os.sep, os.altsep))
        or "\0" in rel
        or any(p in ("", ".", "..", ".git") for p in parts)
    ):
        raise UnsafePath(rel, "not a plain path inside the worktree")


def plan(store: Store, tree: str, paths: Iterable[str]) -> RestoreResult:
    """What ``restore`` would do, without doing it (``--dry-run``)."""
    result = RestoreResult()
    root = store.worktree.root
    for rel in sorted(set(paths)):
        check_path(rel)
        target = store.entry(tree, rel)
        current = lstat_within(root, rel)
        if target is None:
            if current is not None and not stat.S_ISDIR(current.st_mode):
                result.removed.append(rel)
        elif not _matches(store, root / rel, current, target):
            result.restored.append(rel)
    return result


def restore(
    store: Store,
    tree: str,
    paths: Iterable[str],
    *,
    safety: str | None = None,
    temps: Mapping[str, str] | None = None,
    tolerant: bool = False,
) -> RestoreResult:
    """Make each of ``paths`` match ``tree``: write, re-mode or remove it.

    ``safety``: touch a path only while it is as that tree has it (else it is
    ``kept``). ``temps``: path → the temp file name to write it through.
    ``tolerant``: a path that fails is listed in ``failed``, the rest go on;
    otherwise the first OSError stops it, as WorktreeWriteFailed naming the path.
    """
    root = store.worktree.root
    wanted = sorted(set(paths))
    for rel in wanted:
        check_path(rel)
    targets = {rel: store.entry(tree, rel) for rel in wanted}
    result = RestoreResult()
    # Removals first, deepest first, so a directory emptied here can become a
    # file or symlink below (and a symlink can become a directory).
    removals = sorted((r for r, t in targets.items() if t is None), key=_depth, reverse=True)
    writes = sorted((r for r, t in targets.items() if t is not None), key=_depth)
    for rel in [*removals, *writes]:
        target = targets[rel]
        progress.tick()
        try:
            if safety is not None and _changed_since(store, root, rel, target, safety):
                result.kept.append(rel)
            elif target is None:
                if _remove(root, rel):
                    result.removed.append(rel)
            elif _write(store, root, rel, target, (temps or {}).get(rel)):
                result.restored.append(rel)
        except (OSError, UnsafePath) as exc:
            if tolerant:
                result.failed.append(rel)
            elif isinstance(exc, OSError):  # a full disk, EROFS, EACCES, EIO (#21.4)
                raise WorktreeWriteFailed(rel, exc) from exc
            else:
                raise
    return result


def current(root: Path, rel: str) -> Entry | None:
    """What is at ``rel`` now, as a tree entry; None for nothing (or a directory)."""
    st = lstat_within(root, rel)
    mode = git_mode(st.st_mode) if st is not None else None
    if mode is None:
        return None
    path = root / rel
    if mode == MODE_LINK:
        return (mode, hash_bytes(os.fsencode(os.readlink(path))))
    return (mode, hash_file(path))


def _changed_since(store: Store, root: Path, rel: str, target: Entry | None, safety: str) -> bool:
    """Neither as ``safety`` has it (not yet restored) nor as ``target`` (done)."""
    now = current(root, rel)
    return now != target and now != store.entry(safety, rel)


def remove_temps(root: Path, temps: Mapping[str, str]) -> int:
    """Delete the temp files a journalled restore may have left; only those names."""
    removed = 0
    for rel, name in temps.items():
        parent = rel.rpartition("/")[0]
        tmp = f"{parent}/{name}" if parent else name
        if not name.startswith(TEMP_PREFIX) or "/" in name or not real_parents(root, tmp):
            continue
        with contextlib.suppress(OSError):  # absent, or not a file: not ours
            os.unlink(root / tmp)
            removed += 1
    return removed


def _depth(rel: str) -> tuple[int, str]:
    return (rel.count("/"), rel)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _remove(root: Path, rel: str) -> bool:
    # Nothing of ours there, or only reachable through a symlink: nothing removed.
    st = lstat_within(root, rel)
    if st is None or stat.S_ISDIR(st.st_mode):
        return False
    path = root / rel
    os.unlink(path)
    durable.entered(path.parent)
    _prune_empty_dirs(root, path.parent)
    return True


def _prune_empty_dirs(root: Path, directory: Path) -> None:
    top, here = str(root), str(directory)
    if not here.startswith(top + os.sep):
        return
    while here != top:  # (string steps: Path.parents is linear per call, #13.3)
        try:
            os.rmdir(here)
        except OSError:
            return
        here = os.path.dirname(here)


def _ensure_parents(root: Path, rel: str) -> None:
    current = root
    for part in rel.split("/")[:-1]:
        current = current / part
        st = _lstat(current)
        if st is None:
            current.mkdir()
            durable.entered(current.parent)
        elif not stat.S_ISDIR(st.st_mode):
            kind = "a symlink" if stat.S_ISLNK(st.st_mode) else "a file"
            raise UnsafePath(rel, f"{current.relative_to(root)} is {kind}, not a directory")


def _matches(
    store: Store, path: Path, st: os.stat_result | None, target: tuple[int, bytes]
) -> bool:
    mode, oid = target
    if st is None or git_mode(st.st_mode) != mode:
        return False
    if mode == MODE_LINK:
        return os.fsencode(os.readlink(path)) == store.blob(oid)
    return hash_file(path) == oid


def _write(store: Store, root: Path, rel: str, target: Entry, temp: str | None) -> bool:
    _ensure_parents(root, rel)
    path = root / rel
    st = _lstat(path)
    if st is not None and stat.S_ISDIR(st.st_mode):
        try:
            path.rmdir()  # a directory that became a file: only if nothing is left in it
        except OSError as exc:
            raise UnsafePath(rel, "a non-empty directory is in the way") from exc
        st = None
    mode, oid = target
    if _matches(store, path, st, target):
        return False
    # Only the exec bit differs: flip it in place. (Same mode: ``_matches`` has just
    # hashed the bytes, and they differ; a second hash would cost a read per file.)
    now = git_mode(st.st_mode) if st is not None else None
    other_bit = mode != MODE_LINK and now != mode and now in (MODE_EXEC, MODE_FILE)
    if other_bit and hash_file(path) == oid:
        os.chmod(path, _file_mode(mode))
        durable.wrote(path)
        return True
    tmp = path.parent / (temp or temp_name())
    try:
        if mode == MODE_LINK:
            os.symlink(os.fsdecode(store.blob(oid)), tmp)
        else:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(store.blob(oid))
            os.chmod(tmp, _file_mode(mode))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # On disk before the journal that wrote it is closed (durable.py): a power cut
    # then leaves the journal, which finishes the restore, or the restored file.
    if mode == MODE_LINK:
        durable.entered(path.parent)
    else:
        durable.wrote(path)
    return True


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _file_mode(mode: int) -> int:
    return (0o777 if mode == MODE_EXEC else 0o666) & ~_umask()
