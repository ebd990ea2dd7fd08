"""Compacting a store with pygit2 alone, never dropping what a live checkpoint needs.

Live objects are everything reachable from a tree that a checkpoint, a
pending span, a redo entry or the stat cache names. They are written into one
new pack (libgit2 writes it under a temp name and renames it into place);
only then are the old packs and loose objects deleted. A gc killed at any
point leaves the old objects, the new pack, or both: never less.

Files with more than one link are shared with the source repository (a
seeded capture hard-links its packs and loose objects): they cost the store
nothing, so gc keeps those holding live objects as they are, never copies
them, and counts no shared byte. Once the source deletes its name the file
is the store's alone and is compacted like any other.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from snapshotter import manifest as manifest_io
from snapshotter import packwriter
from snapshotter.engine import Engine
from snapshotter.errors import StoreError
from snapshotter.packwriter import clean_pack_dir
from snapshotter.retention import (
    Dropped,
    Policy,
    apply_age_and_count,
    drop_session,
    oldest_droppable,
)
from snapshotter.state import State, load, save
from snapshotter.store import Store

_LOOSE_DIR = re.compile(r"^[0-9a-f]{2}$")
_PACK_FILE = re.compile(r"^pack-[0-9a-f]{40}\.(pack|idx|rev)$")
# A bounded (session_end) gc rewrites the whole store only when retention
# dropped something, the store is over its size budget, or there are more
# than PACK_THRESHOLD packs: a full repack recompresses every live object,
# which takes tens of seconds on a large worktree. Otherwise it only packs
# the loose objects (from LOOSE_THRESHOLD of them; below that it does nothing).
LOOSE_THRESHOLD = 256
PACK_THRESHOLD = 32
SCRATCH = "gc-scratch"


@dataclass
class GcReport:
    store: str
    live_trees: int = 0
    objects_kept: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    dropped: Dropped = field(default_factory=Dropped)
    skipped: str = ""  # why nothing (or not everything) was done

    @property
    def freed(self) -> int:
        return max(0, self.bytes_before - self.bytes_after)


def collect(engine: Engine, *, budget_s: float | None = None, dry_run: bool = False,
            policy: Policy | None = None) -> GcReport:
    """Apply retention, pack live objects, drop the rest; bounded by ``budget_s``."""
    return collect_store(engine.store, budget_s=budget_s, dry_run=dry_run, policy=policy)


def collect_store(store: Store, *, budget_s: float | None = None, dry_run: bool = False,
                  policy: Policy | None = None) -> GcReport:
    policy = policy or Policy()
    try:
        return _collect(store, budget_s, dry_run, policy)
    except OSError as exc:  # a permission, disk or lock failure: one clear error, not a crash
        raise StoreError(f"gc stopped: {exc}") from exc


def _collect(store: Store, budget_s: float | None, dry_run: bool, policy: Policy) -> GcReport:
    objects = store.root / "git" / "objects"
    with store.locked():
        remove_orphans(objects)
        state = load(store)
        report = GcReport(str(store.root), bytes_before=_size(objects))
        report.dropped = apply_age_and_count(state, policy)
        loose = _loose_objects(objects)
        packs = sum(not _is_shared(idx.with_suffix(".pack"))
                    for idx in (objects / "pack").glob("pack-*.idx"))
        over = (policy.max_store_bytes is not None and report.bytes_before > policy.max_store_bytes
                and oldest_droppable(state) is not None)  # else a repack frees nothing more
        light = budget_s is not None and not (
            over or report.dropped.checkpoints or packs > PACK_THRESHOLD
        )
        if light and len(loose) < LOOSE_THRESHOLD:
            report.skipped = f"only {len(loose)} loose objects and {packs} packs"
            report.bytes_after = report.bytes_before
            return report
        if dry_run:
            trees = _live_trees(store, state)
            report.live_trees, report.objects_kept = len(trees), _count_reachable(store, trees)
            report.bytes_after = report.bytes_before
            report.skipped = "dry run: nothing changed"
            return report
        if light:
            _pack_loose(store, report, loose)
            return report
        save(store, state)  # records go before the objects they named
        deadline = None if budget_s is None else time.monotonic() + budget_s
        _repack(store, state, report, loose)
        while (
            policy.max_store_bytes is not None
            and report.bytes_after > policy.max_store_bytes
            and (deadline is None or time.monotonic() < deadline)
        ):
            victim = oldest_droppable(state)
            if victim is None:
                report.skipped = "over the size budget, but only the newest session is left"
                break
            drop_session(state, victim, report.dropped)
            save(store, state)
            _repack(store, state, report, _loose_objects(objects))
        return report


def _repack(store: Store, state: State, report: GcReport, loose: list[Path]) -> None:
    """One pack of everything live; then the old packs and loose objects go.

    Shared files holding a live object stay, and their objects stay out of
    the new pack; shared files holding none lose our name (which frees nothing
    now, but would cost the whole file once the source drops its own).
    """
    objects = store.root / "git" / "objects"
    trees = _live_trees(store, state)
    old_packs = [p for p in (objects / "pack").glob("pack-*") if _PACK_FILE.match(p.name)]
    shared = _shared_files(objects)
    live = _live_objects(store, trees) if shared else set()
    kept = [s for s in shared if s.ids & live]
    in_kept = {oid for s in kept for oid in s.ids & live}
    report.live_trees = len(trees)
    written, new_names = _write_pack(store, trees, live - in_kept if shared else None)
    report.objects_kept = written + len(in_kept)
    keep = {path for s in kept for path in s.files}
    # One pack at a time, .idx before .pack: a kill leaves at most one lone
    # .pack, which is invisible to readers and cleaned on the next open.
    by_pack = sorted(old_packs, key=lambda p: (p.name.rpartition(".")[0], p.suffix != ".idx"))
    for path in by_pack:
        if path.name not in new_names and path not in keep:
            path.unlink(missing_ok=True)
    _drop_loose(loose)
    unused = [p for s in shared for p in s.files if p not in keep]
    _drop_loose([p for p in unused if p.parent.name != "pack"])
    store.reopen()
    report.bytes_after = _size(objects)


def _drop_loose(loose: list[Path]) -> None:
    """Delete loose objects (already packed) and the fan-out dirs left empty."""
    for path in loose:
        path.unlink(missing_ok=True)
    for sub in {p.parent for p in loose}:
        with contextlib.suppress(OSError):
            sub.rmdir()


def _pack_loose(store: Store, report: GcReport, loose: list[Path]) -> None:
    """The quick gc: loose objects (live or not) into one new pack; older packs stay.

    Written by ``packwriter`` (no delta search, fast zlib): libgit2's pack
    builder spends seconds on deltas, too long for session_end; the next full
    gc recompresses with deltas anyway.
    """
    import pygit2

    objects = store.root / "git" / "objects"
    odb = store.repo.odb

    def read() -> Iterator[tuple[bytes, int, bytes]]:
        for path in sorted(loose):
            oid = path.parent.name + path.name
            kind, data = odb.read(oid)
            yield bytes.fromhex(oid), int(kind), data

    try:
        report.objects_kept = packwriter.write_pack(objects / "pack", read())
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise StoreError(f"gc stopped, nothing deleted: {exc}") from exc
    _drop_loose(loose)
    store.reopen()
    report.bytes_after = _size(objects)
    report.skipped = "packed the loose objects only; a full gc frees the rest"


def _live_trees(store: Store, state: State) -> set[str]:
    trees = state.live_trees()
    cached = manifest_io.load(store.root / "manifest").tree
    if cached:
        trees.add(cached)  # the stat cache reuses its blobs without re-reading files
    return trees


def _write_pack(
    store: Store, trees: set[str], only: set[bytes] | None = None
) -> tuple[int, set[str]]:
    """Pack every live object; returns the count and the new pack's file names.

    ``only``: the raw ids to pack when not all of them (shared files hold the
    rest). The pack is built in a scratch directory and moved in (``.pack``
    before ``.idx``, which is what makes it visible), so a pack identical to
    an old one is recognised by name and never deleted as "old".
    """
    import pygit2

    if not trees or only == set():
        return 0, set()
    pack_dir = store.root / "git" / "objects" / "pack"
    scratch = pack_dir / SCRATCH
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    builder = pygit2.PackBuilder(store.repo)
    try:
        if only is None:
            for tree in sorted(trees):
                builder.add_recur(pygit2.Oid(hex=tree))
        else:
            for raw in sorted(only):
                builder.add(pygit2.Oid(raw=raw))  # this object alone, not what it names
        builder.write(str(scratch))
    except (pygit2.GitError, KeyError, ValueError) as exc:
        shutil.rmtree(scratch, ignore_errors=True)
        raise StoreError(f"gc stopped, nothing deleted: {exc}") from exc
    names = {p.name for p in scratch.iterdir() if _PACK_FILE.match(p.name)}
    for name in sorted(names, key=lambda n: n.endswith(".idx")):
        os.replace(scratch / name, pack_dir / name)
    shutil.rmtree(scratch, ignore_errors=True)
    return int(builder.written_objects_count), names


def _count_reachable(store: Store, trees: set[str]) -> int:
    import pygit2

    seen: set[str] = set()
    stack = [pygit2.Oid(hex=t) for t in trees]
    while stack:
        oid = stack.pop()
        if str(oid) in seen:
            continue
        seen.add(str(oid))
        obj = store.repo.get(oid)
        if isinstance(obj, pygit2.Tree):
            stack.extend(entry.id for entry in obj)
    return len(seen)


def _live_objects(store: Store, trees: set[str]) -> set[bytes]:
    """Raw ids of the live trees and of every tree and blob below them (blobs unread)."""
    import pygit2

    found: set[bytes] = set()
    stack = [pygit2.Oid(hex=t) for t in trees]
    try:
        while stack:
            oid = stack.pop()
            if oid.raw in found:
                continue
            found.add(oid.raw)
            tree = store.repo[oid]
            if not isinstance(tree, pygit2.Tree):
                raise StoreError(f"gc stopped, nothing deleted: {oid} is not a tree")
            for entry in tree:
                if entry.filemode == pygit2.enums.FileMode.TREE:
                    stack.append(entry.id)
                elif entry.filemode != pygit2.enums.FileMode.COMMIT:
                    found.add(entry.id.raw)
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise StoreError(f"gc stopped, nothing deleted: {exc}") from exc
    return found


@dataclass(frozen=True)
class _Shared:
    """A pack (its .idx and .pack) or loose object the source repository links too."""

    files: tuple[Path, ...]
    ids: frozenset[bytes]


def _shared_files(objects: Path) -> list[_Shared]:
    """Shared packs (with a readable v2 index) and loose objects.

    A shared pack whose index cannot be read is treated as the store's own:
    its live objects are copied, which is safe, only not free.
    """
    found: list[_Shared] = []
    for idx in (objects / "pack").glob("pack-*.idx"):
        pack = idx.with_suffix(".pack")
        index = packwriter.read_pack_index(idx) if _is_shared(pack) else None
        if index is not None:
            found.append(_Shared((idx, pack), frozenset(index.names())))
    for path in _all_loose(objects):
        if _is_shared(path):
            found.append(_Shared((path,), frozenset({bytes.fromhex(path.parent.name + path.name)})))
    return found


def _is_shared(path: Path) -> bool:
    """More than one name for the file: the source repository still holds it too."""
    try:
        return os.lstat(path).st_nlink > 1
    except OSError:
        return False


def _loose_objects(objects: Path) -> list[Path]:
    """The loose objects the store alone holds; shared ones stay as they are."""
    return [p for p in _all_loose(objects) if not _is_shared(p)]


def _all_loose(objects: Path) -> list[Path]:
    found: list[Path] = []
    for sub in objects.iterdir():
        if _LOOSE_DIR.match(sub.name):
            found.extend(p for p in sub.iterdir() if len(p.name) == 38)
    return found


def remove_orphans(objects: Path) -> int:
    """Temp files of killed writes and packs without an index: never valid, never needed."""
    removed = clean_pack_dir(objects / "pack")
    for sub in objects.iterdir() if objects.is_dir() else []:
        if _LOOSE_DIR.match(sub.name):
            for p in sub.iterdir():
                if p.name.startswith("tmp_"):
                    p.unlink(missing_ok=True)
                    removed += 1
        elif sub.is_file() and sub.name.startswith("tmp_"):
            sub.unlink(missing_ok=True)
            removed += 1
    return removed


def _size(path: Path) -> int:
    """Bytes only the store holds: files with one link.

    A file shared with the source repository costs no disk while the source
    keeps its name, so neither gc's report nor the size budget counts it.
    """
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(dirpath, name))
                total += st.st_size if st.st_nlink == 1 else 0
    return total


def count_loose_objects(store: Store) -> int:
    return len(_loose_objects(store.root / "git" / "objects"))


def pack_loose_objects(store: Store) -> int:
    """Pack every loose object now; the caller holds the store lock. Returns how many.

    Captures call this so a long session of small checkpoints does not pay a
    filesystem block per object until the next gc.
    """
    loose = _loose_objects(store.root / "git" / "objects")
    if not loose:
        return 0
    report = GcReport(str(store.root))
    _pack_loose(store, report, loose)
    return report.objects_kept
