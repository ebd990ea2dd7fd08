"""Writing many objects as one pack file, without libgit2's delta search.

A first capture creates thousands of blobs; one loose file each is most of
its cost (MEASURED.md), and libgit2's pack builder spends seconds searching
for deltas. This writes a plain pack (zlib per object, no deltas) and its v2
index directly, under temp names renamed into place (.pack before .idx, the
index being what makes a pack visible), so a kill leaves no half pack.
"""

from __future__ import annotations

import array
import contextlib
import hashlib
import itertools
import mmap
import os
import re
import secrets
import struct
import sys
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from pathlib import Path

from snapshotter.git.kinds import ObjectId

# Loose objects enough to be worth a pack of their own (about 40 one-file
# checkpoints): a capture packs them from here, and so does session_end's gc.
LOOSE_PACK_AT = 256
OFS_DELTA, REF_DELTA = 6, 7
TEMP_PREFIX = "tmp_snapshotter_"
# The files of a pack (``.keep`` and ``.rev`` go with their ``.pack``); anything
# else in objects/pack is a leftover of a killed write.
PACK_FILE = re.compile(r"^pack-[0-9a-f]{40}\.(pack|idx|rev|keep)$")


def object_id(kind: int, data: bytes) -> ObjectId:
    """The id git gives an object of this kind and body (SHA-1)."""
    name = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}[kind]
    return ObjectId(hashlib.sha1(b"%s %d\0" % (name, len(data)) + data).digest())


def _header(kind: int, size: int) -> bytes:
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def write_pack(pack_dir: Path, objects: Iterable[tuple[bytes, int, bytes]]) -> int:
    """Write ``(oid, kind, data)`` objects as one pack; returns how many were written."""
    out = _PackOut(pack_dir)
    try:
        for oid, kind, data in objects:
            if oid not in out:
                out.add(oid, kind, data)
        return out.finish()
    finally:
        out.discard()


def copy_pack(
    pack_dir: Path,
    sources: Iterable[tuple[Path, Collection[bytes]]],
    loose: Iterable[bytes],
    read: Callable[[bytes], tuple[int, bytes]],
) -> int:
    """One pack of the wanted objects of existing packs and of ``loose`` ones; returns the count.

    ``sources``: each pack's ``.pack`` path and the ids wanted from it. Their
    entries are copied as stored (compressed, deltas kept): no delta search,
    no recompression, so the cost is the bytes copied (issue 16.7: libgit2's
    pack builder re-ran delta search on every live object, 25 s on a large
    store). An entry whose delta base is not copied, or whose bytes fail the
    index's CRC, is written whole from ``read`` (which must return the
    object's kind and data); so are the ``loose`` ids.
    """
    out = _PackOut(pack_dir)
    try:
        for pack, wanted in sources:
            _copy_entries(out, pack, wanted, read)
        for oid in loose:
            if oid not in out:
                out.add(oid, *_whole(oid, read))
        return out.finish()
    finally:
        out.discard()


class _PackOut:
    """A pack being written under a temp name: entries appended, then published whole."""

    def __init__(self, pack_dir: Path) -> None:
        self.pack_dir = pack_dir
        self.tmp = pack_dir / f"{TEMP_PREFIX}{secrets.token_hex(6)}"
        # id -> offset << 32 | crc32: one int per object (a 500k-object pack kept
        # a dict of offsets and a list of tuples, ~200 bytes an object).
        self.records: dict[bytes, int] = {}
        self.file = open(self.tmp.with_suffix(".pack"), "wb")  # noqa: SIM115 (closed by finish or discard)
        head = struct.pack(">4sII", b"PACK", 2, 0)  # count patched in finish
        self.file.write(head)
        self.offset = len(head)

    def __contains__(self, oid: bytes) -> bool:
        return oid in self.records

    def offset_of(self, oid: bytes) -> int:
        return self.records[oid] >> 32

    def add(self, oid: bytes, kind: int, data: bytes) -> None:
        self.add_record(oid, _header(kind, len(data)) + zlib.compress(data, 1))

    def add_record(self, oid: bytes, record: bytes) -> None:
        self.file.write(record)
        self.records[oid] = self.offset << 32 | zlib.crc32(record)
        self.offset += len(record)

    def finish(self) -> int:
        """Trailer and index, then ``.pack`` and ``.idx`` renamed into place; 0 if empty."""
        if not self.records:
            self.file.close()
            return 0
        self.file.seek(8)
        self.file.write(struct.pack(">I", len(self.records)))
        self.file.close()
        # The trailer is the SHA-1 of everything before it, count included.
        digest = hashlib.sha1()
        with open(self.tmp.with_suffix(".pack"), "rb+") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
            f.write(digest.digest())
        name = f"pack-{digest.hexdigest()}"
        self.tmp.with_suffix(".idx").write_bytes(_index(self.records, digest.digest()))
        os.replace(self.tmp.with_suffix(".pack"), self.pack_dir / f"{name}.pack")
        os.replace(self.tmp.with_suffix(".idx"), self.pack_dir / f"{name}.idx")
        return len(self.records)

    def discard(self) -> None:
        self.file.close()
        for suffix in (".pack", ".idx"):
            with contextlib.suppress(OSError):
                os.unlink(self.tmp.with_suffix(suffix))


def _copy_entries(
    out: _PackOut, pack: Path, wanted: Collection[bytes], read: Callable[[bytes], tuple[int, bytes]]
) -> None:
    """The wanted entries of one pack, in its order (a delta's base comes first there)."""
    entries = read_pack_entries(pack.with_suffix(".idx"))
    if entries is None:
        raise ValueError(f"{pack.name}: unreadable index")
    at = {offset: oid for offset, oid, _crc in entries}
    with open(pack, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        ends = [offset for offset, _oid, _crc in entries[1:]] + [len(data) - 20]
        for (offset, oid, crc), end in zip(entries, ends, strict=True):
            if oid in out or oid not in wanted:
                continue
            raw = data[offset:end]
            record = _rebased(out, raw, offset, at) if zlib.crc32(raw) == crc else None
            if record is None:
                out.add(oid, *_whole(oid, read))
            else:
                out.add_record(oid, record)


def _rebased(out: _PackOut, raw: bytes, offset: int, at: dict[int, bytes]) -> bytes | None:
    """The entry as it goes into ``out``: a delta points at its base's new place.

    None when the base is not in ``out`` (not wanted: unreachable), or the
    entry cannot be read; the object is then written whole.
    """
    kind, body = _entry_kind(raw)
    if kind in (1, 2, 3, 4):
        return raw
    if kind == OFS_DELTA:
        distance, data_at = _read_distance(raw, body)
        base = at.get(offset - distance)
    elif kind == REF_DELTA:
        base, data_at = raw[body : body + 20], body + 20
    else:
        return None
    if base is None or base not in out:
        return None
    head = bytes([(raw[0] & 0x8F) | (OFS_DELTA << 4)]) + raw[1:body]  # a REF_DELTA becomes one
    return head + _distance(out.offset - out.offset_of(base)) + raw[data_at:]


def _whole(oid: bytes, read: Callable[[bytes], tuple[int, bytes]]) -> tuple[int, bytes]:
    kind, data = read(oid)
    if object_id(kind, data) != oid:
        raise ValueError(f"object {oid.hex()} reads back damaged")
    return kind, data


def _entry_kind(raw: bytes) -> tuple[int, int]:
    """An entry's type and where its header ends (the size it gives is kept as is)."""
    kind = (raw[0] >> 4) & 7
    pos = 1
    while raw[pos - 1] & 0x80:
        pos += 1
    return kind, pos


def _read_distance(raw: bytes, pos: int) -> tuple[int, int]:
    """An OFS_DELTA's base distance (git's offset encoding) and where its data starts."""
    byte = raw[pos]
    distance = byte & 0x7F
    while byte & 0x80:
        pos += 1
        byte = raw[pos]
        distance = ((distance + 1) << 7) | (byte & 0x7F)
    return distance, pos + 1


def _distance(distance: int) -> bytes:
    out = [distance & 0x7F]
    distance >>= 7
    while distance:
        distance -= 1
        out.append(0x80 | (distance & 0x7F))
        distance >>= 7
    return bytes(reversed(out))


def clean_pack_dir(pack_dir: Path) -> int:
    """Remove what killed pack writes leave: temp files, scratch dirs, packs without index.

    Only safe under the store lock (nobody is writing a pack then).
    """
    import shutil

    if not pack_dir.is_dir():
        return 0
    removed = 0
    names = set(os.listdir(pack_dir))
    for name in names:
        path = pack_dir / name
        stem, _, ext = name.rpartition(".")
        orphan = not PACK_FILE.match(name) or (ext == "pack" and f"{stem}.idx" not in names)
        if not orphan:
            continue
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed += 1
    return removed


def _index(records: dict[bytes, int], pack_sum: bytes) -> bytes:
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
        if off < 0x80000000:
            offsets.append(off)
        else:
            offsets.append(0x80000000 | len(large))
            large.append(off)
    if sys.byteorder == "little":
        for table in (crcs, offsets, large):
            table.byteswap()  # the index is big-endian
    body = b"".join(
        (
            b"\377tOc",
            struct.pack(">I", 2),
            struct.pack(">256I", *fanout),
            b"".join(names),
            crcs.tobytes(),
            offsets.tobytes(),
            large.tobytes(),
            pack_sum,
        )
    )
    return body + hashlib.sha1(body).digest()


_IDX_MAGIC = b"\377tOc"
_FANOUT = struct.Struct(">256I")


class PackIndex:
    """The ids a pack holds, from its v2 index: a fan-out table and sorted 20-byte names.

    gc needs to know which objects a pack shared with the source repository
    holds, and seeding which source pack holds a blob; libgit2 tells neither.
    ``read_pack_index(path, offsets=True)`` also keeps where each object starts.
    """

    def __init__(
        self, fanout: tuple[int, ...], names: bytes, offsets: bytes = b"", large: bytes = b""
    ) -> None:
        self._fanout = fanout
        self._names = names
        self._offsets = offsets  # 4 bytes per object, in name order (empty: not read)
        self._large = large  # the 8-byte offsets of a pack over 2 GiB

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

    def offset(self, position: int) -> int:
        """Where the object at ``position`` starts in the pack (needs ``offsets=True``)."""
        (off,) = struct.unpack_from(">I", self._offsets, 4 * position)
        if off & 0x80000000:
            (off,) = struct.unpack_from(">Q", self._large, 8 * (off & 0x7FFFFFFF))
        return int(off)

    def offsets(self) -> Sequence[int]:
        """Where each object starts, in name order (needs ``offsets=True``)."""
        found = array.array("I", self._offsets)
        if sys.byteorder == "little":
            found.byteswap()  # the index is big-endian
        if any(off & 0x80000000 for off in found):
            return [self.offset(pos) for pos in range(len(found))]
        return found

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


def read_pack_index(path: Path, *, offsets: bool = False) -> PackIndex | None:
    """A v2 ``.idx`` file's ids (with ``offsets``, also where each object starts);
    None for another version or a damaged file."""
    try:
        with open(path, "rb") as f:
            head = f.read(8 + _FANOUT.size)
            if len(head) < 8 + _FANOUT.size or head[:4] != _IDX_MAGIC:
                return None
            if struct.unpack_from(">I", head, 4)[0] != 2:
                return None
            fanout = _FANOUT.unpack_from(head, 8)
            if any(a > b for a, b in itertools.pairwise(fanout)):
                return None
            count = fanout[-1]
            names = f.read(20 * count)
            if not offsets:
                return PackIndex(fanout, names) if len(names) == 20 * count else None
            f.seek(4 * count, os.SEEK_CUR)  # the CRCs
            table = f.read(4 * count)
            rest = f.read()
    except OSError:
        return None
    if len(names) != 20 * count or len(table) != 4 * count or len(rest) < 40:
        return None
    return PackIndex(fanout, names, table, rest[:-40])


# -- object headers, read without mapping the pack ---------------------------

_TWO_VARINTS = re.compile(rb"([\x80-\xff]*[\x00-\x7f])([\x80-\xff]*[\x00-\x7f])")
_READ = 512  # bytes read at an entry: its header, and most deltas' size header
_WINDOW = 1 << 20  # bytes read at once where the wanted entries lie close together
_DENSE_GAP = 64 * 1024  # ... closer than this on average
_DELTA_HEAD_MAX = 64 * 1024  # compressed bytes read for a delta's size header at most
_CHAIN_MAX = 10_000  # delta bases followed for an object's type at most
_KINDS_KEPT = 1 << 16  # entries whose type is remembered (then forgotten, all at once)


UNKNOWN = -1  # a header read_headers has not found (yet)


def header_value(kind: int, size: int) -> int:
    """An object's (type, size) as one int, as ``read_headers`` stores it."""
    return size << 3 | kind


def read_headers(pack_dir: Path, headers: dict[bytes, int]) -> None:
    """Fill in ``headers`` (raw id -> UNKNOWN): each id the packs in ``pack_dir`` hold
    gets ``header_value(type, size)``; the others keep UNKNOWN.

    libgit2's ``read_header`` answers the same, but maps whole pack windows to
    do it: a first capture asking for 500k seeded blobs had the 1.7 GB source
    pack resident (issue 16.5). Here entries are read with ``pread``, in pack
    order (a delta's base mostly comes first, and a disk reads ahead), and
    one int per object is all that is kept. Objects this cannot read
    (another pack version, a damaged entry, a delta whose base is in another
    pack) stay UNKNOWN: ask libgit2 for those.
    """
    pending = sum(1 for value in headers.values() if value == UNKNOWN)
    with contextlib.suppress(OSError):
        for idx in sorted(pack_dir.glob("pack-*.idx")):
            if not pending:
                break
            index = read_pack_index(idx, offsets=True)
            if index is None:
                continue
            try:
                fd = os.open(idx.with_suffix(".pack"), os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if os.pread(fd, 8, 0) not in (b"PACK\0\0\0\2", b"PACK\0\0\0\3"):
                    continue
                offsets = index.offsets()
                held = array.array(
                    "I",
                    (
                        pos
                        for pos, oid in enumerate(index.iter_names())
                        if headers.get(oid) == UNKNOWN
                    ),
                )
                pack_size = os.fstat(fd).st_size
                entries = _EntryHeaders(fd, index, offsets, len(held) * _DENSE_GAP > pack_size)
                for pos in _in_pack_order(held, offsets, pack_size):
                    oid = index.name(pos)
                    if headers.get(oid) != UNKNOWN:
                        continue
                    header = entries.header(offsets[pos])
                    if header is not None:
                        headers[oid] = header_value(*header)
                        pending -= 1
            finally:
                os.close(fd)


def _in_pack_order(held: array.array[int], offsets: Sequence[int], pack_size: int) -> Iterator[int]:
    """The positions ``held``, by offset: sorted a bucket at a time, so no list of
    them all (an int object each) is made."""
    count = len(held) // 64 + 1
    buckets: list[array.array[int]] = [array.array("I") for _ in range(count)]
    for pos in held:
        buckets[offsets[pos] * count // (pack_size + 1)].append(pos)
    del held
    for bucket in buckets:
        yield from sorted(bucket, key=offsets.__getitem__)


class _EntryHeaders:
    """Type and size of a pack's entries, by offset: a whole object's from its
    entry header; a delta's size from the start of its inflated data, its type
    from its base's (followed down the chain)."""

    def __init__(self, fd: int, index: PackIndex, offsets: Sequence[int], dense: bool) -> None:
        self.fd = fd
        self.index = index
        self.offsets = offsets
        self.window = _WINDOW if dense else 0
        self.buf = b""
        self.buf_at = 0
        self.kinds: dict[int, int] = {}  # offset -> type, for entries met

    def header(self, offset: int) -> tuple[int, int] | None:
        """(type, size) of the entry at ``offset``; None when it cannot be read.

        The common case inline (this runs per seeded file): a whole object's
        header, or a delta whose base was met already.
        """
        try:
            at = offset - self.buf_at
            if at >= 0 and at + _READ <= len(self.buf):
                raw = self.buf[at : at + _READ]
            elif self.window:
                self.buf = os.pread(self.fd, self.window, offset)
                self.buf_at = offset
                raw = self.buf[:_READ]
            else:
                raw = os.pread(self.fd, _READ, offset)
            byte = raw[0]
            kind = (byte >> 4) & 7
            if kind in (1, 2, 3, 4):
                size, shift, pos = byte & 0x0F, 4, 1
                while byte & 0x80:
                    byte = raw[pos]
                    pos += 1
                    size |= (byte & 0x7F) << shift
                    shift += 7
            else:
                _kind, _size, base, data_at = self._entry(raw, offset)
                if base is None:
                    return None
                kind = self._kind(base)
                size = self._delta_size(raw, data_at, offset)
        except (OSError, IndexError, ValueError, zlib.error, struct.error):
            return None
        if kind < 0 or size < 0:
            return None
        kinds = self.kinds
        if len(kinds) >= _KINDS_KEPT:
            kinds.clear()
        kinds[offset] = kind
        return kind, size

    def _entry(self, raw: bytes, offset: int) -> tuple[int, int, int | None, int]:
        """(type, size in the entry header, base offset of a delta or None, where data starts)."""
        byte = raw[0]
        kind, size, shift, pos = (byte >> 4) & 7, byte & 0x0F, 4, 1
        while byte & 0x80:
            byte = raw[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
        if kind == OFS_DELTA:
            distance, pos = _read_distance(raw, pos)
            if not 0 < distance < offset:
                raise ValueError("delta base out of the pack")
            return kind, size, offset - distance, pos
        if kind == REF_DELTA:
            found = self.index.position(raw[pos : pos + 20])
            if found is None:
                raise ValueError("delta base in another pack")
            return kind, size, self.offsets[found], pos + 20
        return kind, size, None, pos

    def _kind(self, offset: int) -> int:
        """An object's type: the first whole object's down its delta chain (-1: unknown)."""
        kind = self.kinds.get(offset)
        if kind is not None:
            return kind
        chain: list[int] = []
        while kind is None:
            if len(chain) > _CHAIN_MAX:
                return -1
            chain.append(offset)
            entry_kind, _size, base, _at = self._entry(os.pread(self.fd, 64, offset), offset)
            if base is None:
                if entry_kind not in (1, 2, 3, 4):
                    return -1
                kind = entry_kind
            else:
                offset = base
                kind = self.kinds.get(offset)
        if len(self.kinds) >= _KINDS_KEPT:
            self.kinds.clear()
        for at in chain:
            self.kinds[at] = kind
        return kind

    def _delta_size(self, raw: bytes, data_at: int, offset: int) -> int:
        """The result size a delta's data begins with, after its base's (-1: unreadable)."""
        inflate = zlib.decompressobj()
        out = inflate.decompress(raw[data_at:], 32)
        read = len(raw)
        while True:
            sizes = _delta_sizes(out)
            if sizes is not None:
                return sizes[1]
            if inflate.eof or len(out) >= 32 or len(raw) < _READ or read > _DELTA_HEAD_MAX:
                return -1
            raw = os.pread(self.fd, 4096, offset + read)
            read += len(raw)
            out += inflate.decompress(inflate.unconsumed_tail + raw, 32 - len(out))


def _delta_sizes(data: bytes) -> tuple[int, int] | None:
    """The base and result sizes a delta starts with (two little-endian varints)."""
    found = _TWO_VARINTS.match(data)
    if found is None:
        return None
    sizes = []
    for group in found.groups():
        value = 0
        for byte in reversed(group):
            value = (value << 7) | (byte & 0x7F)
        sizes.append(value)
    return sizes[0], sizes[1]


def read_pack_entries(path: Path) -> list[tuple[int, bytes, int]] | None:
    """``(offset, id, crc32)`` of each object a v2 ``.idx`` lists, by offset; None if unreadable."""
    try:
        blob = path.read_bytes()
    except OSError:
        return None
    head = 8 + _FANOUT.size
    if len(blob) < head or blob[:4] != _IDX_MAGIC or struct.unpack_from(">I", blob, 4)[0] != 2:
        return None
    count = _FANOUT.unpack_from(blob, 8)[-1]
    crcs_at = head + 20 * count
    offsets_at = crcs_at + 4 * count
    large_at = offsets_at + 4 * count
    if len(blob) < large_at + 40:
        return None
    crcs = struct.unpack_from(f">{count}I", blob, crcs_at)
    offsets = list(struct.unpack_from(f">{count}I", blob, offsets_at))
    for i, off in enumerate(offsets):
        if off & 0x80000000:
            at = large_at + 8 * (off & 0x7FFFFFFF)
            if len(blob) < at + 8:
                return None
            offsets[i] = struct.unpack_from(">Q", blob, at)[0]
    names = [blob[head + 20 * i : head + 20 * i + 20] for i in range(count)]
    return sorted(zip(offsets, names, crcs, strict=True))
