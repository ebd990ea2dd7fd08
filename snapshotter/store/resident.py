"""A long-lived process's warm state: its watchers, its kept manifests, where captures go.

The hook server makes one ``Resident`` and hands it to every capture it runs
(``Engine.open(resident=...)`` puts it on the ``Store``). A process without
one (the CLI, a hook handled without the server) walks the worktree on every
capture and reads the stat cache from disk, as it always did. A command the
server forked holds a ``Resident`` with a ``forward`` and nothing else: its
captures go to the server, whose watcher knows what changed (store/remote.py),
and the inotify queues it inherited stay the server's to read.

Also here: what one capture asks of the watchers (``Resident.watched``), and
the stat checks that catch what inotify cannot see (hard links, sweeps).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from snapshotter.git.config import config_files, config_value
from snapshotter.git.ignore import global_excludes_file
from snapshotter.git.worktree import Worktree
from snapshotter.store import records, stat_cache, sweep, watch
from snapshotter.store.signature import Signature
from snapshotter.store.walk import ScanResult
from snapshotter.store.walk import index as walk_index

# A capture request's bytes to the server's reply; None when it cannot take it.
Forward = Callable[[bytes], "bytes | None"]
# Files with other hard links are re-checked by stat on every watched capture
# (a write through another name raises no event here); past this, just walk.
MAX_LINKED = 1000
# Files without watches of their own (more than the user's inotify allowance):
# each capture stats all of them (sweep.py: ~1.4 s of CPU per 500k files), so a
# write made only through a hard link created from outside shows in the checkpoint
# it belongs to.
# SNAPSHOTTER_SWEEP=N trades that for speed: N of them a capture, round robin, and
# such a write then shows a few captures late (a restore never overwrites it).
SWEEP_ENV = "SNAPSHOTTER_SWEEP"


def sweep_per_capture() -> int | None:
    """How many unwatched files a capture stats (None: all of them; see SWEEP_ENV)."""
    value = os.environ.get(SWEEP_ENV, "")
    return int(value) if value.isdigit() and int(value) > 0 else None


MAX_WATCHERS = 8  # one inotify instance each; the kernel allows 128 per user


class Resident:
    """What a long-lived process keeps between captures (see the module doc).

    ``forward``: a forked command's way to the server that forked it; such a
    process keeps no watchers or manifests of its own.
    """

    def __init__(self, *, forward: Forward | None = None) -> None:
        self.forward = forward
        self.watchers = Watchers() if forward is None else None
        self.manifests = stat_cache.Kept() if forward is None else None

    def close(self) -> None:
        """Close the watchers (their descriptors) and drop the kept manifests."""
        if self.watchers is not None:
            self.watchers.close()
        if self.manifests is not None:
            self.manifests.clear()

    def __enter__(self) -> Resident:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def watched(
        self, worktree: Worktree, key: tuple[object, ...], has: Callable[[str], bool]
    ) -> Watched | None:
        """What this process's watcher knows of ``worktree`` for a capture remembered
        under ``key``; None when nothing watches it. ``has``: whether a tree is stored."""
        watcher = None if self.watchers is None else self.watchers.for_worktree(worktree.root)
        if watcher is None or not watcher.poll():
            return None
        last = watcher.recall(key)
        watcher.forget(key)  # remembered again only if this capture succeeds
        if last is not None and (_signatures(last.files) != last.env or not has(last.tree)):
            last = None  # an ignore rule or the source index changed: walk everything
        if last is not None:
            root, scan = str(worktree.root), last.scan
            last.changed.update(_relinked(root, scan))
            if watcher.sweep:
                by_dir, share = walk_index(scan).files, sweep_per_capture()
                found, watcher.swept_at = sweep.swept(
                    root, scan.entries, by_dir, watcher.swept_at, share
                )
                last.changed.update(found)
            return Watched(watcher, key, last, last.files, last.env)
        files = _rule_files(worktree)
        return Watched(watcher, key, None, files, _signatures(files))  # before the walk


class Watchers:
    """A long-lived process's inotify watchers (watch.py), one per worktree, the
    newest MAX_WATCHERS.

    Thread-safe: the hook server serves worktrees from several threads.
    """

    def __init__(self) -> None:
        self._found: OrderedDict[str, watch.Watcher] = OrderedDict()
        self._unsupported: set[str] = set()
        self._lock = threading.Lock()

    def for_worktree(self, root: Path) -> watch.Watcher | None:
        """The watcher of ``root``; None when this filesystem cannot be watched."""
        with self._lock:
            return self._for_worktree(str(root), root)

    def _for_worktree(self, key: str, root: Path) -> watch.Watcher | None:
        watcher = self._found.get(key)
        if watcher is not None and not watcher.broken:
            self._found.move_to_end(key)
            return watcher
        if watcher is not None:
            watcher.close()
            del self._found[key]
            if watcher.out_of_watches:
                self._unsupported.add(key)  # each retry would add thousands of watches, then fail
                return None
        if key in self._unsupported:
            return None
        if not watch.supported(root):
            self._unsupported.add(key)  # a network mount stays one: no need to ask again
            return None
        watcher = watch.Watcher.create(root)
        if watcher is None:
            return None  # out of inotify instances, perhaps only for now
        self._found[key] = watcher
        while len(self._found) > MAX_WATCHERS:
            self._found.popitem(last=False)[1].close()
        return watcher

    def close(self) -> None:
        """Close every watcher (their descriptors go) and forget what was unsupported."""
        with self._lock:
            while self._found:
                self._found.popitem()[1].close()
            self._unsupported.clear()


@dataclass
class Watched:
    """One capture's view of the process's watcher (see watch.py)."""

    watcher: watch.Watcher
    key: tuple[object, ...]  # the capture's settings: walks are remembered per key
    last: watch.Remembered | None  # the previous walk, and what changed since
    files: tuple[str, ...]  # rule files outside the watched directories
    env: tuple[object, ...]  # their stat data before this capture's walk

    @property
    def unchanged(self) -> bool:
        """Nothing happened since the last walk: its tree is this capture's."""
        return self.last is not None and not self.last.dirty and not self.last.changed

    def again(self) -> None:
        """Keep the last walk for the next capture (this one changed nothing)."""
        assert self.last is not None
        self.watcher.remember(self.key, self.last)

    def keep(self, tree: str, result: ScanResult, serial: int, recheck: set[str]) -> None:
        """Remember this capture's walk for the next one: ``serial`` names the manifest
        state it wrote, ``recheck`` the paths the next compares whatever changed."""
        if result.nested or len(result.linked) > MAX_LINKED:
            return  # nested repositories have rule files of their own: those always walk
        if result.touched is None and result.dirs:  # a whole walk: one string a path
            next(iter(result.dirs.values())).ctx.tracked.share(result.entries)
            _trim()
        walk_index(result)  # so the next capture redoes directories, not the whole walk
        answer = watch.Remembered(self.files, self.env, tree, result)
        answer.serial, answer.recheck, answer.fresh = serial, recheck, result.touched
        self.watcher.remember(self.key, answer)


def share(
    result: ScanResult,
    cache: Mapping[str, stat_cache.Entry],
    now: Mapping[str, stat_cache.Entry],
    *,
    whole: bool,
) -> None:
    """Let a walk this process keeps hold the stat cache's own objects where they
    agree: its path strings, and its entry (walk.py's ``ScanResult``) for each file
    whose trusted entry is this capture's (``now``). ``whole``: a full walk, whose
    own strings and tuples then all go, not half of them (issue 24.5: 1.1 KB a
    path before); else only ``now``'s paths are taken in."""
    walked = result.entries
    if not whole:
        for rel, entry in now.items():
            if stat_cache.trusted(entry) and rel in walked:
                walked[rel] = entry
        return
    found: dict[str, records.Stat] = {}
    get, at, untrusted = now.get, records.MTIME_BYTES, stat_cache.UNTRUSTED_BYTES
    for rel, entry in cache.items():
        # (``now`` also holds what a scoped capture kept from outside its scope; the
        # trust check inline: stat_cache.trusted, one call a path less)
        if get(rel) is entry and entry[at] != untrusted and rel in walked:
            found[rel] = entry  # its Stat first (records.py)
    for rel, st in walked.items():
        if rel not in found:
            found[rel] = st
    result.entries = found


def _trim() -> None:
    """Hand the C heap's free pages back after a whole walk (glibc's ``malloc_trim``):
    the walk's and the loaded stat cache's tables, freed, stay in the heap otherwise
    and count in the server's resident memory for its whole life."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def _relinked(root: str, last: ScanResult) -> set[str]:
    """Hard-linked files changed through another name (no event here)."""
    entries = last.entries
    return {
        rel
        for rel in last.linked
        if records.signature_at(os.path.join(root, rel)) != records.signature(entries.get(rel, b""))
    }


def _rule_files(tree: Worktree) -> tuple[str, ...]:
    """Files outside the walked directories that decide what a walk keeps."""
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


def _signatures(paths: tuple[str, ...]) -> tuple[Signature | None, ...]:
    """Each path's signature (None when absent): any edit, create or delete shows."""
    return tuple(Signature.at(path, follow=True) for path in paths)
