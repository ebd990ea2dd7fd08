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

# Stat data followed by the raw blob id.
Entry = tuple[int, int, int, int, int, bytes]


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
        return Manifest(data["tree"], data["entries"], dict(data.get("trees") or {}),
                        int(data.get("loose", 0)))
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
