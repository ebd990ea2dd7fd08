"""One worktree (or a part of it) over its shadow store.

What history needs of a worktree: capture it, compare and diff trees,
restore files, read entries, and the same over another part of it. The
engine (engine/) adds opening by directory and the history on top of this.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable
from pathlib import Path

from snapshotter.git.kinds import Entry
from snapshotter.git.worktree import Worktree
from snapshotter.store import changes as changes_mod
from snapshotter.store import restore as restore_mod
from snapshotter.store.capture import Capture, CaptureOptions, take
from snapshotter.store.shadow import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.models import FileChange  # pydantic: not imported by a hook


class Workspace:
    """Snapshots of one worktree, limited to its scope (a subdirectory, or all of it)."""

    def __init__(self, worktree: Worktree, store: Store, options: CaptureOptions) -> None:
        self.worktree = worktree
        self.store = store
        self.options = options  # what every capture of this workspace is asked

    def with_scope(self, scope: str) -> Workspace:
        """This workspace over another part of the same worktree (same store)."""
        if scope == self.worktree.scope:
            return self
        worktree = dataclasses.replace(self.worktree, scope=scope)
        store = Store(self.store.root, worktree, self.store.locked(), self.store.resident)
        return type(self)(worktree, store, self.options)

    def unguarded(self) -> Workspace:
        """All of the worktree, with no file cap and no home-directory guard.

        What a restore's safety capture needs: the way back is never refused,
        and it must hold every path the restore may touch.
        """
        whole = self.with_scope("")
        options = dataclasses.replace(self.options, max_files=None, guard=False)
        return Workspace(whole.worktree, whole.store, options)

    @property
    def root(self) -> Path:
        """The worktree's top directory (resolved), whatever subdirectory was opened."""
        return self.worktree.root

    def in_scope(self, rel: str) -> bool:
        """Whether worktree path ``rel`` lies in the directory this workspace covers."""
        return self.worktree.in_scope(rel)

    def capture(self) -> Capture:
        """Snapshot the worktree now: its tree id, and the files it had to skip.

        Taken by the hook server when this process is a command it forked
        (remote.py), else here.
        """
        store = self.store
        if store.resident is None or store.resident.forward is None:
            return take(store, self.options)  # (its lock once: a nested acquire costs 40 µs)
        from snapshotter.store import remote  # only in a command the hook server forked

        with store.locked():  # held for the server too: it captures under our lock
            found = remote.ask(store, self.options)
            return found if found is not None else take(store, self.options)

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
