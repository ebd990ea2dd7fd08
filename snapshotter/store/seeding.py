"""Seeding a capture from the source repository's index and objects: which
paths' blob ids the index vouches for.

A first capture (or one after a branch switch) would read and compress every
file, although git has already hashed most of them: where the source index's
stat data matches a file exactly, its blob id is the file's. Those ids are
taken from the index and their objects hard-linked into the store
(object_links.py).

Anything doubtful is left to hashing, which is always right: a wrong blob id
loses data, a missing one only costs time. So no seeding of a path whose
attributes let git store other bytes than the file's (a filter, ``ident``, a
working-tree encoding: decided per path, see git/conversion.py), no
trusting an entry git itself would re-check (racily clean entries are
hashed, and seeded only if the file hashes to the entry's id), and
every seeded id must be a blob of the file's size in our own store
afterwards (seeded_blobs.py: which is what rules out end-of-line conversion).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

from snapshotter.fileio import read_regular
from snapshotter.git import index as gitindex
from snapshotter.git.conversion import content_converted, is_attributes
from snapshotter.git.index import ASSUME_VALID, INTENT_TO_ADD, SKIP_WORKTREE, IndexEntry
from snapshotter.git.kinds import BLOB, MODE_LINK
from snapshotter.git.packs import object_id
from snapshotter.git.worktree import Worktree
from snapshotter.store.object_links import link_objects
from snapshotter.store.seeded_blobs import present_as_blobs
from snapshotter.store.walk import Stat

EMPTY_BLOB = bytes.fromhex("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
_STAGES = 0x3000
# A conflict, or stat data git itself does not keep up to date: never trusted.
_UNTRUSTED_FLAGS = _STAGES | ASSUME_VALID
_UNTRUSTED_EXTENDED = SKIP_WORKTREE | INTENT_TO_ADD
_ATTRIBUTES = ".gitattributes"
_U32 = 0xFFFFFFFF
_NS = 1_000_000_000
VERIFY_MAX_BYTES = 32 * 1024 * 1024  # read whole to check a racily clean entry


def seed(store_git_dir: Path, worktree: Worktree, stale: Mapping[str, Stat]) -> dict[str, bytes]:
    """Raw blob ids for the ``stale`` paths the source index vouches for, now in our store.

    Never raises: a failure only means those files are hashed.
    """
    try:
        return _seed(store_git_dir, worktree, stale)
    except Exception:  # a seeding bug must cost time, never a capture
        return {}


def _seed(store_git_dir: Path, worktree: Worktree, stale: Mapping[str, Stat]) -> dict[str, bytes]:
    if worktree.object_format != "sha1":
        # A SHA-256 repository's ids and objects are not our SHA-1 store's (issue 12 §2).
        return {}
    found = candidates(worktree.git_dir / "index", stale, worktree.root)
    if found is None:
        return {}
    ids, racy, attributes = found
    converted = content_converted(worktree, attributes, [*ids, *racy])
    for rel in converted:
        ids.pop(rel, None)
        racy.pop(rel, None)
    ids.update(_verified(worktree.root, racy))
    del racy
    if not ids:
        return {}
    wanted = set(ids.values())
    linked = link_objects(worktree.common_dir / "objects", store_git_dir / "objects", wanted)
    del wanted
    return present_as_blobs(store_git_dir, ids, stale, linked.headers)


class Candidates(NamedTuple):
    """What one pass over the source index found, each as path -> blob id."""

    # ``stale`` paths whose entry git would call clean from stat data alone.
    trusted: dict[str, bytes]
    # Regular files whose stat data matches but which git would call racily
    # clean: modified in the same instant the index was written, or later (the
    # file may have changed again without its mtime moving), so git re-reads
    # them and so do we (``_verified``). See ``racy_from``.
    racy: dict[str, bytes]
    attributes: dict[str, bytes]  # the tracked ``.gitattributes`` (stage 0)


def candidates(
    index_file: Path, stale: Mapping[str, Stat], worktree_root: Path | None = None
) -> Candidates | None:
    """The ``stale`` paths the index vouches for, and the tracked ``.gitattributes``;
    None when the index cannot be read (or trusted).

    One pass keeping only those: the whole index as a list of entries took
    270 MB at 500k files (issue 16.5); up to git/index.py's KEEP_MAX entries
    a first capture's walk has read them already and kept them for this pass.
    Nanoseconds decide what is racy only when ``worktree_root`` is on the
    index file's filesystem (``racy_from``).
    """
    found = _read_index(index_file)
    if found is None:
        return None
    entries, index_mtime = found
    cutoff_s, cutoff_ns = racy_from(index_mtime, worktree_root)
    trusted: dict[str, bytes] = {}
    racy: dict[str, bytes] = {}
    tracked: dict[str, bytes] = {}
    for entry in entries:
        path = entry[0]
        if path.endswith(_ATTRIBUTES) and is_attributes(path) and not entry.flags & _STAGES:
            tracked[path] = entry.oid
        st = stale.get(path)
        if st is None or not _matches(entry, st):
            continue
        m_s, m_ns = entry.mtime_s, entry.mtime_ns
        if m_s < cutoff_s or (m_s == cutoff_s and 0 < m_ns < cutoff_ns):
            trusted[path] = entry.oid
        elif st[0] != MODE_LINK:
            racy[path] = entry.oid
    return Candidates(trusted, racy, tracked)


class IndexMtime(NamedTuple):
    """When the index was written (the older file of a split index), and where."""

    mtime_ns: int
    dev: int


def racy_from(index: IndexMtime, worktree_root: Path | None) -> tuple[int, int]:
    """The index mtime as entries' (32-bit seconds, nanoseconds) compare with it: an entry
    whose mtime is not older is racily clean (git's ``is_racy_timestamp``).

    Nanoseconds count (git's USE_NSEC rule, libgit2's default) only where the
    files and the index are stamped by one filesystem, one clock and one
    granularity (else 0 here): a file on a coarser one (a 1 s or 2 s stamp)
    could be rewritten within its stamp after an index stamped finer, so there
    only whole seconds count, as in git's default build. So do they for a
    file stamped on a whole second (``candidates``): its filesystem may keep
    no nanoseconds (a mount inside the worktree).
    """
    seconds, nanoseconds = divmod(index.mtime_ns, _NS)
    seconds &= _U32
    if worktree_root is None:
        return seconds, 0
    try:
        same = os.stat(worktree_root).st_dev == index.dev
    except OSError:
        return seconds, 0
    return seconds, nanoseconds if same else 0


def _read_index(index_file: Path) -> tuple[Iterator[IndexEntry], IndexMtime] | None:
    """The entries (parsed as iterated) and mtime of one version of the index (git
    renames it in).

    A split index's shared entries were last checked before their shared
    index was written: the older of the two files decides what is racy.
    """
    try:
        with open(index_file, "rb") as f:
            st = os.fstat(f.fileno())
            data = f.read()
    except OSError:
        return None
    found = gitindex.iter_split_entries(data, git_dir=index_file.parent)
    if found is None:
        return None
    entries, shared = found
    mtime = st.st_mtime_ns
    if shared is not None:  # beside the index: one filesystem
        try:
            mtime = min(mtime, os.stat(shared).st_mtime_ns)
        except OSError:
            return None
    return entries, IndexMtime(mtime, st.st_dev)


def _verified(root: Path, racy: Mapping[str, bytes]) -> dict[str, bytes]:
    """The racy entries whose file hashes to the index's id now.

    Hashing is what git does with a racily clean entry, and it is far
    cheaper than compressing and writing the file: only the copy is saved.
    hashlib's SHA-1, as the store's own hashing (packs.object_id): libgit2's
    collision-detecting one ran at a fifth of the speed. A file swapped for a
    link is not read; a huge one is hashed the usual way, streamed.
    """
    top = os.fspath(root)
    found: dict[str, bytes] = {}
    for rel, oid in racy.items():
        try:
            data = read_regular(f"{top}/{rel}", max_size=VERIFY_MAX_BYTES)
        except OSError:
            continue
        if data is not None and object_id(BLOB, data) == oid:
            found[rel] = oid
    return found


def _matches(entry: IndexEntry, st: Stat) -> bool:
    """Exact stat data, nanoseconds included (stricter than git's default build)."""
    mode, size, mtime_ns, ctime_ns, ino = st
    if entry.flags & _UNTRUSTED_FLAGS or entry.extended & _UNTRUSTED_EXTENDED:
        return False  # a conflict, or stat data git itself does not keep up to date
    if entry.size == 0 and entry.oid != EMPTY_BLOB:
        return False  # git's "smudged" entry: size zeroed to force a re-read
    return (
        entry.mode == mode
        and entry.size == size & _U32
        and entry.ino == ino & _U32
        and entry.mtime_ns == mtime_ns % _NS
        and entry.mtime_s == (mtime_ns // _NS) & _U32
        and entry.ctime_ns == ctime_ns % _NS
        and entry.ctime_s == (ctime_ns // _NS) & _U32
    )
