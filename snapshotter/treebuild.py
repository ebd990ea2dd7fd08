"""Tree objects for a whole snapshot, built in memory (for one pack).

libgit2 writes each tree of a full rebuild as a loose object, about a
second per 500 trees on this kind of disk; hashing them here and packing them
with the blobs avoids that.
"""

from __future__ import annotations

from collections.abc import Mapping

from snapshotter.packwriter import object_id

TREE = 2
MODE_TREE = 0o40000


def build(entries: Mapping[str, tuple[int, bytes]]) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    """``path → (mode, blob id)`` to (root tree id, [(tree id, tree bytes)])."""
    children: dict[str, list[tuple[bytes, int, bytes]]] = {"": []}
    for path, (mode, oid) in entries.items():
        parent, _, name = path.rpartition("/")
        if parent not in children:
            ancestor = parent
            while ancestor and ancestor not in children:
                children[ancestor] = []
                ancestor = ancestor.rpartition("/")[0]
        children[parent].append((name.encode(), mode, oid))
    trees: list[tuple[bytes, bytes]] = []
    ids: dict[str, bytes] = {}
    for directory in sorted(children, key=lambda d: d.count("/") + bool(d), reverse=True):
        items = list(children[directory])
        if directory:
            parent, _, name = directory.rpartition("/")
        data = b"".join(
            b"%o %s\0" % (mode, name) + oid
            for name, mode, oid in sorted(items, key=_git_order)
        )
        oid = object_id(TREE, data)
        trees.append((oid, data))
        ids[directory] = oid
        if directory:
            children[parent].append((name.encode(), MODE_TREE, oid))
    return ids[""], trees


def _git_order(item: tuple[bytes, int, bytes]) -> bytes:
    """git sorts a tree's entries by name, with ``/`` after directory names."""
    name, mode, _oid = item
    return name + b"/" if mode == MODE_TREE else name
