"""Stores whose worktree was renamed or lost its ``.git`` (issue 21.5).

A store is found by a hash of its worktree's path (store/layout.py), so a
renamed worktree finds none, and a directory whose ``.git`` was deleted is
no worktree at all; in both cases the history is still on disk. Every store
records its worktree's path (its ``worktree`` file), and from that record
this module finds such a store, re-attaches it to the worktree's new path
(``adopt``), or writes the files of its newest snapshot back into a
directory that has no ``.git`` any more (``recover``). Neither ever creates
or touches a ``.git``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from snapshotter.config import stores_dir
from snapshotter.errors import BadInput, NotFound, NothingToDo, SnapshotterError, StoreError
from snapshotter.fileio import write_atomic
from snapshotter.git.worktree import Worktree
from snapshotter.history.state_file import STATE_FILE, load
from snapshotter.store import restore as restore_mod
from snapshotter.store.layout import all_store_roots, store_key
from snapshotter.store.shadow import Store


@dataclass(frozen=True)
class Found:
    """A store directory, the worktree path it records, and how many checkpoints it has."""

    root: Path
    worktree: Path
    checkpoints: int


@dataclass
class Recovered:
    """What ``recover`` wrote (or would write) and what it left alone."""

    worktree: Path
    tree: str
    written: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # bytes the store does not hold: left alone
    failed: list[str] = field(default_factory=list)  # a directory or a file in the way


def recorded_worktree(store_root: Path) -> Path | None:
    """The worktree path a store records (written byte-exact when it was made)."""
    try:
        raw = (store_root / "worktree").read_bytes().rstrip(b"\n")
    except OSError:
        return None
    return Path(os.fsdecode(raw)) if raw else None


def store_of_path(data_dir: Path, directory: str | os.PathLike[str]) -> Found | None:
    """The store recorded for ``directory`` or the nearest directory above it, git or not.

    The key is the hash of the path, so this costs one ``stat`` per level.
    """
    here = Path(directory).resolve()
    for path in (here, *here.parents):
        root = stores_dir(data_dir) / store_key(path)
        if (root / "git" / "HEAD").exists() and recorded_worktree(root) == path:
            return _found(root, path)
    return None


def stores_of_missing_worktrees(data_dir: Path, like: Path) -> list[Found]:
    """Stores with checkpoints whose recorded worktree no longer exists and whose newest
    snapshot looks like the directory ``like`` (a project deleted for good is not
    offered to every new worktree), newest first."""
    found = []
    for root in all_store_roots(data_dir):
        path = recorded_worktree(root)
        if path is not None and not path.is_dir():
            store = _found(root, path)
            if store.checkpoints and _looks_like(Store(root, _bare(path)), like):
                found.append(store)
    return sorted(found, key=lambda f: _mtime(f.root / STATE_FILE), reverse=True)


def _looks_like(store: Store, directory: Path) -> bool:
    """Whether most top-level names of the store's newest snapshot are in ``directory``
    (a renamed worktree has them all; only the top tree is read, so it costs little)."""
    try:
        tree = _tree(store, None, before=False)
        names = [os.fsdecode(n) for n in store.objects.tree_items(bytes.fromhex(tree))]
    except SnapshotterError:
        return False
    present = sum(os.path.lexists(directory / name) for name in names)
    return bool(names) and 2 * present >= len(names)


def adopt(data_dir: Path, worktree: Worktree, old: str | None) -> tuple[Path, Found]:
    """Re-attach the store of a worktree that was moved to ``worktree`` (its new path).

    The store directory is renamed to the new path's key and its record
    rewritten, under its lock; returns the old path and the store. Refused
    when ``worktree`` already has checkpoints of its own (they would be
    hidden); a store of it without any (a hook ran there first) is discarded.
    """
    new = worktree.root
    target = stores_dir(data_dir) / store_key(new)
    recorded = recorded_worktree(target)
    if recorded is not None and recorded != new and not recorded.is_dir():
        _write_record(target, new)  # an adopt killed between its rename and its record
        return recorded, _found(target, new)
    source = _source(data_dir, old, new)
    if source.root == target:
        raise NothingToDo(f"the store of {source.worktree} is already this worktree's")
    store = Store(source.root, _bare(source.worktree))
    with store.locked():
        _clear_target(target, new)
        try:
            os.rename(source.root, target)
        except OSError as exc:
            raise StoreError(f"cannot move the store {source.root}: {exc.strerror}") from exc
        _write_record(target, new)
    return source.worktree, _found(target, new)


def recover(
    data_dir: Path,
    directory: str | os.PathLike[str],
    checkpoint_id: int | None = None,
    *,
    before: bool = False,
    dry_run: bool = False,
) -> Recovered:
    """Write the files of the newest snapshot (or of checkpoint ``checkpoint_id``) back.

    Works without a ``.git``: the store is found by the directory's path.
    Only files are written, never removed; a file whose current bytes the
    store does not hold is left alone (``kept``), so nothing is ever lost.
    """
    found = store_of_path(data_dir, directory)
    if found is None:
        shown = Path(directory).resolve()
        raise NotFound(f"no snapshotter store records {shown} or a directory above it")
    store = Store(found.root, _bare(found.worktree))
    with store.locked():
        tree = _tree(store, checkpoint_id, before)
        result = Recovered(found.worktree, tree)
        writable = _writable(store, tree, result)
        if dry_run:
            result.written = writable
            return result
        done = restore_mod.restore(store, tree, writable, tolerant=True)
        result.written, result.failed = done.restored, [*result.failed, *done.failed]
    return result


def _tree(store: Store, checkpoint_id: int | None, before: bool) -> str:
    state = load(store)
    if checkpoint_id is not None:
        cp = state.by_id(checkpoint_id)
        if cp is None:
            raise NotFound(f"no checkpoint {checkpoint_id} in the store of {store.worktree.root}")
        return cp.before if before else cp.after
    if before:
        raise BadInput("--before needs a checkpoint ID")
    tree = store.last_tree() or (state.checkpoints[-1].after if state.checkpoints else None)
    if tree is None:
        raise NothingToDo(f"the store of {store.worktree.root} holds no snapshot yet")
    return tree


def _writable(store: Store, tree: str, result: Recovered) -> list[str]:
    """The paths of ``tree`` that differ here and may be written; the rest sorted into
    ``result``: a current file is overwritten only if the store holds its bytes."""
    root = store.worktree.root
    writable = []
    for rel in store.files_under(tree, ""):
        try:
            restore_mod.check_path(rel)
            now = restore_mod.current(root, rel)
        except (OSError, SnapshotterError):
            result.failed.append(rel)
            continue
        target = store.entry(tree, rel)
        if now == target:
            continue
        if now is None or store.objects.has(now[1]):
            writable.append(rel)
        else:
            result.kept.append(rel)
    return writable


def _source(data_dir: Path, old: str | None, new: Path) -> Found:
    """The store to adopt: the one recording ``old``, else the one whose worktree is gone
    and which looks like ``new``."""
    if old is not None:
        return _named(data_dir, old)
    gone = stores_of_missing_worktrees(data_dir, new)
    if not gone:
        raise NothingToDo(
            "no store of a worktree that no longer exists; name the old path: "
            "snapshotter adopt OLD_PATH"
        )
    if len(gone) > 1:
        shown = ", ".join(str(f.worktree) for f in gone[:5])
        raise BadInput(
            f"several stores of worktrees that no longer exist ({shown}); name one: "
            "snapshotter adopt OLD_PATH"
        )
    return gone[0]


def _named(data_dir: Path, old: str) -> Found:
    wanted = {Path(os.path.abspath(old)), Path(old).resolve()}
    if any(p.is_dir() for p in wanted):
        raise SnapshotterError(
            f"{old} still exists; adopt moves the history of a worktree that was moved away"
        )
    for root in all_store_roots(data_dir):
        recorded = recorded_worktree(root)
        if recorded is not None and recorded in wanted:
            return _found(root, recorded)
    raise NotFound(f"no snapshotter store records the worktree {old}")


def _clear_target(target: Path, new: Path) -> None:
    """Make room at ``target``: refuse if the worktree has checkpoints there, else discard it."""
    if not (target / "git" / "HEAD").exists():
        return
    mine = _found(target, new)
    if mine.checkpoints:
        raise SnapshotterError(
            f"{new} already has {mine.checkpoints} checkpoint(s) of its own, which adopt "
            f"would hide; remove its store ({target}) first if they are not needed"
        )
    aside = target.with_name(f".{target.name}.discarded-{os.urandom(6).hex()}")
    try:
        os.rename(target, aside)  # out of every lookup at once, then deleted
    except OSError as exc:
        raise StoreError(f"cannot replace the empty store {target}: {exc.strerror}") from exc
    import shutil  # (bz2 and lzma with it: only for a store discarded)

    shutil.rmtree(aside, ignore_errors=True)


def _write_record(store_root: Path, worktree: Path) -> None:
    write_atomic(store_root / "worktree", os.fsencode(worktree) + b"\n", durable=True)


def _found(root: Path, worktree: Path) -> Found:
    try:
        count = len(load(Store(root, _bare(worktree))).checkpoints)
    except SnapshotterError:
        count = 0
    return Found(root, worktree, count)


def _bare(path: Path) -> Worktree:
    """A worktree value for a path with no usable ``.git``: the store reads and writes
    files by path only (restore), never through the git dir named here."""
    return Worktree(path, path / ".git", path / ".git", "")


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
