"""gc across the data directory: every store, the stores of worktrees that are gone,
and the body of session_end's detached gc.

``Engine.gc`` compacts one worktree's store; this is what spans them all, with
the values its callers build and print (``Policy``, ``GcReport``). Importing
it loads retention and compaction, which a hook recording a turn never needs.
"""

from __future__ import annotations

import os
from pathlib import Path

from snapshotter.config import data_dir as resolve_data_dir
from snapshotter.engine import Engine
from snapshotter.errors import SnapshotterError
from snapshotter.git.worktree import find_worktree
from snapshotter.history.maintenance import GcReport, drop_orphans
from snapshotter.history.retention import Policy
from snapshotter.logfile import append
from snapshotter.store.capture import CaptureOptions
from snapshotter.store.layout import all_store_roots
from snapshotter.store.shadow import Store

__all__ = ["GcReport", "Policy", "all_engines", "drop_orphans", "run_detached"]


def all_engines(data_dir_path: str | os.PathLike[str] | None = None) -> list[Engine]:
    """An engine for every store in the data directory whose worktree still exists
    (opened as they are: no store is created, no restore finished)."""
    engines = []
    for root in all_store_roots(resolve_data_dir(data_dir_path)):
        try:
            path = os.fsdecode((root / "worktree").read_bytes().rstrip(b"\n"))
            worktree = find_worktree(path)
        except (OSError, SnapshotterError):
            continue
        engines.append(Engine(worktree, Store(root, worktree), CaptureOptions.for_store(root)))
    return engines


def run_detached(data_dir: Path, directory: str, budget_s: float, policy: Policy) -> None:
    """The detached gc's body (``gc --detached``): nobody reads its output, so
    failures go to the data directory's hook.log."""
    try:
        engine = Engine.open(directory, data_dir_path=data_dir, create=False)
        if engine is not None:
            engine.gc(budget_s=budget_s, policy=policy)
    except (SnapshotterError, OSError) as exc:
        append(data_dir, f"session_end gc: {exc}")
