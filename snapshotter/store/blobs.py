"""Worktree files into blobs: bytes read while they hold still, objects never freshened.

A capture reads each changed file here, one by one (``hash_path``) or many
into one pack (``bulk``); ``Store.hold`` reads the files a restore is about
to touch (``put_file``). The bytes are read by us, not by libgit2 (whose
streamed read fails with EINVAL when the file changes under it: issue 13.5),
never through a link and never blocking on a FIFO put where a file was.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from snapshotter.git import packs as packwriter
from snapshotter.git.kinds import BLOB, MODE_LINK, ObjectId
from snapshotter.git.objects import ObjectDB, ObjectError
from snapshotter.store.signature import Signature
from snapshotter.store.skips import Skip, Why
from snapshotter.store.walk import Stat

# From this many files to hash, one pack beats one loose object per file.
BULK_MIN_FILES = 64
BULK_MAX_FILE_BYTES = 32 * 1024 * 1024
# Reads of a file that keeps changing under them, before it is recorded as read.
READ_RETRIES = 4


def put(objects: ObjectDB, kind: int, data: bytes) -> ObjectId:
    """Write one object unless the store has it; its raw id.

    The check comes first because libgit2 "freshens" an object it already
    has (touches its file's mtime), and a pack or loose object hard-linked
    by seeding is the source repository's own file (#12.4).
    """
    oid = packwriter.object_id(kind, data)
    if objects.absent(oid):
        objects.write(kind, data, oid)
    return oid


def put_file(objects: ObjectDB, path: str) -> ObjectId:
    """Write a regular file's blob (see ``put``); its raw id."""

    # Non-blocking and never through a link: a FIFO put there must not hang us.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    with open(fd, "rb", buffering=0) as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
        if st.st_size <= BULK_MAX_FILE_BYTES:
            return put(objects, BLOB, f.read())
    return put_streamed(objects, path)


def put_streamed(objects: ObjectDB, path: str) -> ObjectId:
    """A file too big to hold in memory, streamed by libgit2 (see ``put``)."""
    return objects.write_file_streamed(path)


def bulk(
    objects: ObjectDB, root: Path, stale: Sequence[tuple[str, Stat, object]]
) -> dict[str, bytes]:
    """Blob ids for many files at once, written as one pack, not loose objects.

    Links, big files and files that cannot be read now are left out: the
    one-by-one path (``hash_path``) takes them and records why. (Files the
    source index vouches for never get here: seeding.py takes their ids from
    it and hard-links the source's objects, which neither reads nor inflates
    anything; copying packed source objects cost more than reading the files.)
    """
    found: dict[str, bytes] = {}

    def blobs() -> Iterator[tuple[bytes, int, bytes]]:
        for rel, st, _prior in stale:
            if st[0] == MODE_LINK or st[1] > BULK_MAX_FILE_BYTES:
                continue  # links and big files take the one-by-one path
            try:
                data = read_stable(str(root / rel))
            except OSError:
                continue  # the one-by-one path records why
            if data is None:
                continue  # replaced since the walk: the one-by-one path skips it
            oid = packwriter.object_id(BLOB, data)
            found[rel] = oid
            # No existence check: a miss costs libgit2 a pack rescan, far
            # more than a duplicate that the next gc drops.
            yield oid, BLOB, data

    packwriter.write_pack(objects.git_dir / "objects" / "pack", blobs())
    objects.reopen()
    return found


def hash_path(
    objects: ObjectDB, root: Path, rel: str, mode: int, skipped: dict[str, Skip]
) -> bytes | None:
    """Write the blob of worktree file ``rel``; None (and a skip) when it cannot be read.

    Read again while the file changes under the read (``read_stable``).
    """
    path = str(root / rel)
    try:
        kind = stat.S_IFMT(os.lstat(path).st_mode)
        if kind != (stat.S_IFLNK if mode == MODE_LINK else stat.S_IFREG):
            # Replaced since the walk (by a directory, a link, or a FIFO whose
            # read would block forever): the next capture sees what it became.
            skipped[rel] = Skip(rel, Why.CHANGED)
            return None
        if mode == MODE_LINK:
            return put(objects, BLOB, os.fsencode(os.readlink(path)))
        if os.lstat(path).st_size > BULK_MAX_FILE_BYTES:
            return _hash_big(objects, path)
        data = read_stable(path)
        if data is None:
            skipped[rel] = Skip(rel, Why.CHANGED)
            return None
        return put(objects, BLOB, data)  # never a freshening write (#12.4)
    except FileNotFoundError:
        return None  # vanished while we looked: it is simply not there any more
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # became a link or socket meanwhile
            skipped[rel] = Skip(rel, Why.CHANGED)
            return None
        _unreadable(rel, path, exc, skipped)
    except ObjectError as exc:
        _unreadable(rel, path, exc, skipped)
    return None


def _hash_big(objects: ObjectDB, path: str) -> bytes:
    """A file too big to hold in memory, streamed by libgit2; tried again while it
    changes under the read, then recorded as libgit2 last read it."""
    for _ in range(READ_RETRIES - 1):
        before = Signature.at(path)
        try:
            oid = put_streamed(objects, path)
        except ObjectError:
            if Signature.at(path) != before:
                continue  # changed under the read: read it again
            raise
        if Signature.at(path) == before:
            return oid
    return put_streamed(objects, path)


def _unreadable(rel: str, path: str, exc: Exception, skipped: dict[str, Skip]) -> None:
    """A failed read: a skip if the file is unreadable to us, else the error."""
    readable = _readable(path)
    if readable is None:
        return  # it went meanwhile
    if readable:
        raise exc
    skipped[rel] = Skip(rel, Why.UNREADABLE, getattr(exc, "strerror", None) or str(exc))


def _readable(path: str) -> bool | None:
    """True if readable, False if not, None if it no longer exists."""
    try:
        with open(path, "rb"):
            return True
    except FileNotFoundError:
        return None
    except OSError:
        return False


def read_stable(path: str) -> bytes | None:
    """A regular file's bytes, read again while it changes under the read.

    Opened non-blocking and without following links, and checked with fstat:
    a FIFO or device put there since the walk is never read (None). A file
    still changing after READ_RETRIES reads is returned as last read: its new
    stat data makes the next capture read it again.
    """
    data = b""
    for _ in range(READ_RETRIES):
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        with open(fd, "rb") as f:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                return None
            data = f.read()
            after = os.fstat(fd)
        if len(data) == after.st_size and _unchanged(before, after):
            return data
    return data


def _unchanged(before: os.stat_result, after: os.stat_result) -> bool:
    return (before.st_size, before.st_mtime_ns, before.st_ctime_ns) == (
        after.st_size,
        after.st_mtime_ns,
        after.st_ctime_ns,
    )
