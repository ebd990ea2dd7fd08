"""Knowing what changed without walking the worktree (Linux inotify).

A long-lived process (one holding a ``Resident``, resident.py: the hook
server) keeps one inotify watch per directory a walk entered. An event names
the entry that was written, created, deleted or renamed: only those names
are looked at again (walk.py's ``rescan``, through the walk's own per-entry
loop), and with no event at all the last tree is reused. A directory is
listed again only when a subdirectory came or went (or a name turned out to
be a directory now) — a 10-file edit in a directory of thousands costs ten
stats (issue 24.1). What cannot be pinned down — a lost-event overflow, a
moved directory, a ``.gitignore`` edit, a failed watch — means "walk
everything", so a missed case costs a walk, never a wrong snapshot.

A file can also change through a name outside the worktree (a hard link):
that raises no event in any watched directory, and neither does the
``link(2)`` that made the other name — it only touches the file's own inode
(issue 13.17). So every captured file gets a watch of its own for attribute
changes: a new link count shows as IN_ATTRIB there and the file is looked at
again, which records it as linked, and linked files are re-checked by stat
on every capture (resident.py's ``_relinked``) — never trusted to events.
Those watches come out of the user's inotify allowance
(``fs.inotify.max_user_watches``, shared with editors and every other
watcher): a worktree with more files than ``FILE_WATCH_SHARE`` of it gets
none, and each capture then checks files' stat data instead (a "sweep": no
listing, no ignore rules, no reading): all of them, so nothing is seen late,
unless the user traded that for speed (``resident.SWEEP_ENV``: a share of
them a capture, round robin). A whole walk
adds each file's watch before it takes the file's stat data
(``file_watcher``), so what it records is what the watch saw from then on; a
file another is renamed over in between raises a directory event, and that
name is watched again (``_absorb``). Files a rescan put in get their watch
after, and their stat data is taken again once it is in place
(``watch_files``): a link made in between shows too.

Limits, on purpose: only local filesystems (network and FUSE mounts do not
report other machines' writes), and not for writes made through ``mmap``
(inotify never reports those; git's fsmonitor shares the blind spot).
Only processes that opt in use this: those holding a ``Resident`` (the hook
server; the CLI commands it forks send their captures to it instead,
hooks/remote_capture.py).

Over 400 lines: one inotify instance's whole protocol — its constants, the
directory watches, the file watches (added during a walk or after it) and
the events that undo them — is one contract, read together; the mount table
reader belongs with the one watcher that uses it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from snapshotter.store import records
from snapshotter.store.signature import RACY_WINDOW_NS

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping

    from snapshotter.store.walk import ScanResult

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
_FILE_MASK = 0x4 | 0x2000000  # IN_ATTRIB | IN_DONT_FOLLOW: link counts, on the inode itself
_IN_DONT_FOLLOW = 0x2000000
# Events that change what a directory lists (for a subdirectory: it is listed again).
_LISTING = 0x100 | 0x200  # IN_CREATE, IN_DELETE
_NAMING = 0x40 | 0x80 | 0x100 | 0x200  # IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = 0o2000000
_MASK = (
    _IN_MODIFY
    | _IN_ATTRIB
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_MOVE_SELF
    | _IN_ONLYDIR
    | _IN_DONT_FOLLOW
)
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, name length (name bytes follow)

# Filesystems whose changes, from any process on this machine, reach inotify.
LOCAL_FILESYSTEMS = frozenset(
    {
        "ext2",
        "ext3",
        "ext4",
        "xfs",
        "btrfs",
        "tmpfs",
        "f2fs",
        "zfs",
        "overlay",
        "jfs",
        "reiserfs",
        "bcachefs",
        "ramfs",
        "nilfs2",
    }
)
MAX_REMEMBERED = 4  # walks kept per worktree (one per scope and settings)
# The share of the user's inotify watches one worktree's files may take (above).
FILE_WATCH_SHARE = 0.5
_DEFAULT_MAX_WATCHES = 8192  # the kernel's old default, if /proc cannot say


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
    # Entries (relative paths, not directories) written, created, deleted or renamed
    # since: each looked at again alone (walk.py's ``rescan``), not their directory.
    changed: set[str] = field(default_factory=set)
    files_watched: bool = False  # every file of ``scan`` has its own watch
    # The capture's side (store/capture.py): the manifest state it wrote, and the
    # paths its next capture compares whatever changed (racily clean, unread).
    serial: int = 0
    recheck: set[str] = field(default_factory=set)
    # The paths ``scan`` put in since the walk before it (None: all of them, a full
    # walk): only those can lack a watch of their own.
    fresh: Collection[str] | None = None


class Watcher:
    """One inotify instance over the directories of one worktree."""

    def __init__(self, fd: int, add_watch: Any, root: Path) -> None:
        self._fd = fd
        self._add_watch = add_watch
        self.root = str(root)
        self.broken = False
        self.out_of_watches = False  # the worktree has more directories than the limit
        # Its files have no watches of their own (too many): sweep.py stats them.
        self.sweep = False
        self.swept_at = 0
        self._paths: dict[int, str] = {}  # watch descriptor -> directory
        # file watch descriptor -> its path (relative), or its paths (hard links here)
        self._files: dict[int, str | set[str]] = {}
        self._file_inodes: dict[str, int] = {}  # relative path -> inode its watch is on
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
        # (int, bytes, int) -> int. No ``argtypes``: checking them cost ~0.3 us of the
        # ~2 us a file's watch costs, and these three convert as they are.
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
            if wd in self._files:
                self._file_event(wd, mask)
                continue
            if mask & _IN_IGNORED:  # the watch went with its directory (or was dropped)
                where = self._paths.pop(wd, None)
                if where is not None:
                    self._mark(where)
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
            elif not name or (mask & _IN_ISDIR and mask & _LISTING):
                self._mark(where)  # the directory itself changed, or a subdirectory came or went
            elif mask & _IN_ISDIR:
                self._mark(os.path.join(where, os.fsdecode(name)))  # a subdirectory's mode
            else:
                rel = self._rel_in(where, name)
                if mask & _NAMING:
                    # Another file may hold this name now: not the one its watch is on.
                    self._file_inodes.pop(rel, None)
                self._mark_file(rel)  # one entry: written, came or went

    def _mark(self, directory: str) -> None:
        """List ``directory`` (absolute) again at the next capture of every walk."""
        for memory in self._memory.values():
            memory.dirty.add(directory)

    def _mark_file(self, rel: str) -> None:
        """Look at file ``rel`` again, alone, at the next capture of every walk."""
        for memory in self._memory.values():
            memory.changed.add(rel)

    def _rel_in(self, directory: str, name: bytes) -> str:
        # Decoded as the walk decodes names (os.scandir: the filesystem encoding).
        parent, decoded = self.relative(directory), os.fsdecode(name)
        return f"{parent}/{decoded}" if parent else decoded

    def _file_event(self, wd: int, mask: int) -> None:
        """A file's own watch fired: its link count, attributes or bytes changed (or it
        went): its stat data is taken again, and a new link count makes it linked."""
        found = self._files[wd]
        rels = (found,) if isinstance(found, str) else found
        if mask & _IN_IGNORED:
            del self._files[wd]
            for rel in rels:
                self._file_inodes.pop(rel, None)  # watched again when next seen
        for rel in rels:
            self._mark_file(rel)

    def file_watcher(self, expected: int) -> Callable[[bytes, str], bool] | None:
        """A whole walk's ``on_file`` (walk.py's ``scan``): each file gets its watch
        before the walk stats it, so the walk's stat data is what the watch saw
        from then on (a file replaced in between raises a directory event, and
        its name is watched again: ``_absorb``). None when files get no watches
        (the sweep, or about ``expected`` files are more than the allowance).
        """
        limit = FILE_WATCH_SHARE * max_user_watches()
        if self.sweep or self.broken or expected + len(self._paths) > limit:
            return None
        add, fd, files, paths = self._add_watch, self._fd, self._files, self._paths

        def on_file(path: bytes, rel: str) -> bool:
            wd = add(fd, path, _FILE_MASK)
            if wd < 0:
                self._watch_failed(path)
                return not (self.sweep or self.broken)
            _add_name(files, wd, rel)
            if len(files) + len(paths) > limit:
                self._give_up_files()  # more files than the last capture had
                return False
            return True

        return on_file

    def watch_files(self, answer: Remembered) -> None:
        """Give every file of ``answer``'s walk a watch of its own (see the module doc):
        of the files it put in (``fresh``), when it only redid some directories.

        Files whose stat data moved since the walk (before their watch was in
        place) are looked at again (``answer.changed``). Those the walk watched
        itself (``announced``: ``file_watcher``) are only noted.
        """
        scan = answer.scan
        entries, announced, scan.announced = scan.entries, scan.announced, None
        limit = FILE_WATCH_SHARE * max_user_watches()
        if answer.fresh is None and not self.sweep and len(entries) + len(self._paths) > limit:
            self._give_up_files()
        if not self.sweep and not self.broken:
            taken: Collection[str] = ()
            if answer.fresh is None:
                from snapshotter.store.walk import index

                taken = set(announced or ())
                by_dir = index(scan).files
            else:
                by_dir = {}
                for rel in answer.fresh:
                    if rel in entries:
                        by_dir.setdefault(rel.rpartition("/")[0], []).append(rel)
            for directory, rels in by_dir.items():
                if not self._watch_dir_files(directory, rels, entries, answer.changed, taken):
                    break
        self._recheck_racy_links(answer)
        answer.files_watched = not self.broken

    def _give_up_files(self) -> None:
        """Too many files for the allowance: none keeps a watch, the sweep stats them."""
        self.sweep = True
        if self._files:
            import ctypes

            remove = ctypes.CDLL(None, use_errno=True).inotify_rm_watch
            for wd in self._files:
                remove(self._fd, wd)  # (its IN_IGNORED then names no watch we know)
            self._files.clear()
            self._file_inodes.clear()

    def _watch_dir_files(
        self,
        directory: str,
        rels: Iterable[str],
        entries: Mapping[str, records.Stat],
        changed: set[str],
        taken: Collection[str] = (),
    ) -> bool:
        """Watch the files ``rels`` of ``directory`` (relative), each then lstat'ed again
        by the very path its watch took: a file whose stat data is not its record
        (replaced, linked or written between the walk and its watch) goes into
        ``changed``. False once no more watches can be added (the sweep, or broken).
        Those in ``taken`` the walk watched itself (``file_watcher``): only noted.

        The hot loop of a first walk's watches (issue 24.3): the directory's path is
        encoded once, each name as ``os.fsencode`` would (one C call, not a Python one).
        """
        from snapshotter.git.kinds import MODE_LINK

        encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
        base = os.path.join(self.root, directory) if directory else self.root
        prefix = os.fsencode(base) + b"/"
        cut = len(directory) + 1 if directory else 0
        add, fd, files, inodes = self._add_watch, self._fd, self._files, self._file_inodes
        fields, lstat = records.fields, os.lstat
        for rel in rels:
            mode, size, mtime, ctime, ino = fields(entries[rel])
            if mode == MODE_LINK or inodes.get(rel) == ino:
                continue  # a symlink has no content to write through another name
            if rel in taken:
                inodes[rel] = ino  # watched before the walk took this stat data
                continue
            path = prefix + rel[cut:].encode(encoding, errors)
            wd = add(fd, path, _FILE_MASK)
            if wd < 0:
                self._watch_failed(path)
                if self.sweep or self.broken:
                    return False
                continue
            _add_name(files, wd, rel)
            inodes[rel] = ino
            try:
                st = lstat(path)
            except OSError:
                changed.add(rel)  # gone since the walk
                continue
            if (
                st.st_ino != ino
                or st.st_mtime_ns != mtime
                or st.st_ctime_ns != ctime
                or st.st_size != size
            ):
                changed.add(rel)
        return True

    def _recheck_racy_links(self, answer: Remembered) -> None:
        """Linked files modified just before the walk are looked at again next time.

        Their stat data is all resident.py's ``_relinked`` has, and a write through the
        other name within the clock's granularity leaves it unchanged (the
        "racy git" problem): one more walk of their directory, once they are
        older than the window, settles them.
        """
        now = time.time_ns()
        entries = answer.scan.entries
        swept = entries if answer.fresh is None else answer.fresh
        for rel in swept if self.sweep else answer.scan.linked:
            st = entries.get(rel)
            if st is not None and now - records.mtime(st) < RACY_WINDOW_NS:
                answer.changed.add(rel)

    def _watch_failed(self, path: bytes) -> None:
        import ctypes

        err = ctypes.get_errno()
        if err == errno.ENOENT:
            return  # it went since the walk: its directory's event says so
        if err == errno.ENOSPC:
            self.sweep = True  # other watchers took the room: stat the files instead
            return
        self.close()

    def relative(self, path: str) -> str:
        return "" if path == self.root else path[len(self.root) + 1 :]

    def recall(self, key: tuple[Any, ...]) -> Remembered | None:
        return self._memory.get(key)

    def remember(self, key: tuple[Any, ...], answer: Remembered) -> None:
        if not answer.files_watched:
            self.watch_files(answer)
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
        self._files.clear()
        self._file_inodes.clear()
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


def _add_name(files: dict[int, str | set[str]], wd: int, rel: str) -> None:
    """Note that watch ``wd`` is on the file named ``rel``: one string a file, a set
    only for a file with several names here (hard links in the worktree)."""
    found = files.get(wd)
    if found is None:
        files[wd] = rel
    elif isinstance(found, str):
        if found != rel:
            files[wd] = {found, rel}
    else:
        found.add(rel)


def max_user_watches() -> int:
    """The inotify watches this user may hold in all (fs.inotify.max_user_watches)."""
    try:
        return int(Path("/proc/sys/fs/inotify/max_user_watches").read_text())
    except (OSError, ValueError):
        return _DEFAULT_MAX_WATCHES


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
