"""Compacting a store with pygit2 alone, never dropping what a live checkpoint needs.

Live objects are everything reachable from a tree that a checkpoint, a
pending span, a redo entry or the stat cache names. They are written into one
new pack (libgit2 writes it under a temp name and renames it into place);
only then are the old packs and loose objects deleted. A gc killed at any
point leaves the old objects, the new pack, or both: never less.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from snapshotter import manifest as manifest_io
from snapshotter.engine import Engine
from snapshotter.errors import StoreError
from snapshotter.state import load
from snapshotter.store import Store

_LOOSE_DIR = re.compile(r"^[0-9a-f]{2}$")
_PACK_FILE = re.compile(r"^pack-[0-9a-f]{40}\.(pack|idx|rev)$")
# Below this many loose objects a bounded (session_end) gc does nothing.
LOOSE_THRESHOLD = 256
SCRATCH = "gc-scratch"


@dataclass
class GcReport:
    store: str
    live_trees: int
    objects_kept: int
    bytes_before: int
    bytes_after: int
    skipped: str = ""  # why nothing was done, when nothing was

    @property
    def freed(self) -> int:
        return max(0, self.bytes_before - self.bytes_after)


def collect(engine: Engine, *, budget_s: float | None = None, dry_run: bool = False) -> GcReport:
    """Pack live objects and drop the rest; with a budget, only when worth it."""
    return collect_store(engine.store, budget_s=budget_s, dry_run=dry_run)


def collect_store(store: Store, *, budget_s: float | None = None,
                  dry_run: bool = False) -> GcReport:
    objects = store.root / "git" / "objects"
    with store.locked():
        remove_orphans(objects)
        before = _size(objects)
        loose = _loose_objects(objects)
        trees = _live_trees(store)
        report = GcReport(str(store.root), len(trees), 0, before, before)
        if budget_s is not None and len(loose) < LOOSE_THRESHOLD:
            report.skipped = f"only {len(loose)} loose objects"
            return report
        if dry_run:
            report.objects_kept = _count_reachable(store, trees)
            report.skipped = "dry run"
            return report
        started = time.monotonic()
        old_packs = [p for p in (objects / "pack").glob("pack-*") if _PACK_FILE.match(p.name)]
        report.objects_kept, new_names = _write_pack(store, trees)
        if budget_s is not None and time.monotonic() - started > budget_s:
            # The pack is in place and complete; deleting the old copies can wait.
            report.skipped = "time budget spent; old objects are removed next time"
            report.bytes_after = _size(objects)
            return report
        for path in old_packs:
            if path.name not in new_names:
                path.unlink(missing_ok=True)
        for path in loose:
            path.unlink(missing_ok=True)
        for sub in objects.iterdir():
            if _LOOSE_DIR.match(sub.name):
                with contextlib.suppress(OSError):
                    sub.rmdir()
        store.reopen()
        report.bytes_after = _size(objects)
        return report


def _live_trees(store: Store) -> set[str]:
    trees = load(store).live_trees()
    cached = manifest_io.load(store.root / "manifest").tree
    if cached:
        trees.add(cached)  # the stat cache reuses its blobs without re-reading files
    return trees


def _write_pack(store: Store, trees: set[str]) -> tuple[int, set[str]]:
    """Pack every live object; returns the count and the new pack's file names.

    The pack is built in a scratch directory and moved in (``.pack`` before
    ``.idx``, which is what makes it visible), so a pack identical to an old
    one is recognised by name and never deleted as "old".
    """
    import pygit2

    if not trees:
        return 0, set()
    pack_dir = store.root / "git" / "objects" / "pack"
    scratch = pack_dir / SCRATCH
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    builder = pygit2.PackBuilder(store.repo)
    try:
        for tree in sorted(trees):
            builder.add_recur(pygit2.Oid(hex=tree))
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


def _loose_objects(objects: Path) -> list[Path]:
    found: list[Path] = []
    for sub in objects.iterdir():
        if _LOOSE_DIR.match(sub.name):
            found.extend(p for p in sub.iterdir() if len(p.name) == 38)
    return found


def remove_orphans(objects: Path) -> int:
    """Temp files of killed writes and packs without an index: never valid, never needed."""
    removed = 0
    pack_dir = objects / "pack"
    if pack_dir.is_dir():
        shutil.rmtree(pack_dir / SCRATCH, ignore_errors=True)
        names = set(os.listdir(pack_dir))
        for name in names:
            stem, _, ext = name.rpartition(".")
            orphan = not _PACK_FILE.match(name) or (ext == "pack" and f"{stem}.idx" not in names)
            if orphan and not name.endswith(".keep"):
                (pack_dir / name).unlink(missing_ok=True)
                removed += 1
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
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total
