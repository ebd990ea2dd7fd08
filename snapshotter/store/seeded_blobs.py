"""Which seeded ids a store now holds as blobs of the file's exact size.

A seeded id must be a blob of the file's size in our own store, after the
linking: a wrong blob id loses data, a missing one only costs time. Headers
are read without inflating the objects: loose ones from their first bytes,
packed ones from their entries (pack_headers.py) unless the packs hold a long
history (``DENSE_OBJECTS``), libgit2 asked only for what neither finds: a first
capture need not load libgit2 (~50 ms).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from snapshotter.git import loose, pack_headers
from snapshotter.git.kinds import BLOB
from snapshotter.git.objects import ObjectDB
from snapshotter.git.pack_index import object_count
from snapshotter.store.walk import Stat

# Seeded blobs' headers are read from a pack mapped while it is at most this
# big (as fast as libgit2, which maps every pack it reads and keeps it
# mapped), else with pread, so a 1.7 GB source pack never becomes resident
# (issue 16.5), while a small repository keeps the faster path (16.1).
MAP_MAX_BYTES = 256 * 1024 * 1024
# Read here, not by libgit2, while the packs hold at most this many objects, or this
# many times the ids wanted: a pass over their names costs less than loading
# libgit2 (~50 ms) then (tldr's full history: 592k objects for 38k files).
DENSE_OBJECTS = 100_000
DENSE_RATIO = 4


def present_as_blobs(
    store_git_dir: Path,
    ids: dict[str, bytes],
    stale: Mapping[str, Stat],
    linked: Mapping[bytes, tuple[int, int]],
) -> dict[str, bytes]:
    """The ids our own store now holds as blobs of the file's exact size (``ids``,
    the others dropped).

    The size is what rules out end-of-line conversion (git/conversion.py),
    even one from a config long gone (say autocrlf on when the file was
    added, off now). ``linked``: (type, size) of loose objects read from the
    very inode just linked into the store (object_links.py), not read again.
    Headers of packed objects are read by pack_headers.read_headers (a pack
    mapped up to MAP_MAX_BYTES), libgit2's only for what it cannot read.
    """
    loose_dir = os.fspath(store_git_dir / "objects")
    try:
        fan_outs = {name for name in os.listdir(loose_dir) if len(name) == 2}
    except OSError:
        fan_outs = set()
    # raw id -> header_value(type, size): one dict, one int per object.
    headers = dict.fromkeys(ids.values(), pack_headers.UNKNOWN)
    for oid, (kind, size) in linked.items():
        if oid in headers:
            headers[oid] = pack_headers.header_value(kind, size)
    if fan_outs:
        for oid, value in headers.items():
            if value != pack_headers.UNKNOWN or oid[:1].hex() not in fan_outs:
                continue
            header = loose.read_header(loose_dir, oid)
            if header is not None:
                headers[oid] = pack_headers.header_value(*header)
    pack_dir = store_git_dir / "objects" / "pack"
    objects, size = _packs(pack_dir)
    pending = sum(1 for value in headers.values() if value == pack_headers.UNKNOWN)
    if size > MAP_MAX_BYTES:
        pack_headers.read_headers(pack_dir, headers)  # with pread: never all resident
    elif objects <= max(DENSE_OBJECTS, DENSE_RATIO * pending):
        pack_headers.read_headers(pack_dir, headers, map_max=MAP_MAX_BYTES)
    # else a long history's packs, most of them not wanted: libgit2's lookups (a binary
    # search each, in C) beat a pass over every name, even with its import.
    unknown = [oid for oid, value in headers.items() if value == pack_headers.UNKNOWN]
    if unknown:
        # A fresh ObjectDB sees the packs just linked.
        for oid, kind, size in ObjectDB(store_git_dir).headers(unknown):
            headers[oid] = pack_headers.header_value(kind, size)
    wrong = [
        rel
        for rel, oid in ids.items()
        if headers[oid] != pack_headers.header_value(BLOB, stale[rel][1])
    ]
    for rel in wrong:
        del ids[rel]
    return ids


def _packs(pack_dir: Path) -> tuple[int, int]:
    """(objects, bytes) of the packs in ``pack_dir``, from their indexes' headers."""
    objects = size = 0
    try:
        with os.scandir(pack_dir) as entries:
            for entry in entries:
                if entry.name.endswith(".pack"):
                    size += entry.stat().st_size
                    objects += object_count(Path(entry.path[: -len(".pack")] + ".idx")) or 0
    except OSError:
        return 0, 0
    return objects, size
