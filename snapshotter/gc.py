"""Compacting a store with pygit2 alone, never dropping what a live checkpoint needs.

Live objects are everything reachable from a tree that a checkpoint, a
pending span, a redo entry or the stat cache names. They are written into one
new pack (libgit2 writes it under a temp name and renames it into place);
only then are the old packs and loose objects deleted. A gc killed at any
point leaves the old objects, the new pack, or both: never less.
"""

from __future__ import annotations

import os
import re
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
        report.objects_kept = _write_pack(store, trees)
        if budget_s is not None and time.monotonic() - started > budget_s:
            # The pack is in place and complete; deleting the old copies can wait.
            report.skipped = "time budget spent; old objects are removed next time"
            report.bytes_after = _size(objects)
            return report
        new_packs = {p.name for p in (objects / "pack").glob("pack-*")} - {p.name for p in old_packs}
        for path in old_packs:
            if path.name not in new_packs:
                path.unlink(missing_ok=True)
        for path in loose:
            path.unlink(missing_ok=True)
        for sub in objects.iterdir():
            if _LOOSE_DIR.match(sub.name):
                try:
                    sub.rmdir()
                except OSError:
                    pass
        store.reopen()
        report.bytes_after = _size(objects)
        return report


def _live_trees(store: Store) -> set[str]:
    trees = load(store).live_trees()
    cached = manifest_io.load(store.root / "manifest").tree
    if cached:
        trees.add(cached)  # the stat cache reuses its blobs without re-reading files
    return trees


def _write_pack(store: Store, trees: set[str]) -> int:
    import pygit2

    if not trees:
        return 0
    builder = pygit2.PackBuilder(store.repo)
    try:
        for tree in sorted(trees):
            builder.add_recur(pygit2.Oid(hex=tree))
        builder.write(str(store.root / "git" / "objects" / "pack"))
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
        obj = store.repo.get(oid)
        if isinstance(obj, pygit2.Tree):
            stack.extend(entry.id for entry in obj)
    return len(seen)


def _loose_objects(objects: Path) -> list[Path]:
    found = []
    for sub in objects.iterdir():
        if _LOOSE_DIR.match(sub.name):
            found.extend(p for p in sub.iterdir() if len(p.name) == 38)
    return found


def remove_orphans(objects: Path) -> int:
    """Temp files of killed writes and packs without an index: never valid, never needed."""
    removed = 0
    pack_dir = objects / "pack"
    if pack_dir.is_dir():
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
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total
