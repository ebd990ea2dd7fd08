"""Which paths a repository's index tracks, read fast and cached, for the scan.

The index is parsed by index.py (paths and modes only) and the answer kept
in a marshal cache keyed by the index's stat data, so an unchanged index
costs one stat and one small read.
"""

from __future__ import annotations

import bisect
import contextlib
import marshal
import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from snapshotter.fileio import write_atomic
from snapshotter.git.worktree import OBJECT_FORMATS, object_format


def tracked_modes(
    index_file: Path, cache_file: Path | None = None, oid_size: int = OBJECT_FORMATS["sha1"]
) -> dict[str, int] | None:
    """``path → mode`` for every index entry; None when the file cannot be parsed.

    ``oid_size`` is the repository's object id size (32 for SHA-256). A split
    index's shared part is read from ``sharedindex.<id>`` beside the index.
    The cache is keyed by the index file's stat data alone: a shared index is
    named by its checksum, so pointing at another one rewrites the index too.
    """
    try:
        st = os.stat(index_file)
    except OSError:
        return {}
    sig = (st.st_mtime_ns, st.st_size, st.st_ino, oid_size)
    if cache_file is not None:
        try:
            cached = marshal.loads(cache_file.read_bytes())
            if cached[0] == sig:
                return dict(cached[1])
        except (OSError, EOFError, ValueError, TypeError, IndexError):
            pass
    from snapshotter.git.index import parse  # only when the cache is stale

    try:
        modes = parse(index_file.read_bytes(), oid_size, index_file.parent)
    except (OSError, struct.error, ValueError, IndexError):
        return None
    if cache_file is not None and modes is not None:
        with contextlib.suppress(OSError):  # an unwritable cache only costs speed
            write_atomic(cache_file, marshal.dumps((sig, modes)))
    return modes


@dataclass
class TrackedIndex:
    """The paths a repository's index tracks, sorted for prefix searches."""

    modes: dict[str, int] = field(default_factory=dict)
    _sorted: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, index_file: Path, cache_file: Path | None = None) -> TrackedIndex:
        oid_size = OBJECT_FORMATS[object_format(index_file.parent)]
        modes = tracked_modes(index_file, cache_file, oid_size)
        if modes is None and oid_size == OBJECT_FORMATS["sha1"]:
            # A format we do not parse: let libgit2 try (it reads no SHA-256 index).
            modes = cls._read_with_pygit2(index_file)
        return cls(modes or {}, sorted(modes or {}))

    @staticmethod
    def _read_with_pygit2(index_file: Path) -> dict[str, int]:
        import pygit2

        try:
            return {entry.path: entry.mode for entry in pygit2.Index(str(index_file))}
        except (pygit2.GitError, OSError, ValueError):
            return {}

    def share(self, paths: Iterable[str]) -> None:
        """Hold ``paths``' own string objects for the paths it tracks, not copies, and
        one object a mode: a process that keeps a walk and this index holds each path
        once (issue 24.5)."""
        own = {path: path for path in paths}
        kinds: dict[int, int] = {}  # one int object a mode, not one a path (32 bytes each)
        self.modes = {
            own.get(path, path): kinds.setdefault(mode, mode) for path, mode in self.modes.items()
        }
        self._sorted = [own.get(path, path) for path in self._sorted]

    def has_under(self, dir_rel: str) -> bool:
        """Whether any tracked path lies below directory ``dir_rel``."""
        prefix = dir_rel + "/"
        i = bisect.bisect_left(self._sorted, prefix)
        return i < len(self._sorted) and self._sorted[i].startswith(prefix)
