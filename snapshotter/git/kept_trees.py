"""Stored trees' entries, parsed from their bytes once a process and kept by tree id.

An undo, a redo and a served turn read the same few directories' trees again
and again, in several versions: the base a capture edits, both sides of the
turn's diff, the trees an undo edits three times. libgit2 caches no tree over
4 KB, and pygit2 makes a Python object and an enum per entry it hands out:
tldr's 4,613-entry ``pages/common`` cost ~5 ms a read that way, read ~60
times per undo (issue 24). Here a tree's bytes are split by one regular
expression (C speed) into plain tuples, once, and kept.

A tree id is the hash of the tree's bytes, so what is kept under an id is
never stale, whichever store it was read from or written to. What the cache
cannot know is whether a given store holds that id: ``ObjectDB.tree_items``
asks its store on every hit, so a tree missing from a store is reported
missing exactly as without the cache. Trees a process writes are kept as
written (``keep``), so the next operation reads none of them.

Bounded by entries (``KEPT_ENTRIES``, ~200 bytes each), least recently used
out first. Shared by a hook server's threads (a lock); a child the server
forks starts with what its server kept, and a fresh lock.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections.abc import Mapping
from types import MappingProxyType

from snapshotter.git.kinds import MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_LINK, MODE_TREE

# name -> (mode, raw id) of one tree, read-only: every caller shares it.
Items = Mapping[bytes, tuple[int, bytes]]

KEPT_ENTRIES = 65_536  # ~13 MB at most; a 10-file turn in tldr reads ~20k
EMPTY: Items = MappingProxyType({})

_MODES = {b"%o" % m: m for m in (MODE_FILE, MODE_EXEC, MODE_LINK, MODE_TREE, MODE_GITLINK)}


@functools.cache
def _patterns(id_size: int) -> tuple[re.Pattern[bytes], re.Pattern[bytes]]:
    """(one entry, a whole body) for ids of ``id_size`` bytes; compiled on first use,
    not by every hook process that imports this."""
    entry = rb"([0-7]+) ([^\0]+)\0(.{%d})" % id_size
    whole = rb"(?:[0-7]+ [^\0]+\0.{%d})*" % id_size
    return re.compile(entry, re.S), re.compile(whole, re.S)


class MalformedTree(ValueError):
    """A tree object's bytes are not a sequence of ``<mode> <name>\\0<id>`` entries."""


def parse(data: bytes, id_size: int = 20) -> dict[bytes, tuple[int, bytes]]:
    """name -> (mode, raw id) of a tree object's body, its ids ``id_size`` bytes long.

    Modes as libgit2 reports them (``git_tree_entry_filemode``): a legacy or
    odd blob mode is normalised, as pygit2's ``filemode`` did.
    """
    entry, whole = _patterns(id_size)
    if whole.fullmatch(data) is None:
        raise MalformedTree("not a tree object")
    found = entry.findall(data)
    try:
        return {name: (_MODES[mode], oid) for mode, name, oid in found}
    except KeyError:
        return {name: (_normalised(mode), oid) for mode, name, oid in found}


def _normalised(mode: bytes) -> int:
    """libgit2's ``normalize_filemode``, for a mode outside git's five."""
    known = _MODES.get(mode)
    if known is not None:
        return known
    value = int(mode, 8)
    kind = value & 0o170000
    if kind == MODE_TREE:
        return MODE_TREE
    if value & 0o111:
        return MODE_EXEC
    if kind in (MODE_GITLINK, MODE_LINK):
        return kind
    return MODE_FILE


class _Kept:
    """The kept trees, least recently used first, and how many entries they hold."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.trees: dict[bytes, Items] = {}
        self.entries = 0

    def get(self, oid: bytes) -> Items | None:
        with self.lock:
            found = self.trees.pop(oid, None)
            if found is not None:
                self.trees[oid] = found  # now the most recently used
            return found

    def keep(self, oid: bytes, items: dict[bytes, tuple[int, bytes]]) -> Items:
        view: Items = MappingProxyType(items)
        if len(items) > KEPT_ENTRIES:
            return view  # bigger than the whole cache: not kept
        with self.lock:
            old = self.trees.pop(oid, None)
            self.entries -= 0 if old is None else len(old)
            while self.trees and self.entries + len(items) > KEPT_ENTRIES:
                self.entries -= len(self.trees.pop(next(iter(self.trees))))
            self.trees[oid] = view
            self.entries += len(items)
        return view

    def clear(self) -> None:
        with self.lock:
            self.trees.clear()
            self.entries = 0


_kept = _Kept()


def get(oid: bytes) -> Items | None:
    """The entries kept for tree ``oid`` (raw id); None when not kept."""
    return _kept.get(oid)


def keep(oid: bytes, items: dict[bytes, tuple[int, bytes]]) -> Items:
    """Keep ``items`` as tree ``oid``'s entries (its owner gives it up: never changed
    again); a read-only view of them."""
    return _kept.keep(oid, items)


def clear() -> None:
    """Forget every kept tree (for tests)."""
    _kept.clear()


def _forked() -> None:
    """A forked child keeps what its parent read, with a lock no other thread holds."""
    _kept.lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
