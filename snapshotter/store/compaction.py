"""Compacting a store, in proportion to what is new, given the trees that are live.

Live objects are everything reachable from the live trees the caller names
(history/maintenance.py: what checkpoints, pending spans, redo entries and
the stat cache name). What is packed stays
packed (issue 16.7: rewriting every live object with libgit2's delta search
took 25-40 s on a large store, with nothing to do as much as after a day's
work). A gc writes one new pack of

- the live loose objects;
- the live objects of each pack whose unreachable share of bytes passes
  GARBAGE_SHARE: that pack then goes, and with it the bytes of what retention
  dropped (when the store is over its size budget, any unreachable byte will do);
- the live objects of the small packs the geometric rule rolls up: a pack
  stays as it is while it holds GEOMETRIC times as many objects as all smaller
  packs and the new objects together. The store keeps a few packs of growing
  size, and an object is rewritten a few times in its life, not on every gc.

Old packs' entries are copied as they are stored (``packwriter.copy_pack``):
no delta search, no recompression. A gc with nothing new reads the live set
and the pack indexes and writes nothing. The new pack is written under a
temp name and renamed into place; only then are the old files deleted. A gc
killed at any point leaves the old objects, the new pack, or both: never less.

Files with more than one link are shared with the source repository (a
seeded capture hard-links its packs and loose objects): they cost the store
nothing, so gc keeps those holding live objects as they are, never copies
them, and counts no shared byte. Once the source deletes its name the file
is the store's alone and is compacted like any other.

Hooks never wait for gc (issue 13.13): the store lock is held only to read
the live set and to swap files, a few milliseconds; the packs are written
without it, in a scratch directory outside ``objects/pack`` (which every
``Store.open`` cleans), and moved in under the lock after re-checking that
nothing a capture made live meanwhile is about to be deleted. One gc runs
per store at a time (``gc.lock``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from snapshotter.errors import StoreError
from snapshotter.git import packs as packwriter
from snapshotter.git.loose import loose_id
from snapshotter.git.objects import ObjectDB, ObjectError
from snapshotter.git.pack_index import object_count, read_pack_index
from snapshotter.store.layout import file_lock
from snapshotter.store.object_files import (
    Shared,
    drop_loose,
    glance,
    is_shared,
    move_in,
    own_loose_objects,
    own_pack_indexes,
    settle_records,
    shared_files,
    size,
    work_dir,
)

# A pack is rewritten (its live objects copied) once this share of its bytes
# is unreachable: at most about a third more than its live bytes is kept, and
# each byte copied frees at least a third of a byte.
GARBAGE_SHARE = 0.25
# A pack stays while it holds this many times the objects of all smaller packs
# and the new objects together: each object is copied about log2(store / new)
# times in its life, and a store of N objects has at most about log2(N) packs.
GEOMETRIC = 2


class StoreLike(Protocol):
    """What compaction needs of a store (store/shadow.py's Store): its directory,
    its objects and its lock. Compaction sits below the capture that calls it."""

    root: Path
    objects: ObjectDB

    def locked(self) -> AbstractContextManager[object]: ...

    def reopen(self) -> None: ...


LiveTrees = Callable[[], set[str]]  # the live trees now, read under the store lock


@dataclass
class Compaction:
    """What one compaction did (gc's report, less what retention dropped)."""

    store: str
    live_trees: int = 0
    objects_kept: int = 0  # live objects, wherever they are stored
    objects_written: int = 0  # into new packs
    packs_rewritten: int = 0  # old packs whose live objects were copied, then deleted
    bytes_before: int = 0
    bytes_after: int = 0
    reason: str = ""  # why nothing (or not everything) was done

    @property
    def freed(self) -> int:
        return max(0, self.bytes_before - self.bytes_after)


@contextlib.contextmanager
def only_gc(store: StoreLike, *, wait: bool) -> Iterator[bool]:
    """One gc per store at a time; a bounded one does not queue behind another."""
    lock = file_lock(store.root / "gc.lock", timeout=-1 if wait else 0)
    try:
        lock.acquire()
    except TimeoutError:  # layout.LockTimeout (filelock.Timeout where there is no flock)
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


@dataclass(eq=False)
class _Pack:
    """One of the store's own packs, as its index lists it."""

    files: list[Path]  # every file of the pack, .idx first
    entries: list[tuple[int, bytes, int]]  # (offset, id, crc32), by offset
    size: int  # bytes of the .pack file

    @property
    def pack(self) -> Path:
        return self.files[0].with_suffix(".pack")

    @functools.cached_property
    def ids(self) -> frozenset[bytes]:
        return frozenset(oid for _offset, oid, _crc in self.entries)

    def dead_bytes(self, live: set[bytes]) -> int:
        """Bytes of the entries no live tree reaches (each entry ends where the next starts)."""
        ends = [offset for offset, _oid, _crc in self.entries[1:]] + [self.size - 20]
        return sum(
            end - offset
            for (offset, oid, _crc), end in zip(self.entries, ends, strict=True)
            if oid not in live
        )


@dataclass
class _Plan:
    """What one pass read under the store lock: the live trees and the store's files."""

    trees: set[str]
    packs: list[_Pack]
    loose: list[Path]
    shared: list[Shared]


@dataclass
class _Job:
    """What one pass writes and deletes."""

    packs: list[_Pack]  # their live objects copied, then deleted
    loose: list[Path]  # the store's own loose objects: the live ones written, all deleted
    unused: list[Shared]  # shared files holding nothing live: our name goes
    wanted: set[bytes]  # live ids to write: held by no pack or shared file that stays

    @property
    def idle(self) -> bool:
        return not (self.packs or self.loose or self.unused)


def read_plan(store: StoreLike, trees: set[str]) -> _Plan:
    """What a pass works from: the live trees given (read under the store lock) and the
    store's packs, loose objects and shared files."""
    objects = store.root / "git" / "objects"
    return _Plan(trees, _own_packs(objects), own_loose_objects(objects), shared_files(objects))


def _own_packs(objects: Path) -> list[_Pack]:
    """The packs only the store holds, with a readable index (any other stays as it is)."""
    found = []
    for idx, files in own_pack_indexes(objects / "pack"):
        index = read_pack_index(idx, tables=True)
        try:
            size = os.stat(idx.with_suffix(".pack")).st_size
        except OSError:
            continue
        if index is None or not len(index):
            continue
        found.append(_Pack(files, index.entries(), size))
    return found


def idle_reason(plan: _Plan) -> str:
    """Why a bounded gc can leave the store as it is; "" when there is work worth doing.

    A bounded (session_end) gc leaves the store alone unless retention dropped
    something, the store is over its size budget (both the caller's to know),
    there are ``packs.LOOSE_PACK_AT`` loose objects, or the geometric rule
    would roll packs up.
    """
    counts = [len(p.entries) for p in plan.packs]
    if _worth_a_pass(len(plan.loose), counts):
        return ""
    return f"only {len(plan.loose)} loose objects, and {len(counts)} packs in proportion"


def _worth_a_pass(loose: int, pack_counts: list[int]) -> bool:
    """The bounded gc's own rule: ``packs.LOOSE_PACK_AT`` loose objects, or packs the
    geometric rule rolls up."""
    return loose >= packwriter.LOOSE_PACK_AT or bool(_rolled(sorted(pack_counts), 0))


def due(objects: Path) -> bool:
    """Whether a bounded gc would compact anything here (``idle_reason`` says ""), or
    clear what a killed write left: from directory listings and the packs' index
    headers alone, without the store lock, so that session_end leaves a store with
    nothing to do alone instead of starting a gc process for it.
    """
    loose, leftovers = glance(objects)
    if leftovers:
        return True
    if len(loose) >= packwriter.LOOSE_PACK_AT:  # shared ones (seeded) are not the store's
        loose = [path for path in loose if not is_shared(path)]
    counts = [object_count(idx) for idx, _files in own_pack_indexes(objects / "pack")]
    return _worth_a_pass(len(loose), [n for n in counts if n is not None])


def _rolled(counts: list[int], new: int) -> int:
    """How many of the smallest packs (``counts``, ascending) go into the new pack.

    A pack stays while it holds GEOMETRIC times the objects of all smaller
    ones and the ``new`` objects together; the last that does not, and every
    pack below it, are rolled up. So a gc with nothing new rolls nothing up
    unless captures left packs out of proportion.
    """
    split, below = 0, new
    for i, count in enumerate(counts):
        if count < GEOMETRIC * below:
            split = i + 1
        below += count
    return split


def _job(plan: _Plan, live: set[bytes], share: float) -> _Job:
    """The packs to rewrite: those with enough garbage, then what the geometric rule rolls up.

    An object a shared file holds is garbage in the store's own packs: the
    shared copy costs nothing.
    """
    shared = set().union(*(s.ids & live for s in plan.shared))
    mine = live - shared if shared else live
    garbage = [p for p in plan.packs if p.dead_bytes(mine) > share * p.size]
    loose_ids = {loose_id(path) for path in plan.loose}
    new = len(loose_ids & mine) + sum(len(p.ids & mine) for p in garbage)
    rest = sorted((p for p in plan.packs if p not in garbage), key=lambda p: len(p.entries))
    packs = garbage + rest[: _rolled([len(p.entries) for p in rest], new)]
    stays = set(shared)
    for kept in rest[len(packs) - len(garbage) :]:
        stays |= kept.ids
    wanted = loose_ids & mine
    for pack in packs:
        wanted |= pack.ids & mine
    return _Job(packs, plan.loose, [s for s in plan.shared if not s.ids & live], wanted - stays)


def _freed_estimate(job: _Job, live: set[bytes]) -> int:
    """About what the job frees: the unreachable entries of the packs it rewrites, and
    the unreachable loose objects (shared files cost the store nothing)."""
    total = sum(pack.dead_bytes(live) for pack in job.packs)
    for path in job.loose:
        with contextlib.suppress(OSError):
            total += 0 if loose_id(path) in live else path.stat().st_size
    return total


def estimate(store: StoreLike, plan: _Plan, share: float, report: Compaction) -> None:
    """What a pass would keep and free, changing nothing (``gc --dry-run``)."""
    live = _live_objects(store, plan.trees)
    job = _job(plan, live, share)
    report.live_trees, report.objects_kept = len(plan.trees), len(live)
    report.bytes_after = report.bytes_before - _freed_estimate(job, live)


def compact_pass(
    store: StoreLike, report: Compaction, share: float, live: LiveTrees, plan: _Plan | None = None
) -> None:
    """One new pack of what is new and of the packs worth rewriting; then the old files go.

    ``plan``: what was read under the store lock, if it was just read. The
    pack is written without the lock; the swap re-checks under it.
    """
    objects = store.root / "git" / "objects"
    if plan is None:
        with store.locked():
            plan = read_plan(store, live())
    alive = _live_objects(store, plan.trees)
    job = _job(plan, alive, share)
    report.live_trees, report.objects_kept = len(plan.trees), len(alive)
    if job.idle:
        report.reason = report.reason or "nothing new to pack"
        report.bytes_after = size(objects)
        return
    work = work_dir(store.root)
    try:
        report.objects_written += _write_pack(store, job, work)
        with store.locked():
            new_names = move_in(work, objects / "pack")
            keep = _still_needed(store, plan, job, alive, live)
            settle_records(store.root)
            _delete_old(job, keep, new_names)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report.packs_rewritten += len(job.packs)
    store.reopen()
    report.bytes_after = size(objects)


def _still_needed(
    store: StoreLike, plan: _Plan, job: _Job, packed: set[bytes], live: LiveTrees
) -> set[Path]:
    """Files about to go that hold objects which became live while the pack was written.

    A capture meanwhile may name an old object again without writing it (the
    stat cache, or libgit2 finding it present). Only trees not seen before
    are walked, and only down to the subtrees already packed.
    """
    fresh = live() - plan.trees
    if not fresh:
        return set()
    needed = _live_objects(store, fresh, known=packed)
    keep = {path for path in job.loose if loose_id(path) in needed}
    for pack in job.packs:
        if needed & pack.ids:
            keep.update(pack.files)
    for shared in job.unused:
        if needed & shared.ids:
            keep.update(shared.files)
    return keep


def _delete_old(job: _Job, keep: set[Path], new_names: set[str]) -> None:
    # One pack at a time, .idx first: a kill leaves at most one lone .pack,
    # which is invisible to readers and cleaned on the next open.
    packs = [p.files for p in job.packs]
    packs += [
        sorted(s.files, key=lambda p: p.suffix != ".idx")
        for s in job.unused
        if s.files[0].parent.name == "pack"
    ]
    for files in packs:
        for path in files:
            if path.name not in new_names and path not in keep:
                path.unlink(missing_ok=True)
    loose = [p for p in job.loose if p not in keep]
    loose += [
        s.files[0]
        for s in job.unused
        if s.files[0].parent.name != "pack" and s.files[0] not in keep
    ]
    drop_loose(loose)


def _write_pack(store: StoreLike, job: _Job, work: Path) -> int:
    """The job's wanted objects as one pack in ``work``; returns the count."""
    loose = sorted(oid for oid in map(loose_id, job.loose) if oid in job.wanted)
    try:
        return packwriter.copy_pack(
            work, [(p.pack, job.wanted) for p in job.packs], loose, store.objects.read
        )
    except (ObjectError, KeyError, ValueError) as exc:
        raise StoreError(f"gc stopped, nothing deleted: {exc}") from exc


def _live_objects(
    store: StoreLike, trees: Iterable[str], known: set[bytes] | frozenset[bytes] = frozenset()
) -> set[bytes]:
    """Raw ids of the live trees and of every tree and blob below them (blobs unread).

    Trees in ``known`` are skipped with all below them (already accounted for).
    """
    try:
        return store.objects.reachable(trees, known)
    except ObjectError as exc:
        raise StoreError(f"gc stopped, nothing deleted: {exc}") from exc
