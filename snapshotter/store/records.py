"""One file's record, packed: its stat data, then (in the stat cache) its blob id.

A walk records each file as its mode and ``signature.Signature``'s fields
(size, mtime_ns, ctime_ns, inode), packed into one ``bytes`` object of
``STAT_SIZE`` bytes (a ``Stat``); the stat cache adds the raw blob id after
them (an ``Entry``). One object a path instead of a tuple of six (issue 24.5:
a 500k-file hook server held ~230 bytes a path in the tuple and its ints;
packed, ~90). Every field is compared, as before: a file is unchanged only
when an entry ``startswith`` the walk's Stat (``unchanged``).

Never index a record (``rec[0]`` is a byte, not the mode): read it through
the functions here.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence

from snapshotter.git.kinds import MODE_EXEC, MODE_FILE, MODE_LINK

_STAT = struct.Struct("<IQqqQ")  # mode, size, mtime_ns, ctime_ns, inode
_SIGNATURE = struct.Struct("<QqqQ")  # size, mtime_ns, ctime_ns, inode: a Stat after its mode
STAT_SIZE = _STAT.size
_MTIME = struct.Struct("<q")
_MTIME_AT = 12  # after the mode (4 bytes) and the size (8)
MTIME_BYTES = slice(_MTIME_AT, _MTIME_AT + _MTIME.size)  # a record's mtime_ns, packed
SIGNATURE_AT = 4  # signature.Signature's fields: everything after the mode

# A walk's record of one file (``stat``), or the stat cache's (``entry``): both
# start with the same STAT_SIZE bytes.
Stat = bytes
Entry = bytes

# git's file modes, one int object each (the walk's own).
_MODES = {mode: mode for mode in (MODE_FILE, MODE_EXEC, MODE_LINK)}

stat = _STAT.pack  # (mode, size, mtime_ns, ctime_ns, inode) -> Stat
pack_signature = _SIGNATURE.pack  # (size, mtime_ns, ctime_ns, inode) -> ``signature``'s bytes
fields = _STAT.unpack_from  # Stat or Entry -> (mode, size, mtime_ns, ctime_ns, inode)


def oid(entry: Entry) -> bytes:
    """The raw blob id of a stat cache entry."""
    return entry[STAT_SIZE:]


def unpacked(record: Stat) -> tuple[int, int, int, int, int]:
    """``fields``, sharing objects where a tuple of them can: one int a mode, and the
    mtime's for a ctime equal to it (a first capture holds one a file to hash)."""
    mode, size, mtime_ns, ctime_ns, ino = _STAT.unpack_from(record)
    ctime_ns = mtime_ns if ctime_ns == mtime_ns else ctime_ns
    return _MODES.get(mode, mode), size, mtime_ns, ctime_ns, ino


def mode_and_id(entry: Entry) -> tuple[int, bytes]:
    """A stat cache entry as a tree names it: (mode, raw blob id)."""
    return int(_STAT.unpack_from(entry)[0]), entry[STAT_SIZE:]


def mode(record: Stat) -> int:
    return int(_STAT.unpack_from(record)[0])


def mtime(record: Stat) -> int:
    return int(_MTIME.unpack_from(record, _MTIME_AT)[0])


def unchanged(cached: Entry, st: Stat) -> bool:
    """Whether ``cached`` holds exactly ``st``'s stat data: mode, size, mtime, ctime
    and inode, all of them."""
    return cached.startswith(st[:STAT_SIZE])


def signature(record: Stat) -> bytes:
    """The record's (size, mtime_ns, ctime_ns, inode), packed as ``signature_of`` packs."""
    return record[SIGNATURE_AT:STAT_SIZE]


def signature_of(st: os.stat_result) -> bytes:
    """A file's (size, mtime_ns, ctime_ns, inode), packed as ``signature`` reads them."""
    return pack_signature(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def signature_at(path: str, dir_fd: int | None = None) -> bytes | None:
    """``signature_of`` the link at ``path`` itself; None when it cannot be read."""
    try:
        return signature_of(os.lstat(path, dir_fd=dir_fd))
    except OSError:
        return None


def from_tuple(record: Sequence[object]) -> bytes:
    """A record of the stat cache's older formats (a tuple: five fields, then the id)."""
    oid = record[5] if len(record) == 6 else None
    if not isinstance(oid, bytes):
        raise ValueError("not a stat cache entry")
    return _STAT.pack(*record[:5]) + oid
