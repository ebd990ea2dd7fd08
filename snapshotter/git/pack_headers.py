"""The type and size of packed objects, read with ``pread`` instead of mapping packs.

libgit2's ``read_header`` answers the same, but maps whole pack windows to do
it: a first capture asking for 500k seeded blobs had the 1.7 GB source pack
resident (issue 16.5). Here entries are read with ``pread``, in pack order (a
delta's base mostly comes first, and a disk reads ahead), and one int per
object is all that is kept. A small pack (``map_max``) is mapped instead, as
libgit2 maps it: as fast as libgit2's lookups, and a first capture need not
load libgit2 at all.
"""

from __future__ import annotations

import array
import contextlib
import mmap
import os
import struct
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from snapshotter.git import varint
from snapshotter.git.kinds import KIND_NAMES, OFS_DELTA, REF_DELTA
from snapshotter.git.pack_index import PackIndex, read_pack_index

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


def read_headers(pack_dir: Path, headers: dict[bytes, int], *, map_max: int = 0) -> None:
    """Fill in ``headers`` (raw id -> UNKNOWN): each id the packs in ``pack_dir`` hold
    gets ``header_value(type, size)``; the others keep UNKNOWN. A pack of at most
    ``map_max`` bytes is mapped, not read with ``pread``.

    Objects this cannot read (another pack version, a damaged entry, a delta
    whose base is in another pack) stay UNKNOWN: ask libgit2 for those.
    """
    pending = sum(1 for value in headers.values() if value == UNKNOWN)
    with contextlib.suppress(OSError):
        for idx in sorted(pack_dir.glob("pack-*.idx")):
            if not pending:
                break
            index = read_pack_index(idx, tables=True)
            if index is None:
                continue
            try:
                fd = os.open(idx.with_suffix(".pack"), os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                pending -= _read_pack(fd, index, headers, map_max)
            finally:
                os.close(fd)


def _read_pack(fd: int, index: PackIndex, headers: dict[bytes, int], map_max: int) -> int:
    """Fill in the UNKNOWN ``headers`` one pack (open as ``fd``) holds; how many were."""
    if os.pread(fd, 8, 0) not in (b"PACK\0\0\0\2", b"PACK\0\0\0\3"):
        return 0
    pack_size = os.fstat(fd).st_size
    if pack_size <= map_max:
        try:
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            pass  # (a filesystem that maps nothing): read as a big pack is
        else:
            with mapped:
                return _read_entries(fd, index, headers, pack_size, mapped)
    return _read_entries(fd, index, headers, pack_size, None)


def _read_entries(
    fd: int, index: PackIndex, headers: dict[bytes, int], pack_size: int, mapped: mmap.mmap | None
) -> int:
    offsets = index.offsets()
    if mapped is not None:
        return _read_mapped(_EntryHeaders(fd, index, offsets, False, mapped), headers)
    held = array.array(
        "I", (pos for pos, oid in enumerate(index.iter_names()) if headers.get(oid) == UNKNOWN)
    )
    entries = _EntryHeaders(fd, index, offsets, len(held) * _DENSE_GAP > pack_size, mapped)
    found = 0
    for pos in _in_pack_order(held, offsets, pack_size):
        oid = index.name(pos)
        if headers.get(oid) != UNKNOWN:
            continue
        header = entries.header(offsets[pos])
        if header is not None:
            headers[oid] = header_value(*header)
            found += 1
    return found


def _read_mapped(entries: _EntryHeaders, headers: dict[bytes, int]) -> int:
    """``_read_entries`` of a mapped pack: the wanted entries in pack order, so a delta's
    base, when wanted too (at a lower offset), has its type noted before the delta
    needs it; what this loop cannot read (a base not met, in another pack, a long
    delta head) is left to ``entries.header``, which follows the chain. At 10k
    seeded blobs that method's calls per entry had taken half the time."""
    mapped, kinds, index, offsets = entries.mapped, entries.kinds, entries.index, entries.offsets
    assert mapped is not None
    get = headers.get
    held = sorted(
        (offsets[pos], pos) for pos, oid in enumerate(index.iter_names()) if get(oid) == UNKNOWN
    )
    read_header, read_offset, inflater = (
        varint.read_object_header,
        varint.read_offset,
        zlib.decompressobj,
    )
    found = 0
    for offset, pos in held:
        raw = mapped[offset : offset + _READ]
        try:
            kind, size, at = read_header(raw)
            if kind == OFS_DELTA:
                distance, at = read_offset(raw, at)
                kind = kinds.get(offset - distance, -1) if 0 < distance < offset else -1
                if kind >= 0:
                    result = _result_size(inflater().decompress(raw[at:], 32))
                    size = -1 if result is None else result
        except (IndexError, zlib.error):
            kind = -1  # damaged, or cut short: ``header`` reads what can be read
        if kind not in KIND_NAMES or size < 0:
            header = entries.header(offset)
            if header is None:
                continue
            kind, size = header
        if len(kinds) >= _KINDS_KEPT:
            kinds.clear()
        kinds[offset] = kind
        headers[index.name(pos)] = size << 3 | kind
        found += 1
    return found


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

    def __init__(
        self,
        fd: int,
        index: PackIndex,
        offsets: Sequence[int],
        dense: bool,
        mapped: mmap.mmap | None = None,
    ) -> None:
        self.fd = fd
        self.mapped = mapped  # the whole pack, mapped: read by slicing
        self.index = index
        self.offsets = offsets
        self.window = _WINDOW if dense else 0
        self.buf = b""
        self.buf_at = 0
        self.kinds: dict[int, int] = {}  # offset -> type, for entries met

    def header(self, offset: int) -> tuple[int, int] | None:
        """(type, size) of the entry at ``offset``; None when it cannot be read.

        The common case first (this runs per seeded file): a whole object's
        header, or a delta whose base was met already.
        """
        try:
            at = offset - self.buf_at
            if self.mapped is not None:
                raw = self.mapped[offset : offset + _READ]
            elif at >= 0 and at + _READ <= len(self.buf):
                raw = self.buf[at : at + _READ]
            elif self.window:
                self.buf = os.pread(self.fd, self.window, offset)
                self.buf_at = offset
                raw = self.buf[:_READ]
            else:
                raw = os.pread(self.fd, _READ, offset)
            kind, size, _data_at = varint.read_object_header(raw)
            if kind not in KIND_NAMES:
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
        kind, size, pos = varint.read_object_header(raw)
        if kind == OFS_DELTA:
            distance, pos = varint.read_offset(raw, pos)
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
            entry_kind, _size, base, _at = self._entry(self._read(64, offset), offset)
            if base is None:
                if entry_kind not in KIND_NAMES:
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
            size = _result_size(out)
            if size is not None:
                return size
            if inflate.eof or len(out) >= 32 or len(raw) < _READ or read > _DELTA_HEAD_MAX:
                return -1
            raw = self._read(4096, offset + read)
            read += len(raw)
            out += inflate.decompress(inflate.unconsumed_tail + raw, 32 - len(out))

    def _read(self, size: int, offset: int) -> bytes:
        if self.mapped is not None:
            return self.mapped[offset : offset + size]
        return os.pread(self.fd, size, offset)


def _result_size(data: bytes) -> int | None:
    """The result size a delta starts with (after its base size); None when ``data``
    ends before both sizes do."""
    try:
        _base, pos = varint.read_size(data, 0)
        return varint.read_size(data, pos)[0]
    except IndexError:
        return None
