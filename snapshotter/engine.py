"""The engine: one worktree's shadow store, opened on a directory.

The facade other runtimes build on (SPEC §8): capture, changes, diff,
restore (store.workspace) plus opening by directory, journal recovery and
gc. It knows nothing of hooks or the CLI.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from snapshotter.config import DEFAULT_MAX_FILES, DEFAULT_MAX_NEW_FILE_SIZE, data_dir, stores_dir
from snapshotter.errors import NothingToDo, SnapshotterError
from snapshotter.git.worktree import find_worktree
from snapshotter.history import journal
from snapshotter.store.shadow import Store
from snapshotter.store.workspace import Workspace

if TYPE_CHECKING:
    from snapshotter.gc import GcReport


class Engine(Workspace):
    """Snapshots of the worktree containing ``directory``, limited to its subtree.

    The API other runtimes build on (SPEC §8): a Workspace opened by
    directory, with gc.
    """

    @overload
    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str] = ".",
        *,
        data_dir_path: str | os.PathLike[str] | None = None,
        max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE,
        max_files: int | None = DEFAULT_MAX_FILES,
        create: Literal[True] = True,
    ) -> Engine: ...

    @overload
    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str] = ".",
        *,
        data_dir_path: str | os.PathLike[str] | None = None,
        max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE,
        max_files: int | None = DEFAULT_MAX_FILES,
        create: bool,
    ) -> Engine | None: ...

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str] = ".",
        *,
        data_dir_path: str | os.PathLike[str] | None = None,
        max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE,
        max_files: int | None = DEFAULT_MAX_FILES,
        create: bool = True,
    ) -> Engine | None:
        """Open the store of the worktree containing ``directory``.

        Creates the store on first use, so with the default ``create=True``
        the result is always an engine. With ``create=False`` it is None when
        no snapshot was ever taken there. Raises NotAWorktree outside git.
        """
        worktree = find_worktree(directory)
        store = Store.open(data_dir(data_dir_path), worktree, create=create,
                           recover=journal.recover)
        if store is None:
            return None
        return cls(worktree, store, max_new_file_size, max_files)

    def gc(self, *, dry_run: bool = False, budget_s: float | None = None) -> GcReport:
        """Apply retention and compact the store (see ``gc.py``)."""
        from snapshotter.gc import collect_store

        return collect_store(self.store, dry_run=dry_run, budget_s=budget_s)


def open_existing(
    directory: str | os.PathLike[str],
    *,
    data_dir_path: str | os.PathLike[str] | None = None,
    max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE,
) -> Engine:
    """The engine of a worktree that already has snapshots; NothingToDo otherwise."""
    engine = Engine.open(directory, data_dir_path=data_dir_path, create=False,
                         max_new_file_size=max_new_file_size)
    if engine is None:
        raise NothingToDo("no snapshots recorded for this worktree yet")
    return engine


def all_store_roots(data_dir_path: str | os.PathLike[str] | None = None) -> list[Path]:
    base = stores_dir(data_dir(data_dir_path))
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if (p / "git" / "HEAD").exists())


def open_stores(data_dir_path: str | os.PathLike[str] | None = None) -> list[Store]:
    """Every store in the data directory whose worktree still exists."""
    stores = []
    for root in all_store_roots(data_dir_path):
        try:
            path = os.fsdecode((root / "worktree").read_bytes().rstrip(b"\n"))
            stores.append(Store(root, find_worktree(path)))
        except (OSError, SnapshotterError):
            continue
    return stores
