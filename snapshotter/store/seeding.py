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
loses data, a missing one only costs time. So no seeding of a path whose
attributes let git store other bytes than the file's (a filter, ``ident``, a
working-tree encoding: decided per path, see ``content_converted``), no
trusting an entry git itself would re-check (racily clean entries are
hashed, in C, and seeded only if the file hashes to the entry's id), and
every seeded id must be a blob of the file's size in our own store
afterwards (which is what rules out end-of-line conversion).
"""

from __future__ import annotations

import contextlib
import os
import stat
import zlib
from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path

from snapshotter.git import attributes
from snapshotter.git import index as gitindex
from snapshotter.git import packs as packwriter
from snapshotter.git.ignore import read_rule_file
from snapshotter.git.index import ASSUME_VALID, INTENT_TO_ADD, SKIP_WORKTREE, IndexEntry
from snapshotter.git.kinds import BLOB, MODE_LINK
from snapshotter.git.objects import ObjectDB, ObjectError
from snapshotter.git.worktree import Worktree, config_bool, config_value
from snapshotter.store.walk import Stat

EMPTY_BLOB = bytes.fromhex("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391")
_STAGES = 0x3000
_U32 = 0xFFFFFFFF
_NS = 1_000_000_000
SYSTEM_ATTRIBUTES = Path("/etc/gitattributes")  # $(sysconfdir)/gitattributes of a /usr git
VERIFY_MAX_BYTES = 32 * 1024 * 1024  # read whole to check a racily clean entry
# Seeded blobs' headers: libgit2 reads them fastest, but maps every pack it
# reads, and keeps it mapped; past this many pack bytes they are read with
# pread instead (packs.read_headers), so a 1.7 GB source pack never becomes
# resident (issue 16.5), while a small repository keeps the faster path (16.1).
MAP_MAX_BYTES = 256 * 1024 * 1024


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
    found = _candidates(worktree.git_dir / "index", stale)
    if found is None:
        return {}
    ids, racy, attributes_ = found
    converted = _converted(worktree, attributes_, [*ids, *racy])
    for rel in converted:
        ids.pop(rel, None)
        racy.pop(rel, None)
    ids.update(_verified(worktree.root, racy))
    del racy
    if not ids:
        return {}
    wanted = set(ids.values())
    link_objects(worktree.common_dir / "objects", store_git_dir / "objects", wanted)
    del wanted
    return _present(store_git_dir, ids, stale)


def _candidates(
    index_file: Path, stale: Mapping[str, Stat]
) -> tuple[dict[str, bytes], dict[str, bytes], dict[str, bytes]] | None:
    """From one pass over the index: ``trusted_ids``, ``racy_ids`` (for the ``stale``
    paths) and the tracked ``.gitattributes`` (path -> id, stage 0).

    One pass keeping only those: the whole index as a list of entries took
    270 MB at 500k files (issue 16.5).
    """
    found = _read_index(index_file)
    if found is None:
        return None
    entries, index_mtime_s = found
    trusted: dict[str, bytes] = {}
    racy: dict[str, bytes] = {}
    tracked: dict[str, bytes] = {}
    for entry in entries:
        if entry.stage == 0 and _is_attributes(entry.path):
            tracked[entry.path] = entry.oid
        st = stale.get(entry.path)
        if st is None or not _matches(entry, st):
            continue
        if entry.mtime_s < index_mtime_s:
            trusted[entry.path] = entry.oid
        elif st[0] != MODE_LINK:
            racy[entry.path] = entry.oid
    return trusted, racy, tracked


def _read_index(index_file: Path) -> tuple[Iterator[IndexEntry], int] | None:
    """The entries (parsed as iterated) and mtime (seconds, 32 bits) of one version of
    the index (git renames it in).

    A split index's shared entries were last checked before their shared
    index was written: the older of the two files decides what is racy.
    """
    try:
        with open(index_file, "rb") as f:
            mtime = os.fstat(f.fileno()).st_mtime_ns
            data = f.read()
    except OSError:
        return None
    found = gitindex.iter_split_entries(data, git_dir=index_file.parent)
    if found is None:
        return None
    entries, shared = found
    if shared is not None:
        try:
            mtime = min(mtime, os.stat(shared).st_mtime_ns)
        except OSError:
            return None
    return entries, (mtime // _NS) & _U32


def trusted_ids(
    entries: Iterable[IndexEntry], index_mtime_s: int, stale: Mapping[str, Stat]
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
    entries: Iterable[IndexEntry], index_mtime_s: int, stale: Mapping[str, Stat]
) -> dict[str, bytes]:
    """Regular files whose stat data matches but which git would call racily clean.

    Right after a clone or a commit every entry is: the files were written in
    the second the index was. Their ids are only candidates (see ``_verified``).
    """
    found: dict[str, bytes] = {}
    for entry in entries:
        st = stale.get(entry.path)
        if (
            st is not None
            and entry.mtime_s >= index_mtime_s
            and st[0] != MODE_LINK
            and _matches(entry, st)
        ):
            found[entry.path] = entry.oid
    return found


def _verified(root: Path, candidates: Mapping[str, bytes]) -> dict[str, bytes]:
    """The candidates whose file hashes to the index's id now.

    Hashing is what git does with a racily clean entry, and it is far
    cheaper than compressing and writing the file: only the copy is saved.
    hashlib's SHA-1, as the store's own hashing (packwriter): libgit2's
    collision-detecting one ran at a fifth of the speed.
    """
    top = os.fspath(root)
    found: dict[str, bytes] = {}
    for rel, oid in candidates.items():
        try:
            # Opened without following a link: a file swapped for one is not ours to read.
            fd = os.open(f"{top}/{rel}", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > VERIFY_MAX_BYTES:
                continue  # a huge file is hashed the usual way, streamed
            data = os.read(fd, st.st_size + 1)  # a short read of a regular file: its end
        except OSError:
            continue
        finally:
            os.close(fd)
        if len(data) <= st.st_size and packwriter.object_id(BLOB, data) == oid:
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
#
# ``git add`` stores other bytes than the file's in two ways. End-of-line
# conversion (``text``, ``eol``, ``crlf``, ``core.autocrlf``) only ever deletes
# a CR before an LF, so a blob as long as the file is the file: ``_present``
# checks every seeded blob's size, and needs no attributes for it. Content
# conversion (``filter``, ``ident``, ``working-tree-encoding``) can give any
# bytes of any length: paths it applies to are hashed, never seeded.

CONTENT_ATTRIBUTES = ("filter", "ident", "working-tree-encoding")


def content_converted(
    worktree: Worktree, entries: Iterable[IndexEntry], paths: Collection[str]
) -> set[str]:
    """The ``paths`` a content-converting attribute applies to.

    Read as ``git add`` reads them (each directory's ``.gitattributes`` in
    the worktree, else the index's), and again with the index's version of
    each one the worktree changed: the blobs were made under those, and a
    filter removed since would leave its output in the index.
    """
    tracked = {e.path: e.oid for e in entries if e.stage == 0 and _is_attributes(e.path)}
    return _converted(worktree, tracked, paths)


def _converted(
    worktree: Worktree, tracked: Mapping[str, bytes], paths: Collection[str]
) -> set[str]:
    """``content_converted``, given the index's ``.gitattributes`` (path -> id)."""
    here: dict[str, bytes] = {}
    then: dict[str, bytes] = {}
    for d in _ancestors(paths):
        rel = f"{d}/.gitattributes" if d else ".gitattributes"
        data, opened = _read_attributes(worktree.root, rel)
        oid = tracked.get(rel)
        blob = None  # the index's version, where it is not the file's
        if oid is not None and (data is None or packwriter.object_id(BLOB, data) != oid):
            blob = _source_blob(worktree, oid)
        now = data if opened else blob  # git's fallback when the file cannot be opened
        before = now if blob is None else blob
        if now is not None:
            here[d] = now
        if before is not None:
            then[d] = before
    info, global_, system, icase = _common_rules(worktree)
    variants = [
        attributes.AttributeRules(
            wanted=CONTENT_ATTRIBUTES,
            per_dir=per_dir,
            info=info,
            global_=global_,
            system=system,
            icase=icase,
        )
        for per_dir in ((here, then) if here != then else (here,))
    ]
    variants = [rules for rules in variants if rules.says_anything()]
    if not variants:
        return set()
    return {rel for rel in paths if any(_converts(rules.lookup(rel)) for rules in variants)}


def _converts(found: Mapping[str, attributes.State]) -> bool:
    encoding = found.get("working-tree-encoding")
    return (
        isinstance(found.get("filter"), str)
        or found.get("ident") is True
        or encoding is True
        or (isinstance(encoding, str) and encoding.lower() not in ("", "utf-8"))
    )


def _read_attributes(root: Path, rel: str) -> tuple[bytes | None, bool]:
    """``ignore.read_rule_file`` (never through a link, as git >= 2.32), after a
    cheap ``lstat``: most directories have no ``.gitattributes``."""
    path = f"{os.fspath(root)}/{rel}"
    try:
        os.lstat(path)
    except FileNotFoundError:
        return None, False
    except OSError:
        pass
    return read_rule_file(path, nofollow=True)


def _ancestors(paths: Collection[str]) -> set[str]:
    """Every directory holding one of ``paths``, and their parents (``""``: the top)."""
    found = {""}
    for parent in {rel.rpartition("/")[0] for rel in paths}:
        while parent and parent not in found:
            found.add(parent)
            parent = parent.rpartition("/")[0]
    return found


def _common_rules(worktree: Worktree) -> tuple[bytes | None, bytes | None, bytes | None, bool]:
    """info/attributes, core.attributesFile (or its default), the system file, core.ignorecase.

    The system file is read even under GIT_ATTR_NOSYSTEM: whoever ran
    ``git add`` may not have had it set, and reading too much only hashes more.
    """
    configured = config_value(worktree.common_dir, "core.attributesFile")
    if configured:
        global_file = worktree.root / os.path.expanduser(configured)
    else:
        xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
        global_file = Path(xdg) / "git" / "attributes"
    return (
        read_rule_file(worktree.common_dir / "info" / "attributes")[0],
        read_rule_file(global_file)[0],
        read_rule_file(SYSTEM_ATTRIBUTES)[0],
        bool(config_bool(worktree.common_dir, "core.ignorecase")),
    )


def _source_blob(worktree: Worktree, oid: bytes) -> bytes | None:
    try:
        return ObjectDB(worktree.common_dir).blob(oid)
    except ObjectError:
        return None


def _is_attributes(rel: str) -> bool:
    return rel == ".gitattributes" or rel.endswith("/.gitattributes")


# -- objects -----------------------------------------------------------------


def link_objects(src_objects: Path, dst_objects: Path, wanted: set[bytes]) -> set[bytes]:
    """Hard-link the source packs holding ``wanted`` ids, then the loose ones left.

    Best effort: whatever cannot be linked (another filesystem, protected
    hard links, an object behind the source's alternates) is simply absent.
    Returns the ids not linked. A loose object that vanished while we
    linked (the source's ``gc --auto``, which a big commit starts in the
    background, packs them and then prunes them) is looked for once more in
    the packs that appeared meanwhile.
    """
    seen: set[Path] = set()
    src_packs, dst_packs = src_objects / "pack", dst_objects / "pack"
    missing = _link_packs(src_packs, dst_packs, wanted, seen)  # never changes its set
    missing, vanished = _link_loose(src_objects, dst_objects, missing)
    if vanished:
        again = _link_packs(src_packs, dst_packs, vanished, seen)
        missing = (missing - vanished) | _link_loose(src_objects, dst_objects, again)[0]
    return missing


def link_packs(src_objects: Path, dst_objects: Path, wanted: set[bytes]) -> set[bytes]:
    """Hard-link each source pack holding one of ``wanted``; the ids those packs hold.

    For a store whose seeded loose objects the source has since packed and
    pruned (its ``gc --auto`` after a big commit): they are the store's own
    copies now, which the source's pack would share again once linked.
    """
    left = _link_packs(src_objects / "pack", dst_objects / "pack", wanted, set())
    return wanted - left


def _link_packs(src_dir: Path, dst_dir: Path, missing: set[bytes], seen: set[Path]) -> set[bytes]:
    """Link each pack (newest first, not yet tried) holding a missing id; the ids left."""
    for idx in _packs_newest_first(src_dir):
        if not missing:
            break
        if idx in seen:
            continue
        seen.add(idx)
        index = packwriter.read_pack_index(idx)
        left = index.lacking(missing) if index is not None else missing
        if len(left) < len(missing) and _link_pack(idx, dst_dir):
            missing = left
    return missing


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


def _link_loose(
    src_objects: Path, dst_objects: Path, wanted: set[bytes]
) -> tuple[set[bytes], set[bytes]]:
    """Link each wanted loose object: returns the ids not linked, and of those the ones
    the source has no loose file for (any more).

    Plain strings, and each fan-out directory made once: at 10k objects
    pathlib and a mkdir per object cost more than the links themselves.
    """
    src_root, dst_root = os.fspath(src_objects), os.fspath(dst_objects)
    made: set[str] = set()
    uid = _uid()
    failed: set[bytes] = set()
    vanished: set[bytes] = set()
    for oid in wanted:
        name = oid.hex()
        src = f"{src_root}/{name[:2]}/{name[2:]}"
        try:
            st = os.lstat(src)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
                failed.add(oid)  # another user's file could be rewritten under us
                continue
            fan_out = f"{dst_root}/{name[:2]}"
            if fan_out not in made:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(fan_out)
                made.add(fan_out)
            os.link(src, f"{fan_out}/{name[2:]}", follow_symlinks=False)
        except FileExistsError:
            pass  # we have that object
        except FileNotFoundError:
            failed.add(oid)
            vanished.add(oid)
        except OSError:
            failed.add(oid)
    return failed, vanished


def _uid() -> int:
    return getattr(os, "getuid", lambda: -1)()


def _linkable(path: Path) -> bool:
    """A regular file of ours: another user's file could be rewritten under us."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == _uid()


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
    """The ids our own store now holds as blobs of the file's exact size (``ids``,
    the others dropped).

    The size is what rules out end-of-line conversion (see above), even one
    from a config long gone (say autocrlf on when the file was added, off now).
    Headers of packed objects are read by libgit2 while the packs are small,
    else by packs.read_headers (see MAP_MAX_BYTES).
    """
    loose_dir = os.fspath(store_git_dir / "objects")
    try:
        fan_outs = {name for name in os.listdir(loose_dir) if len(name) == 2}
    except OSError:
        fan_outs = set()
    # raw id -> header_value(type, size): one dict, one int per object.
    headers = dict.fromkeys(ids.values(), packwriter.UNKNOWN)
    if fan_outs:
        for oid in headers:
            header = _loose_header(loose_dir, oid) if oid[:1].hex() in fan_outs else None
            if header is not None:
                headers[oid] = packwriter.header_value(*header)
    packs = store_git_dir / "objects" / "pack"
    if _pack_bytes(packs) > MAP_MAX_BYTES:
        packwriter.read_headers(packs, headers)
    odb: ObjectDB | None = None
    for oid, value in headers.items():
        if value != packwriter.UNKNOWN:
            continue
        if odb is None:
            odb = ObjectDB(store_git_dir)  # a fresh one sees the linked packs
        header = odb.header(oid)
        if header is not None:
            headers[oid] = packwriter.header_value(*header)
    wrong = [
        rel
        for rel, oid in ids.items()
        if headers[oid] != packwriter.header_value(BLOB, stale[rel][1])
    ]
    for rel in wrong:
        del ids[rel]
    return ids


_KINDS = {b"commit": 1, b"tree": 2, b"blob": BLOB, b"tag": 4}


def _pack_bytes(pack_dir: Path) -> int:
    """The size of the packs in ``pack_dir`` (what libgit2 would map to read them)."""
    total = 0
    try:
        with os.scandir(pack_dir) as entries:
            for entry in entries:
                if entry.name.endswith(".pack"):
                    total += entry.stat().st_size
    except OSError:
        return 0
    return total


def _loose_header(objects: str, oid: bytes) -> tuple[int, int] | None:
    """(type, size) from a loose object's first bytes; None to ask libgit2 (not loose,
    or not read here): inflating a few bytes in Python beats libgit2's lookup."""
    name = oid.hex()
    try:
        fd = os.open(f"{objects}/{name[:2]}/{name[2:]}", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        head = zlib.decompressobj().decompress(os.read(fd, 128), 64)
    except (OSError, zlib.error):
        return None
    finally:
        os.close(fd)
    kind, space, rest = head.partition(b" ")
    size, nul, _body = rest.partition(b"\0")
    if not (space and nul and size.isdigit() and kind in _KINDS):
        return None
    return _KINDS[kind], int(size)
