"""Where stores live in the data directory, and the lock each one has.

One directory per worktree under ``<data-dir>/snapshot/``, named by a hash of
the worktree's path; any process finds it from the path alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from snapshotter.config import stores_dir

if TYPE_CHECKING:
    import filelock

# A lock waiter polls this often: filelock polls, so a long interval lets busy
# processes take the lock again and again ahead of a waiter (issue 13: 16 x 50
# hooks under heavy load lost some to 30 s waits with the default 50 ms).
LOCK_POLL_S = 0.005


def store_key(root: Path) -> str:
    """The store directory's name for a worktree root."""
    import xxhash

    return str(xxhash.xxh3_64_hexdigest(os.fsencode(str(root))))


def all_store_roots(data_dir: Path) -> list[Path]:
    """Every store directory in the data directory."""
    base = stores_dir(data_dir)
    if not base.is_dir():
        return []
    return sorted(p for p in base.iterdir() if (p / "git" / "HEAD").exists())


def file_lock(path: Path, timeout: float) -> filelock.FileLock:
    """An flock-based lock (a killed holder never leaves it stuck), polled often.

    Where ``flock`` does not exist (Windows), filelock falls back to a lock
    file of its own; its warning about that is ours to handle, not the user's.
    """
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import filelock

    return filelock.FileLock(str(path), timeout=timeout, poll_interval=LOCK_POLL_S)


class HeldElsewhere:
    """A store lock another process holds on our behalf, and waits on us meanwhile.

    The hook server captures for a CLI command it forked (hooks/remote_capture.py):
    the command holds the store's lock for the whole request, so taking it
    again here would wait for ever.
    """

    def __enter__(self) -> HeldElsewhere:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
