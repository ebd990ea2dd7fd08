"""Where stores live in the data directory, and the lock each one has.

One directory per worktree under ``<data-dir>/snapshot/``, named by a hash of
the worktree's path; any process finds it from the path alone.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from snapshotter.config import stores_dir

if TYPE_CHECKING:
    import filelock

# A lock waiter polls this often: a long interval lets busy processes take the
# lock again and again ahead of a waiter (issue 13: 16 x 50 hooks under heavy
# load lost some to 30 s waits with filelock's default of 50 ms).
LOCK_POLL_S = 0.005


class LockTimeout(TimeoutError):
    """The lock stayed held by another process for the whole timeout."""


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


def file_lock(path: Path, timeout: float) -> Flock | filelock.FileLock:
    """The lock on ``path``: ``flock``, so a killed holder never leaves it stuck.

    ``timeout`` in seconds (0: one try, negative: wait for ever); a waiter
    gives up with ``LockTimeout`` (an ``OSError``). Where ``flock`` does not
    exist (Windows) it is filelock's lock file instead; filelock's warning
    about that is ours to handle, not the user's.
    """
    try:
        import fcntl  # noqa: F401 - only to know flock is there
    except ImportError:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import filelock

        return filelock.FileLock(str(path), timeout=timeout, poll_interval=LOCK_POLL_S)
    return Flock(path, timeout)


class Flock:
    """An exclusive ``flock`` on a lock file, polled every ``LOCK_POLL_S``.

    Re-entrant within a thread; each thread takes its own hold (its own open
    file), so the hook server's threads take turns as processes do. The lock
    file is left in place: removing it would let two holders lock two files.
    Written here rather than taken from filelock, whose import alone cost
    every hook process ~20 ms; it is the same ``flock``, so the two exclude
    each other.
    """

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        self._held = threading.local()  # .fd, .depth of this thread's hold

    def acquire(self) -> None:
        if getattr(self._held, "depth", 0):
            self._held.depth += 1
            return
        self._held.fd = self._wait_for_lock()
        self._held.depth = 1

    def release(self) -> None:
        self._held.depth -= 1
        if self._held.depth == 0:
            os.close(self._held.fd)  # closing the file drops the flock

    def __enter__(self) -> Flock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def _wait_for_lock(self) -> int:
        import fcntl

        deadline = time.monotonic() + self.timeout
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if self.timeout >= 0 and time.monotonic() >= deadline:
                        raise LockTimeout(f"{self.path} is held by another process") from None
                    time.sleep(LOCK_POLL_S)
                    continue
                if os.fstat(fd).st_nlink:
                    return fd
                # Removed while we waited: the lock now is a new file of that name.
                os.close(fd)
                fd = -1
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise


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
