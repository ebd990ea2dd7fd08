"""Knowing which directories changed without walking the worktree (Linux inotify).

A long-lived process (the hook server, or a runtime that calls ``enable()``)
keeps one inotify watch per directory a walk entered. An event names the
directory whose listing or files changed; only those are listed again
(``scan.rescan``), and with no event at all the last tree is reused. What
cannot be pinned to one directory — a lost-event overflow, a moved
directory, a ``.gitignore`` edit, a failed watch — means "walk everything",
so a missed case costs a walk, never a wrong snapshot.

Limits, on purpose: only local filesystems (network and FUSE mounts do not
report other machines' writes), and not for writes made through ``mmap``
(inotify never reports those; git's fsmonitor shares the blind spot).
Restores and the CLI always walk: only processes that opt in use this.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from snapshotter.scan import ScanResult

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
_IN_UNMOUNT = 0x2000
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ISDIR = 0x40000000
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
MAX_REMEMBERED = 4  # walks kept per worktree (one per scope and settings)

_enabled = False
_watchers: OrderedDict[str, Watcher] = OrderedDict()
_unsupported: set[str] = set()


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
        if watcher.out_of_watches:
            _unsupported.add(key)  # each retry would add thousands of watches, then fail
            return None
    if key in _unsupported:
        return None
    if not supported(root):
        _unsupported.add(key)  # a network mount stays one: no need to ask again
        return None
    watcher = Watcher.create(root)
    if watcher is None:
        return None  # out of inotify instances, perhaps only for now
    _watchers[key] = watcher
    while len(_watchers) > MAX_WATCHERS:
        _watchers.popitem(last=False)[1].close()
    return watcher


def close_all() -> None:
    while _watchers:
        _watchers.popitem()[1].close()
    _unsupported.clear()


@dataclass
class Remembered:
    """A walk's answer, and the directories changed since (absolute paths).

    Valid while ``files`` (rule files outside the watched directories) still
    match ``env``, their stat data taken before the walk.
    """

    files: tuple[str, ...]
    env: tuple[Any, ...]
    tree: str
    scan: ScanResult  # the walk itself, for scan.rescan
    dirty: set[str] = field(default_factory=set)


class Watcher:
    """One inotify instance over the directories of one worktree."""

    def __init__(self, fd: int, add_watch: Any, root: Path) -> None:
        self._fd = fd
        self._add_watch = add_watch
        self.root = str(root)
        self.broken = False
        self.out_of_watches = False  # the worktree has more directories than the limit
        self._paths: dict[int, str] = {}  # watch descriptor -> directory
        self._memory: dict[tuple[Any, ...], Remembered] = {}

    @classmethod
    def create(cls, root: Path) -> Watcher | None:
        if not supported(root):
            return None
        try:
            import ctypes  # here, not above: only a watching process pays for it

            libc = ctypes.CDLL(None, use_errno=True)
            init, add_watch = libc.inotify_init1, libc.inotify_add_watch
        except (OSError, AttributeError):
            return None
        add_watch.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        add_watch.restype = ctypes.c_int
        fd = init(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None  # out of inotify instances: walk as usual
        return cls(fd, add_watch, root)

    def watch_dir(self, path: str) -> None:
        """Watch ``path`` (call before listing it, so no change slips in between)."""
        if self.broken:
            return
        wd = self._add_watch(self._fd, os.fsencode(path), _MASK)
        if wd < 0:
            # Out of watches, permissions, or the directory went: this walk's
            # answer cannot be trusted later, so stop trusting any.
            import ctypes

            self.out_of_watches = ctypes.get_errno() == errno.ENOSPC
            self.close()
            return
        self._paths[wd] = path

    def poll(self) -> bool:
        """Drain pending events into every remembered walk; False if unusable."""
        if self.broken:
            return False
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return True
            except OSError:
                self.close()
                return False
            if not data:
                return True
            self._absorb(data)

    def _absorb(self, data: bytes) -> None:
        offset = 0
        while offset + _EVENT.size <= len(data):
            wd, mask, _cookie, size = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size : offset + _EVENT.size + size].rstrip(b"\0")
            offset += _EVENT.size + size
            if mask & _IN_IGNORED:  # the watch went with its directory (or was dropped)
                where = self._paths.pop(wd, None)
                for memory in self._memory.values():
                    if where is not None:
                        memory.dirty.add(where)
                continue
            where = self._paths.get(wd)
            if (
                where is None
                or mask & (_IN_Q_OVERFLOW | _IN_MOVE_SELF | _IN_UNMOUNT)
                or (mask & _IN_ISDIR and mask & (_IN_MOVED_FROM | _IN_MOVED_TO))
                or name == b".gitignore"
            ):
                # Lost events, a moved directory (every path below it is
                # stale) or new ignore rules: only a full walk is right.
                self._memory.clear()
                continue
            for memory in self._memory.values():
                memory.dirty.add(where)

    def relative(self, path: str) -> str:
        return "" if path == self.root else path[len(self.root) + 1 :]

    def recall(self, key: tuple[Any, ...]) -> Remembered | None:
        return self._memory.get(key)

    def remember(self, key: tuple[Any, ...], answer: Remembered) -> None:
        if self.broken:
            return
        self._memory.pop(key, None)
        self._memory[key] = answer  # newest last
        while len(self._memory) > MAX_REMEMBERED:
            del self._memory[next(iter(self._memory))]  # each holds a whole walk: bounded

    def forget(self, key: tuple[Any, ...]) -> None:
        self._memory.pop(key, None)

    def close(self) -> None:
        """Idempotent: a second close must never hit a descriptor reused since."""
        self.broken = True
        self._memory.clear()
        self._paths.clear()
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


def supported(root: Path) -> bool:
    return sys.platform.startswith("linux") and filesystem_type(root) in LOCAL_FILESYSTEMS


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
