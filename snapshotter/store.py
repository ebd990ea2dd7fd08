"""The shadow store: a bare pygit2 repository of blobs and trees, per worktree.

This module is the only one that writes git objects. It never opens the
source repository for writing and never creates a ``.git`` in the worktree:
the shadow is bare and the worktree path is handed to the scanner instead of
being configured as the shadow's workdir (see MEASURED.md's pitfalls).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from snapshotter import manifest as manifest_io
from snapshotter import packwriter, treebuild
from snapshotter.errors import CaptureFailed, StoreError
from snapshotter.fileio import TEMP_PREFIX, remove_temp_files
from snapshotter.scan import MODE_LINK, Skip, Stat, scan
from snapshotter.worktree import Worktree

if TYPE_CHECKING:
    import filelock
    import pygit2

# A file modified this close to the start of a scan may change again without
# its mtime moving (the kernel's clock is coarse), so its stat data is not
# trusted next time: the "racy git" problem, solved the way git solves it.
RACY_WINDOW_NS = 50_000_000
LOCK_TIMEOUT_S = 30.0
# From this many files to hash, one pack beats one loose object per file.
BULK_MIN_FILES = 64
BULK_MAX_FILE_BYTES = 32 * 1024 * 1024
# restore.py's temp file next to its target (prefix + 12 hex digits).
RESTORE_TEMP = re.compile(rf"(?:^|/){re.escape(TEMP_PREFIX)}[0-9a-f]{{12}}$")
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def store_key(root: Path) -> str:
    import xxhash

    return str(xxhash.xxh3_64_hexdigest(os.fsencode(str(root))))


def stores_dir(data_dir: Path) -> Path:
    return data_dir / "snapshot"


@dataclass
class Capture:
    tree: str
    skipped: dict[str, Skip] = field(default_factory=dict)


class Store:
    """One worktree's store directory: ``git/`` objects, index, manifest, state, lock."""

    def __init__(
        self, root: Path, worktree: Worktree, lock: filelock.FileLock | None = None
    ) -> None:
        self.root = root
        self.worktree = worktree
        self._repo: pygit2.Repository | None = None
        self._lock = lock  # shared between views of one store, so it stays re-entrant

    @classmethod
    def open(cls, data_dir: Path, worktree: Worktree, *, create: bool = True) -> Store | None:
        """The store of ``worktree``; None when it does not exist and ``create`` is off."""
        root = stores_dir(data_dir) / store_key(worktree.root)
        if not (root / "git" / "HEAD").exists():
            if not create:
                return None
            try:
                root.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the store in {root}: {exc.strerror}") from exc
        store = cls(root, worktree)
        try:
            with store.locked():
                store._init_repo()
        except OSError as exc:  # read-only data dir, lock timeout (filelock's is an OSError)
            why = exc.strerror or str(exc)
            raise StoreError(f"cannot lock the store {root}: {why}") from exc
        return store

    @property
    def repo(self) -> pygit2.Repository:
        if self._repo is None:
            import pygit2

            try:
                self._repo = pygit2.Repository(str(self.root / "git"))
            except pygit2.GitError as exc:
                raise StoreError(f"cannot open the store {self.root}: {exc}") from exc
        return self._repo

    def reopen(self) -> None:
        """Forget the open repository (after gc replaced its packs)."""
        self._repo = None

    def locked(self) -> filelock.FileLock:
        """The store's lock. flock-based, so a killed holder never leaves it stuck."""
        if self._lock is None:
            import filelock

            self._lock = filelock.FileLock(str(self.root / "lock"), timeout=LOCK_TIMEOUT_S)
        return self._lock

    def _init_repo(self) -> None:
        import pygit2

        git_dir = self.root / "git"
        try:
            if not (git_dir / "HEAD").exists():
                pygit2.init_repository(str(git_dir), bare=True)
                (self.root / "worktree").write_text(str(self.worktree.root) + "\n")
        except (pygit2.GitError, OSError) as exc:
            raise StoreError(f"cannot create the store in {self.root}: {exc}") from exc
        self._recover()

    def _recover(self) -> None:
        """Clear what a killed process may have left; we hold the lock, so it is stale."""
        with contextlib.suppress(OSError):
            os.unlink(self.root / "index.lock")
        remove_temp_files(self.root)
        packwriter.clean_pack_dir(self.root / "git" / "objects" / "pack")

    # -- capture ---------------------------------------------------------

    def capture(
        self, max_new_file_size: int, excluded: frozenset[str], max_files: int | None = None
    ) -> Capture:
        """Snapshot the worktree's scope; raises CaptureFailed rather than go stale."""
        import pygit2

        with self.locked():
            try:
                return self._capture(max_new_file_size, excluded, max_files)
            except pygit2.GitError as exc:
                raise CaptureFailed(str(exc)) from exc
            except OSError as exc:
                raise CaptureFailed(f"{exc.strerror or exc}: {exc.filename or ''}") from exc

    def _capture(self, limit: int, excluded: frozenset[str], max_files: int | None) -> Capture:
        manifest_path = self.root / "manifest"
        old = manifest_io.load(manifest_path)
        started = time.time_ns()
        result = scan(self.worktree, previous=old.entries, max_new_file_size=limit,
                      excluded=excluded, index_cache=self.root / "source-index.cache",
                      max_files=max_files)
        for rel in [r for r in result.entries if TEMP_PREFIX in r and RESTORE_TEMP.search(r)]:
            # A restore killed between writing its temp file and the rename: never
            # the user's, and stale (restores hold this lock), so it goes.
            del result.entries[rel]
            with contextlib.suppress(OSError):
                os.unlink(self.worktree.root / rel)
        entries: dict[str, manifest_io.Entry] = {}
        changed: dict[str, manifest_io.Entry] = {}
        stale = []
        for rel, st in result.entries.items():
            prior = old.entries.get(rel)
            if prior is not None and prior[2] != 0 and prior[:5] == st:
                entries[rel] = prior
            else:
                stale.append((rel, st, prior))
        known = self._bulk(stale) if len(stale) >= BULK_MIN_FILES else {}
        for rel, st, prior in stale:
            oid = known.get(rel) or self._hash(rel, st[0], result.skipped)
            if oid is None:
                continue
            racy = st[2] >= started - RACY_WINDOW_NS
            entry = (st[0], st[1], 0 if racy else st[2], st[3], st[4], oid)
            entries[rel] = entry
            if prior is None or prior[0] != entry[0] or prior[5] != oid:
                changed[rel] = entry
        if self.worktree.scope:
            for rel, entry in old.entries.items():
                if not self.worktree.in_scope(rel):
                    entries[rel] = entry
        removed = [rel for rel in old.entries if rel not in entries]
        tree, sig = old.tree, old.index_sig
        if tree is None or changed or removed or not self._has(tree):
            tree = self._write_tree(old, entries, changed, removed)
            sig = self._index_sig()
        if tree != old.tree or sig != old.index_sig or entries != old.entries:
            manifest_io.save(manifest_path, manifest_io.Manifest(tree, entries, sig))
        return Capture(tree, result.skipped)

    def _bulk(self, stale: Sequence[tuple[str, Stat, object]]) -> dict[str, bytes]:
        """Blob ids for many files at once, written as one pack, not loose objects.

        (Taking ids from the source index and copying its objects was tried:
        inflating packed source objects cost more than reading the files.)
        """
        found: dict[str, bytes] = {}

        def blobs() -> Iterator[tuple[bytes, int, bytes]]:
            for rel, st, _prior in stale:
                if st[0] == MODE_LINK or st[1] > BULK_MAX_FILE_BYTES:
                    continue  # links and big files take the one-by-one path
                try:
                    # Non-blocking: a FIFO put there since the walk must not hang us.
                    fd = os.open(self.worktree.root / rel,
                                 os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
                    with open(fd, "rb") as f:
                        if not stat.S_ISREG(os.fstat(fd).st_mode):
                            continue  # replaced since the walk: the one-by-one path skips it
                        data = f.read()
                except OSError:
                    continue  # the one-by-one path records why
                oid = packwriter.object_id(packwriter.BLOB, data)
                found[rel] = oid
                # No existence check: a miss costs libgit2 a pack rescan, far
                # more than a duplicate that the next gc drops.
                yield oid, packwriter.BLOB, data

        packwriter.write_pack(self.root / "git" / "objects" / "pack", blobs())
        self.reopen()
        return found

    def _hash(self, rel: str, mode: int, skipped: dict[str, Skip]) -> bytes | None:
        """Write one file's blob; None (and a skip) when it cannot be read."""
        import pygit2

        path = str(self.worktree.root / rel)
        try:
            kind = stat.S_IFMT(os.lstat(path).st_mode)
            if kind != (stat.S_IFLNK if mode == MODE_LINK else stat.S_IFREG):
                # Replaced since the walk (by a directory, a link, or a FIFO whose
                # read would block forever): the next capture sees what it became.
                skipped[rel] = Skip(rel, "changed while capturing")
                return None
            if mode == MODE_LINK:
                return self.repo.create_blob(os.fsencode(os.readlink(path))).raw
            return self.repo.create_blob_fromdisk(path).raw
        except FileNotFoundError:
            return None  # vanished while we looked: it is simply not there any more
        except (OSError, pygit2.GitError) as exc:
            readable = _readable(path)
            if readable is None:
                return None
            if readable:
                raise
            skipped[rel] = Skip(rel, f"unreadable: {getattr(exc, 'strerror', None) or exc}")
            return None

    def _write_tree(
        self,
        old: manifest_io.Manifest,
        entries: dict[str, manifest_io.Entry],
        changed: dict[str, manifest_io.Entry],
        removed: list[str],
    ) -> str:
        import pygit2

        index_path = self.root / "index"
        index = pygit2.Index(str(index_path))
        incremental = (
            old.tree is not None and self._has(old.tree) and old.index_sig == self._index_sig()
        )
        if not incremental:
            return self._rebuild_tree(index, entries)
        for rel in removed:
            with contextlib.suppress(OSError, KeyError):
                index.remove(rel)
        for rel, entry in changed.items():
            mode = pygit2.enums.FileMode(entry[0])
            index.add(pygit2.IndexEntry(rel, pygit2.Oid(raw=entry[5]), mode))
        tree = str(index.write_tree(self.repo))
        # Written after write_tree so the cached tree extension survives
        # (writing first makes every later capture re-hash all trees).
        index.write()
        return tree

    def _rebuild_tree(self, index: pygit2.Index, entries: dict[str, manifest_io.Entry]) -> str:
        """Every tree built in memory and packed at once; the index re-read from it."""
        import pygit2

        root, trees = treebuild.build({rel: (e[0], e[5]) for rel, e in entries.items()})
        objects = ((oid, treebuild.TREE, data) for oid, data in trees)
        packwriter.write_pack(self.root / "git" / "objects" / "pack", objects)
        self.reopen()
        tree = self.repo[pygit2.Oid(raw=root)]
        assert isinstance(tree, pygit2.Tree)
        index.read_tree(tree)  # also fills the cached-tree extension
        index.write()
        return str(tree.id)

    def _index_sig(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.root / "index")
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def _has(self, oid: str) -> bool:
        try:
            return oid in self.repo.odb
        except ValueError:
            return False

    # -- reading ---------------------------------------------------------

    def entry(self, tree: str, rel: str) -> tuple[int, bytes] | None:
        """(mode, raw blob id) at ``rel`` in ``tree``; None when absent or a directory."""
        import pygit2

        try:
            obj = self.repo[tree]
            assert isinstance(obj, pygit2.Tree)
            item = obj[rel]
        except (KeyError, ValueError):
            return None
        if item.filemode == pygit2.enums.FileMode.TREE:
            return None
        return (int(item.filemode), item.id.raw)

    def blob(self, raw: bytes) -> bytes:
        import pygit2

        obj = self.repo[pygit2.Oid(raw=raw)]
        assert isinstance(obj, pygit2.Blob)
        return obj.data

    def tree_object(self, tree: str) -> pygit2.Tree:
        import pygit2

        try:
            obj = self.repo[tree]
        except (KeyError, ValueError) as exc:
            raise StoreError(f"tree {tree} is missing from the store") from exc
        if not isinstance(obj, pygit2.Tree):
            raise StoreError(f"{tree} is not a tree")
        return obj


def _readable(path: str) -> bool | None:
    """True if readable, False if not, None if it no longer exists."""
    try:
        with open(path, "rb"):
            return True
    except FileNotFoundError:
        return None
    except OSError:
        return False
