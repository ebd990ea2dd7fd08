"""The stat cache: what the last capture saw, so unchanged files are not re-read.

One marshal file per store. It maps each captured path to its stat data and
blob id; a path whose stat data still matches is trusted without hashing.
A missing or damaged manifest only costs speed: everything is re-hashed.
"""

from __future__ import annotations

import marshal
from dataclasses import dataclass, field
from pathlib import Path

from snapshotter.fileio import write_atomic

VERSION = 1

# Stat data as the walk reads it (walk.Stat: mode, size, mtime_ns, ctime_ns, inode)
# followed by the raw blob id. Plain tuples, not NamedTuples: marshal stores
# only exact tuples, and a 500k-file cache is built and compared on every capture.
Entry = tuple[int, int, int, int, int, bytes]
# An mtime of UNTRUSTED in a cached entry marks a file written so close to its
# capture that its stat data may not move on the next write ("racy git"): the
# next capture reads it again instead of trusting its stat data.
UNTRUSTED = 0


def entry(st: tuple[int, int, int, int, int], oid: bytes, *, racy: bool) -> Entry:
    """A cache entry for a file hashed now; ``racy`` ones are read again next time."""
    return (st[0], st[1], UNTRUSTED if racy else st[2], st[3], st[4], oid)


def trusted(cached: Entry) -> bool:
    """Whether a cached entry's stat data may stand for its bytes."""
    return cached[2] != UNTRUSTED


@dataclass
class Manifest:
    tree: str | None = None  # hex id of the tree these entries make up
    entries: dict[str, Entry] = field(default_factory=dict)
    trees: dict[str, bytes] = field(default_factory=dict)  # directory -> raw tree id of ``tree``
    loose: int = 0  # objects written loose since they were last packed (an estimate)


def load(path: Path) -> Manifest:
    try:
        data = marshal.loads(path.read_bytes())
        if not isinstance(data, dict) or data.get("version") != VERSION:
            return Manifest()
        # A manifest without "trees" (an older one) costs one full tree build.
        return Manifest(
            data["tree"], data["entries"], dict(data.get("trees") or {}), int(data.get("loose", 0))
        )
    except (OSError, EOFError, ValueError, TypeError, KeyError):
        return Manifest()


def save(path: Path, manifest: Manifest) -> None:
    payload = {
        "version": VERSION,
        "tree": manifest.tree,
        "entries": manifest.entries,
        "trees": manifest.trees,
        "loose": manifest.loose,
    }
    write_atomic(path, marshal.dumps(payload))
