"""Tree objects: the one writer of tree bytes, for a whole snapshot at once, for just
what changed since the last build, or as edits of a stored tree.

libgit2 writes each tree of a full rebuild as a loose object, about a
second per 500 trees on this kind of disk; hashing them here and packing them
with the blobs avoids that. After one full build, the id of every directory's
tree is kept (in the stat cache), so a capture that changed a few files
re-hashes only the trees on their way to the root.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from snapshotter.git.kinds import (
    EMPTY_TREE,
    MODE_EXEC,
    MODE_FILE,
    MODE_GITLINK,
    MODE_LINK,
    MODE_TREE,
    TREE,
)
from snapshotter.git.packs import object_id

# path -> a record, read by ``read`` as (mode, raw blob id); by default one whose
# first item is the mode and last item the raw blob id
Entries = Mapping[str, Any]
ReadRecord = Callable[[Any], tuple[int, bytes]]
Built = tuple[bytes, list[tuple[bytes, bytes]], dict[str, bytes]]
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def _first_and_last(record: Sequence[Any]) -> tuple[int, bytes]:
    return record[0], record[-1]


def build(entries: Entries, *, read: ReadRecord = _first_and_last) -> Built:
    """(root tree id, [(tree id, tree bytes)], directory -> tree id) for ``entries``."""
    return update(entries, {}, entries, everything=True, read=read)


def update(
    entries: Entries,
    trees: Mapping[str, bytes],
    paths: Iterable[str],
    *,
    everything: bool = False,
    read: ReadRecord = _first_and_last,
) -> Built:
    """The trees after ``paths`` (added, changed or removed) changed in ``entries``.

    ``trees`` is the directory -> tree id map of the build before; only the
    directories holding ``paths`` and their ancestors are hashed again, and
    only their trees are returned (a directory left empty disappears).
    """
    affected = {""}
    for path in paths:
        parent = path.rpartition("/")[0]
        while parent not in affected:
            affected.add(parent)
            parent = parent.rpartition("/")[0]
    files: dict[str, list[tuple[bytes, Any]]] = {d: [] for d in affected}
    for path, record in entries.items():
        parent, _, name = path.rpartition("/")
        if parent in files:
            # os.fsencode without its per-call overhead (this loop runs per path).
            files[parent].append((name.encode(_FS_ENCODING, _FS_ERRORS), record))
    subdirs: dict[str, set[str]] = {}
    for directory in (*trees, *affected):
        if directory:
            subdirs.setdefault(directory.rpartition("/")[0], set()).add(directory)
    ids = {} if everything else dict(trees)
    written: list[tuple[bytes, bytes]] = []
    for directory in sorted(affected, key=lambda d: d.count("/") + bool(d), reverse=True):
        # Records read a directory at a time: a full build of 500k files never holds
        # every (mode, id) at once.
        items = [(name, *read(record)) for name, record in files.pop(directory)]
        for sub in subdirs.get(directory, ()):
            oid = ids.get(sub)
            if oid is not None:
                items.append((os.fsencode(sub.rpartition("/")[2]), MODE_TREE, oid))
        if not items and directory:
            ids.pop(directory, None)  # git has no empty directories
            continue
        data = tree_bytes({name: (mode, oid) for name, mode, oid in items})
        oid = object_id(TREE, data)
        written.append((oid, data))
        ids[directory] = oid
    return ids[""], written, ids


Items = dict[bytes, tuple[int, bytes]]
Read = Callable[[bytes], Mapping[bytes, tuple[int, bytes]]]


def edit(
    base: str,
    changes: Mapping[str, tuple[int, bytes] | None],
    read: Read,
    write: Callable[[bytes], bytes],
    wrote: Callable[[bytes, Items], None] | None = None,
) -> str:
    """The stored tree ``base`` with each path set to (mode, blob id), or removed for None.

    See ``edit_ids``, which also says which directories' trees it wrote.
    """
    return (edit_ids(base, changes, read, write, wrote)[""] or bytes.fromhex(EMPTY_TREE)).hex()


def edit_ids(
    base: str,
    changes: Mapping[str, tuple[int, bytes] | None],
    read: Read,
    write: Callable[[bytes], bytes],
    wrote: Callable[[bytes, Items], None] | None = None,
) -> dict[str, bytes | None]:
    """The tree id of every directory on the way from ``changes`` to the root, after
    them (None: left empty, so gone, the root included); see ``edit``.

    Only the trees on the way from the changed paths to the root are read
    (``read``: a stored tree's items) and written (``write``: a tree's bytes,
    its id back; ``wrote``, if given, is told each written tree's id and items,
    which it may keep: they are not changed here again). A loop over
    directories, deepest first, never a recursion: trees 1,100 directories
    deep must be editable (#13.3). A None for a path that is a directory in
    ``base`` leaves the directory alone. A directory whose entries come out as
    they were keeps its tree (read, never written again): an edit that changes
    nothing costs no tree bytes.
    """
    empty = bytes.fromhex(EMPTY_TREE)

    seen: dict[bytes, Mapping[bytes, tuple[int, bytes]]] = {}

    def view(tree: bytes | None) -> Mapping[bytes, tuple[int, bytes]]:
        if tree is None or tree == empty:
            return {}
        if tree not in seen:
            seen[tree] = read(tree)  # each tree read once: as a parent, then edited
        return seen[tree]

    dirs = {""}
    files: dict[str, dict[bytes, tuple[int, bytes] | None]] = {}
    for path, change in changes.items():
        parent, _, name = path.rpartition("/")
        files.setdefault(parent, {})[os.fsencode(name)] = change
        while parent not in dirs:
            dirs.add(parent)
            parent = parent.rpartition("/")[0]
    by_depth = sorted(dirs, key=lambda d: (d.count("/") + bool(d), d))
    children: dict[str, list[str]] = {}
    old: dict[str, bytes | None] = {"": bytes.fromhex(base)}
    for d in by_depth[1:]:  # parents first: each directory's tree id in ``base``
        parent, _, name = d.rpartition("/")
        children.setdefault(parent, []).append(d)
        item = view(old[parent]).get(os.fsencode(name))
        old[d] = item[1] if item is not None and item[0] == MODE_TREE else None
    new: dict[str, bytes | None] = {}
    for d in reversed(by_depth):  # children first: each directory's new tree
        base_items = view(old[d])
        items = dict(base_items)  # a copy: what ``read`` gives is shared
        mine = files.get(d, {})
        for key, change in mine.items():
            if change is not None:
                items[key] = change
            elif items.get(key, (0,))[0] != MODE_TREE:
                items.pop(key, None)  # the file went (a directory is no file)
        for sub in children.get(d, ()):
            key = os.fsencode(sub.rpartition("/")[2])
            if mine.get(key) is not None:
                continue  # a file now: nothing can live below it
            subtree = new[sub]
            if subtree is None:
                if items.get(key, (0,))[0] == MODE_TREE:
                    del items[key]  # git keeps no empty directories
            else:
                items[key] = (MODE_TREE, subtree)
        if not items:
            new[d] = None
            continue
        if items == base_items:
            new[d] = old[d]  # nothing changed here (e.g. files as they were): not rewritten
            continue
        new[d] = oid = write(tree_bytes(items))
        if wrote is not None:
            wrote(oid, items)
    return new


def tree_bytes(items: Mapping[bytes, tuple[int, bytes]]) -> bytes:
    """A tree object's body for name → (mode, raw id), in git's entry order."""
    prefix = _MODE_PREFIX
    return b"".join(
        [
            (prefix.get(mode) or b"%o " % mode) + name + b"\0" + oid
            for name, (mode, oid) in sorted(items.items(), key=_git_order)
        ]
    )


# A mode's digits as a tree entry starts with them (one lookup, not a format, per entry).
_MODE_PREFIX = {m: b"%o " % m for m in (MODE_FILE, MODE_EXEC, MODE_LINK, MODE_TREE, MODE_GITLINK)}


def _git_order(item: tuple[bytes, tuple[int, bytes]]) -> bytes:
    """git sorts a tree's entries by name, with ``/`` after directory names."""
    name, (mode, _oid) = item
    return name + b"/" if mode == MODE_TREE else name
