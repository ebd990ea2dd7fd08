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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from snapshotter.git.kinds import EMPTY_TREE, MODE_TREE, TREE
from snapshotter.git.packs import object_id

# path -> a record, read by ``read`` as (mode, raw blob id); by default one whose
# first item is the mode and last item the raw blob id
Entries = Mapping[str, Any]
Read = Callable[[Any], tuple[int, bytes]]
Built = tuple[bytes, list[tuple[bytes, bytes]], dict[str, bytes]]


def _first_and_last(record: Sequence[Any]) -> tuple[int, bytes]:
    return record[0], record[-1]


def build(entries: Entries, *, read: Read = _first_and_last) -> Built:
    """(root tree id, [(tree id, tree bytes)], directory -> tree id) for ``entries``."""
    return update(entries, {}, entries, everything=True, read=read)


def update(
    entries: Entries,
    trees: Mapping[str, bytes],
    paths: Iterable[str],
    *,
    everything: bool = False,
    read: Read = _first_and_last,
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
            files[parent].append((os.fsencode(name), record))
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


def edit(
    base: str,
    changes: Mapping[str, tuple[int, bytes] | None],
    read: Callable[[bytes], Items],
    write: Callable[[bytes], bytes],
) -> str:
    """The stored tree ``base`` with each path set to (mode, blob id), or removed for None.

    See ``edit_ids``, which also says which directories' trees it wrote.
    """
    return (edit_ids(base, changes, read, write)[""] or bytes.fromhex(EMPTY_TREE)).hex()


def edit_ids(
    base: str,
    changes: Mapping[str, tuple[int, bytes] | None],
    read: Callable[[bytes], Items],
    write: Callable[[bytes], bytes],
) -> dict[str, bytes | None]:
    """The tree id of every directory on the way from ``changes`` to the root, after
    them (None: left empty, so gone, the root included); see ``edit``.

    Only the trees on the way from the changed paths to the root are read
    (``read``: a stored tree's items) and written (``write``: a tree's bytes,
    its id back). A loop over directories, deepest first, never a recursion:
    trees 1,100 directories deep must be editable (#13.3). A None for a path
    that is a directory in ``base`` leaves the directory alone.
    """
    empty = bytes.fromhex(EMPTY_TREE)

    seen: dict[bytes, Items] = {}

    def items_of(tree: bytes | None) -> Items:
        if tree is None or tree == empty:
            return {}
        if tree not in seen:
            seen[tree] = read(tree)  # each tree read once: as a parent, then edited
        return dict(seen[tree])

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
        item = items_of(old[parent]).get(os.fsencode(name))
        old[d] = item[1] if item is not None and item[0] == MODE_TREE else None
    new: dict[str, bytes | None] = {}
    for d in reversed(by_depth):  # children first: each directory's new tree
        items = items_of(old[d])
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
        new[d] = write(tree_bytes(items)) if items else None
    return new


def tree_bytes(items: Mapping[bytes, tuple[int, bytes]]) -> bytes:
    """A tree object's body for name → (mode, raw id), in git's entry order."""
    return b"".join(
        b"%o %s\0" % (items[name][0], name) + items[name][1]
        for name in sorted(items, key=lambda n: _git_order(n, items[n][0]))
    )


def _git_order(name: bytes, mode: int) -> bytes:
    """git sorts a tree's entries by name, with ``/`` after directory names."""
    return name + b"/" if mode == MODE_TREE else name
