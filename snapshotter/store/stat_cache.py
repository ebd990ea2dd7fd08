"""The stat cache: what the last capture saw, so unchanged files are not re-read.

It maps each captured path to its stat data and blob id; a path whose stat
data still matches is trusted without hashing. On disk it is a base
(``manifest``, one marshal file) and a log of what each capture since changed
(``manifest.log``), so a capture that changed ten files writes ten entries,
not the whole map. Each log record is length-prefixed and checksummed: a
record torn by a kill, and all after it, are ignored. The log names the base
it extends, so a log left over from an older base is never applied to a newer
one. Once the log grows past a fraction of the base, both are folded into a
new base. A missing or damaged manifest or log only costs speed: every state
either file holds is one some capture wrote whole, so its stat data can only
vouch for bytes that were really there, and what it lacks is re-hashed.

A watching process (the hook server) keeps the manifest in memory between
captures (``Kept``, owned by its store/resident.py), trusted only while both
files are exactly as it last read or wrote them: another process's capture
shows as a new stat signature, and the files are read again.

Over 400 lines on purpose: the format's reader, its writer and the older
formats it still reads (issues 16.5, 24.5) are one contract, kept in one place.
"""

from __future__ import annotations

import contextlib
import itertools
import marshal
import os
import struct
import threading
import zlib
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snapshotter import durable
from snapshotter.fileio import write_atomic
from snapshotter.store import records
from snapshotter.store.signature import Signature

# 3: each entry one packed record (records.py); 2: tuples, in records of CHUNK; 1: one
# marshal of everything. The older two are still read (their tuples packed as they load).
VERSION = 3
# Entries per record of the base: marshal.dumps of a 500k-entry map at once built
# a 53 MB string plus a table of every object in it (+175 MB at a first capture,
# issue 16.5); record by record, a chunk's worth.
CHUNK = 16384
LOG_SUFFIX = ".log"
_LOG_MAGIC = b"snapshotter-manifest-log 1\n"
_BASE_MAGIC = b"snapshotter-manifest 2\n"
_BASE_RECORD = struct.Struct("<I")  # a base record's length
_TOKEN_BYTES = 16
_RECORD = struct.Struct("<II")  # payload length, crc32 of the payload
# The log is folded into a new base once it is this fraction of the base's size.
COMPACT_RATIO = 0.25
COMPACT_MIN_BYTES = 64 * 1024
KEPT_MAX = 8  # manifests a watching process keeps in memory (one per store it serves)

# Stat data as the walk reads it (records.Stat: the mode, then signature.Signature's
# size, mtime_ns, ctime_ns, inode) followed by the raw blob id, packed into one
# bytes object (records.py): a 500k-file cache is held by the hook server, and
# built and compared on every capture.
Entry = records.Entry
# An mtime of UNTRUSTED in a cached entry marks a file written so close to its
# capture that its stat data may not move on the next write ("racy git"): the
# next capture reads it again instead of trusting its stat data.
UNTRUSTED = 0
UNTRUSTED_BYTES = records.stat(0, 0, UNTRUSTED, 0, 0)[records.MTIME_BYTES]  # as packed

_serials = itertools.count(1)


def entry(st: tuple[int, int, int, int, int], oid: bytes, *, racy: bool) -> Entry:
    """A cache entry for a file hashed now (``st``: its stat data, records.fields);
    ``racy`` ones are read again next time."""
    return records.stat(st[0], st[1], UNTRUSTED if racy else st[2], st[3], st[4]) + oid


def trusted(cached: Entry) -> bool:
    """Whether a cached entry's stat data may stand for its bytes."""
    return records.mtime(cached) != UNTRUSTED


def unchanged(cached: Entry | None, st: records.Stat) -> bool:
    """Whether ``cached`` vouches for a file the walk saw as ``st``: trusted, and every
    field of its stat data (mode, size, mtime, ctime, inode) the same."""
    return cached is not None and records.unchanged(cached, st) and trusted(cached)


@dataclass
class Manifest:
    tree: str | None = None  # hex id of the tree these entries make up
    entries: dict[str, Entry] = field(default_factory=dict)
    trees: dict[str, bytes] = field(default_factory=dict)  # directory -> raw tree id of ``tree``
    loose: int = 0  # objects written loose since they were last packed (an estimate)
    # Where the files stand, for the next write (not content: never compared).
    token: bytes = field(default=b"", compare=False)  # the base's id, named by its log
    log_end: int = field(default=0, compare=False)  # the log's valid length (0: no log)
    base_size: int = field(default=0, compare=False)
    # Which in-memory state this is: a new number each time it is loaded or changed.
    serial: int = field(default_factory=lambda: next(_serials), compare=False)


@dataclass
class Delta:
    """What one capture changed: written as one log record."""

    tree: str
    entries: dict[str, Entry] = field(default_factory=dict)  # set (added or changed)
    removed: list[str] = field(default_factory=list)
    trees: dict[str, bytes] = field(default_factory=dict)  # directory -> new tree id
    trees_removed: list[str] = field(default_factory=list)
    loose: int = 0


def log_path(path: Path) -> Path:
    return path.with_name(path.name + LOG_SUFFIX)


# -- reading -----------------------------------------------------------------


def load(path: Path, kept: Kept | None = None) -> Manifest:
    """The manifest at ``path``: its base with every intact log record applied.

    ``kept``: a watching process's copies; its copy when the files are as it
    last saw them (the caller holds the store lock), else read and kept. The
    copy is the caller's to change through ``record`` only.
    """
    if kept is None:
        return _read(path)
    found = kept.get(path)
    if found is not None:
        return found
    signature = _signature(path)
    manifest = _read(path)
    kept.put(path, manifest, signature)
    return manifest


def _read(path: Path) -> Manifest:
    try:
        raw = path.read_bytes()
        if raw.startswith(_BASE_MAGIC):
            chunked = _records(raw)
            data = next(chunked)
            if not isinstance(data, dict) or data.get("version") not in (2, VERSION):
                return Manifest()
            entries: dict[str, Entry] = {}
            chunks = 0
            for chunk in chunked:
                if not isinstance(chunk, dict):
                    return Manifest()
                entries.update(chunk if data["version"] == VERSION else _packed(chunk))
                chunks += 1
            if data.get("chunks") != chunks:
                return Manifest()  # records missing: cut short
        else:  # version 1: one marshal of everything
            data = marshal.loads(raw)
            if not isinstance(data, dict) or data.get("version") != 1:
                return Manifest()
            entries = data["entries"]
            if not isinstance(entries, dict):
                return Manifest()
            entries = _packed(entries)
        # A manifest without "trees" (an older one) costs one full tree build.
        manifest = Manifest(
            data["tree"], entries, dict(data.get("trees") or {}), int(data.get("loose", 0))
        )
    except (OSError, EOFError, ValueError, TypeError, KeyError, StopIteration, struct.error):
        return Manifest()
    manifest.base_size = len(raw)
    token = data.get("log")
    if isinstance(token, bytes) and len(token) == _TOKEN_BYTES:
        manifest.token = token
        _replay(log_path(path), manifest)
    return manifest


def _packed(entries: dict[str, Any]) -> dict[str, Entry]:
    """Entries of an older format (tuples) as records (raises ValueError on others)."""
    return {rel: records.from_tuple(value) for rel, value in entries.items()}


def _records(raw: bytes) -> Iterator[object]:
    """The base's length-prefixed marshal records, read from memory (``marshal.load``
    from a file reads in small pieces: 144 ms for a 20k-entry base)."""
    view = memoryview(raw)
    at = len(_BASE_MAGIC)
    while at < len(raw):
        (size,) = _BASE_RECORD.unpack_from(raw, at)
        at += _BASE_RECORD.size
        if at + size > len(raw):
            raise EOFError("the base is cut short")
        yield marshal.loads(view[at : at + size])
        at += size


def newest_tree(path: Path) -> str | None:
    """The tree ``load(path)`` names, read without its entries (an undo with no server,
    issue 24.2): the base's head, then the log. None where ``load`` finds none."""
    try:
        with open(path, "rb") as f:
            if f.read(len(_BASE_MAGIC)) != _BASE_MAGIC:
                return None  # (an older format: only ``load`` reads it)
            head = marshal.loads(f.read(*_BASE_RECORD.unpack(f.read(_BASE_RECORD.size))))
            for _ in range(head["chunks"]):  # skipped, but all there (as ``load`` checks)
                f.seek(_BASE_RECORD.unpack(f.read(_BASE_RECORD.size))[0], os.SEEK_CUR)
            if head["version"] not in (2, VERSION) or f.tell() != os.fstat(f.fileno()).st_size:
                return None
    except (OSError, EOFError, ValueError, TypeError, KeyError, struct.error):
        return None
    manifest, token = Manifest(head.get("tree")), head.get("log")
    if isinstance(token, bytes) and len(token) == _TOKEN_BYTES:
        manifest.token = token
        _replay(log_path(path), manifest)
    return manifest.tree if isinstance(manifest.tree, str) else None


def _replay(path: Path, manifest: Manifest) -> None:
    """Apply the log's intact records, oldest first; stop at the first damaged one."""
    try:
        data = path.read_bytes()
    except OSError:
        return
    head = _LOG_MAGIC + manifest.token
    if not data.startswith(head):
        return  # another base's log (a kill between the two writes), or garbage
    offset = len(head)
    while offset + _RECORD.size <= len(data):
        size, crc = _RECORD.unpack_from(data, offset)
        payload = data[offset + _RECORD.size : offset + _RECORD.size + size]
        if len(payload) != size or zlib.crc32(payload) != crc:
            break  # torn by a kill (or damaged): this and the rest never happened
        try:
            delta = _decode(payload)
        except (EOFError, ValueError, TypeError, KeyError, struct.error):
            break
        _apply(manifest, delta)
        offset += _RECORD.size + size
    manifest.log_end = offset


def _decode(payload: bytes) -> Delta:
    tree, entries, removed, trees, trees_removed, loose = marshal.loads(payload)
    if not (
        isinstance(tree, str)
        and isinstance(entries, dict)
        and isinstance(removed, list)
        and isinstance(trees, dict)
        and isinstance(trees_removed, list)
        and isinstance(loose, int)
    ):
        raise ValueError("not a manifest record")
    if any(not isinstance(value, bytes) for value in entries.values()):
        entries = _packed(entries)  # a log of an older base (tuples)
    return Delta(tree, entries, removed, trees, trees_removed, loose)


def _apply(manifest: Manifest, delta: Delta) -> None:
    entries, trees = manifest.entries, manifest.trees
    for rel in delta.removed:
        entries.pop(rel, None)
    entries.update(delta.entries)
    for directory in delta.trees_removed:
        trees.pop(directory, None)
    trees.update(delta.trees)
    manifest.tree = delta.tree
    manifest.loose = delta.loose


# -- writing -----------------------------------------------------------------


def save(path: Path, manifest: Manifest, kept: Kept | None = None) -> None:
    """Write ``manifest`` whole as a new base, with an empty log of its own
    (and keep it in ``kept``, a watching process's copies)."""
    token = os.urandom(_TOKEN_BYTES)  # (secrets' own source, without its imports)
    try:
        durable.settle()  # the blobs and trees it names first (durable.py)
        # On disk before its log names it (a power cut then leaves the old base
        # and log, or the new base and either log: an old log names the old token).
        size = write_atomic(path, _base(manifest, token), durable=True)
        # A kill here leaves the old base's log beside the new base: it names
        # the old token, so it is ignored.
        write_atomic(log_path(path), _LOG_MAGIC + token)
    except BaseException:
        if kept is not None:
            kept.forget(path)
        raise
    manifest.token, manifest.base_size = token, size
    manifest.log_end = len(_LOG_MAGIC) + _TOKEN_BYTES
    manifest.serial = next(_serials)
    if kept is not None:
        kept.put(path, manifest, _signature(path))


def _base(manifest: Manifest, token: bytes) -> Iterator[bytes]:
    """The base's bytes: a magic line, then length-prefixed records: a head, and the
    entries CHUNK at a time."""
    yield _BASE_MAGIC
    head = {
        "version": VERSION,
        "tree": manifest.tree,
        "chunks": -(-len(manifest.entries) // CHUNK),
        "trees": manifest.trees,
        "loose": manifest.loose,
        "log": token,
    }
    items = iter(manifest.entries.items())
    record: dict[str, Any] = head
    while record:
        data = marshal.dumps(record)
        yield _BASE_RECORD.pack(len(data)) + data
        record = dict(itertools.islice(items, CHUNK))


def record(path: Path, manifest: Manifest, delta: Delta, kept: Kept | None = None) -> None:
    """Apply ``delta`` to ``manifest`` (as loaded from ``path``) and to the files.

    Appends one log record, or writes a new base when the log has grown past
    a fraction of it (or there is no base to extend). The caller holds the
    store lock, so nobody wrote since ``manifest`` was loaded.
    """
    _apply(manifest, delta)
    manifest.serial = next(_serials)
    payload = marshal.dumps(
        (delta.tree, delta.entries, delta.removed, delta.trees, delta.trees_removed, delta.loose)
    )
    grown = manifest.log_end + len(payload)
    if (
        not manifest.token
        or manifest.log_end <= 0
        or grown > max(COMPACT_MIN_BYTES, manifest.base_size * COMPACT_RATIO)
    ):
        save(path, manifest, kept)
        return
    try:
        durable.settle()  # the blobs and trees the record names first (durable.py)
        _append(log_path(path), manifest.log_end, payload)
    except FileNotFoundError:
        save(path, manifest, kept)  # the log went: start a new base
        return
    except BaseException:
        if kept is not None:  # memory is ahead of the files now: read them again next time
            kept.forget(path)
        raise
    manifest.log_end += _RECORD.size + len(payload)
    if kept is not None:
        kept.put(path, manifest, _signature(path))


def _append(path: Path, end: int, payload: bytes) -> None:
    """One record at ``end``, dropping whatever torn tail lies past it."""
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        os.lseek(fd, end, os.SEEK_SET)
        data = _RECORD.pack(len(payload), zlib.crc32(payload)) + payload
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.ftruncate(fd, end + len(data))
    finally:
        os.close(fd)


# -- the watching process's copies ---------------------------------------------


class Kept:
    """The manifests a watching process keeps in memory, one per store it serves.

    Each copy is trusted while the files' signature (``_signature``) is the
    one they had when it was read or written. Thread-safe: the hook server
    serves stores from several threads (each under its store's lock).
    """

    def __init__(self) -> None:
        self._copies: OrderedDict[str, tuple[object, Manifest]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: Path) -> Manifest | None:
        """The copy of ``path``, if the files are still as it was made from."""
        with self._lock:
            found = self._copies.get(str(path))
        if found is not None and found[0] == _signature(path):
            return found[1]
        return None

    def put(self, path: Path, manifest: Manifest, signature: object) -> None:
        """Keep ``manifest`` as the state of files whose signature was ``signature``."""
        with self._lock:
            self._copies[str(path)] = (signature, manifest)
            self._copies.move_to_end(str(path))
            while len(self._copies) > KEPT_MAX:
                self._copies.popitem(last=False)

    def forget(self, path: Path) -> None:
        """Drop the copy of ``path`` (read the files again next time)."""
        with self._lock, contextlib.suppress(KeyError):
            del self._copies[str(path)]

    def clear(self) -> None:
        with self._lock:
            self._copies.clear()


def _signature(path: Path) -> object:
    """Stat data of the base and the log, and the base's id the log names: another
    writer's append grows the log, its new base comes with a new random id."""
    found: list[object] = [Signature.at(p, follow=True) for p in (path, log_path(path))]
    try:
        with open(log_path(path), "rb") as f:
            found.append(f.read(len(_LOG_MAGIC) + _TOKEN_BYTES))
    except OSError:
        found.append(None)
    return tuple(found)
