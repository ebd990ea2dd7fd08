"""The source repository's index file (``.git/index``): the one parser of that format.

Versions 2 to 4 are read, split indexes (``core.splitIndex``: entries partly
in a ``sharedindex.<id>`` beside the index) and SHA-256 repositories too;
libgit2 reads neither of the last two. One walk over the entries
(``IndexFile.walk``) serves three readers:

- ``parse``: path → mode of every entry, for the scan (pygit2 builds a Python
  object per entry, 0.15 s for 10k entries here; tracked.py caches the answer);
- ``iter_split_entries``: everything an entry holds (stat data, object id,
  flags), checksum checked, parsed as iterated: seeding keeps only the few
  fields it needs of each (a 500k-entry index as a list took 270 MB);
- ``read_entries``: the same as a list.

A first capture's walk (``parse``), then its seeding (``iter_split_entries``)
read one index: ``keep_entries`` has the first keep what the second needs.
"""

from __future__ import annotations

import struct
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple, TypeVar

from snapshotter.git.varint import read_offset

_HEADER = struct.Struct(">4sII")
_FLAGS = struct.Struct(">H")
_MODE = struct.Struct(">I")
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
_T = TypeVar("_T")


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


class IndexFile:
    """One index file's bytes: header checked, entries parsed as iterated."""

    def __init__(self, data: bytes, oid_size: int, version: int, count: int) -> None:
        self.data = data
        self.oid_size = oid_size
        self.version = version
        self.count = count
        self.end: int | None = None  # where the extensions start, once walked

    @classmethod
    def read(cls, data: bytes, oid_size: int, *, verify: bool) -> IndexFile | None:
        """None for a version other than 2-4, or (``verify``) a bad checksum."""
        if verify:
            if len(data) < _HEADER.size + oid_size:
                return None
            trailer = data[-oid_size:]
            import hashlib  # (only where the index's checksum is checked)

            digest = hashlib.sha1 if oid_size == SHA1_SIZE else hashlib.sha256
            if trailer != bytes(oid_size) and digest(data[:-oid_size]).digest() != trailer:
                return None  # not what git wrote (index.skipHash leaves the trailer zero)
        signature, version, count = _HEADER.unpack_from(data, 0)
        if signature != b"DIRC" or version not in (2, 3, 4):
            return None
        return cls(data, oid_size, version, count)

    def walk(self, names: bool = True) -> Iterator[tuple[int, bytes, int]]:
        """(where the entry starts, its path, its extended flags) of each entry, in order.

        Once exhausted, ``end`` is where the extensions start. Version 4
        stores each path as a prefix of the previous one plus a suffix, with no
        padding; earlier versions pad each entry to 8 bytes. ``names=False``
        only finds the end (paths come out empty).
        """
        data, version = self.data, self.version
        flags_at = _STAT_BYTES + self.oid_size
        unpack_flags, find = _FLAGS.unpack_from, data.index
        offset = _HEADER.size
        previous = b""
        for _ in range(self.count):
            (flags,) = unpack_flags(data, offset + flags_at)
            pos = offset + flags_at + 2
            extended = 0
            if version >= 3 and flags & _EXTENDED:
                (extended,) = unpack_flags(data, pos)
                pos += 2
            if version == 4:
                strip, pos = read_offset(data, pos)
                end = find(b"\0", pos)
                if names:
                    previous = previous[: len(previous) - strip] + data[pos:end]
                following = end + 1
            else:
                end = find(b"\0", pos)
                if names:
                    previous = data[pos:end]
                following = offset + ((end - offset + 8) & ~7)
            yield offset, previous, extended
            offset = following
        self.end = offset

    def modes(self) -> list[tuple[bytes, int]]:
        """(path, mode) of each entry, in order."""
        data, unpack_mode = self.data, _MODE.unpack_from
        return [(name, unpack_mode(data, at + _MODE_AT)[0]) for at, name, _ext in self.walk()]

    def entries(self) -> Iterator[IndexEntry]:
        """Each entry whole, in order: ``walk``'s loop with the fields unpacked in it
        (at 20k entries a walk plus an unpack per entry took twice as long)."""
        # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size, object id, flags.
        unpack = struct.Struct(f">10I{self.oid_size}sH").unpack_from
        unpack_flags, new = _FLAGS.unpack_from, tuple.__new__
        data, version, find = self.data, self.version, self.data.index
        names_at = _STAT_BYTES + self.oid_size + 2
        offset = _HEADER.size
        previous = b""
        for _ in range(self.count):
            fields = unpack(data, offset)
            pos = offset + names_at
            extended = 0
            if version >= 3 and fields[11] & _EXTENDED:
                (extended,) = unpack_flags(data, pos)
                pos += 2
            if version == 4:
                strip, pos = read_offset(data, pos)
                end = find(b"\0", pos)
                previous = previous[: len(previous) - strip] + data[pos:end]
                following = end + 1
            else:
                end = find(b"\0", pos)
                previous = data[pos:end]
                following = offset + ((end - offset + 8) & ~7)
            path = previous.decode(_FS_ENCODING, _FS_ERRORS)  # os.fsdecode, faster
            yield new(IndexEntry, (path, *fields, extended))
            offset = following
        self.end = offset

    def link(self) -> bytes | None:
        """The split index's ``link`` extension (the shared index's id, two bitmaps)."""
        offset = self.end
        if offset is None:
            for _entry in self.walk(names=False):
                pass
            offset = self.end or 0
        data, end = self.data, len(self.data) - self.oid_size
        while offset + 8 <= end:
            signature, size = struct.unpack_from(">4sI", data, offset)
            if signature == _SPLIT_INDEX:
                return data[offset + 8 : offset + 8 + size]
            offset += 8 + size
        return None


KEEP_MAX = 50_000  # entries kept at most (~300 bytes each, held through a walk)
_kept = threading.local()  # this thread's: armed, and slot (oid size, bytes, entries)


def keep_entries() -> None:
    """The next ``parse`` in this thread keeps the entries it reads (unless split, or
    past KEEP_MAX) for the next ``iter_split_entries`` of the same bytes, which drops
    them; ``drop_entries`` drops them unused."""
    _kept.armed, _kept.slot = True, None


def drop_entries() -> None:
    _kept.armed, _kept.slot = False, None


def _keeping(own: IndexFile) -> list[IndexEntry] | None:
    if not getattr(_kept, "armed", False):
        return None
    _kept.armed = False
    if own.count > KEEP_MAX:
        return None
    entries = list(own.entries())
    return entries if own.link() is None else None


def parse(
    data: bytes, oid_size: int = SHA1_SIZE, git_dir: Path | None = None
) -> dict[str, int] | None:
    """``path → mode`` of an index file's bytes; None for a format we do not read.

    Checksums are not checked (the scan reads the index at every change).
    Names are bytes in the index; here they are ``os.fsdecode``d (see names.py),
    so a name that is not UTF-8 is tracked like any other (issue 13 §8). A
    split index (``link`` extension) is merged with its shared index, read
    from ``git_dir`` (issue 13 §7); without ``git_dir`` it is not parsed.
    """
    own = IndexFile.read(data, oid_size, verify=False)
    if own is None:
        return None
    whole = _keeping(own)
    if whole is not None:
        _kept.slot = (oid_size, data, whole)
        found: dict[str, int] = {}
        for entry in whole:
            found.setdefault(entry.path, entry.mode)
        return found
    entries: Iterable[tuple[bytes, int]] = own.modes()  # (walked: the link is found fast)
    link = own.link()
    if link is not None and link[:oid_size] != bytes(oid_size):
        shared = _shared_index(link, oid_size, git_dir, verify=False)
        if shared is None:
            return None
        index, _path = shared
        entries = _split_merged(link, oid_size, list(entries), index.modes(), index.count, _renamed)
    modes: dict[str, int] = {}
    for name, mode in entries:
        # os.fsdecode without its per-call overhead (this loop runs per tracked path).
        modes.setdefault(name.decode(_FS_ENCODING, _FS_ERRORS), mode)
    return modes


def _renamed(new: tuple[bytes, int], old: tuple[bytes, int]) -> tuple[bytes, int]:
    return new if new[0] else (old[0], new[1])


def read_entries(
    data: bytes, oid_size: int = SHA1_SIZE, git_dir: Path | None = None
) -> list[IndexEntry] | None:
    """Every entry of an index file's bytes; None when they cannot be fully trusted.

    None for a bad checksum, a version other than 2-4, or a malformed entry.
    A split index (``core.splitIndex``) is merged with its shared index, read
    from ``git_dir`` and checked the same way; None without ``git_dir``.
    """
    found = iter_split_entries(data, oid_size, git_dir)
    if found is None:
        return None
    try:
        return list(found[0])
    except (ValueError, struct.error, IndexError):
        return None


def iter_split_entries(
    data: bytes, oid_size: int = SHA1_SIZE, git_dir: Path | None = None
) -> tuple[Iterator[IndexEntry], Path | None] | None:
    """``read_entries``, each entry parsed as it is iterated (in the same order), and
    the shared index file the entries are merged with (if any).

    Checksums, the version and the split index's shape are checked before the
    first entry comes out; a malformed entry raises while iterating.
    """
    own = IndexFile.read(data, oid_size, verify=True)
    if own is None:
        return None
    slot = getattr(_kept, "slot", None)
    if slot is not None:
        _kept.slot = None
        if slot[0] == oid_size and slot[1] == data:  # kept by ``parse`` (not split)
            return iter(slot[2]), None
    link = own.link()
    if link is None or link[:oid_size] == bytes(oid_size):
        return own.entries(), None
    shared = _shared_index(link, oid_size, git_dir, verify=True)
    if shared is None:
        return None
    index, shared_file = shared
    try:
        # A split index's own file holds what changed since its shared one.
        mine = list(own.entries())
        merged = _split_merged(link, oid_size, mine, index.entries(), index.count, _rebased)
    except (ValueError, struct.error, IndexError):
        return None
    return merged, shared_file


def _rebased(new: IndexEntry, old: IndexEntry) -> IndexEntry:
    return new if new.path else new._replace(path=old.path)


def _shared_index(
    link: bytes, oid_size: int, git_dir: Path | None, *, verify: bool
) -> tuple[IndexFile, Path] | None:
    """The shared index a split index's ``link`` names, and its file; None if unreadable."""
    if git_dir is None:
        return None
    path = git_dir / f"sharedindex.{link[:oid_size].hex()}"
    try:
        found = IndexFile.read(path.read_bytes(), oid_size, verify=verify)
    except (OSError, struct.error):
        return None
    return None if found is None else (found, path)


def _split_merged(
    link: bytes,
    oid_size: int,
    own: list[_T],
    shared: Iterable[_T],
    shared_count: int,
    renamed: Callable[[_T, _T], _T],
) -> Iterator[_T]:
    """A split index's entries merged into its shared index's, as git merges them.

    The ``link`` extension names the shared index and holds two EWAH bitmaps
    over its entries: those deleted, and those replaced by this file's first
    entries, in order (``renamed(new, old)``: a replacement with an empty
    name keeps the shared name). This file's remaining entries are added.
    The bitmaps are checked against the entries at once (ValueError), before
    any shared entry is parsed.
    """
    deleted: list[int] = []
    replaced: list[int] = []
    if len(link) > oid_size:
        deleted, after = _ewah_bits(link, oid_size)
        replaced, _ = _ewah_bits(link, after)
    if len(replaced) > len(own) or any(pos >= shared_count for pos in (*deleted, *replaced)):
        raise ValueError("link extension does not fit its shared index")
    return _merged(own, shared, set(deleted), replaced, renamed)


def _merged(
    own: list[_T],
    shared: Iterable[_T],
    deleted: set[int],
    replaced: list[int],
    renamed: Callable[[_T, _T], _T],
) -> Iterator[_T]:
    by_pos = {pos: own[k] for k, pos in enumerate(replaced)}
    for pos, entry in enumerate(shared):
        new = by_pos.get(pos)
        if new is not None:
            entry = renamed(new, entry)
        if pos not in deleted:
            yield entry
    yield from own[len(replaced) :]


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
