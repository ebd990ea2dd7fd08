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
import os
import secrets
import struct
import zlib
from collections.abc import Collection, Iterable
from pathlib import Path

TEMP_PREFIX = "tmp_snapshotter_"


def object_id(kind: int, data: bytes) -> bytes:
    name = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}[kind]
    return hashlib.sha1(b"%s %d\0" % (name, len(data)) + data).digest()


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
    tmp = pack_dir / f"{TEMP_PREFIX}{secrets.token_hex(6)}"
    entries: list[tuple[bytes, int, int]] = []  # oid, crc32, offset
    seen: set[bytes] = set()
    digest = hashlib.sha1()
    try:
        with open(tmp.with_suffix(".pack"), "wb") as f:
            head = struct.pack(">4sII", b"PACK", 2, 0)  # count patched below
            f.write(head)
            offset = len(head)
            for oid, kind, data in objects:
                if oid in seen:
                    continue
                seen.add(oid)
                record = _header(kind, len(data)) + zlib.compress(data, 1)
                f.write(record)
                entries.append((oid, zlib.crc32(record), offset))
                offset += len(record)
            if not entries:
                return 0
            f.seek(8)
            f.write(struct.pack(">I", len(entries)))
        # The trailer is the SHA-1 of everything before it, count included.
        with open(tmp.with_suffix(".pack"), "rb+") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
            f.write(digest.digest())
        name = f"pack-{digest.hexdigest()}"
        tmp.with_suffix(".idx").write_bytes(_index(entries, digest.digest()))
        os.replace(tmp.with_suffix(".pack"), pack_dir / f"{name}.pack")
        os.replace(tmp.with_suffix(".idx"), pack_dir / f"{name}.idx")
        return len(entries)
    finally:
        for suffix in (".pack", ".idx"):
            with contextlib.suppress(OSError):
                os.unlink(tmp.with_suffix(suffix))


def clean_pack_dir(pack_dir: Path) -> int:
    """Remove what killed pack writes leave: temp files, scratch dirs, packs without index.

    Only safe under the store lock (nobody is writing a pack then).
    """
    import re
    import shutil

    if not pack_dir.is_dir():
        return 0
    pack_file = re.compile(r"^pack-[0-9a-f]{40}\.(pack|idx|rev|keep)$")
    removed = 0
    names = set(os.listdir(pack_dir))
    for name in names:
        path = pack_dir / name
        stem, _, ext = name.rpartition(".")
        orphan = not pack_file.match(name) or (ext == "pack" and f"{stem}.idx" not in names)
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
    body = b"".join((
        b"\377tOc", struct.pack(">I", 2),
        struct.pack(">256I", *fanout),
        b"".join(oid for oid, _c, _o in entries),
        struct.pack(f">{len(entries)}I", *(crc & 0xFFFFFFFF for _o, crc, _f in entries)),
        struct.pack(f">{len(offsets)}I", *offsets),
        struct.pack(f">{len(large)}Q", *large),
        pack_sum,
    ))
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
