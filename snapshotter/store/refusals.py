"""The refusal memo: a worktree refused lately is refused at once while nothing changed.

A refused worktree (a home directory, too many files) cost a full walk,
seconds, on every hook event. The refusal is remembered in the store
(``refused.json``) with what it depends on: the file cap, and the signatures
of the worktree's top directory and of the source index. While those stay
put, and for at most REFUSAL_TTL_S, the next capture is refused without a walk.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from snapshotter.errors import Refused
from snapshotter.fileio import write_atomic
from snapshotter.git.worktree import Worktree
from snapshotter.store.signature import Signature

REFUSED = "refused.json"
REFUSAL_TTL_S = 3600.0


def _key(worktree: Worktree, max_files: int | None) -> list[object]:
    """What a refusal depends on: the cap, the top directory and the source index."""
    key: list[object] = [max_files]
    for path in (worktree.root, worktree.git_dir / "index"):
        found = Signature.at(path, follow=True)
        key.append(None if found is None else list(found))
    return key


def check(store_root: Path, worktree: Worktree, max_files: int | None) -> bool:
    """Raise Refused for what was refused lately and has not changed since.

    Returns whether an outdated refusal is on record (to ``clear`` once a
    capture went through).
    """
    try:
        data = json.loads((store_root / REFUSED).read_bytes())
    except FileNotFoundError:
        return False
    except (OSError, ValueError):
        return True  # damaged: dropped once a capture goes through
    if (
        isinstance(data, dict)
        and data.get("key") == _key(worktree, max_files)
        and time.time() - float(data.get("at", 0)) < REFUSAL_TTL_S
    ):
        raise Refused(str(data.get("why", "refused")))
    return True


def remember(store_root: Path, worktree: Worktree, why: str, max_files: int | None) -> None:
    """Record a refusal (best effort: a read-only store only costs the next walk)."""
    record = {"why": why, "key": _key(worktree, max_files), "at": time.time()}
    with contextlib.suppress(OSError):
        write_atomic(store_root / REFUSED, json.dumps(record).encode())


def clear(store_root: Path) -> None:
    """A refusal is over once a capture went through."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(store_root / REFUSED)
