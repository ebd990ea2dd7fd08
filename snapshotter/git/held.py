"""A capture's new objects, held back and written together: one pack, not a file each.

A served 10-file turn at 10k files writes ~36 objects (the 10 blobs and the
~26 trees above them). Written loose, each is a file created in its fan-out
directory, ~0.25 ms of the filesystem's time here: two thirds of what the hook
server spends on the turn. Held in memory while the capture runs
(``ObjectDB.held``), they are written at its end as one pack and its index
(packs.py: temp names, the index renamed last, both noted for the next
settle), which costs about what two loose objects do.

Fewer than ``PACK_FROM`` go loose as before (a 1-file turn: a pack would not
be cheaper, and every pack is one more index each lookup searches). So do all
of them while ``MAX_PACKS`` packs are there already: those small packs are
rolled up by session_end's gc (compaction.py's geometric rule), and the loose
ones by a capture's own ``_pack_if_many``, so a long session never makes the
lookups search an unbounded number of packs.

Nothing is lost by holding them: the objects are written before the capture
returns its tree, so before any record (the stat cache, state.json) names
them, and a capture that fails drops them with nothing naming them.
"""

from __future__ import annotations

import os
from pathlib import Path

# From this many objects a capture writes, one pack is cheaper than loose files.
PACK_FROM = 8
# Beyond this many packs in objects/pack, a capture writes loose objects again.
MAX_PACKS = 32


class Held:
    """Objects written meanwhile (raw id -> (kind, data)), in the order written."""

    def __init__(self) -> None:
        self.objects: dict[bytes, tuple[int, bytes]] = {}
        self.loose = 0  # how many went loose at the end (the stat cache counts them)

    def get(self, oid: str | bytes) -> tuple[int, bytes] | None:
        """The held object ``oid`` (raw or hex); None when not held (or malformed)."""
        if isinstance(oid, str):
            try:
                oid = bytes.fromhex(oid)
            except ValueError:
                return None
        return self.objects.get(oid)


def as_pack(pack_dir: Path, held: Held) -> bool:
    """Whether ``held`` is worth a pack of its own in ``pack_dir`` (see the module doc)."""
    if len(held.objects) < PACK_FROM:
        return False
    try:
        with os.scandir(pack_dir) as entries:
            packs = sum(entry.name.endswith(".idx") for entry in entries)
    except OSError:
        return False  # loose, as ever: the write itself says what is wrong
    return packs < MAX_PACKS
