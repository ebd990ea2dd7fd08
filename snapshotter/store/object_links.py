"""Hard-linking the source repository's objects into a store: whole packs (with
their index), else loose object files.

Never alternates: the user's ``git gc`` deletes what a store merely borrows
(opencode #46034), while a hard link keeps the bytes alive after the source
drops its name, and costs no disk while both names exist. Only regular files
of our own user are linked: another user's file could be rewritten under us.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import NamedTuple

from snapshotter import durable
from snapshotter.git.loose import header_of, loose_id, loose_name
from snapshotter.git.objects import read_from_packs
from snapshotter.git.pack_index import read_pack_index
from snapshotter.store.object_files import own_loose_objects


class Linked(NamedTuple):
    """What ``link_objects`` did."""

    missing: set[bytes]  # the ids not linked
    # (type, size) of loose objects, read from the very file linked (its inode).
    headers: dict[bytes, tuple[int, int]]


def link_objects(src_objects: Path, dst_objects: Path, wanted: set[bytes]) -> Linked:
    """Hard-link the source packs holding ``wanted`` ids, then the loose ones left.

    Best effort: whatever cannot be linked (another filesystem, protected
    hard links, an object behind the source's alternates) is simply absent.
    A loose object that vanished while we linked (the source's ``gc --auto``,
    which a big commit starts in the background, packs them and then prunes
    them) is looked for once more in the packs that appeared meanwhile.
    """
    seen: set[Path] = set()
    headers: dict[bytes, tuple[int, int]] = {}
    src_packs, dst_packs = src_objects / "pack", dst_objects / "pack"
    missing = _link_packs(src_packs, dst_packs, wanted, seen)  # never changes its set
    missing, vanished = _link_loose(src_objects, dst_objects, missing, headers)
    if vanished:
        again = _link_packs(src_packs, dst_packs, vanished, seen)
        left, _gone = _link_loose(src_objects, dst_objects, again, headers)
        missing = (missing - vanished) | left
    return Linked(missing, headers)


def link_packs(src_objects: Path, dst_objects: Path, wanted: set[bytes]) -> set[bytes]:
    """Hard-link each source pack holding one of ``wanted``; the ids those packs hold.

    For a store whose seeded loose objects the source has since packed and
    pruned (its ``gc --auto`` after a big commit): they are the store's own
    copies now, which the source's pack would share again once linked.
    """
    left = _link_packs(src_objects / "pack", dst_objects / "pack", wanted, set())
    return wanted - left


def shared_again(src_objects: Path, dst_objects: Path) -> list[Path]:
    """The store's own loose objects that a source pack, linked now, holds whole: copies
    the caller may delete (under the store lock, once the links are durable).

    A big commit leaves its objects loose; seeding links them, and the
    source's ``gc --auto`` then packs them and prunes its names, which leaves
    the links the store's own copies: a compressed copy of the whole tree.
    Linking the packs that now hold them shares those bytes again. The copy
    may be the only one of a file's bytes, so each object is read back from
    the store's packs and hashed first; if any is damaged, the packs just
    linked go again (libgit2 reads a pack before a loose file, and stops at a
    damaged entry) and every copy stays.
    """
    own = {loose_id(path): path for path in own_loose_objects(dst_objects)}
    if not own:
        return []
    pack_dir = dst_objects / "pack"
    before = _pack_files(pack_dir)
    held = link_packs(src_objects, dst_objects, set(own))
    if not held:
        return []
    whole, damaged = read_from_packs(dst_objects, held)
    if damaged:
        for name in sorted(_pack_files(pack_dir) - before, key=lambda n: not n.endswith(".idx")):
            with contextlib.suppress(OSError):
                (pack_dir / name).unlink()  # the index first: the pack is then invisible
        return []
    return sorted(own[oid] for oid in whole)


def _pack_files(pack_dir: Path) -> set[str]:
    try:
        return {name for name in os.listdir(pack_dir) if name.startswith("pack-")}
    except OSError:
        return set()


def _link_packs(src_dir: Path, dst_dir: Path, missing: set[bytes], seen: set[Path]) -> set[bytes]:
    """Link each pack (newest first, not yet tried) holding a missing id; the ids left."""
    for idx in _packs_newest_first(src_dir):
        if not missing:
            break
        if idx in seen:
            continue
        seen.add(idx)
        index = read_pack_index(idx)
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
    src_objects: Path, dst_objects: Path, wanted: set[bytes], headers: dict[bytes, tuple[int, int]]
) -> tuple[set[bytes], set[bytes]]:
    """Link each wanted loose object: returns the ids not linked, and of those the ones
    the source has no loose file for (any more). ``headers`` gets the (type, size)
    of each one linked through its open file.

    Each file is opened once: checked (a regular file of ours), its header
    read, and that very file linked through ``/proc/self/fd`` (so the header
    is the linked inode's, whatever replaced the name meanwhile); where that
    fails it is linked by name, its header left for the caller to read from
    the store. Plain strings, and each fan-out directory made once: at 10k
    objects pathlib and a mkdir per object cost more than the links themselves.
    """
    src_root, dst_root = os.fspath(src_objects), os.fspath(dst_objects)
    uid = _uid()
    linked: dict[str, list[str]] = {}  # fan-out directory -> the names linked in it
    failed: set[bytes] = set()
    vanished: set[bytes] = set()
    try:
        dst_fd = os.open(dst_root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return set(wanted), set()
    try:
        for oid in wanted:
            fan_name, file_name = loose_name(oid)
            src = f"{src_root}/{fan_name}/{file_name}"
            try:
                # Non-blocking: a FIFO where an object should be must not hang us.
                fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
            except FileNotFoundError:
                failed.add(oid)
                vanished.add(oid)
                continue
            except OSError:
                failed.add(oid)
                continue
            try:
                names = linked.get(fan_name)
                if names is None:
                    _make_fan_out(dst_root, fan_name)
                    names = linked[fan_name] = []
                header = _link_open(fd, src, dst_fd, f"{fan_name}/{file_name}", uid)
            except OSError:
                failed.add(oid)
                continue
            finally:
                os.close(fd)
            names.append(file_name)
            if header is not None:
                headers[oid] = header
    finally:
        os.close(dst_fd)
        for fan_name, names in linked.items():  # the source may not have synced them
            durable.wrote_in(f"{dst_root}/{fan_name}", names)
    return failed, vanished


def _make_fan_out(dst_root: str, fan_name: str) -> None:
    with contextlib.suppress(FileExistsError):
        os.mkdir(f"{dst_root}/{fan_name}")
        durable.entered(dst_root)


def _link_open(fd: int, src: str, dst_fd: int, rel: str, uid: int) -> tuple[int, int] | None:
    """Link the loose object open at ``fd`` (found at ``src``) as ``rel`` below
    ``dst_fd``: the (type, size) read from the linked inode, or None (linked by name,
    or we had that object already). Raises OSError when it cannot be linked, or is
    not a regular file of ours (another user's file could be rewritten under us)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
        raise PermissionError(f"{src}: not a regular file of ours")
    try:
        # src_dir_fd makes os.link call linkat, which follows the /proc link to the inode.
        os.link(f"/proc/self/fd/{fd}", rel, src_dir_fd=dst_fd, dst_dir_fd=dst_fd)
    except FileExistsError:
        return None  # we have that object
    except OSError:  # no /proc here: by name
        with contextlib.suppress(FileExistsError):
            os.link(src, rel, dst_dir_fd=dst_fd, follow_symlinks=False)
        return None
    return header_of(fd)


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
    durable.wrote(dst)  # synced by the next settle, with the name just made
    return True
