"""A pack's v2 index (``.idx``): the one reader and the one writer of that format.

Layout: magic and version, a 256-entry fan-out table (how many ids start
with each first byte or less), the sorted 20-byte ids, their CRC32s, their
4-byte offsets (the high bit sends an offset past 2 GiB to a table of 8-byte
ones), then the pack's checksum and the index's own. All big-endian.

gc needs to know which objects a pack shared with the source repository
holds, and where each entry starts and ends; seeding which source pack holds
a blob. libgit2 tells neither.
"""

from __future__ import annotations

import array
import itertools
import os
import struct
import sys
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

MAGIC = b"\377tOc"
_FANOUT = struct.Struct(">256I")
_HEAD = 8 + _FANOUT.size  # magic, version, fan-out
_LARGE = 0x80000000  # an offset with this bit set indexes the 8-byte table


class PackIndex:
    """The ids a pack holds (a fan-out table and sorted 20-byte names), and with
    ``read_pack_index(path, tables=True)`` each object's offset and CRC32."""

    def __init__(
        self,
        fanout: tuple[int, ...],
        names: bytes,
        offsets: Sequence[int] = (),
        crcs: Sequence[int] = (),
    ) -> None:
        self._fanout = fanout
        self._names = names
        self._offsets = offsets  # in name order, large offsets resolved (empty: not read)
        self._crcs = crcs  # in name order (empty: not read)

    def __len__(self) -> int:
        return len(self._names) // 20

    def __contains__(self, oid: bytes) -> bool:
        return self.position(oid) is not None

    def position(self, oid: bytes) -> int | None:
        """Where ``oid`` sits in the sorted names; None when the pack lacks it."""
        if len(oid) != 20:
            return None
        first = oid[0]
        lo = self._fanout[first - 1] if first else 0
        hi = self._fanout[first]
        while lo < hi:
            mid = (lo + hi) // 2
            probe = self._names[mid * 20 : mid * 20 + 20]
            if probe < oid:
                lo = mid + 1
            elif probe > oid:
                hi = mid
            else:
                return mid
        return None

    def name(self, position: int) -> bytes:
        return self._names[position * 20 : position * 20 + 20]

    def offsets(self) -> Sequence[int]:
        """Where each object starts in the pack, in name order (needs ``tables``)."""
        return self._offsets

    def entries(self) -> list[tuple[int, bytes, int]]:
        """``(offset, id, crc32)`` of each object, by offset (needs ``tables``)."""
        return sorted(zip(self._offsets, self.iter_names(), self._crcs, strict=True))

    def iter_names(self) -> Iterator[bytes]:
        names = self._names
        return (names[i : i + 20] for i in range(0, len(names), 20))

    def names(self) -> set[bytes]:
        return set(self.iter_names())

    def find(self, wanted: Collection[bytes]) -> set[bytes]:
        """Which of ``wanted`` this pack holds."""
        return set(wanted) - self.lacking(wanted)

    def lacking(self, wanted: Collection[bytes]) -> set[bytes]:
        """Which of ``wanted`` this pack does not hold.

        For many, one pass over the names, each dropped from a copy of
        ``wanted``: never a set of every name held (at 500k objects that set
        alone took 60 MB); for a few, a search each.
        """
        if len(self) <= 4 * len(wanted):
            ids = wanted if isinstance(wanted, set) else set(wanted)
            return ids.difference(self.iter_names())
        return {oid for oid in wanted if oid not in self}


def object_count(path: Path) -> int | None:
    """How many objects a v2 ``.idx`` file lists (its header only); None as
    ``read_pack_index`` would give None for a file too damaged to start."""
    try:
        with open(path, "rb") as f:
            fanout = _fanout(f.read(_HEAD))
    except OSError:
        return None
    return None if fanout is None else fanout[-1]


def holds(path: Path, oid: bytes) -> bool:
    """Whether the v2 ``.idx`` file at ``path`` lists ``oid`` (20 bytes), found by a
    binary search of its names on disk: a few reads, at any index size. False
    for an index that is damaged or of another version, as libgit2 skips it."""
    return find_on_disk(path, oid) is not None


# Each small index's names, read once a process and kept while its file is the
# same (a store holds up to ~32 small packs of a turn's objects); a big one (the
# source's, hard-linked: tldr's lists 592k objects, 12 MB) is searched on disk.
_kept: dict[Path, tuple[tuple[int, int, int], PackIndex | None]] = {}
_KEPT_MAX = 64  # indexes kept at most: a long-lived process sees gc replace packs
KEEP_NAMES_UP_TO = 1 << 20  # bytes of index file: ~50k names


def find(path: Path, oid: bytes) -> tuple[int, int] | None:
    """(how many names, the position of ``oid`` among them) in the v2 index at
    ``path``; None where it does not list it or cannot be read (as ``holds``).

    Asked hundreds of times by an undo without libgit2 (every kept tree it
    reuses is checked to be still stored), so a small index is searched in
    memory, its names read once; ``os.stat`` tells when its file changed.
    """
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_size > KEEP_NAMES_UP_TO:
        return find_on_disk(path, oid)
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    kept = _kept.get(path)
    if kept is None or kept[0] != key:
        if len(_kept) >= _KEPT_MAX:
            _kept.clear()  # (mostly indexes gc has since removed)
        kept = _kept[path] = (key, read_pack_index(path))
    names = kept[1]
    position = None if names is None else names.position(oid)
    return None if names is None or position is None else (len(names), position)


def find_on_disk(path: Path, oid: bytes) -> tuple[int, int] | None:
    """(how many names, the position of ``oid`` among them) in the index at ``path``,
    searched on disk as ``holds`` does; None where ``holds`` says False."""
    if len(oid) != 20:
        return None
    try:
        with open(path, "rb") as f:
            fanout = _fanout(f.read(_HEAD))
            if fanout is None:
                return None
            lo = fanout[oid[0] - 1] if oid[0] else 0
            hi = fanout[oid[0]]
            while lo < hi:
                mid = (lo + hi) // 2
                f.seek(_HEAD + 20 * mid)
                probe = f.read(20)
                if len(probe) != 20:
                    return None  # cut short
                if probe < oid:
                    lo = mid + 1
                elif probe > oid:
                    hi = mid
                else:
                    return fanout[-1], mid
    except OSError:
        return None
    return None


def offset_at(path: Path, count: int, position: int) -> int | None:
    """Where the ``position``-th of the ``count`` names of the index at ``path`` (as
    ``read_pack_index`` read it) starts in its pack; None when it cannot be read.

    Past the names and the CRCs; an offset with the high bit set indexes the
    table of 8-byte offsets after them."""
    try:
        with open(path, "rb") as f:
            f.seek(_HEAD + 24 * count + 4 * position)
            (small,) = struct.unpack(">I", f.read(4))
            if not small & _LARGE:
                return int(small)
            f.seek(_HEAD + 28 * count + 8 * (small & ~_LARGE))
            (large,) = struct.unpack(">Q", f.read(8))
            return int(large)
    except (OSError, struct.error):
        return None


def _fanout(head: bytes) -> tuple[int, ...] | None:
    """The fan-out table of an index that starts with ``head``; None if it is not v2."""
    if len(head) < _HEAD or head[:4] != MAGIC or struct.unpack_from(">I", head, 4)[0] != 2:
        return None
    fanout = _FANOUT.unpack_from(head, 8)
    if any(a > b for a, b in itertools.pairwise(fanout)):
        return None
    return fanout


def read_pack_index(path: Path, *, tables: bool = False) -> PackIndex | None:
    """A v2 ``.idx`` file's ids (with ``tables``, also each object's offset and CRC32);
    None for another version or a damaged file.

    Without ``tables`` only the fan-out and the names are read: a 500k-object
    index is 30 MB, most of it the tables.
    """
    try:
        with open(path, "rb") as f:
            fanout = _fanout(f.read(_HEAD))
            if fanout is None:
                return None
            count = fanout[-1]
            names = f.read(20 * count)
            if len(names) != 20 * count:
                return None
            if not tables:
                return PackIndex(fanout, names)
            crcs = f.read(4 * count)
            offsets = f.read(4 * count)
            rest = f.read()
    except OSError:
        return None
    if len(crcs) != 4 * count or len(offsets) != 4 * count or len(rest) < 40:
        return None
    resolved = _offsets(_big_endian("I", offsets), rest[:-40])
    if resolved is None:
        return None
    return PackIndex(fanout, names, resolved, _big_endian("I", crcs))


def _big_endian(code: str, data: bytes) -> array.array[int]:
    found = array.array(code, data)
    if sys.byteorder == "little":
        found.byteswap()  # the index is big-endian
    return found


def _offsets(small: array.array[int], large: bytes) -> Sequence[int] | None:
    """The 4-byte offsets with those past 2 GiB looked up in ``large``; None when one
    points past its end."""
    if not small or max(small) < _LARGE:
        return small
    table = _big_endian("Q", large[: len(large) // 8 * 8])
    found: list[int] = []
    for off in small:
        if off & _LARGE:
            at = off & (_LARGE - 1)
            if at >= len(table):
                return None
            off = table[at]
        found.append(off)
    return found


def encode_index(records: dict[bytes, int], pack_sum: bytes) -> bytes:
    """The v2 ``.idx`` of ``records`` (id -> offset << 32 | crc32), built in arrays."""
    names = sorted(records)
    fanout = [0] * 256
    for oid in names:
        fanout[oid[0]] += 1
    running = 0
    for i in range(256):
        running += fanout[i]
        fanout[i] = running
    crcs = array.array("I")
    offsets = array.array("I")
    large = array.array("Q")
    for oid in names:
        record = records[oid]
        crcs.append(record & 0xFFFFFFFF)
        off = record >> 32
        if off < _LARGE:
            offsets.append(off)
        else:
            offsets.append(_LARGE | len(large))
            large.append(off)
    if sys.byteorder == "little":
        for table in (crcs, offsets, large):
            table.byteswap()  # the index is big-endian
    body = b"".join(
        (
            MAGIC,
            struct.pack(">I", 2),
            struct.pack(">256I", *fanout),
            b"".join(names),
            crcs.tobytes(),
            offsets.tobytes(),
            large.tobytes(),
            pack_sum,
        )
    )
    import hashlib  # (only where a pack is written)

    return body + hashlib.sha1(body).digest()
