"""The sweep: files without inotify watches of their own, checked by stat alone.

Past the user's inotify allowance (watch.py), files get no watch of their
own, and a write made only through a hard link created from outside the
worktree raises no event anywhere we watch: each capture then compares every
such file's stat data with what the last one recorded (resident.py decides
when, and how many: all of them unless the user traded that for speed).

This is the hook server's cost per unwatched file on every capture at 500k
files (issue 24.5), so it is written for speed: directory by directory
through an open descriptor (each stat resolves one name, not the whole
path), the stat data packed and compared as bytes (records.py) in one
expression, and the directories spread over a few threads: ``os.lstat``
releases the GIL, so one thread's system call overlaps another's comparing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from snapshotter.store import records

# Threads for a sweep of at least PARALLEL_FROM files (fewer: not worth starting them).
THREADS = 2  # the GIL is held between system calls: a second thread fills the gaps
PARALLEL_FROM = 4096
_BATCH = 2048  # files per piece of work handed to a thread (whole directories)
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
    batches = _batches(chosen, files)
    if len(batches) < 2 or count < PARALLEL_FROM:
        found = [rel for batch in batches for rel in _sweep(root, entries, files, batch)]
    else:
        from concurrent.futures import ThreadPoolExecutor  # here: only the server sweeps

        # A pool per sweep: the server forks commands, and a child must not
        # inherit a pool whose threads did not come along.
        with ThreadPoolExecutor(THREADS, thread_name_prefix="sweep") as pool:
            parts = pool.map(lambda batch: _sweep(root, entries, files, batch), batches)
            found = [rel for part in parts for rel in part]
    return set(found), start + len(chosen)


def _batches(chosen: list[str], files: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """``chosen`` directories in pieces of about _BATCH files, in order."""
    batches: list[list[str]] = []
    batch: list[str] = []
    size = 0
    for directory in chosen:
        batch.append(directory)
        size += len(files[directory])
        if size >= _BATCH:
            batches.append(batch)
            batch, size = [], 0
    if batch:
        batches.append(batch)
    return batches


def _sweep(
    root: str,
    entries: Mapping[str, records.Stat],
    files: Mapping[str, Sequence[str]],
    directories: list[str],
) -> list[str]:
    """The files of ``directories`` whose stat data moved (run in a thread: it only
    reads ``entries`` and ``files``, which nobody changes meanwhile)."""
    found: list[str] = []
    lstat, pack, get = os.lstat, records.pack_signature, entries.get
    at = records.SIGNATURE_AT
    for directory in directories:
        paths = files[directory]
        try:
            fd = os.open(os.path.join(root, directory) if directory else root, _OPEN)
        except OSError:
            found.extend(paths)  # gone or replaced: each is looked at (and its directory)
            continue
        cut = len(directory) + 1 if directory else 0
        try:
            for rel in paths:
                try:
                    st = lstat(rel[cut:], dir_fd=fd)
                except OSError:
                    found.append(rel)
                    continue
                # records.signature_of(st) != records.signature(entry), inline, unsliced
                now = pack(st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                if not get(rel, b"").startswith(now, at):
                    found.append(rel)
        finally:
            os.close(fd)
    return found
