"""Writing many objects as one pack file, without libgit2's delta search.

A first capture creates thousands of blobs; one loose file each is most of
its cost (MEASURED.md), and libgit2's pack builder spends seconds searching
for deltas. This writes a plain pack (zlib per object, no deltas) and its v2
index directly, under temp names renamed into place (.pack before .idx, the
index being what makes a pack visible), so a kill leaves no half pack.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import struct
import zlib
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

from snapshotter import durable
from snapshotter.fileio import remove_leftovers, temp_name
from snapshotter.git import varint
from snapshotter.git.kinds import KIND_NAMES, OFS_DELTA, REF_DELTA, TREE, ObjectId
from snapshotter.git.pack_index import encode_index, read_pack_index

# Loose objects enough to be worth a pack of their own (about 40 one-file
# checkpoints): a capture packs them (store/shadow.py), and so does
# session_end's gc (store/compaction.py). The one definition of that number.
LOOSE_PACK_AT = 256
# The files of a pack (``.keep`` and ``.rev`` go with their ``.pack``); anything
# else in objects/pack is a leftover of a killed write.
PACK_FILE = re.compile(r"^pack-[0-9a-f]{40}\.(pack|idx|rev|keep)$")


def object_id(kind: int, data: bytes) -> ObjectId:
    """The id git gives an object of this kind and body (SHA-1)."""
    import hashlib  # (OpenSSL's: loaded by the first object hashed, ~3 ms; most runs hash none)

    return ObjectId(hashlib.sha1(b"%s %d\0" % (KIND_NAMES[kind], len(data)) + data).digest())


def write_pack(
    pack_dir: Path,
    objects: Iterable[tuple[bytes, int, bytes]],
    *,
    level: int = 1,
    tree_level: int | None = None,
) -> int:
    """Write ``(oid, kind, data)`` objects as one pack; returns how many were written.

    ``level`` is zlib's: 0 stores the bytes as they are (still a zlib stream
    git reads), for data that hardly compresses; ``tree_level``, if given, is
    the trees' (mostly 20-byte ids).
    """
    out = _PackOut(pack_dir)
    try:
        for oid, kind, data in objects:
            if oid not in out:
                out.add(
                    oid, kind, data, level if tree_level is None or kind != TREE else tree_level
                )
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
        self.tmp = pack_dir / temp_name()
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

    def add(self, oid: bytes, kind: int, data: bytes, level: int = 1) -> None:
        self.add_record(
            oid, varint.encode_object_header(kind, len(data)) + zlib.compress(data, level)
        )

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
        import hashlib

        digest = hashlib.sha1()
        with open(self.tmp.with_suffix(".pack"), "rb+") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
            f.write(digest.digest())
        name = f"pack-{digest.hexdigest()}"
        self.tmp.with_suffix(".idx").write_bytes(encode_index(self.records, digest.digest()))
        for suffix in (".pack", ".idx"):  # the index last: it makes the pack visible
            os.replace(self.tmp.with_suffix(suffix), self.pack_dir / f"{name}{suffix}")
            durable.wrote(self.pack_dir / f"{name}{suffix}")  # synced by the next settle
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
    index = read_pack_index(pack.with_suffix(".idx"), tables=True)
    if index is None:
        raise ValueError(f"{pack.name}: unreadable index")
    entries = index.entries()
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
    kind, _size, body = varint.read_object_header(raw)
    if kind in KIND_NAMES:
        return raw
    if kind == OFS_DELTA:
        distance, data_at = varint.read_offset(raw, body)
        base = at.get(offset - distance)
    elif kind == REF_DELTA:
        base, data_at = raw[body : body + 20], body + 20
    else:
        return None
    if base is None or base not in out:
        return None
    head = bytes([(raw[0] & 0x8F) | (OFS_DELTA << 4)]) + raw[1:body]  # a REF_DELTA becomes one
    return head + varint.encode_offset(out.offset - out.offset_of(base)) + raw[data_at:]


def _whole(oid: bytes, read: Callable[[bytes], tuple[int, bytes]]) -> tuple[int, bytes]:
    kind, data = read(oid)
    if object_id(kind, data) != oid:
        raise ValueError(f"object {oid.hex()} reads back damaged")
    return kind, data


def clean_pack_dir(pack_dir: Path) -> int:
    """Remove what killed pack writes leave: temp files, scratch dirs, packs without index.

    Anything that is not a pack's file is a leftover here (our temp names,
    this version's or an earlier one's, and older versions' scratch
    directories). Only safe under the store lock (nobody is writing a pack then).
    """
    try:
        names = set(os.listdir(pack_dir))
    except OSError:
        return 0

    def orphan(name: str) -> bool:
        stem, _, ext = name.rpartition(".")
        return not PACK_FILE.match(name) or (ext == "pack" and f"{stem}.idx" not in names)

    return remove_leftovers(pack_dir, orphan)
