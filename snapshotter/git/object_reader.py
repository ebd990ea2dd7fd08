"""Objects read whole without libgit2: a loose file inflated, or a pack entry
inflated with its deltas applied, and checked against its id.

libgit2 costs ~85 ms of a process's start-up to load (pygit2's import), more
than the rest of an undo without a hook server at 10k files, which reads a
few trees and blobs. So a process that has not loaded it reads objects here
(objects.py decides), and hands over to libgit2 whatever this cannot read:
an index of another version, a pack it cannot parse, a delta whose base is in
another pack. Every object read here is hashed again and must match its id,
so what comes back is exactly what libgit2 would give, or nothing.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from snapshotter.git import varint
from snapshotter.git.kinds import KIND_NAMES, OFS_DELTA, REF_DELTA
from snapshotter.git.loose import loose_name
from snapshotter.git.pack_index import find, offset_at

_ENTRY_READ = 4096  # bytes read at an entry: its header and, mostly, all of a small object
_CHAIN_MAX = 10_000  # delta bases followed for one object at most
_KINDS = {name: kind for kind, name in KIND_NAMES.items()}


class Unreadable(Exception):
    """This module cannot read the object: libgit2 may (or says why not)."""


def read(objects: Path, oid: bytes) -> tuple[int, bytes] | None:
    """(type, body) of object ``oid`` (20 raw bytes) in ``objects/``, checked against
    its id; None where no loose file and no pack index here lists it (it is absent,
    or in what only libgit2 reads).

    Raises Unreadable where it is there but cannot be read here.
    """
    found = _loose(objects, oid)
    if found is None:
        found = _packed(objects, oid)
    if found is None:
        return None
    from snapshotter.git.packs import object_id

    if object_id(*found) != oid:
        raise Unreadable(f"object {oid.hex()} does not match its id")
    return found


def _loose(objects: Path, oid: bytes) -> tuple[int, bytes] | None:
    fan_out, rest = loose_name(oid)
    try:
        fd = os.open(f"{objects}/{fan_out}/{rest}", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(f"loose object {oid.hex()}: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "rb") as f:
            whole = zlib.decompress(f.read())
    except (OSError, zlib.error) as exc:
        raise Unreadable(f"loose object {oid.hex()}: {exc}") from exc
    name, space, rest_of_head = whole.partition(b" ")
    size, nul, body = rest_of_head.partition(b"\0")
    if not (space and nul and size.isdigit() and name in _KINDS and int(size) == len(body)):
        raise Unreadable(f"loose object {oid.hex()} is not one")
    return _KINDS[name], body


def _packed(objects: Path, oid: bytes) -> tuple[int, bytes] | None:
    pack_dir = objects / "pack"
    try:
        names = os.listdir(pack_dir)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise Unreadable(f"{pack_dir}: {exc.strerror}") from exc
    for name in names:
        if name.endswith(".idx"):
            index = pack_dir / name
            offset = _offset(index, oid)
            if offset is not None:
                return _Pack(index.with_suffix(".pack"), index).object(offset)
    return None


def _offset(index: Path, oid: bytes) -> int | None:
    """Where ``oid`` starts in the pack of ``index``; None where that index does not
    list it (or is not one this reads: libgit2 is asked then)."""
    found = find(index, oid)
    return None if found is None else offset_at(index, *found)


class _Pack:
    """One pack's entries, read by offset."""

    def __init__(self, pack: Path, index: Path) -> None:
        self.pack = pack
        self.index = index

    def object(self, offset: int) -> tuple[int, bytes]:
        """(type, body) of the entry at ``offset``, its delta chain applied."""
        try:
            fd = os.open(self.pack, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise Unreadable(f"{self.pack}: {exc.strerror}") from exc
        try:
            deltas: list[bytes] = []
            while True:
                if len(deltas) > _CHAIN_MAX:
                    raise Unreadable(f"{self.pack}: a delta chain too long at {offset}")
                kind, base, data = self._entry(fd, offset)
                if base is None:
                    break
                deltas.append(data)
                offset = base
            for delta in reversed(deltas):
                data = _apply(data, delta)
            return kind, data
        except (OSError, IndexError, ValueError, zlib.error) as exc:
            raise Unreadable(f"{self.pack} at {offset}: {exc}") from exc
        finally:
            os.close(fd)

    def _entry(self, fd: int, offset: int) -> tuple[int, int | None, bytes]:
        """(type, base offset of a delta or None, inflated data) of the entry at ``offset``."""
        raw = os.pread(fd, _ENTRY_READ, offset)
        kind, size, pos = varint.read_object_header(raw)
        base = None
        if kind == OFS_DELTA:
            distance, pos = varint.read_offset(raw, pos)
            if not 0 < distance <= offset:
                raise ValueError("a delta's base outside the pack")
            base = offset - distance
        elif kind == REF_DELTA:
            found = _offset(self.index, raw[pos : pos + 20])
            if found is None:
                raise Unreadable("a delta's base in another pack")
            base, pos = found, pos + 20
        elif kind not in KIND_NAMES:
            raise ValueError(f"an entry of type {kind}")
        return kind, base, _inflate(fd, raw, offset, pos, size)


def _inflate(fd: int, raw: bytes, offset: int, pos: int, size: int) -> bytes:
    """The ``size`` bytes the zlib stream at ``offset + pos`` inflates to."""
    inflate = zlib.decompressobj()
    out = [inflate.decompress(raw[pos:])]
    done, read_to = len(out[0]), offset + len(raw)
    while not inflate.eof:
        more = os.pread(fd, max(_ENTRY_READ, size - done), read_to)
        if not more:
            raise ValueError("the pack ends inside an entry")
        read_to += len(more)
        out.append(inflate.decompress(more))
        done += len(out[-1])
    data = b"".join(out)
    if len(data) != size:
        raise ValueError(f"an entry of {len(data)} bytes where its header says {size}")
    return data


def _apply(base: bytes, delta: bytes) -> bytes:
    """git's delta ``delta`` applied to ``base``: copies from it and inserted bytes."""
    expected, pos = varint.read_size(delta, 0)
    if expected != len(base):
        raise ValueError("a delta for a base of another size")
    result_size, pos = varint.read_size(delta, pos)
    out = bytearray()
    end = len(delta)
    while pos < end:
        op = delta[pos]
        pos += 1
        if op & 0x80:  # copy: offset and size, each byte present only if its bit is set
            start = length = 0
            for bit, shift in ((0x01, 0), (0x02, 8), (0x04, 16), (0x08, 24)):
                if op & bit:
                    start |= delta[pos] << shift
                    pos += 1
            for bit, shift in ((0x10, 0), (0x20, 8), (0x40, 16)):
                if op & bit:
                    length |= delta[pos] << shift
                    pos += 1
            length = length or 0x10000
            if start + length > len(base):
                raise ValueError("a delta copies past its base")
            out += base[start : start + length]
        elif op:  # insert the next ``op`` bytes
            if pos + op > end:
                raise ValueError("a delta ends inside an insert")
            out += delta[pos : pos + op]
            pos += op
        else:
            raise ValueError("a delta with the reserved opcode 0")
    if len(out) != result_size:
        raise ValueError("a delta's result of the wrong size")
    return bytes(out)
