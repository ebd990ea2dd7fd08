"""Reading which paths a git index tracks, fast, and caching the answer.

pygit2 builds a Python object per entry (0.15 s for 10k entries here); the
scan only needs paths and modes, read straight from the index file (format
versions 2 to 4) and kept in a marshal cache keyed by the index's stat data,
so an unchanged index costs one stat and one small read. Split indexes
(``core.splitIndex``) and SHA-256 repositories are read too: libgit2 reads
neither.

``read_entries`` reads everything else an entry holds (stat data, object id,
flags); only seeding a capture from the source index needs it, so it is
parsed on demand and never cached. ``iter_split_entries`` gives the same
entries one at a time: seeding keeps only the few fields it needs of each.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple, TypeVar

from snapshotter.fileio import write_atomic

_HEADER = struct.Struct(">4sII")
_MODE_AT = 24  # ctime(8) mtime(8) dev(4) ino(4), then mode
_STAT_BYTES = 40  # the stat data before the object id; flags follow the id
_EXTENDED = 0x4000
_STAGE_SHIFT = 12
ASSUME_VALID = 0x8000
SKIP_WORKTREE = 0x4000  # in the extended flags (index v3+)
INTENT_TO_ADD = 0x2000  # in the extended flags (index v3+)
_SPLIT_INDEX = b"link"  # entries live partly in a shared index (core.splitIndex)
SHA1_SIZE = 20
_FS_ENCODING, _FS_ERRORS = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()


def tracked_modes(
    index_file: Path, cache_file: Path | None = None, oid_size: int = SHA1_SIZE
) -> dict[str, int] | None:
    """``path → mode`` for every index entry; None when the file cannot be parsed.

    ``oid_size`` is the repository's object id size (32 for SHA-256). A split
    index's shared part is read from ``sharedindex.<id>`` beside the index.
    The cache is keyed by the index file's stat data alone: a shared index is
    named by its checksum, so pointing at another one rewrites the index too.
    """
    try:
        st = os.stat(index_file)
    except OSError:
        return {}
    sig = (st.st_mtime_ns, st.st_size, st.st_ino, oid_size)
    if cache_file is not None:
        try:
            cached = marshal.loads(cache_file.read_bytes())
            if cached[0] == sig:
                return dict(cached[1])
        except (OSError, EOFError, ValueError, TypeError, IndexError):
            pass
    try:
        modes = parse(index_file.read_bytes(), oid_size, index_file.parent)
    except (OSError, struct.error, ValueError, IndexError):
        return None
    if cache_file is not None and modes is not None:
        with contextlib.suppress(OSError):  # an unwritable cache only costs speed
            write_atomic(cache_file, marshal.dumps((sig, modes)))
    return modes


def parse(
    data: bytes, oid_size: int = SHA1_SIZE, git_dir: Path | None = None
) -> dict[str, int] | None:
    """``path → mode`` of an index file's bytes; None for a format we do not read.

    Names are bytes in the index; here they are ``os.fsdecode``d (see names.py),
    so a name that is not UTF-8 is tracked like any other (issue 13 §8). A
    split index (``link`` extension) is merged with its shared index, read
    from ``git_dir`` (issue 13 §7); without ``git_dir`` it is not parsed.
    """
    parsed = _entries(data, oid_size)
    if parsed is None:
        return None
    own, end = parsed
    link = _extensions(data, end, oid_size).get(_SPLIT_INDEX)
    entries: list[tuple[bytes, int]] | None = own
    if link is not None:
        entries = _with_shared_index(link, own, oid_size, git_dir)
    if entries is None:
        return None
    modes: dict[str, int] = {}
    for name, mode in entries:
        # os.fsdecode without its per-call overhead (this loop runs per tracked path).
        modes.setdefault(name.decode(_FS_ENCODING, _FS_ERRORS), mode)
    return modes


def _entries(data: bytes, oid_size: int) -> tuple[list[tuple[bytes, int]], int] | None:
    """(name, mode) of each entry in file order, and where the extensions start."""
    signature, version, count = _HEADER.unpack_from(data, 0)
    if signature != b"DIRC" or version not in (2, 3, 4):
        return None
    flags_at = _STAT_BYTES + oid_size
    entries: list[tuple[bytes, int]] = []
    offset = _HEADER.size
    previous = b""
    for _ in range(count):
        (mode,) = struct.unpack_from(">I", data, offset + _MODE_AT)
        (flags,) = struct.unpack_from(">H", data, offset + flags_at)
        pos = offset + flags_at + 2
        if version >= 3 and flags & _EXTENDED:
            pos += 2
        previous, offset = _name(data, version, offset, pos, previous)
        entries.append((previous, mode))
    return entries, offset


def _with_shared_index(
    link: bytes, own: list[tuple[bytes, int]], oid_size: int, git_dir: Path | None
) -> list[tuple[bytes, int]] | None:
    """A split index's (name, mode) entries merged into its shared index's.

    None when the shared index cannot be read.
    """
    base = link[:oid_size]
    if base == bytes(oid_size):
        return own  # no shared index (yet): this file holds every entry
    if git_dir is None:
        return None
    try:
        shared_data = (git_dir / f"sharedindex.{base.hex()}").read_bytes()
    except OSError:
        return None
    shared = _entries(shared_data, oid_size)
    if shared is None:
        return None
    return _merge_split(
        link, own, shared[0], oid_size, lambda new, old: new if new[0] else (old[0], new[1])
    )


_T = TypeVar("_T")


def _merge_split(
    link: bytes, own: list[_T], shared: list[_T], oid_size: int, replace: Callable[[_T, _T], _T]
) -> list[_T]:
    """A split index's entries merged into its shared index's, as git merges them.

    The ``link`` extension names the shared index and holds two EWAH bitmaps
    over its entries: those deleted, and those replaced by this file's first
    entries, in order (``replace(new, old)``: a replacement with an empty
    name keeps the shared name). This file's remaining entries are added.
    """
    merged = list(shared)
    deleted: list[int] = []
    replaced: list[int] = []
    if len(link) > oid_size:
        deleted, after = _ewah_bits(link, oid_size)
        replaced, _ = _ewah_bits(link, after)
    if len(replaced) > len(own) or any(pos >= len(merged) for pos in (*deleted, *replaced)):
        raise ValueError("link extension does not fit its shared index")
    for k, pos in enumerate(replaced):
        merged[pos] = replace(own[k], merged[pos])
    gone = set(deleted)
    return [e for i, e in enumerate(merged) if i not in gone] + own[len(replaced) :]


def _ewah_bits(data: bytes, offset: int) -> tuple[list[int], int]:
    """The set bits of git's EWAH bitmap at ``offset``, and where the bitmap ends.

    Layout: bit count, word count, that many 64-bit words, the last
    run-length word's position (all big-endian). Each run-length word holds
    a fill bit (bit 0), a count of 64-bit words of that fill (bits 1-32) and
    a count of literal words that follow it (bits 33-63).
    """
    bit_count, word_count = struct.unpack_from(">II", data, offset)
    words = struct.unpack_from(f">{word_count}Q", data, offset + 8)
    end = offset + 8 + 8 * word_count + 4
    bits: list[int] = []
    pos = i = 0
    while i < word_count:
        marker = words[i]
        i += 1
        run = ((marker >> 1) & 0xFFFFFFFF) * 64
        if marker & 1:
            bits.extend(range(pos, min(pos + run, bit_count)))
        pos += run
        for _ in range(marker >> 33):
            word = words[i]
            i += 1
            while word:
                low = word & -word
                bits.append(pos + low.bit_length() - 1)
                word ^= low
            pos += 64
    return [b for b in bits if b < bit_count], end


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
    oid: bytes  # the raw object id (20 bytes; 32 in a SHA-256 repository)
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


def read_entries(
    data: bytes, oid_size: int = SHA1_SIZE, git_dir: Path | None = None
) -> list[IndexEntry] | None:
    """Every entry of an index file's bytes; None when they cannot be fully trusted.

    None for a bad checksum or a version other than 2-4. A split index
    (``core.splitIndex``) is merged with its shared index, read from
    ``git_dir`` and checked the same way; None without ``git_dir``.
    """
    found = read_split_entries(data, oid_size, git_dir)
    return None if found is None else found[0]


def read_split_entries(
    data: bytes, oid_size: int = SHA1_SIZE, git_dir: Path | None = None
) -> tuple[list[IndexEntry], Path | None] | None:
    """``read_entries``, and the shared index file the entries were merged with (if any)."""
    found = iter_split_entries(data, oid_size, git_dir)
    if found is None:
        return None
    entries, shared_file = found
    if shared_file is None:
        return list(entries), None
    try:  # a damaged shared index means no entries, as when it cannot be read
        return list(entries), shared_file
    except (ValueError, struct.error, IndexError):
        return None


def iter_split_entries(
    data: bytes, oid_size: int = SHA1_SIZE, git_dir: Path | None = None
) -> tuple[Iterator[IndexEntry], Path | None] | None:
    """``read_split_entries``, each entry parsed as it is iterated (in the same order).

    A 500k-entry index held as a list of IndexEntry took 270 MB; a pass that
    keeps what it needs holds one at a time. Checksums, the version and the
    split index's shape are checked before the first entry comes out; a
    malformed entry raises while iterating (as ``read_split_entries`` does
    while reading).
    """
    own = _IndexFile.checked(data, oid_size)
    if own is None:
        return None
    link = _extensions(data, own.end(), oid_size).get(_SPLIT_INDEX)
    if link is None or link[:oid_size] == bytes(oid_size):
        return iter(own), None
    if git_dir is None:
        return None
    shared_file = git_dir / f"sharedindex.{link[:oid_size].hex()}"
    try:
        shared = _IndexFile.checked(shared_file.read_bytes(), oid_size)
        if shared is None:
            return None
        mine = list(own)  # a split index's own file holds what changed since its shared one
        deleted, replaced = _split_bits(link, oid_size)
        if len(replaced) > len(mine) or any(pos >= shared.count for pos in (*deleted, *replaced)):
            raise ValueError("link extension does not fit its shared index")
    except (OSError, ValueError, struct.error, IndexError):
        return None
    return _merged(mine, iter(shared), set(deleted), replaced), shared_file


def _merged(
    own: list[IndexEntry], shared: Iterator[IndexEntry], deleted: set[int], replaced: list[int]
) -> Iterator[IndexEntry]:
    """``_merge_split`` of IndexEntry, the shared entries parsed as they go."""
    by_pos = {pos: own[k] for k, pos in enumerate(replaced)}
    for pos, entry in enumerate(shared):
        new = by_pos.get(pos)
        if new is not None:
            entry = new if new.path else new._replace(path=entry.path)
        if pos not in deleted:
            yield entry
    yield from own[len(replaced) :]


def _split_bits(link: bytes, oid_size: int) -> tuple[list[int], list[int]]:
    """The ``link`` extension's two bitmaps: shared entries deleted, and replaced."""
    if len(link) <= oid_size:
        return [], []
    deleted, after = _ewah_bits(link, oid_size)
    replaced, _ = _ewah_bits(link, after)
    return deleted, replaced


class _IndexFile:
    """One index file's entries, checksum checked, parsed as iterated."""

    def __init__(self, data: bytes, oid_size: int, version: int, count: int) -> None:
        self.data = data
        self.oid_size = oid_size
        self.version = version
        self.count = count

    @classmethod
    def checked(cls, data: bytes, oid_size: int) -> _IndexFile | None:
        """None for a bad checksum or a version other than 2-4."""
        if len(data) < _HEADER.size + oid_size:
            return None
        trailer = data[-oid_size:]
        digest = hashlib.sha1 if oid_size == SHA1_SIZE else hashlib.sha256
        if trailer != bytes(oid_size) and digest(data[:-oid_size]).digest() != trailer:
            return None  # not what git wrote (index.skipHash leaves the trailer zero)
        signature, version, count = _HEADER.unpack_from(data, 0)
        if signature != b"DIRC" or version not in (2, 3, 4):
            return None
        return cls(data, oid_size, version, count)

    def end(self) -> int:
        """Where the extensions start: the entries skipped, names not built."""
        data, version = self.data, self.version
        flags_at = _STAT_BYTES + self.oid_size
        offset = _HEADER.size
        for _ in range(self.count):
            (flags,) = struct.unpack_from(">H", data, offset + flags_at)
            pos = offset + flags_at + 2
            if version >= 3 and flags & _EXTENDED:
                pos += 2
            if version == 4:
                _strip, pos = _varint(data, pos)
                offset = data.index(b"\0", pos) + 1
            else:
                end = data.index(b"\0", pos)
                offset += (end - offset + 8) & ~7
        return offset

    def __iter__(self) -> Iterator[IndexEntry]:
        data, version = self.data, self.version
        # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size, object id, flags.
        layout = struct.Struct(f">10I{self.oid_size}sH")
        offset = _HEADER.size
        previous = b""
        for _ in range(self.count):
            fields = layout.unpack_from(data, offset)
            flags = fields[11]
            pos = offset + layout.size
            extended = 0
            if version >= 3 and flags & _EXTENDED:
                (extended,) = struct.unpack_from(">H", data, pos)
                pos += 2
            previous, offset = _name(data, version, offset, pos, previous)
            name = previous.decode(_FS_ENCODING, _FS_ERRORS)  # os.fsdecode, faster
            yield IndexEntry._make((name, *fields, extended))


def _extensions(data: bytes, offset: int, oid_size: int) -> dict[bytes, bytes]:
    """Each extension (signature → payload) between the entries and the trailing checksum."""
    found: dict[bytes, bytes] = {}
    end = len(data) - oid_size
    while offset + 8 <= end:
        signature, size = struct.unpack_from(">4sI", data, offset)
        found[signature] = data[offset + 8 : offset + 8 + size]
        offset += 8 + size
    return found
