"""Git objects through libgit2: the one door to pygit2 for the shadow store.

Everything above this layer sees raw object ids (``bytes``), tree ids in hex
(``str``, as records keep them), modes as ``int`` and our own error types:
``pygit2.GitError`` is translated here into ``ObjectError`` and nowhere else.
pygit2 is imported on first use, and a process that has not loaded it reads
its first objects by hand (object_reader.py), writes loose ones itself
(loose.py) and hashes files with hashlib: loading libgit2 (~85 ms) costs more
than an undo without a hook server or a first capture does the rest of their
work.

Over 400 lines on purpose: every call into pygit2 of the store is here (the
one door), each with its error translated; the trees it parses itself are
kept_trees.py's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from snapshotter import durable
from snapshotter.errors import StoreError
from snapshotter.git import kept_trees
from snapshotter.git.held import Held, as_pack
from snapshotter.git.kept_trees import Items
from snapshotter.git.kinds import (
    BLOB,
    EMPTY_TREE,
    MODE_GITLINK,
    MODE_TREE,
    TREE,
    Entry,
    ObjectId,
)

if TYPE_CHECKING:
    import pygit2


_EMPTY_RAW = bytes.fromhex(EMPTY_TREE)
# Objects a process reads by hand before it loads libgit2 after all: an undo reads
# tens; what reads thousands (a reset far back, gc) is faster with libgit2's caches.
BY_HAND_MAX = 256


class ObjectError(StoreError):
    """libgit2 could not read or write an object of the store."""


def _git_error() -> type[Exception]:
    import pygit2

    return pygit2.GitError


def preload() -> None:
    """Load libgit2 now (a long-lived process), not on its first object."""
    import pygit2  # noqa: F401


def _whole_id(oid: str | bytes) -> bool:
    """A raw 20-byte id, or its 40 lower-case hex digits."""
    if isinstance(oid, bytes):
        return len(oid) == 20
    return len(oid) == 40 and all(c in "0123456789abcdef" for c in oid)


def hash_file(path: str | os.PathLike[str]) -> ObjectId:
    """The raw blob id of a file's bytes, as git would store them (no filters).

    Hashed here (hashlib) while this process has not loaded libgit2, else by it.
    """
    if "pygit2" not in sys.modules:
        return _hash_file_by_hand(os.fspath(path))
    import pygit2

    try:
        return ObjectId(pygit2.hashfile(os.fspath(path)).raw)
    except pygit2.GitError as exc:
        raise ObjectError(f"cannot read {os.fspath(path)}: {exc}") from exc


def _hash_file_by_hand(path: str) -> ObjectId:
    """As libgit2 hashes a file: the size ``fstat`` gives, then that many bytes (a
    file that grew meanwhile gets an id of neither version, one that shrank fails)."""
    import hashlib

    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            digest = hashlib.sha1(b"blob %d\0" % size)
            left = size
            while left:
                chunk = f.read(min(left, 1 << 20))
                if not chunk:
                    raise ObjectError(f"cannot read {path}: it changed while it was read")
                digest.update(chunk)
                left -= len(chunk)
    except OSError as exc:
        raise ObjectError(f"cannot read {path}: {exc.strerror}") from exc
    return ObjectId(digest.digest())


def hash_bytes(data: bytes) -> ObjectId:
    """The raw blob id of ``data``."""
    import pygit2

    return ObjectId(pygit2.hash(data).raw)


def read_from_packs(objects_dir: Path, ids: Iterable[bytes]) -> tuple[set[bytes], set[bytes]]:
    """(the ``ids`` the packs in ``objects_dir`` hold whole, those they hold damaged).

    Each is read from the packs alone (never a loose file beside them) and
    hashed again here; an id no pack holds is in neither set.
    """
    import pygit2

    from snapshotter.git.packs import object_id

    odb = pygit2.Odb()
    odb.add_backend(pygit2.OdbBackendPack(str(objects_dir)), 1)
    whole: set[bytes] = set()
    damaged: set[bytes] = set()
    for oid in ids:
        try:
            kind, data = odb.read(oid.hex())
        except KeyError:
            continue  # in no pack
        except (ValueError, pygit2.GitError):
            damaged.add(oid)
            continue
        (whole if object_id(int(kind), bytes(data)) == oid else damaged).add(oid)
    return whole, damaged


# What a bare repository needs for git and libgit2 to open it (libgit2's
# ``init_repository`` adds a description, a hooks sample and info/exclude).
_BARE_DIRS = ("objects/pack", "objects/info", "refs/heads", "refs/tags")
_BARE_CONFIG = b"[core]\n\tbare = true\n\trepositoryformatversion = 0\n\tfilemode = true\n"
_BARE_HEAD = b"ref: refs/heads/master\n"


def init_bare(git_dir: Path) -> None:
    """Create an empty bare repository (the shadow: never a workdir, see MEASURED.md).

    Written here, as libgit2 writes one, not through pygit2: a first capture
    need not load libgit2 at all (~50 ms of its start-up). HEAD comes last, so
    a store whose init was killed has none and is initialised again.
    """
    try:
        for sub in _BARE_DIRS:
            os.makedirs(git_dir / sub, exist_ok=True)
        for name, data in (("config", _BARE_CONFIG), ("HEAD", _BARE_HEAD)):
            with open(git_dir / name, "wb") as f:
                f.write(data)
    except OSError as exc:
        raise ObjectError(f"cannot create a repository in {git_dir}: {exc.strerror}") from exc


class ObjectDB:
    """The objects of one bare repository, opened on first use."""

    _held: Held | None = None  # objects written meanwhile, not yet on disk (``held``)

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self._repo: pygit2.Repository | None = None
        self._by_hand_left = BY_HAND_MAX

    @property
    def repo(self) -> pygit2.Repository:
        if self._repo is None:
            import pygit2

            try:
                self._repo = pygit2.Repository(str(self.git_dir))
            except pygit2.GitError as exc:
                raise ObjectError(f"cannot open the store {self.git_dir.parent}: {exc}") from exc
        return self._repo

    def reopen(self) -> None:
        """Forget the open repository, so packs written behind libgit2's back are seen."""
        self._repo = None

    def _by_hand(self, oid: bytes) -> tuple[int, bytes] | None:
        """(type, body) of ``oid`` read without libgit2 (object_reader.py) while this
        process has not loaded it: an undo without a server reads a few objects, and
        loading libgit2 costs more than the rest of it. None: ask libgit2 (it is
        loaded then, the object is absent or not readable here, or this process
        has read ``BY_HAND_MAX`` already)."""
        if self._repo is not None or "pygit2" in sys.modules or len(oid) != 20:
            return None
        if self._by_hand_left <= 0:
            return None
        self._by_hand_left -= 1
        from snapshotter.git import object_reader

        try:
            return object_reader.read(self.git_dir / "objects", oid)
        except object_reader.Unreadable:
            return None

    # -- reading ----------------------------------------------------------

    def has(self, oid: str | bytes) -> bool:
        """Whether the object is stored (``oid`` raw or hex; a malformed id is absent).

        Read without libgit2 (loose.py) only while this process has not loaded it:
        then it may never need it. Once loaded, its lookup is cheaper: it indexes
        the packs once, where ``stored`` lists and searches them on every call (a
        served undo asks ~40 times, a kept tree's every hit included).
        """
        if self._held is not None and self._held.get(oid) is not None:
            return True
        if self._repo is None and _whole_id(oid) and "pygit2" not in sys.modules:
            from snapshotter.git.loose import stored

            raw = oid if isinstance(oid, bytes) else bytes.fromhex(oid)
            if stored(self.git_dir / "objects", raw):
                return True
        import pygit2

        try:
            key = pygit2.Oid(raw=oid) if isinstance(oid, bytes) else oid
            return key in self.repo.odb
        except (ValueError, TypeError):
            return False

    def header(self, oid: bytes) -> tuple[int, int] | None:
        """(type, size) of a stored object without inflating it; None when absent."""
        import pygit2

        if self._held is not None and (held := self._held.get(oid)) is not None:
            return held[0], len(held[1])
        try:
            kind, size = self.repo.odb.read_header(pygit2.Oid(raw=oid))
        except (KeyError, ValueError, pygit2.GitError):
            return None
        return int(kind), int(size)

    def headers(self, oids: Iterable[bytes]) -> Iterator[tuple[bytes, int, int]]:
        """(id, type, size) of each of ``oids`` stored, as ``header`` reads them; the absent
        ones are left out. One lookup of the object database for all: at 10k ids
        ``header``'s per-call lookups were a quarter of the time."""
        import pygit2

        read, make = self.repo.odb.read_header, pygit2.Oid
        for oid in oids:
            try:
                kind, size = read(make(raw=oid))
            except (KeyError, ValueError, pygit2.GitError):
                continue
            yield oid, int(kind), int(size)

    def blob(self, oid: bytes) -> bytes:
        """A blob's bytes."""
        found = self._by_hand(oid)
        if found is not None:
            if found[0] != BLOB:
                raise ObjectError(f"{oid.hex()} is not a blob")
            return found[1]
        import pygit2

        if self._held is not None and (held := self._held.get(oid)) is not None:
            return held[1]
        try:
            obj = self.repo[pygit2.Oid(raw=oid)]
        except (KeyError, ValueError, pygit2.GitError) as exc:
            raise ObjectError(f"blob {oid.hex()} is missing from the store") from exc
        if not isinstance(obj, pygit2.Blob):
            raise ObjectError(f"{oid.hex()} is not a blob")
        return bytes(obj.data)

    def blob_size(self, oid: bytes) -> int:
        found = self.header(oid)
        return found[1] if found is not None else 0

    def _tree(self, tree: str | bytes) -> pygit2.Tree:
        import pygit2

        try:
            key = pygit2.Oid(raw=tree) if isinstance(tree, bytes) else tree
            obj = self.repo[key]
        except (KeyError, ValueError, pygit2.GitError) as exc:
            name = tree.hex() if isinstance(tree, bytes) else tree
            raise ObjectError(f"tree {name} is missing from the store") from exc
        if not isinstance(obj, pygit2.Tree):
            raise ObjectError(f"{tree!r} is not a tree")
        return obj

    def tree_items(self, tree: bytes) -> Items:
        """name -> (mode, raw id) of a stored tree, read-only; empty for the empty tree.

        Parsed once a process and kept by id (kept_trees.py); a kept tree is
        returned only while this store holds it.
        """
        if tree == _EMPTY_RAW:
            return kept_trees.EMPTY
        if self._held is not None and (held := self._held.get(tree)) is not None:
            return kept_trees.parse(held[1], len(tree))  # written at the block's end
        items = kept_trees.get(tree)
        if items is not None and self.has(tree):
            return items
        found = self._by_hand(tree)
        if found is not None:
            kind, data = found
        else:
            try:
                kind, data = self.repo.odb.read(tree.hex())
            except (KeyError, ValueError, _git_error()) as exc:
                raise ObjectError(f"tree {tree.hex()} is missing from the store") from exc
        if int(kind) != TREE:
            raise ObjectError(f"{tree.hex()} is not a tree")
        try:
            return kept_trees.keep(tree, kept_trees.parse(bytes(data), len(tree)))
        except kept_trees.MalformedTree as exc:
            raise ObjectError(f"tree {tree.hex()} in the store is damaged") from exc

    def keep_tree(self, tree: bytes, items: dict[bytes, tuple[int, bytes]]) -> None:
        """Tree ``tree`` (just written, raw id) has ``items``: no need to read it back.

        The caller gives ``items`` up (kept as they are, never to be changed).
        """
        kept_trees.keep(tree, items)

    def entry(self, tree: str, rel: str) -> Entry | None:
        """The file at ``rel`` in ``tree``; None when absent or a directory.

        Walked a directory at a time through the kept trees: an undo asks for
        the same few paths in the same few trees dozens of times.
        """
        try:
            node = self.tree_items(bytes.fromhex(tree))
            *dirs, name = rel.split("/")
            for part in dirs:
                mode, oid = node[os.fsencode(part)]
                if mode != MODE_TREE:
                    return None
                node = self.tree_items(oid)
            mode, oid = node[os.fsencode(name)]
        except (KeyError, ValueError, ObjectError):
            return None
        return None if mode == MODE_TREE else Entry(mode, ObjectId(oid))

    def files_under(self, tree: str, directory: str) -> list[str]:
        """Every file path below ``directory`` in ``tree`` (none if not a directory there)."""
        try:
            node = self.tree_items(bytes.fromhex(tree))
            for part in directory.split("/") if directory else ():
                mode, oid = node[os.fsencode(part)]
                if mode != MODE_TREE:
                    return []
                node = self.tree_items(oid)
        except (KeyError, ValueError, ObjectError):
            return []
        found: list[str] = []
        pending = [(directory, node)]
        while pending:  # a loop, not recursion: trees may be thousands deep
            prefix, items = pending.pop()
            for name, (mode, oid) in items.items():
                rel = f"{prefix}/{os.fsdecode(name)}" if prefix else os.fsdecode(name)
                if mode == MODE_TREE:
                    pending.append((rel, self.tree_items(oid)))
                else:
                    found.append(rel)
        return sorted(found)

    def reachable(self, trees: Iterable[str], known: Collection[bytes] = frozenset()) -> set[bytes]:
        """Raw ids of ``trees`` and of every tree and blob below them (blobs unread).

        Trees in ``known`` are skipped with all below them (already accounted
        for); submodule commits are never stored, so never named.
        """
        found: set[bytes] = set()
        try:
            stack = [bytes.fromhex(t) for t in trees]
        except ValueError as exc:
            raise ObjectError(f"not a tree id: {exc}") from exc
        while stack:
            oid = stack.pop()
            if oid in found or oid in known:
                continue
            found.add(oid)
            for mode, child in self.tree_items(oid).values():
                if mode == MODE_TREE:
                    stack.append(child)
                elif mode != MODE_GITLINK and child not in known:
                    found.add(child)
        return found

    # -- writing ----------------------------------------------------------

    def read(self, oid: bytes) -> tuple[int, bytes]:
        """(type, inflated bytes) of a stored object."""
        found = self._by_hand(oid)
        if found is not None:
            return found
        try:
            kind, data = self.repo.odb.read(oid.hex())
        except (KeyError, ValueError, _git_error()) as exc:
            if self._held is not None and (held := self._held.get(oid)) is not None:
                return held  # not on disk before the held block's end
            raise ObjectError(f"object {oid.hex()} is missing from the store: {exc}") from exc
        return int(kind), bytes(data)

    def absent(self, oid: bytes) -> bool:
        """Whether object ``oid`` (raw) is to be written: ``has``, but without loading
        libgit2 when this process has not (a first capture need not: ~50 ms).

        Then told from the files (loose.stored), which find what libgit2 finds
        in our stores (loose objects, v2 pack indexes); a pack whose index it
        cannot read only costs a second copy, loose (``write`` never touches a
        file already there), which the next gc drops.
        """
        if self._held is not None and self._held.get(oid) is not None:
            return False
        if self._repo is None and "pygit2" not in sys.modules and len(oid) == 20:
            from snapshotter.git.loose import stored

            return not stored(self.git_dir / "objects", oid)
        return not self.has(oid)

    @contextmanager
    def held(self) -> Iterator[Held]:
        """Objects written meanwhile are held in memory (``has`` and ``read`` see them) and
        written together when the block ends: one pack if there are enough (held.py).

        For the thread that holds the store lock (a capture). The block's end is
        before anything can name them; if the block raises they are dropped.
        ``Held.loose`` then says how many were written loose.
        """
        held = self._held = Held()
        try:
            yield held
        finally:
            self._held = None
        if as_pack(self.git_dir / "objects" / "pack", held):
            from snapshotter.git.packs import write_pack

            objects = ((oid, kind, data) for oid, (kind, data) in held.objects.items())
            write_pack(self.git_dir / "objects" / "pack", objects, tree_level=0)
            return  # libgit2 finds the new pack on its first miss (it rescans then)
        for oid, (kind, data) in held.objects.items():
            if self.absent(oid):  # (``put`` held it without a look: see there)
                self.write(kind, data, oid)
                held.loose += 1

    def put(self, kind: int, data: bytes, oid: bytes) -> None:
        """Store an object whose id the caller computed, unless the store has it: a
        stored one is never written again (libgit2 would "freshen" its file, which
        seeding may have hard-linked from the source repository, #12.4).

        Inside ``held`` a tree is held without a lookup: a capture writes a tree only
        where a directory's entries changed, so it is new but for a revert to an
        older state (then the pack holds a copy: bytes until the next gc), and a
        miss costs libgit2 a rescan of the pack directory (~30 µs; a 10-file turn
        writes ~26 trees). Blobs are looked up: a racily clean file read again is
        mostly one the store has. A tree that goes loose is looked up at the end.
        """
        if self._held is not None and kind == TREE:
            self._held.objects[oid] = (kind, data)
        elif self.absent(oid):
            self.write(kind, data, oid)

    def write(self, kind: int, data: bytes, oid: bytes) -> None:
        """Store an object whose id the caller computed (and found ``absent``).

        Written loose by loose.write (not libgit2, which would re-hash it and
        needs loading), unsynced (durable.py: the next settle syncs it); a file
        already there is left as it is. Inside ``held`` it is kept for the
        block's end.
        """
        if self._held is not None:
            self._held.objects[oid] = (kind, data)
            return
        from snapshotter.git import loose

        objects = self.git_dir / "objects"
        try:
            loose.write(os.fspath(objects), oid, kind, data)
        except OSError as exc:
            raise ObjectError(f"cannot write object {oid.hex()}: {exc.strerror}") from exc
        self._wrote_loose(oid)

    def write_file_streamed(self, path: str) -> ObjectId:
        """A file too big to hold in memory, streamed by libgit2, unless already stored."""
        import pygit2

        try:
            oid = pygit2.hashfile(path)
            if oid not in self.repo.odb:
                oid = self.repo.create_blob_fromdisk(path)
                self._wrote_loose(oid.raw)
        except pygit2.GitError as exc:
            raise ObjectError(f"cannot store {path}: {exc}") from exc
        return ObjectId(oid.raw)

    def _wrote_loose(self, oid: bytes) -> None:
        """A loose object libgit2 just wrote, and its fan-out directory (perhaps new)."""
        objects = self.git_dir / "objects"
        name = oid.hex()
        durable.wrote(f"{objects}/{name[:2]}/{name[2:]}")
        durable.entered(objects)

    # -- comparing --------------------------------------------------------

    def changed(self, before: str, after: str) -> list[tuple[str, str]]:
        """(path, git's status letter: A, D or M) of each file that differs between two
        trees, in no order.

        Only subtrees whose ids differ are read: libgit2's tree diff reads every
        tree of both sides, 300 ms for a 10-file turn at 500k files (issue 16.3).
        A file that became a directory (or back) is deleted and its files added.
        """
        found: list[tuple[str, str]] = []
        pending: list[tuple[str, bytes | None, bytes | None]] = [
            ("", bytes.fromhex(before), bytes.fromhex(after))
        ]
        while pending:  # a loop, not recursion: trees may be thousands deep
            prefix, old, new = pending.pop()
            a = self.tree_items(old) if old is not None else kept_trees.EMPTY
            b = self.tree_items(new) if new is not None else kept_trees.EMPTY
            # The names whose entries differ, in C: trees of thousands of entries of
            # which a turn changed a few.
            for name in {n for n, _ in a.items() ^ b.items()}:
                x, y = a.get(name), b.get(name)
                path = prefix + os.fsdecode(name)
                x_tree = x is not None and x[0] == MODE_TREE
                y_tree = y is not None and y[0] == MODE_TREE
                if x_tree or y_tree:
                    pending.append(
                        (
                            path + "/",
                            x[1] if x is not None and x_tree else None,
                            y[1] if y is not None and y_tree else None,
                        )
                    )
                x_file, y_file = x is not None and not x_tree, y is not None and not y_tree
                if x_file and y_file:
                    found.append((path, "M"))
                elif x_file:
                    found.append((path, "D"))
                elif y_file:
                    found.append((path, "A"))
        return found

    def patches(self, before: str, after: str) -> list[Patch]:
        """Unified patches between two trees, with line counts and blob sizes."""
        found = []
        for p in self._diff(before, after):
            if p is None:
                continue
            d = p.delta
            delta = _delta(d)
            sizes = [self._size(side) for side in (d.old_file, d.new_file)]
            _, adds, dels = p.line_stats
            found.append(Patch(delta, int(adds), int(dels), sizes[0], sizes[1], bytes(p.data)))
        return found

    def _size(self, side: pygit2.DiffFile) -> int:
        """The blob's size; libgit2 leaves it 0 when it did not load an unchanged blob."""
        if side.size or side.id.raw == bytes(20):
            return int(side.size)
        return self.blob_size(side.id.raw)

    def _diff(self, before: str, after: str) -> pygit2.Diff:
        new = self._tree(after)
        try:
            if before == EMPTY_TREE:  # may be absent from the store: diff against nothing
                return new.diff_to_tree(swap=True)
            return self._tree(before).diff_to_tree(new)
        except _git_error() as exc:
            raise ObjectError(f"cannot compare {before} with {after}: {exc}") from exc


@dataclass(frozen=True)
class Delta:
    """One path's change between two trees, as libgit2 reports it (a type change is two)."""

    path: str
    status: str  # git's letter: A, D, M, T ...
    binary: bool


@dataclass(frozen=True)
class Patch:
    """One delta's unified patch."""

    delta: Delta
    added: int
    removed: int
    old_size: int
    new_size: int
    data: bytes


def _delta(d: pygit2.DiffDelta) -> Delta:
    return Delta(d.new_file.path or d.old_file.path, d.status_char(), bool(d.is_binary))
