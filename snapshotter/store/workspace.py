"""One worktree (or a part of it) over its shadow store.

What history needs of a worktree: capture it, compare and diff trees,
restore files, read entries, and the same over another part of it. The
engine (engine/) adds opening by directory and the history on top of this.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable
from pathlib import Path

from snapshotter.config import DEFAULT_MAX_FILES, DEFAULT_MAX_NEW_FILE_SIZE, sessions_dir
from snapshotter.git.kinds import Entry
from snapshotter.git.worktree import Worktree
from snapshotter.store import changes as changes_mod
from snapshotter.store import restore as restore_mod
from snapshotter.store.shadow import Capture, Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.models import FileChange  # pydantic: not imported by a hook


class Workspace:
    """Snapshots of one worktree, limited to its scope (a subdirectory, or all of it)."""

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
        self.guard = guard  # refuse a home directory (walk.py); off for restores
        self.store = store
        self.max_new_file_size = max_new_file_size
        self.max_files = max_files
        # Our own files, should the data directory lie inside the worktree.
        data = store.root.parent.parent
        self._excluded = frozenset({str(store.root.parent), str(sessions_dir(data))})

    def with_scope(self, scope: str) -> Workspace:
        """This workspace over another part of the same worktree (same store)."""
        if scope == self.worktree.scope:
            return self
        worktree = dataclasses.replace(self.worktree, scope=scope)
        store = Store(self.store.root, worktree, lock=self.store.locked())
        return type(self)(worktree, store, self.max_new_file_size, self.max_files, guard=self.guard)

    def unguarded(self) -> Workspace:
        """All of the worktree, with no file cap and no home-directory guard.

        What a restore's safety capture needs: the way back is never refused,
        and it must hold every path the restore may touch.
        """
        whole = self.with_scope("")
        return Workspace(
            whole.worktree, whole.store, whole.max_new_file_size, max_files=None, guard=False
        )

    @property
    def root(self) -> Path:
        """The worktree's top directory (resolved), whatever subdirectory was opened."""
        return self.worktree.root

    def in_scope(self, rel: str) -> bool:
        """Whether worktree path ``rel`` lies in the directory this workspace covers."""
        return self.worktree.in_scope(rel)

    def capture(self) -> Capture:
        """Snapshot the worktree now: its tree id, and the files it had to skip."""
        return self.store.capture(
            self.max_new_file_size, self._excluded, self.max_files, self.guard
        )

    def changes(self, before: str, after: str | None = None) -> list[FileChange]:
        """Changed files in scope from ``before`` to ``after`` (default: now)."""
        target = after if after is not None else self.capture().tree
        return changes_mod.changes(self.store, before, target, self.in_scope)

    def diff(self, before: str, after: str, paths: Collection[str] | None = None) -> str:
        """Unified diff text between two trees, limited to ``paths`` when given."""
        return changes_mod.diff_text(self.store, before, after, paths)

    def restore(self, tree: str, paths: Iterable[str]) -> restore_mod.RestoreResult:
        """Make ``paths`` match ``tree`` in the worktree; other files are not touched."""
        with self.store.locked():
            return restore_mod.restore(self.store, tree, paths)

    def plan_restore(self, tree: str, paths: Iterable[str]) -> restore_mod.RestoreResult:
        """What ``restore`` would write and remove, changing nothing."""
        return restore_mod.plan(self.store, tree, paths)

    def entry(self, tree: str, rel: str) -> Entry | None:
        """(git file mode, raw blob id) of ``rel`` in ``tree``; None if absent or a directory."""
        return self.store.entry(tree, rel)
