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
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from snapshotter import manifest as manifest_io
from snapshotter import packwriter, treebuild, watch
from snapshotter.errors import CaptureFailed, StoreError
from snapshotter.fileio import TEMP_PREFIX, remove_temp_files
from snapshotter.ignore import global_excludes_file
from snapshotter.scan import MODE_LINK, ScanResult, Skip, Stat, rescan, scan
from snapshotter.worktree import Worktree, config_value

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
# Past this many loose objects a capture packs them (about 40 one-file checkpoints).
LOOSE_PACK_AT = 256
# Files with other hard links are re-checked by stat on every watched capture
# (a write through another name raises no event here); past this, just walk.
MAX_LINKED = 1000
# restore.py's temp file next to its target (prefix + 12 hex digits).
RESTORE_TEMP = re.compile(rf"(?:^|/){re.escape(TEMP_PREFIX)}[0-9a-f]{{12}}$")
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def store_key(root: Path) -> str:
    import xxhash

    return str(xxhash.xxh3_64_hexdigest(os.fsencode(str(root))))


def stores_dir(data_dir: Path) -> Path:
    return data_dir / "snapshot"


@dataclass
class _Watched:
    """One capture's view of the process's watcher (see watch.py)."""

    watcher: watch.Watcher
    last: watch.Remembered | None  # the previous walk, and what changed since
    files: tuple[str, ...]  # rule files outside the watched directories
    env: tuple[object, ...]  # their stat data before this capture's walk


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
        for leftover in ("index.lock", "index"):  # the shadow index of older versions
            with contextlib.suppress(OSError):
                os.unlink(self.root / leftover)
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
        key = (self.worktree.scope, limit, excluded, max_files)
        watched = self._watched(key)
        if watched is not None and watched.last is not None and not watched.last.dirty:
            watched.watcher.remember(key, watched.last)  # nothing happened since
            return Capture(watched.last.tree, dict(watched.last.scan.skipped))
        manifest_path = self.root / "manifest"
        old = manifest_io.load(manifest_path)
        started = time.time_ns()
        result = self._walk(watched, old, limit, excluded, max_files)
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
        known = self._many_ids(stale, result.entries)
        loose = old.loose
        for rel, st, prior in stale:
            oid = known.get(rel)
            if oid is None:
                oid = self._hash(rel, st[0], result.skipped)
                loose += oid is not None
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
        tree, trees = old.tree, old.trees
        if tree is None or changed or removed or not trees or not self._has(tree):
            tree, trees, written = self._write_trees(old, entries, [*changed, *removed])
            loose += written
        if loose >= LOOSE_PACK_AT:
            loose = self._pack_loose()
        if (tree != old.tree or trees != old.trees or entries != old.entries
                or loose != old.loose):
            manifest_io.save(manifest_path, manifest_io.Manifest(tree, entries, trees, loose))
        if watched is not None and not result.nested and len(result.linked) <= MAX_LINKED:
            # Nested repositories have rule files of their own: those always walk.
            watched.watcher.remember(key, watch.Remembered(watched.files, watched.env, tree,
                                                           result))
        return Capture(tree, result.skipped)

    def _watched(self, key: tuple[object, ...]) -> _Watched | None:
        """What this process's watcher knows of the worktree, if it watches it."""
        watcher = watch.for_worktree(self.worktree.root) if watch.enabled() else None
        if watcher is None or not watcher.poll():
            return None
        last = watcher.recall(key)
        watcher.forget(key)  # remembered again only if this capture succeeds
        if last is not None and (_signature(last.files) != last.env or not self._has(last.tree)):
            last = None  # an ignore rule or the source index changed: walk everything
        if last is not None:
            last.dirty.update(self._relinked(last.scan))
            return _Watched(watcher, last, last.files, last.env)
        files = self._rule_files()
        return _Watched(watcher, None, files, _signature(files))  # stat data before the walk

    def _walk(self, watched: _Watched | None, old: manifest_io.Manifest, limit: int,
              excluded: frozenset[str], max_files: int | None) -> ScanResult:
        """Only the directories the watcher saw change, if it can say; else everything."""
        on_dir = watched.watcher.watch_dir if watched is not None else None
        if watched is not None and watched.last is not None:
            changed_dirs = {watched.watcher.relative(d) for d in watched.last.dirty}
            result = rescan(self.worktree, watched.last.scan, changed_dirs, previous=old.entries,
                            max_new_file_size=limit, excluded=excluded, max_files=max_files,
                            on_dir=on_dir)
            if result is not None:
                return result
        return scan(self.worktree, previous=old.entries, max_new_file_size=limit,
                    excluded=excluded, index_cache=self.root / "source-index.cache",
                    max_files=max_files, on_dir=on_dir)

    def _many_ids(self, stale: Sequence[tuple[str, Stat, object]],
                  scanned: Collection[str]) -> dict[str, bytes]:
        """Blob ids for a large batch: from the source index where git vouches, else packed."""
        if len(stale) < BULK_MIN_FILES:
            return {}
        from snapshotter.seed import seed

        known = seed(self.root / "git", self.worktree,
                     {rel: st for rel, st, _prior in stale}, scanned)
        self.reopen()
        rest = [item for item in stale if item[0] not in known]
        if len(rest) >= BULK_MIN_FILES:
            known.update(self._bulk(rest))
        return known

    def _relinked(self, last: ScanResult) -> set[str]:
        """Directories of hard-linked files changed through another name (no event here)."""
        found = set()
        root = str(self.worktree.root)
        for rel in last.linked:
            path = os.path.join(root, rel)
            try:
                st = os.lstat(path)
                now = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            except OSError:
                now = None
            if now != last.entries.get(rel, (0,))[1:]:
                found.add(os.path.dirname(path))
        return found

    def _pack_loose(self) -> int:
        """Loose objects into one pack, so many small checkpoints cost bytes, not blocks.

        Each loose object takes a whole filesystem block: a one-line edit
        four levels deep wrote ~24 KB before. Returns the new loose count.
        """
        from snapshotter import gc

        try:
            # The count is an estimate (a gc may have packed them since): check first.
            found = gc.count_loose_objects(self)
            if found < LOOSE_PACK_AT:
                return found
            gc.pack_loose_objects(self)
        except (StoreError, OSError):
            return LOOSE_PACK_AT // 2  # the capture stands; packing is tried again later
        return 0

    def _rule_files(self) -> tuple[str, ...]:
        """Files outside the walked directories that decide what a walk keeps."""
        tree = self.worktree
        configured = config_value(tree.common_dir, "core.excludesFile")
        home = Path(os.path.expanduser("~"))
        xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
        return tuple(str(p) for p in (
            tree.git_dir / "index",
            tree.common_dir / "info" / "exclude",
            tree.common_dir / "config",
            home / ".gitconfig",
            xdg / "git" / "config",
            Path("/etc/gitconfig"),
            tree.root / global_excludes_file(configured),
        ))

    def _bulk(self, stale: Sequence[tuple[str, Stat, object]]) -> dict[str, bytes]:
        """Blob ids for many files at once, written as one pack, not loose objects.

        (Files the source index vouches for never get here: seed.py takes their
        ids from it and hard-links the source's objects, which neither reads
        nor inflates anything; copying packed source objects cost more than
        reading the files.)
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

    def _write_trees(
        self, old: manifest_io.Manifest, entries: dict[str, manifest_io.Entry], paths: list[str]
    ) -> tuple[str, dict[str, bytes], int]:
        """(root tree, directory -> tree id, loose objects written) for ``entries``.

        With the previous build's ids at hand only the trees above ``paths``
        are hashed and written (loose: a few per capture); otherwise every
        tree is, into one pack.
        """
        import pygit2

        incremental = (
            old.tree is not None and old.trees.get("") == bytes.fromhex(old.tree)
            and self._has(old.tree)
        )
        if incremental:
            root, trees, ids = treebuild.update(entries, old.trees, paths)
            odb = self.repo.odb
            for _oid, data in trees:
                odb.write(pygit2.enums.ObjectType.TREE, data)
            return root.hex(), ids, len(trees)
        root, trees, ids = treebuild.build(entries)
        objects = ((oid, treebuild.TREE, data) for oid, data in trees)
        packwriter.write_pack(self.root / "git" / "objects" / "pack", objects)
        self.reopen()
        return root.hex(), ids, 0

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

    def edit_tree(self, base: str, changes: Mapping[str, tuple[int, bytes] | None]) -> str:
        """``base`` with each path set to (mode, blob id), or removed for None.

        Only the trees on the way from the changed paths to the root are read
        and written: an undo on a 50k-file worktree need not rebuild them all.
        """
        root = self._edit(bytes.fromhex(base), _by_first_name(changes))
        return (root or bytes.fromhex(EMPTY_TREE)).hex()

    def _edit(self, tree: bytes | None, changes: dict[str, dict[str, tuple[int, bytes] | None]],
              ) -> bytes | None:
        import pygit2

        repo = self.repo
        builder = repo.TreeBuilder(pygit2.Oid(raw=tree)) if tree else repo.TreeBuilder()
        for name, below in changes.items():
            named = "" in below  # the path ``name`` itself changes
            here = below.pop("", None)
            if here is not None:
                builder.insert(name, pygit2.Oid(raw=here[1]), here[0])
                continue  # a file now: nothing can live below it
            existing = builder.get(name)
            old_tree = existing.id.raw if existing is not None and existing.type_str == "tree" \
                else None
            if named and existing is not None and old_tree is None:
                builder.remove(name)  # the file went
            if not below:
                continue
            new_tree = self._edit(old_tree, _by_first_name(below))
            if new_tree is not None:
                builder.insert(name, pygit2.Oid(raw=new_tree), pygit2.enums.FileMode.TREE)
            elif builder.get(name) is not None:
                builder.remove(name)  # git keeps no empty directories
        return None if len(builder) == 0 else builder.write().raw

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


def _by_first_name(
    changes: Mapping[str, tuple[int, bytes] | None],
) -> dict[str, dict[str, tuple[int, bytes] | None]]:
    """``{"a/b/c": x}`` → ``{"a": {"b/c": x}}``; a change to "a" itself sits under ""."""
    grouped: dict[str, dict[str, tuple[int, bytes] | None]] = {}
    for path, change in changes.items():
        first, _, rest = path.partition("/")
        grouped.setdefault(first, {})[rest] = change
    return grouped


def _signature(paths: tuple[str, ...]) -> tuple[tuple[int, ...] | None, ...]:
    """Stat data of each path (None when absent): any edit, create or delete shows."""
    found: list[tuple[int, ...] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            found.append(None)
            continue
        found.append((st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino))
    return tuple(found)


def _readable(path: str) -> bool | None:
    """True if readable, False if not, None if it no longer exists."""
    try:
        with open(path, "rb"):
            return True
    except FileNotFoundError:
        return None
    except OSError:
        return False
