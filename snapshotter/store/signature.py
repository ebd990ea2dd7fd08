"""The stat signature: the stat data that says a file is unchanged without reading it.

One shape for the whole store layer: (size, mtime_ns, ctime_ns, inode). It is
the order ``walk.Stat`` keeps after the file's mode, and ``stat_cache.Entry``
on disk, so a signature compares equal to ``stat[1:]`` of either (a NamedTuple
equals the plain tuple of its fields). Those two stay plain tuples built
inline: they are made once per path of every walk, and marshal stores only
exact tuples.
"""

from __future__ import annotations

import os
from typing import NamedTuple

# A file modified this close to the start of a scan may change again without
# its mtime moving (the kernel's clock is coarse), so its stat data is not
# trusted next time: the "racy git" problem, solved the way git solves it.
RACY_WINDOW_NS = 50_000_000


class Signature(NamedTuple):
    """What a change to a file moves: any write, replace, or new hard link."""

    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    @classmethod
    def of(cls, st: os.stat_result) -> Signature:
        # tuple.__new__ directly: NamedTuple's own __new__ is one more Python call.
        return _new(cls, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))

    @classmethod
    def at(
        cls, path: str | os.PathLike[str], *, follow: bool = False, dir_fd: int | None = None
    ) -> Signature | None:
        """``path``'s signature (of the link itself unless ``follow``); None when absent."""
        try:
            st = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow)
        except OSError:
            return None
        return _new(cls, (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))


_new = tuple.__new__
