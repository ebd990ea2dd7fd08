"""The engine: one worktree's shadow store, opened on a directory.

This is the API other runtimes build on (SPEC §8): capture, changes, diff,
restore and gc. It knows nothing of hooks, sessions or the CLI.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from snapshotter.config import DEFAULT_MAX_FILES, DEFAULT_MAX_NEW_FILE_SIZE, data_dir
from snapshotter.errors import NothingToDo, SnapshotterError
from snapshotter.git.worktree import Worktree, find_worktree
from snapshotter.history import sessions as session_scope
from snapshotter.models import FileChange
from snapshotter.store import changes as changes_mod
from snapshotter.store import restore as restore_mod
from snapshotter.store.shadow import Capture, Store, stores_dir

if TYPE_CHECKING:
    from snapshotter.gc import GcReport


class Engine:
    """Snapshots of the worktree containing ``directory``, limited to its subtree."""

    def __init__(
        self,
        worktree: Worktree,
        store: Store,
        max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE,
        max_files: int | None = DEFAULT_MAX_FILES,
        *,
        guard: bool = True,
    ) -> None:
        self.worktree = worktree
        self.guard = guard  # refuse a home directory (scan.py); off for restores
        self.store = store
        self.max_new_file_size = max_new_file_size
        self.max_files = max_files
        # Our own files, should the data directory lie inside the worktree.
        data = store.root.parent.parent
        self._excluded = frozenset({str(store.root.parent), str(session_scope.folder(data))})

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
        store = Store.open(data_dir(data_dir_path), worktree, create=create)
        if store is None:
            return None
        return cls(worktree, store, max_new_file_size, max_files)

    def with_scope(self, scope: str) -> Engine:
        """This engine over another part of the same worktree (same store)."""
        if scope == self.worktree.scope:
            return self
        worktree = dataclasses.replace(self.worktree, scope=scope)
        store = Store(self.store.root, worktree, lock=self.store.locked())
        return Engine(worktree, store, self.max_new_file_size, self.max_files, guard=self.guard)

    @property
    def root(self) -> Path:
        """The worktree's top directory (resolved), whatever subdirectory was opened."""
        return self.worktree.root

    def in_scope(self, rel: str) -> bool:
        """Whether worktree path ``rel`` lies in the directory this engine was opened on."""
        return self.worktree.in_scope(rel)

    def capture(self) -> Capture:
        """Snapshot the worktree now: its tree id, and the files it had to skip."""
        return self.store.capture(self.max_new_file_size, self._excluded, self.max_files,
                                  self.guard)

    def changes(self, before: str, after: str | None = None) -> list[FileChange]:
        """Changed files in scope from ``before`` to ``after`` (default: now)."""
        target = after if after is not None else self.capture().tree
        return changes_mod.changes(self.store, before, target, self.in_scope)

    def diff(self, before: str, after: str, paths: Collection[str] | None = None) -> str:
        """Unified diff text between two trees, limited to ``paths`` when given."""
        return changes_mod.diff_text(self.store, before, after, paths)

    def diff_stat(self, before: str, after: str, paths: Collection[str] | None = None) -> str:
        """``git diff --stat``-style summary between two trees."""
        return changes_mod.diff_stat(self.store, before, after, paths)

    def restore(self, tree: str, paths: Iterable[str]) -> restore_mod.RestoreResult:
        """Make ``paths`` match ``tree`` in the worktree; other files are not touched."""
        with self.store.locked():
            return restore_mod.restore(self.store, tree, paths)

    def plan_restore(self, tree: str, paths: Iterable[str]) -> restore_mod.RestoreResult:
        """What ``restore`` would write and remove, changing nothing."""
        return restore_mod.plan(self.store, tree, paths)

    def gc(self, *, dry_run: bool = False, budget_s: float | None = None) -> GcReport:
        """Apply retention and compact the store (see ``gc.py``)."""
        from snapshotter.gc import collect_store

        return collect_store(self.store, dry_run=dry_run, budget_s=budget_s)

    def entry(self, tree: str, rel: str) -> tuple[int, bytes] | None:
        """(git file mode, raw blob id) of ``rel`` in ``tree``; None if absent or a directory."""
        return self.store.entry(tree, rel)


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
