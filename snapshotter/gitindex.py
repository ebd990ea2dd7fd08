"""Reading which paths a git index tracks, fast, and caching the answer.

pygit2 builds a Python object per entry (0.15 s for 10k entries here); the
scan only needs paths and modes, read straight from the index file (format
versions 2 to 4) and kept in a marshal cache keyed by the index's stat data,
so an unchanged index costs one stat and one small read.

``read_entries`` reads everything else an entry holds (stat data, object id,
flags); only seeding a capture from the source index needs it, so it is
parsed on demand and never cached.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import struct
from pathlib import Path
from typing import NamedTuple

from snapshotter.fileio import write_atomic

_HEADER = struct.Struct(">4sII")
_MODE_AT = 24  # ctime(8) mtime(8) dev(4) ino(4), then mode
_FLAGS_AT = 60  # 40 bytes of stat data and a 20-byte object id, then flags
_EXTENDED = 0x4000
# ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size, object id, flags.
_ENTRY = struct.Struct(">10I20sH")
_STAGE_SHIFT = 12
ASSUME_VALID = 0x8000
SKIP_WORKTREE = 0x4000  # in the extended flags (index v3+)
INTENT_TO_ADD = 0x2000  # in the extended flags (index v3+)
_SPLIT_INDEX = b"link"  # entries live partly in a shared index we do not read


def tracked_modes(index_file: Path, cache_file: Path | None = None) -> dict[str, int] | None:
    """``path → mode`` for every index entry; None when the file cannot be parsed."""
    try:
        st = os.stat(index_file)
    except OSError:
        return {}
    sig = (st.st_mtime_ns, st.st_size, st.st_ino)
    if cache_file is not None:
        try:
            cached = marshal.loads(cache_file.read_bytes())
            if cached[0] == sig:
                return dict(cached[1])
        except (OSError, EOFError, ValueError, TypeError, IndexError):
            pass
    try:
        modes = parse(index_file.read_bytes())
    except (OSError, struct.error, ValueError, UnicodeDecodeError):
        return None
    if cache_file is not None and modes is not None:
        with contextlib.suppress(OSError):  # an unwritable cache only costs speed
            write_atomic(cache_file, marshal.dumps((sig, modes)))
    return modes


def parse(data: bytes) -> dict[str, int] | None:
    signature, version, count = _HEADER.unpack_from(data, 0)
    if signature != b"DIRC" or version not in (2, 3, 4):
        return None
    modes: dict[str, int] = {}
    offset = _HEADER.size
    previous = b""
    for _ in range(count):
        (mode,) = struct.unpack_from(">I", data, offset + _MODE_AT)
        (flags,) = struct.unpack_from(">H", data, offset + _FLAGS_AT)
        pos = offset + _FLAGS_AT + 2
        if version >= 3 and flags & _EXTENDED:
            pos += 2
        previous, offset = _name(data, version, offset, pos, previous)
        modes.setdefault(previous.decode("utf-8"), mode)
    return modes


def _name(data: bytes, version: int, offset: int, pos: int, previous: bytes) -> tuple[bytes, int]:
    """The path of the entry at ``offset`` (read from ``pos``) and where the next one starts.

    Version 4 stores each path as a prefix of the ``previous`` one plus a
    suffix, with no padding; earlier versions pad each entry to 8 bytes.
    """
    if version == 4:
        strip, pos = _varint(data, pos)
        end = data.index(b"\0", pos)
        return previous[: len(previous) - strip] + data[pos:end], end + 1
    end = data.index(b"\0", pos)
    return data[pos:end], offset + ((end - offset + 8) & ~7)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """git's offset varint (index v4 path-prefix lengths)."""
    byte = data[pos]
    pos += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, pos


class IndexEntry(NamedTuple):
    """One index entry as git wrote it: 32-bit (truncated) stat data, id, flags."""

    path: str
    ctime_s: int
    ctime_ns: int
    mtime_s: int
    mtime_ns: int
    dev: int
    ino: int
    mode: int
    uid: int
    gid: int
    size: int
    oid: bytes  # raw 20 bytes
    flags: int
    extended: int  # the v3+ extended flags, 0 when absent

    @property
    def stage(self) -> int:
        return (self.flags >> _STAGE_SHIFT) & 3

    @property
    def assume_valid(self) -> bool:
        return bool(self.flags & ASSUME_VALID)

    @property
    def skip_worktree(self) -> bool:
        return bool(self.extended & SKIP_WORKTREE)

    @property
    def intent_to_add(self) -> bool:
        return bool(self.extended & INTENT_TO_ADD)


def read_entries(data: bytes) -> list[IndexEntry] | None:
    """Every entry of an index file's bytes; None when they cannot be fully trusted.

    None for a bad checksum, a version other than 2-4, or a split index
    (its ``link`` extension means some entries live in another file).
    """
    if len(data) < _HEADER.size + 20:
        return None
    trailer = data[-20:]
    if trailer != bytes(20) and hashlib.sha1(data[:-20]).digest() != trailer:
        return None  # not what git wrote (index.skipHash leaves the trailer zero)
    signature, version, count = _HEADER.unpack_from(data, 0)
    if signature != b"DIRC" or version not in (2, 3, 4):
        return None
    entries: list[IndexEntry] = []
    offset = _HEADER.size
    previous = b""
    for _ in range(count):
        fields = _ENTRY.unpack_from(data, offset)
        flags = fields[11]
        pos = offset + _ENTRY.size
        extended = 0
        if version >= 3 and flags & _EXTENDED:
            (extended,) = struct.unpack_from(">H", data, pos)
            pos += 2
        previous, offset = _name(data, version, offset, pos, previous)
        entries.append(IndexEntry._make((previous.decode("utf-8"), *fields, extended)))
    if _SPLIT_INDEX in _extensions(data, offset):
        return None
    return entries


def _extensions(data: bytes, offset: int) -> set[bytes]:
    """Signatures of the extensions between the entries and the trailing checksum."""
    found: set[bytes] = set()
    end = len(data) - 20
    while offset + 8 <= end:
        signature, size = struct.unpack_from(">4sI", data, offset)
        found.add(signature)
        offset += 8 + size
    return found
