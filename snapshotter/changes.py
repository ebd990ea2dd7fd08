"""What changed between two recorded trees, as statuses and as a unified diff."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from snapshotter.models import FileChange, Status
from snapshotter.store import EMPTY_TREE, Store

if TYPE_CHECKING:
    import pygit2

_STATUS: dict[str, Status] = {"A": "added", "D": "deleted", "M": "modified", "T": "modified"}


def changes(
    store: Store, before: str, after: str, in_scope: Callable[[str], bool] = lambda _: True
) -> list[FileChange]:
    """Files that differ from ``before`` to ``after``, sorted by path.

    A path deleted and re-added with another type (file ↔ symlink) is one
    ``modified`` change, as is an exec-bit flip.
    """
    if before == after:
        return []
    found: dict[str, Status] = {}
    for delta in _diff(store, before, after).deltas:
        path = delta.new_file.path or delta.old_file.path
        if not in_scope(path):
            continue
        status = _STATUS.get(delta.status_char(), "modified")
        found[path] = "modified" if path in found else status
    return [FileChange(path=p, status=s) for p, s in sorted(found.items())]


def diff_text(store: Store, before: str, after: str, paths: Collection[str] | None = None) -> str:
    """Unified diff text; binary files are named, not dumped."""
    parts = []
    for patch in _patches(store, before, after):
        path = patch.delta.new_file.path or patch.delta.old_file.path
        if paths is None or path in paths:
            parts.append(patch.text or "")
    return "".join(parts)


def diff_stat(
    store: Store, before: str, after: str, paths: Collection[str] | None = None
) -> str:
    """``git diff --stat``-like summary lines."""
    lines = []
    total_add = total_del = 0
    for patch in _patches(store, before, after):
        path = patch.delta.new_file.path or patch.delta.old_file.path
        if paths is not None and path not in paths:
            continue
        if patch.delta.is_binary:
            lines.append(f" {path} | Bin")
            continue
        _, adds, dels = patch.line_stats
        total_add += adds
        total_del += dels
        lines.append(f" {path} | {adds + dels} {'+' * min(adds, 40)}{'-' * min(dels, 40)}")
    lines.append(
        f" {_count(len(lines), 'file')} changed, {_count(total_add, 'insertion')}(+), "
        f"{_count(total_del, 'deletion')}(-)"
    )
    return "\n".join(lines) + "\n"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _patches(store: Store, before: str, after: str) -> list[pygit2.Patch]:
    return [p for p in _diff(store, before, after) if p is not None]


def _diff(store: Store, before: str, after: str) -> pygit2.Diff:
    new = store.tree_object(after)
    if before == EMPTY_TREE:  # may be absent from the store: diff against nothing
        return new.diff_to_tree(swap=True)
    return store.tree_object(before).diff_to_tree(new)
