"""The sweep: files without inotify watches of their own, checked by stat alone.

Past the user's inotify allowance (watch.py), files get no watch of their
own, and a write made only through a hard link created from outside the
worktree raises no event anywhere we watch: each capture then compares every
such file's stat data with what the last one recorded (resident.py decides
when, and how many: all of them unless the user traded that for speed).

This is the hook server's cost per unwatched file on every capture at 500k
files (issue 24.5), so it is written for speed: directory by directory
through an open descriptor (each stat resolves one name, not the whole
path), the stat data packed and compared in place as bytes (records.py).
About 2.8 us of CPU a file here, half of it in the kernel: what ``find
-printf`` costs per file too. Threads were tried (``os.lstat`` releases the
GIL) and gained nothing on two cores: the system call is too short for the
GIL's hand-over.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from snapshotter.store import records

_OPEN = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def swept(
    root: str,
    entries: Mapping[str, records.Stat],
    files: Mapping[str, Sequence[str]],
    start: int,
    share: int | None,
) -> tuple[set[str], int]:
    """(files whose stat data is not their record in ``entries``, where the next
    sweep starts).

    ``files``: each directory's files (relative paths); ``start``: where in
    ``files``' order to begin, round robin; ``share``: at least this many files
    (whole directories), or None for every one. A file gone, or in a directory
    that cannot be opened, counts as changed (it is looked at again).
    """
    order = list(files)
    start = start % len(order) if order else 0
    chosen: list[str] = []
    count = 0
    limit = len(entries) if share is None else share
    while len(chosen) < len(order) and count < limit:
        directory = order[(start + len(chosen)) % len(order)]
        chosen.append(directory)
        count += len(files[directory])
    return _sweep(root, entries, files, chosen), start + len(chosen)


def _sweep(
    root: str,
    entries: Mapping[str, records.Stat],
    files: Mapping[str, Sequence[str]],
    directories: list[str],
) -> set[str]:
    """The files of ``directories`` whose stat data moved."""
    found: set[str] = set()
    lstat, pack, get = os.lstat, records.pack_signature, entries.get
    at = records.SIGNATURE_AT
    for directory in directories:
        paths = files[directory]
        try:
            fd = os.open(os.path.join(root, directory) if directory else root, _OPEN)
        except OSError:
            found.update(paths)  # gone or replaced: each is looked at (and its directory)
            continue
        cut = len(directory) + 1 if directory else 0
        try:
            for rel in paths:
                try:
                    st = lstat(rel[cut:], dir_fd=fd)
                except OSError:
                    found.add(rel)
                    continue
                # records.signature_of(st) != records.signature(entry), inline, unsliced
                now = pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                if not get(rel, b"").startswith(now, at):
                    found.add(rel)
        finally:
            os.close(fd)
    return found
