"""Packing a store's loose objects, so many small checkpoints cost bytes, not blocks.

Each loose object takes a whole filesystem block: a one-line edit four
levels deep wrote ~24 KB. A capture that leaves ``packs.LOOSE_PACK_AT`` loose
objects packs them all at once (older packs stay as they are); session_end's
gc does the rest (compaction.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

from snapshotter.errors import StoreError
from snapshotter.git import packs as packwriter
from snapshotter.git.loose import loose_id
from snapshotter.git.objects import ObjectError
from snapshotter.store.compaction import StoreLike
from snapshotter.store.object_files import (
    drop_loose,
    move_in,
    own_loose_objects,
    settle_records,
    work_dir,
)


def count_loose_objects(store: StoreLike) -> int:
    """How many loose objects the store alone holds (shared ones are the source's)."""
    return len(own_loose_objects(store.root / "git" / "objects"))


def pack_loose_objects(store: StoreLike) -> int:
    """Pack every loose object now; the caller holds the store lock. Returns how many.

    Captures call this so a long session of small checkpoints does not pay a
    filesystem block per object until the next gc.
    """
    loose = own_loose_objects(store.root / "git" / "objects")
    if not loose:
        return 0
    return _pack_loose(store, loose)


def _pack_loose(store: StoreLike, loose: list[Path]) -> int:
    """Loose objects (live or not) into one new pack; older packs stay. Returns the count.

    Written by ``packwriter`` (no delta search, fast zlib), in a scratch
    directory: loose objects never change. The pack is moved in, and the
    loose copies deleted, under the store lock.
    """
    objects = store.root / "git" / "objects"

    def read() -> Iterator[tuple[bytes, int, bytes]]:
        for path in sorted(loose):
            oid = loose_id(path)
            yield oid, *store.objects.read(oid)

    work = work_dir(store.root)
    try:
        try:
            written = packwriter.write_pack(work, read())
        except (ObjectError, KeyError, ValueError) as exc:
            raise StoreError(f"gc stopped, nothing deleted: {exc}") from exc
        with store.locked():
            move_in(work, objects / "pack")
            settle_records(store.root)
            drop_loose(loose)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    store.reopen()
    return written
