"""Knowing that nothing changed without walking the worktree (Linux inotify).

A long-lived process (the hook server, or a runtime that calls ``enable()``)
keeps one inotify watch per directory the last full scan entered. Any event
in any of them, a lost-event overflow, or a failed watch means "walk again";
only a capture that saw no event at all since the last full scan reuses that
scan's tree. Nothing here decides *what* changed: the answer is only ever
"nothing" or "don't know", so a missed optimisation costs a walk, never a
wrong snapshot.

Limits, on purpose: only local filesystems (network and FUSE mounts do not
report other machines' writes), and not for writes made through ``mmap``
(inotify never reports those; git's fsmonitor shares the blind spot).
Restores and the CLI always walk: only processes that opt in use this.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# <sys/inotify.h>
_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_ONLYDIR = 0x1000000
_IN_DONT_FOLLOW = 0x2000000
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = 0o2000000
_MASK = (
    _IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE
    | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR | _IN_DONT_FOLLOW
)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, name length (name bytes follow)

# Filesystems whose changes, from any process on this machine, reach inotify.
LOCAL_FILESYSTEMS = frozenset({
    "ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs", "overlay", "jfs",
    "reiserfs", "bcachefs", "ramfs", "nilfs2",
})
MAX_WATCHERS = 8  # one inotify instance each; the kernel allows 128 per user

_enabled = False
_watchers: OrderedDict[str, Watcher] = OrderedDict()


def enable(on: bool = True) -> None:
    """Let this process's captures skip the walk when inotify saw nothing change.

    Worth it only in a process that captures the same worktree many times.
    """
    global _enabled
    _enabled = on


def enabled() -> bool:
    return _enabled


def for_worktree(root: Path) -> Watcher | None:
    """This process's watcher for ``root``; None when disabled or unsupported here."""
    if not _enabled:
        return None
    key = str(root)
    watcher = _watchers.get(key)
    if watcher is not None and not watcher.broken:
        _watchers.move_to_end(key)
        return watcher
    if watcher is not None:
        watcher.close()
        del _watchers[key]
    watcher = Watcher.create(root)
    if watcher is None:
        return None
    _watchers[key] = watcher
    while len(_watchers) > MAX_WATCHERS:
        _watchers.popitem(last=False)[1].close()
    return watcher


def close_all() -> None:
    while _watchers:
        _watchers.popitem()[1].close()


@dataclass(frozen=True)
class Remembered:
    """A full scan's answer: valid while no event arrives and ``files`` still match ``env``."""

    generation: int
    files: tuple[str, ...]  # rule files outside the watched directories
    env: tuple[Any, ...]  # their stat data before the walk
    tree: str
    skipped: dict[str, Any]


class Watcher:
    """One inotify instance over the directories of one worktree."""

    def __init__(self, fd: int, add_watch: Any) -> None:
        self._fd = fd
        self._add_watch = add_watch
        self.generation = 0
        self.broken = False
        self._memory: dict[tuple[Any, ...], Remembered] = {}

    @classmethod
    def create(cls, root: Path) -> Watcher | None:
        if not sys.platform.startswith("linux") or filesystem_type(root) not in LOCAL_FILESYSTEMS:
            return None
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            init, add_watch = libc.inotify_init1, libc.inotify_add_watch
        except (OSError, AttributeError):
            return None
        add_watch.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        add_watch.restype = ctypes.c_int
        fd = init(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None  # out of inotify instances: walk as usual
        return cls(fd, add_watch)

    def watch_dir(self, path: str) -> None:
        """Watch ``path`` (call before listing it, so no change slips in between)."""
        if self.broken:
            return
        if self._add_watch(self._fd, os.fsencode(path), _MASK) < 0:
            # Out of watches (ENOSPC), permissions, or the directory went: this
            # scan's answer cannot be trusted later, so stop trusting any.
            self.broken = True

    def poll(self) -> int | None:
        """Drain pending events; the generation (bumped by any event), None if unusable."""
        if self.broken:
            return None
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                self.broken = True
                return None
            if not data:
                break
            # Which event it was does not matter: every one means "walk again"
            # (overflow and removed watches included).
            self.generation += 1
            self._memory.clear()
        return self.generation

    def recall(self, key: tuple[Any, ...], generation: int | None) -> Remembered | None:
        found = self._memory.get(key)
        if found is None or generation is None or found.generation != generation:
            return None
        return found

    def remember(self, key: tuple[Any, ...], answer: Remembered) -> None:
        if not self.broken:
            self._memory[key] = answer

    def close(self) -> None:
        self.broken = True
        self._memory.clear()
        with contextlib.suppress(OSError):
            os.close(self._fd)


def filesystem_type(path: Path) -> str | None:
    """The type of the filesystem ``path`` lives on, from /proc/self/mountinfo."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    target = str(path)
    best, best_type = "", None
    for line in lines:
        fields = line.split(" ")
        try:
            dash = fields.index("-")
            mount_point = _unescape(fields[4])
            fs_type = fields[dash + 1]
        except (ValueError, IndexError):
            continue
        inside = target == mount_point or target.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) >= len(best):
            best, best_type = mount_point, fs_type
    return best_type


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    if "\\" not in field:
        return field
    return field.encode().decode("unicode_escape").encode("latin-1").decode(errors="replace")
