"""Snapshots a crash took: said in one line, and nothing else stops working (issue 28.4).

Objects are durable before any record names them (durable.py), so a power
cut cannot leave a record naming a missing tree any more; a store written by
an older version, or a disk that lied about a flush, still can. Such a
checkpoint is refused by name when an operation would read it, instead of
being undone from nothing (a missing tree reads as empty: its files would be
removed) or failing with a bare "tree ... is missing". ``list`` reads no tree;
a capture whose start is gone records a new baseline (recorder.py), and a
stat cache naming a tree the store lacks is dropped (store/capture.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from snapshotter.errors import StoreError
from snapshotter.git.kinds import EMPTY_TREE
from snapshotter.store.shadow import Store


class SnapshotLost(StoreError):
    """A checkpoint's tree is missing from the store (exit 1)."""


def missing(store: Store, tree: str) -> bool:
    """Whether ``tree`` is named but not stored (the empty tree is never missing)."""
    return tree != EMPTY_TREE and not store.has(tree)


def require(
    store: Store,
    op: str,
    reads: Iterable[tuple[int | None, str]],
    compares: Iterable[tuple[int | None, str]],
    *,
    force: bool,
) -> None:
    """Refuse ``op`` when a tree it would read is missing, or (unless ``force``) one it
    compares the worktree with: (checkpoint id or None, tree) each."""
    for checkpoint, tree in reads:
        if missing(store, tree):
            which = _which(checkpoint, "the snapshot to restore")
            raise SnapshotLost(f"cannot {op}: {which} ({tree[:12]}) {_GONE}")
    if force:
        return
    for checkpoint, tree in compares:
        if missing(store, tree):
            raise SnapshotLost(
                f"cannot {op}: {_which(checkpoint, 'the snapshot to compare with')} ({tree[:12]}) "
                f"{_GONE}, so edits made since cannot be told apart (use --force to restore "
                "anyway; redo brings them back)"
            )


_GONE = "is missing from the store (lost in a crash or power cut?)"


def _which(checkpoint: int | None, otherwise: str) -> str:
    return f"the snapshot of checkpoint {checkpoint}" if checkpoint is not None else otherwise
