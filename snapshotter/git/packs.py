"""Writing many objects as one pack file, without libgit2's delta search.

A first capture creates thousands of blobs; one loose file each is most of
its cost (MEASURED.md), and libgit2's pack builder spends seconds searching
for deltas. This writes a plain pack (zlib per object, no deltas) and its v2
index directly, under temp names renamed into place (.pack before .idx, the
index being what makes a pack visible), so a kill leaves no half pack.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import mmap
import os
import re
import secrets
import struct
import zlib
from collections.abc import Callable, Collection, Iterable
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
        self.offsets: dict[bytes, int] = {}
        self.entries: list[tuple[bytes, int, int]] = []  # oid, crc32, offset
        self.file = open(self.tmp.with_suffix(".pack"), "wb")  # noqa: SIM115 (closed by finish or discard)
        head = struct.pack(">4sII", b"PACK", 2, 0)  # count patched in finish
        self.file.write(head)
        self.offset = len(head)

    def __contains__(self, oid: bytes) -> bool:
        return oid in self.offsets

    def add(self, oid: bytes, kind: int, data: bytes) -> None:
        self.add_record(oid, _header(kind, len(data)) + zlib.compress(data, 1))

    def add_record(self, oid: bytes, record: bytes) -> None:
        self.file.write(record)
        self.offsets[oid] = self.offset
        self.entries.append((oid, zlib.crc32(record), self.offset))
        self.offset += len(record)

    def finish(self) -> int:
        """Trailer and index, then ``.pack`` and ``.idx`` renamed into place; 0 if empty."""
        if not self.entries:
            self.file.close()
            return 0
        self.file.seek(8)
        self.file.write(struct.pack(">I", len(self.entries)))
        self.file.close()
        # The trailer is the SHA-1 of everything before it, count included.
        digest = hashlib.sha1()
        with open(self.tmp.with_suffix(".pack"), "rb+") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
            f.write(digest.digest())
        name = f"pack-{digest.hexdigest()}"
        self.tmp.with_suffix(".idx").write_bytes(_index(self.entries, digest.digest()))
        os.replace(self.tmp.with_suffix(".pack"), self.pack_dir / f"{name}.pack")
        os.replace(self.tmp.with_suffix(".idx"), self.pack_dir / f"{name}.idx")
        return len(self.entries)

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
    return head + _distance(out.offset - out.offsets[base]) + raw[data_at:]


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


def _index(entries: list[tuple[bytes, int, int]], pack_sum: bytes) -> bytes:
    entries = sorted(entries)
    fanout = [0] * 256
    for oid, _crc, _off in entries:
        fanout[oid[0]] += 1
    running = 0
    for i in range(256):
        running += fanout[i]
        fanout[i] = running
    large: list[int] = []
    offsets = []
    for _oid, _crc, off in entries:
        if off < 0x80000000:
            offsets.append(off)
        else:
            offsets.append(0x80000000 | len(large))
            large.append(off)
    body = b"".join(
        (
            b"\377tOc",
            struct.pack(">I", 2),
            struct.pack(">256I", *fanout),
            b"".join(oid for oid, _c, _o in entries),
            struct.pack(f">{len(entries)}I", *(crc & 0xFFFFFFFF for _o, crc, _f in entries)),
            struct.pack(f">{len(offsets)}I", *offsets),
            struct.pack(f">{len(large)}Q", *large),
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
    """

    def __init__(self, fanout: tuple[int, ...], names: bytes) -> None:
        self._fanout = fanout
        self._names = names

    def __len__(self) -> int:
        return len(self._names) // 20

    def __contains__(self, oid: bytes) -> bool:
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
                return True
        return False

    def names(self) -> set[bytes]:
        names = self._names
        return {names[i : i + 20] for i in range(0, len(names), 20)}

    def find(self, wanted: Collection[bytes]) -> set[bytes]:
        """Which of ``wanted`` this pack holds (a set for many, a search for a few)."""
        if len(self) <= 4 * len(wanted):
            return self.names() & set(wanted)
        return {oid for oid in wanted if oid in self}


def read_pack_index(path: Path) -> PackIndex | None:
    """A v2 ``.idx`` file's ids; None for another version or a damaged file."""
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
            names = f.read(20 * fanout[-1])
    except OSError:
        return None
    if len(names) != 20 * fanout[-1]:
        return None
    return PackIndex(fanout, names)


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
