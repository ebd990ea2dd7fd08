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

Hooks never wait for gc (issue 13.13): the store lock is held only to read
the live set and to swap files, a few milliseconds; the packs are written
without it, in a scratch directory outside ``objects/pack`` (which every
``Store.open`` cleans), and moved in under the lock after re-checking that
nothing a capture made live meanwhile is about to be deleted. One gc runs
per store at a time (``gc.lock``); session_end starts it as a detached
process (``start_detached``) and never waits for it.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from snapshotter.engine import Engine
from snapshotter.errors import StoreError
from snapshotter.git import packs as packwriter
from snapshotter.git.packs import clean_pack_dir
from snapshotter.history import sessions as session_scope
from snapshotter.history.records import State, load, save
from snapshotter.history.retention import (
    Dropped,
    Policy,
    apply_age_and_count,
    drop_session,
    oldest_droppable,
)
from snapshotter.store import stat_cache as manifest_io
from snapshotter.store.shadow import Store, file_lock

_LOOSE_DIR = re.compile(r"^[0-9a-f]{2}$")
_PACK_FILE = re.compile(r"^pack-[0-9a-f]{40}\.(pack|idx|rev)$")
# A bounded (session_end) gc rewrites the whole store only when retention
# dropped something, the store is over its size budget, or there are more
# than PACK_THRESHOLD packs: a full repack recompresses every live object,
# which takes tens of seconds on a large worktree. Otherwise it only packs
# the loose objects (from LOOSE_THRESHOLD of them; below that it does nothing).
LOOSE_THRESHOLD = 256
PACK_THRESHOLD = 32
SCRATCH = "gc-scratch"  # in objects/pack: only where older versions left it
WORK = "gc-work"  # in the store root: packs being written without the store lock


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
        if dry_run:  # changes nothing, so it needs no turn (and leaves no lock file)
            return _collect(store, budget_s, dry_run, policy)
        with _only_gc(store, wait=budget_s is None) as mine:
            if not mine:
                return GcReport(str(store.root), skipped="another gc is running on this store")
            return _collect(store, budget_s, dry_run, policy)
    except OSError as exc:  # a permission, disk or lock failure: one clear error, not a crash
        raise StoreError(f"gc stopped: {exc}") from exc


@contextlib.contextmanager
def _only_gc(store: Store, *, wait: bool) -> Iterator[bool]:
    """One gc per store at a time; a bounded one does not queue behind another."""
    lock = file_lock(store.root / "gc.lock", timeout=-1 if wait else 0)
    try:
        lock.acquire()
    except TimeoutError:  # filelock.Timeout is one
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


def _collect(store: Store, budget_s: float | None, dry_run: bool, policy: Policy) -> GcReport:
    objects = store.root / "git" / "objects"
    with store.locked():  # a short hold: read, apply retention, write the records
        remove_orphans(objects)
        if not dry_run:
            _remove_stale_work(store)
        state = load(store)
        report = GcReport(str(store.root), bytes_before=_size(objects))
        report.dropped = apply_age_and_count(state, policy)
        if report.dropped.checkpoints and not dry_run:
            save(store, state)  # records go before the objects they named
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
        live = _live_objects(store, trees)
        report.live_trees, report.objects_kept = len(trees), len(live)
        report.bytes_after = report.bytes_before - _unreachable_bytes(objects, live)
        report.skipped = "dry run: nothing changed"
        return report
    if light:
        _pack_loose(store, report, loose)
        return report
    deadline = None if budget_s is None else time.monotonic() + budget_s
    _repack(store, report)
    while (
        policy.max_store_bytes is not None
        and report.bytes_after > policy.max_store_bytes
        and (deadline is None or time.monotonic() < deadline)
    ):
        with store.locked():
            state = load(store)
            victim = oldest_droppable(state)
            if victim is not None:
                drop_session(state, victim, report.dropped)
                save(store, state)
        if victim is None:
            report.skipped = "over the size budget, but only the newest session is left"
            break
        _repack(store, report)
    return report


@dataclass
class _Plan:
    """What one repack read under the store lock: the live trees and the old files."""

    trees: set[str]
    old_packs: list[Path]
    loose: list[Path]
    shared: list[_Shared]


def _repack(store: Store, report: GcReport) -> None:
    """One pack of everything live; then the old packs and loose objects go.

    Shared files holding a live object stay, and their objects stay out of
    the new pack; shared files holding none lose our name (which frees nothing
    now, but would cost the whole file once the source drops its own).
    The pack is written without the store lock; the swap re-checks under it.
    """
    objects = store.root / "git" / "objects"
    with store.locked():
        plan = _Plan(
            _live_trees(store, load(store)),
            [p for p in (objects / "pack").glob("pack-*") if _PACK_FILE.match(p.name)],
            _loose_objects(objects),
            _shared_files(objects),
        )
    live = _live_objects(store, plan.trees)
    kept = [s for s in plan.shared if s.ids & live]
    in_kept = {oid for s in kept for oid in s.ids & live}
    report.live_trees = len(plan.trees)
    work = _work_dir(store)
    try:
        written = _write_pack(store, plan.trees, work, live - in_kept if plan.shared else None)
        with store.locked():
            new_names = _move_in(work, objects / "pack")
            keep = {path for s in kept for path in s.files}
            keep |= _still_needed(store, plan, live)
            _delete_old(plan, keep, new_names)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report.objects_kept = written + len(in_kept)
    store.reopen()
    report.bytes_after = _size(objects)


def _work_dir(store: Store) -> Path:
    """A fresh scratch directory of this writer's own: a capture packing its loose
    objects (under the store lock) and a gc writing (without it) never share one."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f"{WORK}-", dir=store.root))


def _remove_stale_work(store: Store) -> None:
    """Scratch directories of killed writers; only under both the gc and the store
    lock, when no other writer can be using one."""
    for path in store.root.glob(f"{WORK}-*"):
        shutil.rmtree(path, ignore_errors=True)


def _move_in(work: Path, pack_dir: Path) -> set[str]:
    """The written pack into ``objects/pack``, ``.pack`` before ``.idx`` (which makes it
    visible); a pack identical to an old one is recognised by name, never deleted."""
    names = {p.name for p in work.iterdir() if _PACK_FILE.match(p.name)}
    for name in sorted(names, key=lambda n: n.endswith(".idx")):
        os.replace(work / name, pack_dir / name)
    return names


def _still_needed(store: Store, plan: _Plan, packed: set[bytes]) -> set[Path]:
    """Old files holding objects that became live while the pack was written.

    A capture meanwhile may name an old object again without writing it (the
    stat cache, or libgit2 finding it present). Only trees not seen before
    are walked, and only down to the subtrees already packed.
    """
    fresh = _live_trees(store, load(store)) - plan.trees
    if not fresh:
        return set()
    needed = _live_objects(store, fresh, known=packed)
    keep: set[Path] = set()
    shared_loose = [p for s in plan.shared for p in s.files if p.parent.name != "pack"]
    for path in [*plan.loose, *shared_loose]:
        if bytes.fromhex(path.parent.name + path.name) in needed:
            keep.add(path)
    for idx in (p for p in plan.old_packs if p.suffix == ".idx"):
        index = packwriter.read_pack_index(idx)
        if index is None or needed & set(index.names()):
            keep |= {p for p in plan.old_packs if p.stem == idx.stem}
    return keep


def _delete_old(plan: _Plan, keep: set[Path], new_names: set[str]) -> None:
    # One pack at a time, .idx before .pack: a kill leaves at most one lone
    # .pack, which is invisible to readers and cleaned on the next open.
    by_pack = sorted(plan.old_packs, key=lambda p: (p.name.rpartition(".")[0], p.suffix != ".idx"))
    for path in by_pack:
        if path.name not in new_names and path not in keep:
            path.unlink(missing_ok=True)
    _drop_loose([p for p in plan.loose if p not in keep])
    unused = [p for s in plan.shared for p in s.files if p not in keep]
    _drop_loose([p for p in unused if p.parent.name != "pack"])


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
    gc recompresses with deltas anyway. Loose objects never change, so the
    pack is written without the store lock; it is moved in, and the loose
    copies deleted, under it.
    """
    import pygit2

    objects = store.root / "git" / "objects"
    odb = store.objects.repo.odb

    def read() -> Iterator[tuple[bytes, int, bytes]]:
        for path in sorted(loose):
            oid = path.parent.name + path.name
            kind, data = odb.read(oid)
            yield bytes.fromhex(oid), int(kind), data

    work = _work_dir(store)
    try:
        try:
            report.objects_kept = packwriter.write_pack(work, read())
        except (pygit2.GitError, KeyError, ValueError) as exc:
            raise StoreError(f"gc stopped, nothing deleted: {exc}") from exc
        with store.locked():
            _move_in(work, objects / "pack")
            _drop_loose(loose)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    store.reopen()
    report.bytes_after = _size(objects)
    report.skipped = "packed the loose objects only; a full gc frees the rest"


def _live_trees(store: Store, state: State) -> set[str]:
    trees = state.live_trees()
    cached = manifest_io.load(store.root / "manifest").tree
    if cached:
        trees.add(cached)  # the stat cache reuses its blobs without re-reading files
    return trees


def _write_pack(store: Store, trees: set[str], work: Path, only: set[bytes] | None = None) -> int:
    """Pack every live object into ``work``; returns the count.

    ``only``: the raw ids to pack when not all of them (shared files hold the
    rest).
    """
    import pygit2

    if not trees or only == set():
        return 0
    builder = pygit2.PackBuilder(store.objects.repo)
    try:
        if only is None:
            for tree in sorted(trees):
                builder.add_recur(pygit2.Oid(hex=tree))
        else:
            for raw in sorted(only):
                builder.add(pygit2.Oid(raw=raw))  # this object alone, not what it names
        builder.write(str(work))
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise StoreError(f"gc stopped, nothing deleted: {exc}") from exc
    return int(builder.written_objects_count)


def _count_reachable(store: Store, trees: set[str]) -> int:
    import pygit2

    seen: set[str] = set()
    stack = [pygit2.Oid(hex=t) for t in trees]
    while stack:
        oid = stack.pop()
        if str(oid) in seen:
            continue
        seen.add(str(oid))
        obj = store.objects.repo.get(oid)
        if isinstance(obj, pygit2.Tree):
            stack.extend(entry.id for entry in obj)
    return len(seen)


def _live_objects(
    store: Store, trees: Iterable[str], known: set[bytes] | frozenset[bytes] = frozenset()
) -> set[bytes]:
    """Raw ids of the live trees and of every tree and blob below them (blobs unread).

    Trees in ``known`` are skipped with all below them (already accounted for).
    """
    import pygit2

    found: set[bytes] = set()
    stack = [pygit2.Oid(hex=t) for t in trees]
    try:
        while stack:
            oid = stack.pop()
            if oid.raw in found or oid.raw in known:
                continue
            found.add(oid.raw)
            tree = store.objects.repo[oid]
            if not isinstance(tree, pygit2.Tree):
                raise StoreError(f"gc stopped, nothing deleted: {oid} is not a tree")
            for entry in tree:
                if entry.filemode == pygit2.enums.FileMode.TREE:
                    stack.append(entry.id)
                elif entry.filemode != pygit2.enums.FileMode.COMMIT and entry.id.raw not in known:
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


def _unreachable_bytes(objects: Path, live: set[bytes]) -> int:
    """About what a full gc would free: dead loose objects, and packs' dead share.

    A pack's bytes are split evenly over its objects: an estimate, since
    deltas and compression make objects unequal (``gc --dry-run`` says so).
    """
    total = 0
    for path in _loose_objects(objects):
        with contextlib.suppress(ValueError, OSError):
            if bytes.fromhex(path.parent.name + path.name) not in live:
                total += path.stat().st_size
    for idx in (objects / "pack").glob("pack-*.idx"):
        pack = idx.with_suffix(".pack")
        index = None if _is_shared(pack) else packwriter.read_pack_index(idx)
        if index is None or not len(index):
            continue
        dead = len(index) - len(index.find(live))
        with contextlib.suppress(OSError):
            total += (pack.stat().st_size + idx.stat().st_size) * dead // len(index)
    return total


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


def start_detached(store: Store, *, budget_s: float, policy: Policy) -> None:
    """Run a bounded gc of ``store`` in a new process that outlives the caller.

    session_end must return within the runtime's budget (Claude Code kills a
    SessionEnd hook after 1.5 s; issue 11.4): it never waits for gc. The
    child has no stdio and its own session; its failures go to the log.
    """
    import subprocess

    data_dir = store.root.parent.parent
    argv = [sys.executable, "-m", "snapshotter", "--data-dir", str(data_dir), "gc",
            "-C", str(store.worktree.root), "--detached", "--budget-s", repr(budget_s),
            *_policy_args(policy)]
    subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True,
                     cwd="/")


def _policy_args(policy: Policy) -> list[str]:
    """The policy as ``snapshotter gc`` options (retention args always set all three)."""
    args = []
    if policy.max_age_days is not None:
        args += ["--max-age-days", repr(policy.max_age_days)]
    if policy.max_checkpoints is not None:
        args += ["--max-checkpoints", str(policy.max_checkpoints)]
    if policy.max_store_bytes is not None:
        args += ["--max-size", str(policy.max_store_bytes)]
    return args


def run_detached(data_dir: Path, directory: str, budget_s: float, policy: Policy) -> None:
    """The detached gc's body: nobody reads its output, so failures are logged."""
    from snapshotter.errors import SnapshotterError
    from snapshotter.store.logfile import append

    try:
        engine = Engine.open(directory, data_dir_path=data_dir, create=False)
        if engine is not None:
            collect_store(engine.store, budget_s=budget_s, policy=policy)
    except (SnapshotterError, OSError) as exc:
        append(data_dir, f"session_end gc: {exc}")


def drop_orphan_stores(data_dir: Path, max_age_days: float, *, dry_run: bool = False) -> list[Path]:
    """Delete the stores whose worktree is gone and that were idle ``max_age_days``.

    Throwaway clones and agent worktrees come and go; their stores would
    otherwise pile up forever (issue 13.19). A store whose worktree record
    cannot be read is kept: nothing says whose it is.
    """
    from snapshotter.engine import all_store_roots

    cutoff = time.time() - max_age_days * 86400
    dropped = []
    for root in all_store_roots(data_dir):
        if _worktree_present(root) is not False or _last_used(root) > cutoff:
            continue
        if dry_run or _drop_store(root):
            dropped.append(root)
    if not dry_run:  # where each session works: idle records go with the same age
        session_scope.forget_older_than(data_dir, max_age_days * 86400, time.time())
    return dropped


def _worktree_present(root: Path) -> bool | None:
    """Whether the store's worktree still exists there; None when the record is unreadable."""
    from snapshotter.errors import SnapshotterError
    from snapshotter.git.worktree import find_worktree

    try:
        recorded = (root / "worktree").read_text(encoding="utf-8", errors="surrogateescape")
    except OSError:
        return None
    path = recorded.rstrip("\n")
    if not path:
        return None
    try:
        return find_worktree(path).root == Path(path)
    except (SnapshotterError, OSError, ValueError):
        return False  # gone, or no longer a git worktree


def _last_used(root: Path) -> float:
    """When an event last wrote this store's records (gc's own locking does not count)."""
    newest = 0.0
    for name in ("state.json", "manifest", "worktree"):
        with contextlib.suppress(OSError):
            newest = max(newest, os.stat(root / name).st_mtime)
    return newest


def _drop_store(root: Path) -> bool:
    """Delete an orphan store under its lock, re-checked; renamed away first, so a
    killed delete never leaves a half store that looks like a real one."""
    import secrets

    import filelock

    try:
        with filelock.FileLock(str(root / "lock"), timeout=5.0):
            if _worktree_present(root) is not False:
                return False  # the worktree came back meanwhile
            trash = root.with_name(f".dropped-{root.name}-{secrets.token_hex(4)}")
            os.rename(root, trash)
    except (OSError, filelock.Timeout):
        return False
    shutil.rmtree(trash, ignore_errors=True)
    return True
