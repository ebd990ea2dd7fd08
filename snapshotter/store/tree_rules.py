"""The ignore rules in force when a tree was captured, read back from the tree itself.

What a capture left out because an ignore rule said so is not in its tree,
and neither is what was not there: only the rules tell the two apart (#21.2:
a directory renamed during a span keeps its files' times, so times cannot).
The ``.gitignore`` files are the tree's own blobs; ``$GIT_DIR/info/exclude``
and ``core.excludesFile`` live outside the worktree, are never captured, and
are read as they are now. Nested repositories start their own rules, as in
the walk (walk.py); a directory is taken for one when it holds a ``.git`` now.
"""

from __future__ import annotations

import os

from snapshotter.git.ignore import IgnoreRules
from snapshotter.git.kinds import MODE_EXEC, MODE_FILE
from snapshotter.git.repo_context import nested_rules, repository_rules
from snapshotter.git.rule_files import MAX_RULE_FILE_BYTES, parse_lines
from snapshotter.store.shadow import Store

# (the repository's top below the worktree: "" or a nested one's path, its rules there)
_Here = tuple[str, IgnoreRules]


class TreeRules:
    """Whether the walk that captured ``tree`` would have left an untracked path out."""

    def __init__(self, store: Store, tree: str) -> None:
        self.store = store
        self.tree = tree
        self._dirs: dict[str, _Here | None] = {}  # directory -> rules inside; None: not entered

    def ignores(self, rel: str) -> bool:
        """``rel`` (a file, worktree-relative) is ignored, or lies in an ignored directory."""
        here = self._inside(rel.rpartition("/")[0])
        if here is None:
            return True
        top, rules = here
        return rules.is_ignored(_below(top, rel), False)

    def _inside(self, directory: str) -> _Here | None:
        """The rules that apply in ``directory``; None if the walk would not enter it."""
        missing = []
        current = directory
        while current not in self._dirs:
            missing.append(current)
            if not current:
                break
            current = current.rpartition("/")[0]
        for d in reversed(missing):  # top down: each directory from its parent's rules
            self._dirs[d] = self._enter(d)
        return self._dirs[directory]

    def _enter(self, directory: str) -> _Here | None:
        if not directory:
            here: _Here = ("", repository_rules(self.store.worktree))
        else:
            parent = self._dirs[directory.rpartition("/")[0]]
            if parent is None or parent[1].is_ignored(_below(parent[0], directory), True):
                return None
            here = parent
            if os.path.lexists(self.store.worktree.root / directory / ".git"):
                here = (directory, nested_rules(self.store.worktree.root / directory))
        top, rules = here
        return top, rules.with_gitignore(_below(top, directory), self._gitignore(directory))

    def _gitignore(self, directory: str) -> list[bytes] | None:
        """The tree's ``.gitignore`` in ``directory`` (a regular file, as git reads one)."""
        found = self.store.entry(
            self.tree, f"{directory}/.gitignore" if directory else ".gitignore"
        )
        if found is None or found.mode not in (MODE_FILE, MODE_EXEC):
            return None  # absent, or a symbolic link: git never reads one through a link
        if self.store.objects.blob_size(found.oid) > MAX_RULE_FILE_BYTES:
            return None
        return parse_lines(self.store.blob(found.oid))


def _below(top: str, rel: str) -> str:
    """``rel`` relative to the repository whose top is ``top`` (``""``: the worktree's)."""
    return rel[len(top) + 1 :] if top else rel
