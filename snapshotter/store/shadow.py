"""The shadow store: a bare repository of blobs and trees, per worktree.

The store decides what to write; git/objects, git/packs and git/trees write
it (compaction, below, only repacks what is stored). It never opens the
source repository for writing and never creates a ``.git`` in the worktree:
the shadow is bare and the worktree path is handed to the walk instead of
being configured as the shadow's workdir (see MEASURED.md's pitfalls).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from snapshotter.config import stores_dir
from snapshotter.errors import CaptureFailed, NotAProject, Refused, StoreError, TooManyFiles
from snapshotter.fileio import real_parents, remove_leftovers, write_atomic
from snapshotter.git import packs as packwriter
from snapshotter.git import trees as treebuild
from snapshotter.git.config import config_files, config_value
from snapshotter.git.ignore import global_excludes_file
from snapshotter.git.kinds import (
    BLOB,
    MODE_FILE,
    MODE_LINK,
    TREE,
    Entry,
    ObjectId,
    git_mode,
)
from snapshotter.git.objects import ObjectDB, ObjectError, init_bare
from snapshotter.git.worktree import Worktree
from snapshotter.store import stat_cache, watch
from snapshotter.store.layout import file_lock, store_key
from snapshotter.store.walk import ScanResult, Skip, Stat, rescan, scan
from snapshotter.store.walk import index as walk_index

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    Lock = AbstractContextManager[object]

# A file modified this close to the start of a scan may change again without
# its mtime moving (the kernel's clock is coarse), so its stat data is not
# trusted next time: the "racy git" problem, solved the way git solves it.
RACY_WINDOW_NS = 50_000_000
# A refused capture is remembered this long, while nothing it depends on changes.
REFUSED = "refused.json"
REFUSAL_TTL_S = 3600.0
# A hook waits this long for the store lock (inside docker-agent's 60 s hook
# timeout), polling often (layout.LOCK_POLL_S).
LOCK_TIMEOUT_S = 50.0
# From this many files to hash, one pack beats one loose object per file.
BULK_MIN_FILES = 64
BULK_MAX_FILE_BYTES = 32 * 1024 * 1024
# Reads of a file that keeps changing under them, before it is recorded as read.
READ_RETRIES = 4
# Captures pack their loose objects from this many on (the number lives in git/packs.py).
LOOSE_PACK_AT = packwriter.LOOSE_PACK_AT
# Files with other hard links are re-checked by stat on every watched capture
# (a write through another name raises no event here); past this, just walk.
MAX_LINKED = 1000

# Set in a CLI command forked from the hook server (hooks/remote_capture.py):
# its captures are taken by the server, whose watcher knows what changed since
# the last one, instead of by a walk here. It returns None when the server
# cannot take it; the capture is then taken here. Called with the lock held.
CaptureElsewhere = Callable[["Store", int, frozenset[str], "int | None", bool], "Capture | None"]
capture_elsewhere: CaptureElsewhere | None = None


def _make_private(data_dir: Path, root: Path) -> None:
    """The data directory, the stores directory and this store: 0700 (SPEC §2).

    A store made by an older version (0755 directories, 0644 or 0444 files)
    is closed on open, contents included; from then on its directories alone
    keep other users out, whatever mode libgit2 gives the files within.
    """
    from snapshotter.config import make_private_tree, private_dir, stores_dir

    levels = (data_dir, stores_dir(data_dir), root)
    fixed = [d for d in levels if private_dir(d)]
    if fixed:
        make_private_tree(fixed[0])  # the outermost that was open, all below it


@dataclass
class _Watched:
    """One capture's view of the process's watcher (see watch.py)."""

    watcher: watch.Watcher
    last: watch.Remembered | None  # the previous walk, and what changed since
    files: tuple[str, ...]  # rule files outside the watched directories
    env: tuple[object, ...]  # their stat data before this capture's walk


@dataclass
class Capture:
    """One snapshot: its tree id, and the files left out of it (with why)."""

    tree: str
    skipped: dict[str, Skip] = field(default_factory=dict)
    started: int = 0  # time.time_ns() before the walk: what predates it was there before


class Store:
    """One worktree's store directory: ``git/`` objects, index, manifest, state, lock."""

    def __init__(self, root: Path, worktree: Worktree, lock: Lock | None = None) -> None:
        self.root = root
        self.worktree = worktree
        self.objects = ObjectDB(root / "git")
        self._lock = lock  # shared between views of one store, so it stays re-entrant

    @classmethod
    def open(
        cls,
        data_dir: Path,
        worktree: Worktree,
        *,
        create: bool = True,
        recover: Callable[[Store], None] | None = None,
    ) -> Store | None:
        """The store of ``worktree``; None when it does not exist and ``create`` is off.

        ``recover`` runs under the store lock once leftovers are cleared: the
        journal (history) finishes a restore a killed process left half done.
        """
        root = stores_dir(data_dir) / store_key(worktree.root)
        if not create and not (root / "git" / "HEAD").exists():
            return None
        try:
            _make_private(data_dir, root)
        except OSError as exc:
            raise StoreError(f"cannot create the store in {root}: {exc.strerror}") from exc
        store = cls(root, worktree)
        try:
            with store.locked():
                store._init_repo()
                if recover is not None:
                    recover(store)
        except OSError as exc:  # read-only data dir, lock timeout (filelock's is an OSError)
            why = exc.strerror or str(exc)
            raise StoreError(f"cannot lock the store {root}: {why}") from exc
        return store

    def reopen(self) -> None:
        """Forget the open repository (after gc replaced its packs)."""
        self.objects.reopen()

    def locked(self) -> Lock:
        """The store's lock. flock-based, so a killed holder never leaves it stuck."""
        if self._lock is None:
            self._lock = file_lock(self.root / "lock", timeout=LOCK_TIMEOUT_S)
        return self._lock

    def _init_repo(self) -> None:
        git_dir = self.root / "git"
        try:
            if not (git_dir / "HEAD").exists():
                # The record first, byte-exact: no store without it (issue 13 §18).
                (self.root / "worktree").write_bytes(os.fsencode(self.worktree.root) + b"\n")
                init_bare(git_dir)
        except (ObjectError, OSError) as exc:
            raise StoreError(f"cannot create the store in {self.root}: {exc}") from exc
        self._recover()

    def _recover(self) -> None:
        """Clear what a killed process may have left; we hold the lock, so it is stale."""
        for leftover in ("index.lock", "index"):  # the shadow index of older versions
            with contextlib.suppress(OSError):
                os.unlink(self.root / leftover)
        remove_leftovers(self.root)
        packwriter.clean_pack_dir(self.root / "git" / "objects" / "pack")

    # -- capture ---------------------------------------------------------

    def capture(
        self,
        max_new_file_size: int,
        excluded: frozenset[str],
        max_files: int | None = None,
        guard: bool = True,
    ) -> Capture:
        """Snapshot the worktree's scope; raises CaptureFailed rather than go stale.

        ``guard`` refuses what looks like a home directory (walk.py); a
        restore's safety capture turns it off: the way back is never refused.
        """
        with self.locked():
            if capture_elsewhere is not None:
                found = capture_elsewhere(self, max_new_file_size, excluded, max_files, guard)
                if found is not None:
                    return found
            refused = self._refused_before(max_files) if guard else False
            try:
                capture = self._capture(max_new_file_size, excluded, max_files, guard)
            except (NotAProject, TooManyFiles) as exc:
                self._remember_refusal(str(exc), max_files)
                raise
            except ObjectError as exc:
                raise CaptureFailed(str(exc)) from exc
            except OSError as exc:
                raise CaptureFailed(f"{exc.strerror or exc}: {exc.filename or ''}") from exc
            if refused:  # a refusal is over once a capture went through
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.root / REFUSED)
            return capture

    def _refusal_key(self, max_files: int | None) -> list[object]:
        """What a refusal depends on: the cap, the top directory and the source index."""
        key: list[object] = [max_files]
        for path in (self.worktree.root, self.worktree.git_dir / "index"):
            try:
                st = os.stat(path)
                key += [st.st_mtime_ns, st.st_ino, st.st_size]
            except OSError:
                key.append(None)
        return key

    def _refused_before(self, max_files: int | None) -> bool:
        """Refuse at once what was refused lately and has not changed since.

        A refused worktree cost a full walk (seconds) on every hook event.
        Returns whether an outdated refusal is on record (to drop after a capture).
        """
        try:
            data = json.loads((self.root / REFUSED).read_bytes())
        except FileNotFoundError:
            return False
        except (OSError, ValueError):
            return True  # damaged: dropped once a capture goes through
        if (
            isinstance(data, dict)
            and data.get("key") == self._refusal_key(max_files)
            and time.time() - float(data.get("at", 0)) < REFUSAL_TTL_S
        ):
            raise Refused(str(data.get("why", "refused")))
        return True

    def _remember_refusal(self, why: str, max_files: int | None) -> None:
        record = {"why": why, "key": self._refusal_key(max_files), "at": time.time()}
        with contextlib.suppress(OSError):
            write_atomic(self.root / REFUSED, json.dumps(record).encode())

    def _capture(
        self, limit: int, excluded: frozenset[str], max_files: int | None, guard: bool = True
    ) -> Capture:
        """The capture pipeline, one named step each (the store lock is held)."""
        # A killed restore's temp files are not special here (#13.4: a user's file
        # may look like one): the journal names them and recovery removes them.
        key = (self.worktree.scope, limit, excluded, max_files)
        started = time.time_ns()
        watched = self._watched(key)
        if watched is not None and watched.last is not None and not watched.last.dirty:
            watched.watcher.remember(key, watched.last)  # nothing happened since
            return Capture(watched.last.tree, dict(watched.last.scan.skipped), started)
        # A watching process keeps the manifest in memory while nobody else writes it.
        old = stat_cache.load(self.root / "manifest", keep=watched is not None)
        result = self._walk(watched, old, limit, excluded, max_files, guard)
        last = watched.last if watched is not None else None
        if (
            last is not None
            and result.touched is not None
            and old.serial == last.serial  # the manifest this process wrote with that walk
            and self._extends(old)
        ):
            tree, recheck = self._capture_changes(old, result, last.recheck, started)
        else:
            tree, recheck = self._capture_all(old, result, started, watched is not None)
        if watched is not None and not result.nested and len(result.linked) <= MAX_LINKED:
            # Nested repositories have rule files of their own: those always walk.
            walk_index(result)  # so the next capture redoes directories, not the whole walk
            answer = watch.Remembered(watched.files, watched.env, tree, result)
            answer.serial, answer.recheck, answer.fresh = old.serial, recheck, result.touched
            watched.watcher.remember(key, answer)
        return Capture(tree, dict(result.skipped), started)

    def _capture_all(
        self, old: stat_cache.Manifest, result: ScanResult, started: int, keep: bool
    ) -> tuple[str, set[str]]:
        """Every walked path compared with the manifest; (tree, paths to look at again)."""
        entries, stale = _reuse_unchanged(old, result)
        if not keep:
            # Nobody keeps this walk: its stat data lives on in ``entries`` and
            # ``stale``, and a first capture of 500k files need not hold it twice.
            result.entries = {}
        changed, written = self._hash_stale(stale, result, started, entries)
        recheck = _recheck(stale, entries)
        self._keep_out_of_scope(old, entries)
        removed = [rel for rel in old.entries if rel not in entries]
        tree, trees, trees_written = self._trees(old, entries, [*changed, *removed])
        loose = self._pack_if_many(old.loose + written + trees_written)
        moved = len(stale) + len(removed)
        if not old.entries or moved > max(len(entries) // 2, 4 * stat_cache.CHUNK):
            # Most of it is new (a first capture): a new base, not a delta as big.
            del stale
            old.tree, old.entries, old.trees, old.loose = tree, entries, trees, loose
            stat_cache.save(self.root / "manifest", old, keep=keep)
            return tree, recheck
        delta = stat_cache.Delta(
            tree,
            {rel: entries[rel] for rel, _st, _prior in stale if rel in entries},
            removed,
            {d: oid for d, oid in trees.items() if old.trees.get(d) != oid},
            [d for d in old.trees if d not in trees],
            loose,
        )
        self._record(old, delta, keep)
        return tree, recheck

    def _capture_changes(
        self,
        old: stat_cache.Manifest,
        result: ScanResult,
        recheck: Collection[str],
        started: int,
    ) -> tuple[str, set[str]]:
        """Only the paths the walk redid (and those left to look at again) compared,
        hashed and written: ``old`` is the manifest of the walk ``result`` redid."""
        touched = result.touched or set()
        stale: list[tuple[str, Stat, stat_cache.Entry | None]] = []
        removed = []
        for rel in touched.union(recheck):
            st = result.entries.get(rel)
            prior = old.entries.get(rel)
            if st is None:
                if prior is not None:
                    removed.append(rel)
            elif prior is None or not stat_cache.trusted(prior) or prior[:5] != st:
                stale.append((rel, st, prior))
        hashed: dict[str, stat_cache.Entry] = {}
        changed, written = self._hash_stale(stale, result, started, hashed)
        removed += [rel for rel, _st, prior in stale if rel not in hashed and prior is not None]
        edits: dict[str, tuple[int, bytes] | None] = {rel: None for rel in removed}
        edits.update((rel, (entry[0], entry[5])) for rel, entry in changed.items())
        tree, trees, trees_removed, trees_written = old.tree or "", {}, [], 0
        if edits:
            ids = treebuild.edit_ids(tree, edits, self._tree_items, lambda d: self.put(TREE, d))
            if ids[""] is None:
                ids[""] = self.put(TREE, b"")  # nothing left: the empty tree, stored
            trees = {d: oid for d, oid in ids.items() if oid is not None}
            trees_removed = [d for d, oid in ids.items() if oid is None]
            tree, trees_written = trees[""].hex(), len(trees)
        loose = self._pack_if_many(old.loose + written + trees_written)
        delta = stat_cache.Delta(tree, hashed, removed, trees, trees_removed, loose)
        self._record(old, delta, True)
        return tree, _recheck(stale, hashed)

    def _extends(self, old: stat_cache.Manifest) -> bool:
        """Whether trees can be edited from ``old``'s: its root tree is whole and stored."""
        return (
            old.tree is not None
            and old.trees.get("") == bytes.fromhex(old.tree)
            and self._has(old.tree)
        )

    def _record(self, old: stat_cache.Manifest, delta: stat_cache.Delta, keep: bool) -> None:
        """Write ``delta`` (and apply it to ``old``), unless nothing changed."""
        if (
            delta.entries
            or delta.removed
            or delta.trees
            or delta.trees_removed
            or delta.tree != old.tree
            or delta.loose != old.loose
        ):
            stat_cache.record(self.root / "manifest", old, delta, keep=keep)

    def _hash_stale(
        self,
        stale: list[tuple[str, Stat, stat_cache.Entry | None]],
        result: ScanResult,
        started: int,
        entries: dict[str, stat_cache.Entry],
    ) -> tuple[dict[str, stat_cache.Entry], int]:
        """Blob ids for the files whose stat data moved: seeded or packed in bulk,
        else one by one. Adds them to ``entries``; (what changed, loose objects written)."""
        known = self._many_ids(stale)
        changed: dict[str, stat_cache.Entry] = {}
        written = 0
        for rel, st, prior in stale:
            result.skipped.pop(rel, None)  # a failed read last time: read again now
            oid = known.get(rel)
            if oid is None:
                oid = self._hash(rel, st[0], result.skipped)
                written += oid is not None
            if oid is None:
                continue
            entry = stat_cache.entry(st, oid, racy=st[2] >= started - RACY_WINDOW_NS)
            entries[rel] = entry
            if prior is None or prior[0] != entry[0] or prior[5] != oid:
                changed[rel] = entry
        return changed, written

    def _keep_out_of_scope(
        self, old: stat_cache.Manifest, entries: dict[str, stat_cache.Entry]
    ) -> None:
        """A scoped capture walks its subtree only: the rest stays as last captured."""
        if self.worktree.scope:
            for rel, entry in old.entries.items():
                if not self.worktree.in_scope(rel):
                    entries[rel] = entry

    def _trees(
        self, old: stat_cache.Manifest, entries: dict[str, stat_cache.Entry], paths: list[str]
    ) -> tuple[str, dict[str, bytes], int]:
        """The root tree of ``entries``: the last one when nothing moved, else rebuilt
        above ``paths``; (root tree, directory → tree id, loose objects written)."""
        if old.tree is not None and not paths and old.trees and self._has(old.tree):
            return old.tree, old.trees, 0
        return self._write_trees(old, entries, paths)

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
            last.dirty.update(self._relinked(last.scan, watcher.sweep))
            return _Watched(watcher, last, last.files, last.env)
        files = self._rule_files()
        return _Watched(watcher, None, files, _signature(files))  # stat data before the walk

    def _walk(
        self,
        watched: _Watched | None,
        old: stat_cache.Manifest,
        limit: int,
        excluded: frozenset[str],
        max_files: int | None,
        guard: bool,
    ) -> ScanResult:
        """Only the directories the watcher saw change, if it can say; else everything."""
        on_dir = watched.watcher.watch_dir if watched is not None else None
        if watched is not None and watched.last is not None:
            changed_dirs = {watched.watcher.relative(d) for d in watched.last.dirty}
            result = rescan(
                self.worktree,
                watched.last.scan,
                changed_dirs,
                previous=old.entries,
                max_new_file_size=limit,
                excluded=excluded,
                max_files=max_files,
                on_dir=on_dir,
            )
            if result is not None:
                return result
        return scan(
            self.worktree,
            previous=old.entries,
            max_new_file_size=limit,
            excluded=excluded,
            index_cache=self.root / "source-index.cache",
            max_files=max_files,
            on_dir=on_dir,
            guard=guard,
        )

    def _many_ids(self, stale: Sequence[tuple[str, Stat, object]]) -> dict[str, bytes]:
        """Blob ids for a large batch: from the source index where git vouches, else packed."""
        if len(stale) < BULK_MIN_FILES:
            return {}
        from snapshotter.store.seeding import seed

        known = seed(self.root / "git", self.worktree, {rel: st for rel, st, _prior in stale})
        self.reopen()
        rest = [item for item in stale if item[0] not in known]
        if len(rest) >= BULK_MIN_FILES:
            known.update(self._bulk(rest))
        return known

    def _relinked(self, last: ScanResult, sweep: bool) -> set[str]:
        """Directories of hard-linked files changed through another name (no event here);
        with ``sweep`` (files without watches of their own, watch.py) of any file."""
        if sweep:
            return self._swept(last)
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

    def _swept(self, last: ScanResult) -> set[str]:
        """Directories where any file's stat data moved since ``last``, by stat alone.

        Directory by directory through an open descriptor: each stat resolves one
        name, not the whole path (a third off at 500k files).
        """
        found = set()
        root = str(self.worktree.root)
        entries, lstat = last.entries, os.lstat
        for directory, paths in walk_index(last).files.items():
            where = os.path.join(root, directory) if directory else root
            try:
                fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                found.add(where)  # gone or replaced: its directory event says so too
                continue
            cut = len(directory) + 1 if directory else 0
            try:
                for rel in paths:
                    try:
                        st = lstat(rel[cut:], dir_fd=fd)
                        now: tuple[int, int, int, int] | None = (
                            st.st_size,
                            st.st_mtime_ns,
                            st.st_ctime_ns,
                            st.st_ino,
                        )
                    except OSError:
                        now = None
                    if now != entries.get(rel, (0,))[1:]:
                        found.add(where)
                        break
            finally:
                os.close(fd)
        return found

    def _pack_if_many(self, loose: int) -> int:
        """Loose objects into one pack, so many small checkpoints cost bytes, not blocks.

        Each loose object takes a whole filesystem block: a one-line edit
        four levels deep wrote ~24 KB before. Returns the new loose count.
        """
        if loose < LOOSE_PACK_AT:
            return loose
        from snapshotter.store import loose_packing

        try:
            # The count is an estimate (a gc may have packed them since): check first.
            found = loose_packing.count_loose_objects(self)
            if found < LOOSE_PACK_AT:
                return found
            loose_packing.pack_loose_objects(self)
        except (StoreError, OSError):
            return LOOSE_PACK_AT // 2  # the capture stands; packing is tried again later
        return 0

    def _rule_files(self) -> tuple[str, ...]:
        """Files outside the walked directories that decide what a walk keeps."""
        tree = self.worktree
        configured = config_value(tree.common_dir, "core.excludesFile")
        return tuple(
            str(p)
            for p in (
                tree.git_dir / "index",
                tree.common_dir / "info" / "exclude",
                # The config files git reads (GIT_CONFIG_GLOBAL and the rest): they
                # name the excludes file and set core.ignorecase.
                *(path for _level, path in config_files(tree.common_dir)),
                tree.root / global_excludes_file(configured),
            )
        )

    def _bulk(self, stale: Sequence[tuple[str, Stat, object]]) -> dict[str, bytes]:
        """Blob ids for many files at once, written as one pack, not loose objects.

        (Files the source index vouches for never get here: seeding.py takes their
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
                    data = read_stable(str(self.worktree.root / rel))
                except OSError:
                    continue  # the one-by-one path records why
                if data is None:
                    continue  # replaced since the walk: the one-by-one path skips it
                oid = packwriter.object_id(BLOB, data)
                found[rel] = oid
                # No existence check: a miss costs libgit2 a pack rescan, far
                # more than a duplicate that the next gc drops.
                yield oid, BLOB, data

        packwriter.write_pack(self.root / "git" / "objects" / "pack", blobs())
        self.reopen()
        return found

    def _hash(self, rel: str, mode: int, skipped: dict[str, Skip]) -> bytes | None:
        """Write one file's blob; None (and a skip) when it cannot be read.

        The bytes are read here, not by libgit2 (whose streamed read fails with
        EINVAL when the file changes under it: issue 13.5, a lost event), and
        read again while the file changes under the read.
        """
        path = str(self.worktree.root / rel)
        try:
            kind = stat.S_IFMT(os.lstat(path).st_mode)
            if kind != (stat.S_IFLNK if mode == MODE_LINK else stat.S_IFREG):
                # Replaced since the walk (by a directory, a link, or a FIFO whose
                # read would block forever): the next capture sees what it became.
                skipped[rel] = Skip(rel, "changed while capturing")
                return None
            if mode == MODE_LINK:
                return self.put(BLOB, os.fsencode(os.readlink(path)))
            if os.lstat(path).st_size > BULK_MAX_FILE_BYTES:
                return self._hash_big(path)
            data = read_stable(path)
            if data is None:
                skipped[rel] = Skip(rel, "changed while capturing")
                return None
            return self.put(BLOB, data)  # never a freshening write (#12.4)
        except FileNotFoundError:
            return None  # vanished while we looked: it is simply not there any more
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO):  # became a link or socket meanwhile
                skipped[rel] = Skip(rel, "changed while capturing")
                return None
            self._unreadable(rel, path, exc, skipped)
        except ObjectError as exc:
            self._unreadable(rel, path, exc, skipped)
        return None

    def _hash_big(self, path: str) -> bytes:
        """A file too big to hold in memory, streamed by libgit2; tried again while it
        changes under the read, then recorded as libgit2 last read it."""
        for _ in range(READ_RETRIES - 1):
            before = _stat_key(path)
            try:
                oid = self.put_streamed(path)
            except ObjectError:
                if _stat_key(path) != before:
                    continue  # changed under the read: read it again
                raise
            if _stat_key(path) == before:
                return oid
        return self.put_streamed(path)

    @staticmethod
    def _unreadable(rel: str, path: str, exc: Exception, skipped: dict[str, Skip]) -> None:
        """A failed read: a skip if the file is unreadable to us, else the error."""
        readable = _readable(path)
        if readable is None:
            return  # it went meanwhile
        if readable:
            raise exc
        skipped[rel] = Skip(rel, f"unreadable: {getattr(exc, 'strerror', None) or exc}")

    def _write_trees(
        self, old: stat_cache.Manifest, entries: dict[str, stat_cache.Entry], paths: list[str]
    ) -> tuple[str, dict[str, bytes], int]:
        """(root tree, directory -> tree id, loose objects written) for ``entries``.

        With the previous build's ids at hand only the trees above ``paths``
        are hashed and written (loose: a few per capture); otherwise every
        tree is, into one pack.
        """

        incremental = (
            old.tree is not None
            and old.trees.get("") == bytes.fromhex(old.tree)
            and self._has(old.tree)
        )
        if incremental:
            root, trees, ids = treebuild.update(entries, old.trees, paths)
            for _oid, data in trees:
                self.put(TREE, data)
            return root.hex(), ids, len(trees)
        root, trees, ids = treebuild.build(entries)
        objects = ((oid, TREE, data) for oid, data in trees)
        packwriter.write_pack(self.root / "git" / "objects" / "pack", objects)
        self.reopen()
        return root.hex(), ids, 0

    def _has(self, oid: str) -> bool:
        return self.objects.has(oid)

    # -- reading ---------------------------------------------------------

    def entry(self, tree: str, rel: str) -> Entry | None:
        """(mode, raw blob id) at ``rel`` in ``tree``; None when absent or a directory."""
        return self.objects.entry(tree, rel)

    def last_tree(self) -> str | None:
        """The tree of the newest capture of this worktree, by anyone; None before the first."""
        tree = stat_cache.load(self.root / "manifest", keep=watch.enabled()).tree
        return tree if tree is not None and self._has(tree) else None

    def last_capture(self) -> tuple[str, int] | None:
        """(tree, when it was recorded in ns) of the newest capture, by anyone; None before."""
        tree = self.last_tree()
        if tree is None:
            return None
        try:
            return tree, os.stat(self.root / "manifest").st_mtime_ns
        except OSError:
            return tree, 0

    def files_under(self, tree: str, directory: str) -> list[str]:
        """Every file path below ``directory`` in ``tree`` (none if it is not a directory there)."""
        return self.objects.files_under(tree, directory)

    def edit_tree(self, base: str, changes: Mapping[str, tuple[int, bytes] | None]) -> str:
        """``base`` with each path set to (mode, blob id), or removed for None.

        Only the trees on the way from the changed paths to the root are read
        and written (trees.edit): an undo on a 50k-file worktree need not
        rebuild them all.
        """
        try:
            return treebuild.edit(
                base, changes, self._tree_items, lambda data: self.put(TREE, data)
            )
        except (ObjectError, OSError) as exc:
            raise StoreError(f"cannot write to the store {self.root}: {_why(exc)}") from exc

    def _tree_items(self, tree: bytes) -> dict[bytes, tuple[int, bytes]]:
        return dict(self.objects.tree_items(tree))

    # -- writing objects -------------------------------------------------

    def put(self, kind: int, data: bytes) -> ObjectId:
        """Write one object unless the store has it; its raw id.

        The check comes first because libgit2 "freshens" an object it already
        has (touches its file's mtime), and a pack or loose object hard-linked
        by seeding is the source repository's own file (#12.4).
        """
        oid = packwriter.object_id(kind, data)
        if not self.objects.has(oid):
            self.objects.write(kind, data, oid)
        return oid

    def put_file(self, path: str) -> ObjectId:
        """Write a regular file's blob (see ``put``); its raw id."""

        # Non-blocking and never through a link: a FIFO put there must not hang us.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        with open(fd, "rb", buffering=0) as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(f"{path} is not a regular file")
            if st.st_size <= BULK_MAX_FILE_BYTES:
                return self.put(BLOB, f.read())
        return self.put_streamed(path)

    def put_streamed(self, path: str) -> ObjectId:
        """A file too big to hold in memory, streamed by libgit2 (see ``put``)."""
        return self.objects.write_file_streamed(path)

    def hold(self, tree: str, paths: Collection[str]) -> str:
        """``tree`` plus the current bytes of each of ``paths`` on disk that it lacks.

        The one place SPEC §5's rule is kept: before a restore writes or removes
        a path, the safety tree holds what is there now, whatever ignore rules
        or the size limit made the capture leave out (#12.1). A file that
        cannot be read is refused, never overwritten.
        """
        found: dict[str, tuple[int, bytes] | None] = {}
        for rel in paths:
            if self.entry(tree, rel) is not None:
                continue
            path = self._reachable(rel)
            if path is None:
                continue  # only reachable through a symlink: restores never go there
            try:
                st = os.lstat(path)
                if st is None or not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                    continue  # nothing there (a directory is left alone by restores)
                if stat.S_ISLNK(st.st_mode):
                    found[rel] = (MODE_LINK, self.put(BLOB, os.fsencode(os.readlink(path))))
                else:
                    found[rel] = (git_mode(st.st_mode) or MODE_FILE, self.put_file(path))
            except FileNotFoundError:
                continue
            except (OSError, ObjectError) as exc:
                raise StoreError(
                    f"cannot keep a copy of {rel} ({_why(exc)}), so it is not touched"
                ) from exc
        return self.edit_tree(tree, found) if found else tree

    def _reachable(self, rel: str) -> str | None:
        """``rel``'s absolute path when every parent is a real directory, else None."""
        root = str(self.worktree.root)
        try:
            return os.path.join(root, rel) if real_parents(root, rel) else None
        except OSError:
            return None

    def blob(self, raw: bytes) -> bytes:
        return self.objects.blob(raw)


def _reuse_unchanged(
    old: stat_cache.Manifest, result: ScanResult
) -> tuple[dict[str, stat_cache.Entry], list[tuple[str, Stat, stat_cache.Entry | None]]]:
    """Entries whose stat data still matches the cache (trusted without a read), and the
    rest as (path, stat data now, cached entry or None): those are hashed."""
    entries: dict[str, stat_cache.Entry] = {}
    stale = []
    for rel, st in result.entries.items():
        prior = old.entries.get(rel)
        if prior is not None and stat_cache.trusted(prior) and prior[:5] == st:
            entries[rel] = prior
        else:
            stale.append((rel, st, prior))
    return entries, stale


def _recheck(
    stale: list[tuple[str, Stat, stat_cache.Entry | None]],
    hashed: Mapping[str, stat_cache.Entry],
) -> set[str]:
    """Paths the next capture compares whatever the watcher says: of those just
    hashed, the racily clean (read again, as on any capture) and those whose read
    failed (not in ``hashed``)."""
    found = set()
    for rel, _st, _prior in stale:
        entry = hashed.get(rel)
        if entry is None or not stat_cache.trusted(entry):
            found.add(rel)
    return found


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


def _why(exc: BaseException) -> str:
    return str(getattr(exc, "strerror", None) or exc)


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


def _stat_key(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
