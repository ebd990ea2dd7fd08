"""Loose objects: where git keeps one (``objects/<2 hex>/<38 hex>``), and the
``<type> <size>\\0`` header its zlib stream starts with.

libgit2 writes and reads their contents; what is here is what the store needs
without it: listing them (gc), linking them (seeding), and reading a header
from the first bytes, faster than libgit2's lookup.
"""

from __future__ import annotations

import contextlib
import os
import re
import zlib
from pathlib import Path

from snapshotter.git.kinds import KIND_NAMES

FAN_OUT = re.compile(r"^[0-9a-f]{2}$")  # the directories loose objects live in
# What git and libgit2 write a loose object under before renaming it
# (``tmp_obj_*`` in a fan-out directory, ``tmp_object_git2_*`` beside them):
# a leftover once its writer is gone.
GIT_TEMP_PREFIX = "tmp_"
_KINDS = {name: kind for kind, name in KIND_NAMES.items()}


def loose_name(oid: bytes) -> tuple[str, str]:
    """(fan-out directory, file name) of the loose object ``oid`` below ``objects/``."""
    name = oid.hex()
    return name[:2], name[2:]


def stored(objects: Path, oid: bytes) -> bool:
    """Whether ``objects/`` holds ``oid`` (20 bytes) loose or in a pack whose index
    lists it, read without libgit2 (True only where libgit2 would say so too).

    A process that never reads an object (a no-change capture, ``list``) need
    not import pygit2 to learn that the tree its stat cache names is still there.
    """
    from snapshotter.git.pack_index import find

    fan, name = loose_name(oid)
    if os.path.isfile(os.path.join(objects, fan, name)):
        return True
    pack_dir = os.path.join(objects, "pack")
    try:
        listed = os.listdir(pack_dir)
    except OSError:
        return False
    for entry in listed:
        if (
            entry.endswith(".idx")
            and find(Path(pack_dir, entry), oid) is not None
            and os.path.isfile(os.path.join(pack_dir, entry[: -len(".idx")] + ".pack"))
        ):
            return True
    return False


def write(objects: str, oid: bytes, kind: int, data: bytes) -> bool:
    """Write the object ``oid`` (its ``kind`` and body; the caller computed the id) as
    git writes a loose one; False when its file was there already.

    Compressed as git and libgit2 compress loose objects (zlib level 1), read-only,
    written under a ``tmp_`` name in its fan-out directory and linked into place:
    a file of that name already there (the source repository's own, hard-linked
    by seeding) is never written, replaced or touched (#12.4). Unsynced: the
    caller notes it for the next settle (durable.py).
    """
    fan, name = loose_name(oid)
    directory = f"{objects}/{fan}"
    with contextlib.suppress(FileExistsError):
        os.mkdir(directory)
    head = b"%s %d\0" % (KIND_NAMES[kind], len(data))
    body = zlib.compressobj(1)
    packed = body.compress(head) + body.compress(data) + body.flush()
    tmp = f"{directory}/{GIT_TEMP_PREFIX}obj_{os.urandom(6).hex()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444)
    try:
        try:
            view = memoryview(packed)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        final = f"{directory}/{name}"
        try:
            os.link(tmp, final)
        except FileExistsError:
            return False
        except OSError:  # a filesystem without hard links: git renames then
            if os.path.lexists(final):
                return False
            os.rename(tmp, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return True


def loose_id(path: Path) -> bytes:
    """The raw id of the loose object file at ``path``."""
    return bytes.fromhex(path.parent.name + path.name)


def loose_files(objects: Path) -> list[Path]:
    """Every loose object file below ``objects``."""
    found: list[Path] = []
    for sub in objects.iterdir():
        if FAN_OUT.match(sub.name):
            found.extend(p for p in sub.iterdir() if len(p.name) == 38)
    return found


def read_header(objects: str, oid: bytes) -> tuple[int, int] | None:
    """(type, size) from a loose object's first bytes; None when it is not loose here
    or cannot be read (ask libgit2 then): inflating a few bytes beats its lookup."""
    fan_out, rest = loose_name(oid)
    try:
        fd = os.open(f"{objects}/{fan_out}/{rest}", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return header_of(fd)
    finally:
        os.close(fd)


def header_of(fd: int) -> tuple[int, int] | None:
    """(type, size) of the loose object open at ``fd`` (read from its start); None when
    its first bytes are not a loose object's."""
    try:
        head = zlib.decompressobj().decompress(os.pread(fd, 128, 0), 64)
    except (OSError, zlib.error):
        return None
    kind, space, rest_of_head = head.partition(b" ")
    size, nul, _body = rest_of_head.partition(b"\0")
    if not (space and nul and size.isdigit() and kind in _KINDS):
        return None
    return _KINDS[kind], int(size)
