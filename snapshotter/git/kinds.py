"""Git's object kinds, file modes and id types: one definition each.

An object id is an ``ObjectId``: its raw bytes (20; 32 in a SHA-256
source repository), as trees, packs, the index and the stat cache hold it.
Records and the CLI name a tree by its hex digits (``str``), converted at the
edges with ``.hex()`` and ``bytes.fromhex``.
"""

from __future__ import annotations

import stat
from typing import NamedTuple, NewType

ObjectId = NewType("ObjectId", bytes)

COMMIT = 1  # git's object type numbers, as packs and libgit2 use them
TREE = 2
BLOB = 3
TAG = 4
OFS_DELTA, REF_DELTA = 6, 7  # a pack entry stored as a delta against another object
# The name each type has in an object's ``<name> <size>\0`` header (loose objects, ids).
KIND_NAMES = {COMMIT: b"commit", TREE: b"tree", BLOB: b"blob", TAG: b"tag"}
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

MODE_TREE = 0o40000
MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_LINK = 0o120000
MODE_GITLINK = 0o160000  # a submodule's commit: named by trees, never stored


class Entry(NamedTuple):
    """A file in a tree: its git mode and raw blob id."""

    mode: int
    oid: ObjectId


def git_mode(st_mode: int) -> int | None:
    """The tree mode git gives a file of this ``st_mode``; None for what git skips."""
    if stat.S_ISLNK(st_mode):
        return MODE_LINK
    if stat.S_ISREG(st_mode):
        return MODE_EXEC if st_mode & stat.S_IXUSR else MODE_FILE
    return None
