"""The first capture right after a commit, the index racy by whole seconds (issue 24.4).

An agent that runs ``git add -A && git commit`` leaves an index written in the
second its files were: by git's default rule (whole seconds) every entry is
racily clean and must be re-read; by the nanosecond rule only those not
older than the index are. This figure stamps every tracked file anew (its
content unchanged), lets git record that in the index (``add -A``, then a
commit), and dates the index to the newest file's mtime: written in the same
instant as the last file, the worst case a fast git leaves. Then a first
capture into a fresh data dir, beside the reference's first capture.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from benchmarks.worktrees import git

NS = 1_000_000_000
SECOND_START_S = 0.02  # stamp the files just after a second starts: one second for all


def racy_commit(root: Path, env: Mapping[str, str]) -> tuple[int, int]:
    """Restamp every tracked file, record it with ``add -A`` and a commit, and date the
    index to the newest file's mtime. Returns (files in the index's second, tracked)."""
    tracked = [os.fsdecode(p) for p in git(root, env, "ls-files", "-z").split(b"\0") if p]
    _wait_for_a_new_second()
    newest = 0
    for rel in tracked:
        path = os.path.join(root, rel)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        os.utime(path)  # now, as a write would stamp it
        newest = max(newest, os.stat(path).st_mtime_ns)
    git(root, env, "add", "-A")
    git(root, env, "commit", "-q", "--allow-empty", "-m", "benchmark: racy commit")
    index = root / git(root, env, "rev-parse", "--git-path", "index").decode().strip()
    os.utime(index, ns=(newest, newest))
    in_second = sum(
        1
        for rel in tracked
        if os.path.isfile(os.path.join(root, rel))
        and os.stat(os.path.join(root, rel)).st_mtime_ns // NS == newest // NS
    )
    return in_second, len(tracked)


def _wait_for_a_new_second() -> None:
    now = time.time()
    time.sleep(1.0 - (now - int(now)) + SECOND_START_S)
