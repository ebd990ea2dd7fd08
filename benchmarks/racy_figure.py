"""The first capture right after a commit, the index racy by whole seconds (issue 24.4).

An agent that runs ``git commit -a`` leaves an index written in the second its
files were: by git's default rule (whole seconds) every entry is racily clean
and must be re-read; by the nanosecond rule only those not older than the
index are. This figure stamps every tracked file anew (content unchanged)
within one second, half a second apart from first to last, lets git record
that in the index (``add -u``, then a commit), and dates the index to the
newest file's mtime: written in the same instant as the last file, the worst
case a fast git leaves. Then a first capture into a fresh data dir, beside
the reference's first capture. Untracked files stay untracked.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from benchmarks.worktrees import git

NS = 1_000_000_000
SPREAD_NS = NS // 2  # the files' stamps, first to last: all in one second


def racy_commit(root: Path, env: Mapping[str, str]) -> int:
    """Restamp every tracked file, record it with ``add -u`` and a commit, and date the
    index to the newest file's mtime. Returns how many files were restamped."""
    tracked = [os.fsdecode(p) for p in git(root, env, "ls-files", "-z").split(b"\0") if p]
    files = [
        rel
        for rel in tracked
        if os.path.isfile(os.path.join(root, rel)) and not os.path.islink(os.path.join(root, rel))
    ]
    second = (time.time_ns() // NS - 1) * NS  # the last second: in the past, as writes are
    step = SPREAD_NS // max(1, len(files))
    newest = second
    for k, rel in enumerate(files):
        newest = second + k * step
        os.utime(os.path.join(root, rel), ns=(newest, newest))
    git(root, env, "add", "-u")
    git(root, env, "commit", "-q", "--allow-empty", "-m", "benchmark: racy commit")
    index = root / git(root, env, "rev-parse", "--git-path", "index").decode().strip()
    os.utime(index, ns=(newest, newest))
    return len(files)
