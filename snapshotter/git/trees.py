"""Tree objects built in memory: a whole snapshot at once, or just what changed.

libgit2 writes each tree of a full rebuild as a loose object, about a
second per 500 trees on this kind of disk; hashing them here and packing them
with the blobs avoids that. After one full build, the id of every directory's
tree is kept (in the stat cache), so a capture that changed a few files
re-hashes only the trees on their way to the root.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from snapshotter.git.kinds import MODE_TREE, TREE
from snapshotter.git.packs import object_id

# path -> a record whose first item is the mode and last item the raw blob id
Entries = Mapping[str, Sequence[object]]
Built = tuple[bytes, list[tuple[bytes, bytes]], dict[str, bytes]]


def build(entries: Entries) -> Built:
    """(root tree id, [(tree id, tree bytes)], directory -> tree id) for ``entries``."""
    return update(entries, {}, entries, everything=True)


def update(entries: Entries, trees: Mapping[str, bytes], paths: Iterable[str],
           *, everything: bool = False) -> Built:
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
    files: dict[str, list[tuple[bytes, int, bytes]]] = {d: [] for d in affected}
    for path, record in entries.items():
        parent, _, name = path.rpartition("/")
        if parent in files:
            files[parent].append((os.fsencode(name), record[0], record[-1]))  # type: ignore[arg-type]
    subdirs: dict[str, set[str]] = {}
    for directory in (*trees, *affected):
        if directory:
            subdirs.setdefault(directory.rpartition("/")[0], set()).add(directory)
    ids = {} if everything else dict(trees)
    written: list[tuple[bytes, bytes]] = []
    for directory in sorted(affected, key=lambda d: d.count("/") + bool(d), reverse=True):
        items = files[directory]
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


def tree_bytes(items: Mapping[bytes, tuple[int, bytes]]) -> bytes:
    """A tree object's body for name → (mode, raw id), in git's entry order."""
    return b"".join(
        b"%o %s\0" % (items[name][0], name) + items[name][1]
        for name in sorted(items, key=lambda n: _git_order(n, items[n][0]))
    )


def _git_order(name: bytes, mode: int) -> bytes:
    """git sorts a tree's entries by name, with ``/`` after directory names."""
    return name + b"/" if mode == MODE_TREE else name
