"""Seeding a capture from the source repository's index and objects.

A first capture (or one after a branch switch) would read and compress every
file, although git has already hashed most of them: where the source index's
stat data matches a file exactly, its blob id is the file's. Those ids are
taken from the index and their objects hard-linked into the store: the source
pack with its index, else the loose object file. Never alternates: the
user's ``git gc`` deletes what a store merely borrows (opencode #46034),
while a hard link keeps the bytes alive after the source drops its name, and
costs no disk while both names exist.

Anything doubtful is left to hashing, which is always right: a wrong blob id
loses data, a missing one only costs time. So no seeding where git may have
stored other bytes than the file's (attributes, autocrlf), no trusting an
entry git itself would re-check, and every seeded id must be a blob of the
file's size in our own store afterwards.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Collection, Mapping
from pathlib import Path

from snapshotter.git import index as gitindex
from snapshotter.git import packs as packwriter
from snapshotter.git.index import ASSUME_VALID, INTENT_TO_ADD, SKIP_WORKTREE, IndexEntry
from snapshotter.git.kinds import BLOB, MODE_LINK
from snapshotter.git.worktree import Worktree
from snapshotter.store.walk import Stat

EMPTY_BLOB = bytes.fromhex("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
_STAGES = 0x3000
_U32 = 0xFFFFFFFF
_NS = 1_000_000_000
_FALSE = frozenset({"false", "no", "off", "0", ""})
VERIFY_MAX_BYTES = 32 * 1024 * 1024  # read whole to check a racily clean entry


def seed(
    store_git_dir: Path,
    worktree: Worktree,
    stale: Mapping[str, Stat],
    scanned: Collection[str] = (),
) -> dict[str, bytes]:
    """Raw blob ids for the ``stale`` paths the source index vouches for, now in our store.

    ``scanned`` is every path the walk found: an untracked ``.gitattributes``
    anywhere may have converted what ``git add`` stored. Never raises: a
    failure only means those files are hashed.
    """
    try:
        return _seed(store_git_dir, worktree, stale, scanned)
    except Exception:  # a seeding bug must cost time, never a capture
        return {}


def _seed(
    store_git_dir: Path, worktree: Worktree, stale: Mapping[str, Stat], scanned: Collection[str]
) -> dict[str, bytes]:
    if worktree.object_format != "sha1":
        # A SHA-256 repository's ids and objects are not our SHA-1 store's (issue 12 §2).
        return {}
    index = _read_index(worktree.git_dir / "index")
    if index is None:
        return {}
    entries, index_mtime_s = index
    if _may_convert(worktree, entries, scanned):
        return {}
    ids = trusted_ids(entries, index_mtime_s, stale)
    ids.update(_verified(worktree.root, racy_ids(entries, index_mtime_s, stale)))
    if not ids:
        return {}
    link_objects(worktree.common_dir / "objects", store_git_dir / "objects", set(ids.values()))
    return _present(store_git_dir, ids, stale)


def _read_index(index_file: Path) -> tuple[list[IndexEntry], int] | None:
    """The entries and mtime (seconds, 32 bits) of one version of the index (git renames it in)."""
    try:
        with open(index_file, "rb") as f:
            mtime = os.fstat(f.fileno()).st_mtime_ns
            data = f.read()
    except OSError:
        return None
    entries = gitindex.read_entries(data)
    return None if entries is None else (entries, (mtime // _NS) & _U32)


def trusted_ids(
    entries: list[IndexEntry], index_mtime_s: int, stale: Mapping[str, Stat]
) -> dict[str, bytes]:
    """``path -> blob id`` for entries git would call clean from stat data alone.

    An entry modified in the second the index was written, or later, is
    racily clean (the file may have changed again without its mtime moving):
    git re-reads it, and so do we. Whole seconds, as a git built without
    USE_NSEC decides (2.39 here); one comparing nanoseconds trusts more, we
    do not.
    """
    found: dict[str, bytes] = {}
    for entry in entries:
        st = stale.get(entry.path)
        if st is not None and entry.mtime_s < index_mtime_s and _matches(entry, st):
            found[entry.path] = entry.oid
    return found


def racy_ids(
    entries: list[IndexEntry], index_mtime_s: int, stale: Mapping[str, Stat]
) -> dict[str, bytes]:
    """Regular files whose stat data matches but which git would call racily clean.

    Right after a clone or a commit every entry is: the files were written in
    the second the index was. Their ids are only candidates (see ``_verified``).
    """
    found: dict[str, bytes] = {}
    for entry in entries:
        st = stale.get(entry.path)
        if (st is not None and entry.mtime_s >= index_mtime_s and st[0] != MODE_LINK
                and _matches(entry, st)):
            found[entry.path] = entry.oid
    return found


def _verified(root: Path, candidates: Mapping[str, bytes]) -> dict[str, bytes]:
    """The candidates whose file hashes to the index's id now.

    Hashing (in C) is what git does with a racily clean entry, and it is far
    cheaper than compressing and writing the file: only the copy is saved.
    """
    import pygit2

    found: dict[str, bytes] = {}
    for rel, oid in candidates.items():
        try:
            # Opened without following a link: a file swapped for one is not ours to read.
            fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > VERIFY_MAX_BYTES:
                continue  # a huge file is hashed the usual way, streamed
            with open(fd, "rb", closefd=False) as f:
                data = f.read()
        except OSError:
            continue
        finally:
            os.close(fd)
        if pygit2.hash(data).raw == oid:
            found[rel] = oid
    return found


def _matches(entry: IndexEntry, st: Stat) -> bool:
    """Exact stat data, nanoseconds included (stricter than git's default build)."""
    mode, size, mtime_ns, ctime_ns, ino = st
    if entry.flags & (_STAGES | ASSUME_VALID) or entry.extended & (SKIP_WORKTREE | INTENT_TO_ADD):
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


# -- content conversion ------------------------------------------------------


def _may_convert(worktree: Worktree, entries: list[IndexEntry], scanned: Collection[str]) -> bool:
    """Whether ``git add`` may have stored other bytes than the file's (filters, eol)."""
    if any(_is_attributes(rel) for rel in scanned):
        return True
    if any(_is_attributes(entry.path) for entry in entries):
        return True
    home = Path(os.path.expanduser("~"))
    files = [
        worktree.root / ".gitattributes",
        worktree.common_dir / "info" / "attributes",
        worktree.git_dir / "info" / "attributes",
        home / ".config" / "git" / "attributes",
        Path("/etc/gitattributes"),
    ]
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        files.append(Path(xdg) / "git" / "attributes")
    if any(os.path.lexists(path) for path in files):
        return True
    return _config_converts(worktree)


def _is_attributes(rel: str) -> bool:
    return rel == ".gitattributes" or rel.endswith("/.gitattributes")


def _config_converts(worktree: Worktree) -> bool:
    """core.autocrlf on, a core.attributesFile, or ids that are not SHA-1 (all levels)."""
    import pygit2

    try:
        configs: list[pygit2.Config] = [pygit2.Repository(str(worktree.git_dir)).config]
        per_worktree = worktree.git_dir / "config.worktree"
        if per_worktree.exists():
            configs.append(pygit2.Config(str(per_worktree)))
        for config in configs:
            if "core.attributesFile" in config:
                return True
            for key, harmless in (("core.autocrlf", _FALSE), ("extensions.objectFormat", {"sha1"})):
                if key in config and str(config[key]).strip().lower() not in harmless:
                    return True
    except (pygit2.GitError, OSError, KeyError, ValueError):
        return True  # cannot tell: assume the worst
    return False


# -- objects -----------------------------------------------------------------


def link_objects(src_objects: Path, dst_objects: Path, wanted: set[bytes]) -> None:
    """Hard-link the source packs holding ``wanted`` ids, then the loose ones left.

    Best effort: whatever cannot be linked (another filesystem, protected
    hard links, an object behind the source's alternates) is simply absent.
    """
    missing = set(wanted)
    for idx in _packs_newest_first(src_objects / "pack"):
        if not missing:
            break
        index = packwriter.read_pack_index(idx)
        held = index.find(missing) if index is not None else set()
        if held and _link_pack(idx, dst_objects / "pack"):
            missing -= held
    for oid in missing:
        _link_loose(src_objects, dst_objects, oid)


def _packs_newest_first(pack_dir: Path) -> list[Path]:
    found: list[tuple[int, Path]] = []
    with contextlib.suppress(OSError):
        for idx in pack_dir.glob("pack-*.idx"):
            with contextlib.suppress(OSError):
                found.append((idx.stat().st_mtime_ns, idx))
    return [idx for _mtime, idx in sorted(found, reverse=True)]


def _link_pack(idx: Path, dst_dir: Path) -> bool:
    """Link ``.pack`` then ``.idx`` (the index is what makes a pack visible)."""
    pack = idx.with_suffix(".pack")
    dst_pack, dst_idx = dst_dir / pack.name, dst_dir / idx.name
    if dst_idx.exists():
        return dst_pack.exists()
    if not (_linkable(pack) and _linkable(idx)):
        return False
    try:
        created = _link(pack, dst_pack)
    except OSError:
        return False
    try:
        _link(idx, dst_idx)
    except OSError:
        if created:
            with contextlib.suppress(OSError):
                dst_pack.unlink()
        return False
    return True


def _link_loose(src_objects: Path, dst_objects: Path, oid: bytes) -> None:
    name = oid.hex()
    src = src_objects / name[:2] / name[2:]
    dst = dst_objects / name[:2] / name[2:]
    if not _linkable(src):
        return
    with contextlib.suppress(OSError):
        dst.parent.mkdir(exist_ok=True)
        os.link(src, dst, follow_symlinks=False)  # FileExistsError: we have that object


def _linkable(path: Path) -> bool:
    """A regular file of ours: another user's file could be rewritten under us."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == getattr(os, "getuid", lambda: -1)()


def _link(src: Path, dst: Path) -> bool:
    """Hard-link ``src`` at ``dst``; True if created, False if already that file."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except FileExistsError:
        if not os.path.samefile(src, dst):
            raise
        return False
    return True


def _present(
    store_git_dir: Path, ids: dict[str, bytes], stale: Mapping[str, Stat]
) -> dict[str, bytes]:
    """The ids our own store now holds as blobs of the file's exact size.

    The size check also catches a conversion we could not see (say autocrlf
    on when the file was added, off now): it changes the length.
    """
    import pygit2

    odb = pygit2.Repository(str(store_git_dir)).odb  # a fresh one sees the linked packs
    sizes: dict[bytes, int] = {}
    for oid in set(ids.values()):
        try:
            kind, size = odb.read_header(pygit2.Oid(raw=oid))
        except (KeyError, ValueError, pygit2.GitError):
            continue
        if kind == BLOB:
            sizes[oid] = size
    return {rel: oid for rel, oid in ids.items() if sizes.get(oid) == stale[rel][1]}
