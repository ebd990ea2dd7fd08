"""The engine: one worktree's shadow store, opened on a directory.

The facade other runtimes build on (SPEC §8): capture, changes, diff,
restore (store.workspace) plus opening by directory, journal recovery and
gc. It knows nothing of hooks or the CLI.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from snapshotter.config import DEFAULT_MAX_FILES, DEFAULT_MAX_NEW_FILE_SIZE, data_dir
from snapshotter.errors import NothingToDo, SnapshotterError
from snapshotter.git.worktree import find_worktree
from snapshotter.history.records import restore_pending
from snapshotter.store.capture import CaptureOptions
from snapshotter.store.layout import all_store_roots
from snapshotter.store.shadow import Store
from snapshotter.store.workspace import Workspace

if TYPE_CHECKING:
    from snapshotter.history.maintenance import GcReport
    from snapshotter.history.retention import Policy
    from snapshotter.store.resident import Resident


class Engine(Workspace):
    """Snapshots of the worktree containing ``directory``, limited to its subtree.

    The API other runtimes build on (SPEC §8): a Workspace opened by
    directory, with gc. ``recovered``: what opening it did about a restore a
    killed process left half done (one line, for the caller to show), or None.
    """

    recovered: str | None = None

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
        resident: Resident | None = None,
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
        resident: Resident | None = None,
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
        resident: Resident | None = None,
    ) -> Engine | None:
        """Open the store of the worktree containing ``directory``.

        Creates the store on first use, so with the default ``create=True``
        the result is always an engine. With ``create=False`` it is None when
        no snapshot was ever taken there. Raises NotAWorktree outside git.
        ``resident``: a long-lived process's watchers and caches (the hook server's).
        """
        worktree = find_worktree(directory)
        notes: list[str] = []
        store = Store.open(
            data_dir(data_dir_path),
            worktree,
            create=create,
            recover=lambda store: _finish_restore(store, notes),
            resident=resident,
        )
        if store is None:
            return None
        options = CaptureOptions.for_store(store.root, max_new_file_size, max_files)
        engine = cls(worktree, store, options)
        engine.recovered = notes[0] if notes else None
        return engine

    def gc(self, *, dry_run: bool = False, budget_s: float | None = None) -> GcReport:
        """Apply retention and compact the store (history/maintenance.py)."""
        from snapshotter.history.maintenance import collect

        return collect(self, dry_run=dry_run, budget_s=budget_s)


def _finish_restore(store: Store, notes: list[str]) -> None:
    """Finish a restore a killed process left half done (the journal), if there is one;
    decided from state.json's bytes, so a capture never loads the restore code.
    What it did goes to ``notes``: the engine writes nothing to stderr itself."""
    if restore_pending(store.root):
        from snapshotter.history import journal

        note = journal.recover(store)
        if note is not None:
            notes.append(note)


def open_existing(
    directory: str | os.PathLike[str],
    *,
    data_dir_path: str | os.PathLike[str] | None = None,
    max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE,
    resident: Resident | None = None,
) -> Engine:
    """The engine of a worktree that already has snapshots; NothingToDo otherwise."""
    engine = Engine.open(
        directory,
        data_dir_path=data_dir_path,
        create=False,
        max_new_file_size=max_new_file_size,
        resident=resident,
    )
    if engine is None:
        raise NothingToDo("no snapshots recorded for this worktree yet")
    return engine


def open_stores(data_dir_path: str | os.PathLike[str] | None = None) -> list[Store]:
    """Every store in the data directory whose worktree still exists."""
    stores = []
    for root in all_store_roots(data_dir(data_dir_path)):
        try:
            path = os.fsdecode((root / "worktree").read_bytes().rstrip(b"\n"))
            stores.append(Store(root, find_worktree(path)))
        except (OSError, SnapshotterError):
            continue
    return stores


def run_detached(data_dir: Path, directory: str, budget_s: float, policy: Policy) -> None:
    """The detached gc's body: nobody reads its output, so failures are logged."""
    from snapshotter.errors import SnapshotterError
    from snapshotter.store.logfile import append

    try:
        engine = Engine.open(directory, data_dir_path=data_dir, create=False)
        if engine is not None:
            from snapshotter.history.maintenance import collect

            collect(engine, budget_s=budget_s, policy=policy)
    except (SnapshotterError, OSError) as exc:
        append(data_dir, f"session_end gc: {exc}")
