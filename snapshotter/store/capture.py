"""One capture of a worktree: what it is asked (``CaptureOptions``), what it returns
(``Capture``), and the object that takes it (``Snapshot``).

``take`` is the entry every capture goes through (``Workspace.capture``, and
the hook server capturing for a command it forked: remote.py): under the
store lock, behind the refusal memo (refusals.py), with every failure made
CaptureFailed rather than a stale snapshot. The work is one ``Snapshot``
object per capture, as jj's working-copy snapshotter is one object per
snapshot: it holds the options, the store, the walk's result (and so the
skips) and the stat cache it compares with, and each step is a method:

    walk, all of it or only what the watcher saw change (resident.py, walk.py)
    → compare with the stat cache (stat_cache.py) → read what moved into blobs
    (seeding.py, blobs.py) → write trees → record the stat cache → pack loose
    objects once there are many.

Over 400 lines on purpose: one object's steps, each short; split across
modules they would hand the same capture state around.

A killed restore's temp files are not special here (#13.4: a user's file may
look like one): the journal names them and recovery removes them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from snapshotter.config import DEFAULT_MAX_FILES, DEFAULT_MAX_NEW_FILE_SIZE, sessions_dir
from snapshotter.errors import CaptureFailed, NotAProject, StoreError, TooManyFiles
from snapshotter.git import packs as packwriter
from snapshotter.git import trees as treebuild
from snapshotter.git.kinds import TREE
from snapshotter.git.objects import ObjectError
from snapshotter.store import blobs, records, refusals, stat_cache
from snapshotter.store.shadow import Store
from snapshotter.store.signature import RACY_WINDOW_NS
from snapshotter.store.skips import Skip
from snapshotter.store.walk import ScanResult, Stat, rescan, scan

if TYPE_CHECKING:
    # Only a process holding a Resident imports it (and watch.py): not a hook on its own.
    from snapshotter.store.resident import Watched

# A stale path: (path, its stat data now, its cached entry or None).
Stale = tuple[str, Stat, stat_cache.Entry | None]


@dataclass(frozen=True)
class CaptureOptions:
    """What a capture is asked: one value from the engine down to the hook server.

    ``excluded`` holds absolute paths never entered (our own store, should the
    data directory lie in the worktree); ``guard`` refuses what looks like a
    home directory (walk.py): a restore's safety capture turns it off, the
    way back is never refused.
    """

    max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE
    excluded: frozenset[str] = frozenset()
    max_files: int | None = DEFAULT_MAX_FILES
    guard: bool = True

    @classmethod
    def for_store(
        cls,
        store_root: Path,
        max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE,
        max_files: int | None = DEFAULT_MAX_FILES,
    ) -> CaptureOptions:
        """The options of a capture into the store at ``store_root``, our own files excluded."""
        data = store_root.parent.parent
        excluded = frozenset({str(store_root.parent), str(sessions_dir(data))})
        return cls(max_new_file_size, excluded, max_files)


MAX_IGNORED_SEEN = 1000  # more ignored paths than this: none kept (state.json holds them)


@dataclass
class Capture:
    """One snapshot: its tree id, the files left out of it (with why), and the ignored
    paths its walk passed by (``name/``: a directory; None: unknown, or too many)."""

    tree: str
    skipped: dict[str, Skip] = field(default_factory=dict)
    started: int = 0  # time.time_ns() before the walk: what predates it was there before
    ignored: list[str] | None = None


def seen_ignored(found: Collection[str]) -> list[str] | None:
    """A walk's ignored paths as a capture keeps them (#26.3): sorted, or None past the cap."""
    return sorted(found) if len(found) <= MAX_IGNORED_SEEN else None


def take(store: Store, options: CaptureOptions) -> Capture:
    """Snapshot ``store``'s worktree scope; raises CaptureFailed rather than go stale."""
    with store.locked():
        root, worktree = store.root, store.worktree
        refused = refusals.check(root, worktree, options.max_files) if options.guard else False
        try:
            capture = Snapshot(store, options).take()
        except (NotAProject, TooManyFiles) as exc:
            refusals.remember(root, worktree, str(exc), options.max_files)
            raise
        except ObjectError as exc:
            raise CaptureFailed(str(exc)) from exc
        except OSError as exc:
            raise CaptureFailed(f"{exc.strerror or exc}: {exc.filename or ''}") from exc
        finally:
            _drop_kept_index()
        if refused:  # a refusal is over once a capture went through
            refusals.clear(root)
        return capture


def _drop_kept_index() -> None:
    """A first capture's walk may keep the source index's entries for seeding
    (``_walk``); what seeding did not take goes with the capture. Looked up, not
    imported: a capture that read no index never loaded the module."""
    index = sys.modules.get("snapshotter.git.index")
    if index is not None:
        index.drop_entries()


class Snapshot:
    """One capture under way, the store lock held (see the module doc)."""

    old: stat_cache.Manifest  # the stat cache as the last capture left it
    result: ScanResult  # this capture's walk; its ``skipped`` are the capture's skips

    def __init__(self, store: Store, options: CaptureOptions) -> None:
        self.store = store
        self.options = options
        self.worktree = store.worktree
        self.manifest = store.root / "manifest"
        self.started = time.time_ns()  # before the walk: what predates it was there before
        # Walks are remembered per scope and settings; the guard only refuses.
        key = (self.worktree.scope, options.max_new_file_size, options.excluded, options.max_files)
        resident = store.resident
        self.watched = None if resident is None else resident.watched(self.worktree, key, store.has)
        # A watching process keeps the manifest in memory while nobody else writes it.
        self.kept = (
            resident.manifests if resident is not None and self.watched is not None else None
        )

    def take(self) -> Capture:
        """The capture pipeline, one named step each."""
        watched = self.watched
        if watched is not None and watched.unchanged:
            watched.again()  # nothing happened since
            assert watched.last is not None
            scan = watched.last.scan
            return Capture(
                watched.last.tree, dict(scan.skipped), self.started, seen_ignored(scan.ignored)
            )
        self.old = old = self._stat_cache()
        self.result = result = self._walk(watched)
        last = watched.last if watched is not None else None
        if (
            last is not None
            and result.touched is not None
            and old.serial == last.serial  # the manifest this process wrote with that walk
            and self._extends()
        ):
            tree, recheck = self._capture_changes(last.recheck)
        else:
            tree, recheck = self._capture_all()
        if watched is not None:
            watched.keep(tree, result, old.serial, recheck)
        return Capture(tree, dict(result.skipped), self.started, seen_ignored(result.ignored))

    def _stat_cache(self) -> stat_cache.Manifest:
        """The stat cache, unless it names a tree the store lacks (a crash took it,
        issue 28.4): its blob ids cannot be trusted then, and every file is read."""
        old = stat_cache.load(self.manifest, self.kept)
        if old.tree is not None and not self.store.has(old.tree):
            return stat_cache.Manifest()
        return old

    def _walk(self, watched: Watched | None) -> ScanResult:
        """Only the directories the watcher saw change, if it can say; else everything."""
        options = self.options
        on_dir = watched.watcher.watch_dir if watched is not None else None
        if watched is not None and watched.last is not None:
            changed_dirs = {watched.watcher.relative(d) for d in watched.last.dirty}
            result = rescan(
                self.worktree,
                watched.last.scan,
                changed_dirs,
                previous=self.old.entries,
                max_new_file_size=options.max_new_file_size,
                excluded=options.excluded,
                max_files=options.max_files,
                on_dir=on_dir,
                changed_files=watched.last.changed,
                reuse=self.old.entries,
            )
            if result is not None:
                return result
        if not self.old.entries:  # a first capture: seeding reads the index the walk reads
            from snapshotter.git.index import keep_entries

            keep_entries()
        on_file = None if watched is None else watched.watcher.file_watcher(len(self.old.entries))
        try:
            return scan(
                self.worktree,
                previous=self.old.entries,
                max_new_file_size=options.max_new_file_size,
                excluded=options.excluded,
                index_cache=self.store.root / "source-index.cache",
                max_files=options.max_files,
                on_dir=on_dir,
                guard=options.guard,
                reuse=self.old.entries,
                on_file=on_file,
            )
        except BaseException:
            if watched is not None and on_file is not None:
                # The file watches this walk added would outlive it (a refused tree
                # can hold many): they go with the watcher, the next capture starts anew.
                watched.watcher.close()
            raise

    def _capture_all(self) -> tuple[str, set[str]]:
        """Every walked path compared with the manifest; (tree, paths to look at again)."""
        old, result = self.old, self.result
        # Nobody keeps this walk (``drain``): its stat data lives on in ``entries`` and
        # ``stale``, and a first capture of 500k files need not hold it twice.
        entries, stale = _reuse_unchanged(old, result, drain=self.kept is None)
        changed, written = self._hash_stale(stale, entries)
        # Only a watcher looks again where the walk will not (a CLI capture needs none).
        recheck = _recheck(stale, entries) if self.watched is not None else set()
        self._keep_out_of_scope(entries)
        removed = [rel for rel in old.entries if rel not in entries]
        tree, trees, trees_written = self._trees(entries, [*changed, *removed])
        loose = self._pack_if_many(old.loose + written + trees_written)
        moved = len(stale) + len(removed)
        if not old.entries or moved > max(len(entries) // 2, 4 * stat_cache.CHUNK):
            # Most of it is new (a first capture): a new base, not a delta as big.
            del stale
            old.tree, old.entries, old.trees, old.loose = tree, entries, trees, loose
            stat_cache.save(self.manifest, old, self.kept)
            self._share(entries)
            return tree, recheck
        delta = stat_cache.Delta(
            tree,
            {rel: entries[rel] for rel, _st, _prior in stale if rel in entries},
            removed,
            {d: oid for d, oid in trees.items() if old.trees.get(d) != oid},
            [d for d in old.trees if d not in trees],
            loose,
        )
        self._record(delta)
        self._share(entries)
        return tree, recheck

    def _capture_changes(self, recheck: Collection[str]) -> tuple[str, set[str]]:
        """Only the paths the walk redid (and those left to look at again) compared,
        hashed and written: ``old`` is the manifest of the walk ``result`` redid."""
        old, result = self.old, self.result
        touched = result.touched or set()
        stale: list[Stale] = []
        removed = []
        for rel in touched.union(recheck):
            st = result.entries.get(rel)
            prior = old.entries.get(rel)
            if st is None:
                if prior is not None:
                    removed.append(rel)
            elif not stat_cache.unchanged(prior, st):
                stale.append((rel, records.unpacked(st), prior))
        hashed: dict[str, stat_cache.Entry] = {}
        store = self.store
        tree, trees, trees_removed = old.tree or "", {}, []
        # The new blobs and trees are written together at the block's end: one pack
        # when there are enough (git/held.py), before ``_record`` names them.
        with store.objects.held() as held:
            changed, _written = self._hash_stale(stale, hashed)
            self._share(hashed, whole=False)
            removed += [rel for rel, _st, prior in stale if rel not in hashed and prior is not None]
            edits: dict[str, tuple[int, bytes] | None] = {rel: None for rel in removed}
            edits.update((rel, records.mode_and_id(entry)) for rel, entry in changed.items())
            if edits:
                ids = treebuild.edit_ids(
                    tree, edits, store.tree_items, store.put_tree, store.objects.keep_tree
                )
                if ids[""] is None:
                    ids[""] = store.put(TREE, b"")  # nothing left: the empty tree, stored
                trees = {d: oid for d, oid in ids.items() if oid is not None}
                trees_removed = [d for d, oid in ids.items() if oid is None]
                tree = trees[""].hex()
        loose = self._pack_if_many(old.loose + held.loose)
        self._record(stat_cache.Delta(tree, hashed, removed, trees, trees_removed, loose))
        return tree, _recheck(stale, hashed)

    def _share(self, now: Mapping[str, stat_cache.Entry], *, whole: bool = True) -> None:
        """A watching process keeps this walk beside the stat cache: one record a path
        (resident.py's ``share``); ``now``: the cache's entries this capture wrote."""
        if self.kept is not None:
            from snapshotter.store.resident import share

            share(self.result, self.old.entries, now, whole=whole)

    def _extends(self) -> bool:
        """Whether trees can be edited from ``old``'s: its root tree is whole and stored."""
        old = self.old
        return (
            old.tree is not None
            and old.trees.get("") == bytes.fromhex(old.tree)
            and self.store.has(old.tree)
        )

    def _record(self, delta: stat_cache.Delta) -> None:
        """Write ``delta`` (and apply it to ``old``), unless nothing changed."""
        old = self.old
        if (
            delta.entries
            or delta.removed
            or delta.trees
            or delta.trees_removed
            or delta.tree != old.tree
            or delta.loose != old.loose
        ):
            stat_cache.record(self.manifest, old, delta, self.kept)

    def _hash_stale(
        self, stale: list[Stale], entries: dict[str, stat_cache.Entry]
    ) -> tuple[dict[str, stat_cache.Entry], int]:
        """Blob ids for the files whose stat data moved: seeded or packed in bulk,
        else one by one. Adds them to ``entries``; (what changed, loose objects written)."""
        known = self._many_ids(stale)
        changed: dict[str, stat_cache.Entry] = {}
        written = 0
        skipped, objects, root = self.result.skipped, self.store.objects, self.worktree.root
        racy_from = self.started - RACY_WINDOW_NS
        for rel, st, prior in stale:
            skipped.pop(rel, None)  # a failed read last time: read again now
            oid = known.get(rel)
            if oid is None:
                oid = blobs.hash_path(objects, root, rel, st[0], skipped)
                written += oid is not None
            if oid is None:
                continue
            entry = stat_cache.entry(st, oid, racy=st[2] >= racy_from)
            entries[rel] = entry
            if prior is None or records.mode(prior) != st[0] or records.oid(prior) != oid:
                changed[rel] = entry
        return changed, written

    def _many_ids(self, stale: Sequence[Stale]) -> dict[str, bytes]:
        """Blob ids for a large batch: from the source index where git vouches, else packed."""
        if len(stale) < blobs.BULK_MIN_FILES:
            return {}
        from snapshotter.store.seeding import seed

        store = self.store
        known = seed(store.root / "git", self.worktree, {rel: st for rel, st, _prior in stale})
        store.reopen()
        rest = [item for item in stale if item[0] not in known]
        if len(rest) >= blobs.BULK_MIN_FILES:
            known.update(blobs.bulk(store.objects, self.worktree.root, rest))
        return known

    def _keep_out_of_scope(self, entries: dict[str, stat_cache.Entry]) -> None:
        """A scoped capture walks its subtree only: the rest stays as last captured."""
        if self.worktree.scope:
            for rel, entry in self.old.entries.items():
                if not self.worktree.in_scope(rel):
                    entries[rel] = entry

    def _trees(
        self, entries: dict[str, stat_cache.Entry], paths: list[str]
    ) -> tuple[str, dict[str, bytes], int]:
        """The root tree of ``entries``: the last one when nothing moved, else rebuilt
        above ``paths``; (root tree, directory → tree id, loose objects written)."""
        old = self.old
        if old.tree is not None and not paths and old.trees and self.store.has(old.tree):
            return old.tree, old.trees, 0
        return self._write_trees(entries, paths)

    def _write_trees(
        self, entries: dict[str, stat_cache.Entry], paths: list[str]
    ) -> tuple[str, dict[str, bytes], int]:
        """(root tree, directory -> tree id, loose objects written) for ``entries``.

        With the previous build's ids at hand only the trees above ``paths``
        are hashed and written (loose: a few per capture); otherwise every
        tree is, into one pack.
        """
        store = self.store
        if self._extends():
            root, trees, ids = treebuild.update(
                entries, self.old.trees, paths, read=records.mode_and_id
            )
            for _oid, data in trees:
                store.put(TREE, data)
            return root.hex(), ids, len(trees)
        root, trees, ids = treebuild.build(entries, read=records.mode_and_id)
        objects = ((oid, TREE, data) for oid, data in trees)
        # Stored, not compressed: a tree is mostly 20-byte ids, zlib took a tenth of
        # a first capture at 10k files to save a quarter of the trees' bytes.
        packwriter.write_pack(store.root / "git" / "objects" / "pack", objects, level=0)
        store.reopen()
        return root.hex(), ids, 0

    def _pack_if_many(self, loose: int) -> int:
        """Loose objects into one pack, so many small checkpoints cost bytes, not blocks.

        Each loose object takes a whole filesystem block: a one-line edit
        four levels deep wrote ~24 KB before. Returns the new loose count.
        """
        if loose < packwriter.LOOSE_PACK_AT:
            return loose
        from snapshotter.store import loose_packing

        try:
            # The count is an estimate (a gc may have packed them since): check first.
            found = loose_packing.count_loose_objects(self.store)
            if found < packwriter.LOOSE_PACK_AT:
                return found
            loose_packing.pack_loose_objects(self.store)
        except (StoreError, OSError):
            return packwriter.LOOSE_PACK_AT // 2  # the capture stands; packing is tried later
        return 0


def _reuse_unchanged(
    old: stat_cache.Manifest, result: ScanResult, *, drain: bool
) -> tuple[dict[str, stat_cache.Entry], list[Stale]]:
    """Entries whose stat data still matches the cache (trusted without a read), and the
    rest as (path, stat data now, cached entry or None): those are hashed. ``drain``:
    empty ``result.entries`` on the way, each record freed once looked at."""
    entries: dict[str, stat_cache.Entry] = {}
    stale = []
    walked, cached, unchanged = result.entries, old.entries.get, stat_cache.unchanged
    at, untrusted = records.MTIME_BYTES, stat_cache.UNTRUSTED_BYTES
    for rel in list(walked) if drain else walked:
        st = walked.pop(rel) if drain else walked[rel]
        prior = cached(rel)
        # The walk hands on the cache's own entry where every field matched (walk.py's
        # ``reuse``): only its trust is left to check, inline (no call a path).
        if (st is prior and prior[at] != untrusted) or unchanged(prior, st):
            entries[rel] = prior  # type: ignore[assignment]  # (not None: unchanged)
        else:
            stale.append((rel, records.unpacked(st), prior))
    if drain:
        result.entries = {}  # (a fresh table: the drained one keeps its size)
    return entries, stale


def _recheck(stale: list[Stale], hashed: Mapping[str, stat_cache.Entry]) -> set[str]:
    """Paths the next capture compares whatever the watcher says: of those just
    hashed, the racily clean (read again, as on any capture) and those whose read
    failed (not in ``hashed``)."""
    found = set()
    for rel, _st, _prior in stale:
        entry = hashed.get(rel)
        if entry is None or not stat_cache.trusted(entry):
            found.add(rel)
    return found
