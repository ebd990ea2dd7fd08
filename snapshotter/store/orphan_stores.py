"""Dropping the stores whose worktree is gone for good.

Throwaway clones and agent worktrees come and go; their stores would
otherwise pile up forever (issue 13.19). A store goes once its worktree is
gone and it has been idle for the retention age; a store whose worktree
record cannot be read is kept: nothing says whose it is.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from pathlib import Path

from snapshotter.store.layout import all_store_roots, file_lock


def drop_orphan_stores(data_dir: Path, max_age_days: float, *, dry_run: bool = False) -> list[Path]:
    """Delete the stores whose worktree is gone and that were idle ``max_age_days``.

    Throwaway clones and agent worktrees come and go; their stores would
    otherwise pile up forever (issue 13.19). A store whose worktree record
    cannot be read is kept: nothing says whose it is.
    """
    cutoff = time.time() - max_age_days * 86400
    dropped = []
    for root in all_store_roots(data_dir):
        if _worktree_present(root) is not False or _last_used(root) > cutoff:
            continue
        if dry_run or _drop_store(root):
            dropped.append(root)
    return dropped


def _worktree_present(root: Path) -> bool | None:
    """Whether the store's worktree still exists there; None when the record is unreadable."""
    from snapshotter.errors import SnapshotterError
    from snapshotter.git.worktree import find_worktree

    try:
        recorded = (root / "worktree").read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    path = recorded.rstrip("\n")
    if not path:
        return None
    try:
        return find_worktree(path).root == Path(path)
    except (SnapshotterError, OSError, ValueError):
        return False  # gone, or no longer a git worktree


def _last_used(root: Path) -> float:
    """When an event last wrote this store's records (gc's own locking does not count)."""
    newest = 0.0
    for name in ("state.json", "manifest", "manifest.log", "worktree"):
        with contextlib.suppress(OSError):
            newest = max(newest, os.stat(root / name).st_mtime)
    return newest


def _drop_store(root: Path) -> bool:
    """Delete an orphan store under its lock, re-checked; renamed away first, so a
    killed delete never leaves a half store that looks like a real one."""
    import secrets

    try:
        with file_lock(root / "lock", timeout=5.0):
            if _worktree_present(root) is not False:
                return False  # the worktree came back meanwhile
            trash = root.with_name(f".dropped-{root.name}-{secrets.token_hex(4)}")
            os.rename(root, trash)
    except OSError:  # the lock's timeout is one
        return False
    shutil.rmtree(trash, ignore_errors=True)
    return True
