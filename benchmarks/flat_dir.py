"""A synthetic worktree whose files sit in one large flat directory (issue 24.1).

Real repositories have them (tldr's ``pages/common`` holds 4,600 pages): a
watcher that re-lists a directory inotify names pays for every sibling of a
10-file edit there. ``python -m benchmarks --flat 8000`` measures such a tree
with every figure of the round (``hook_edit10``, ``undo10``, ``redo10`` ...):
the edits all land in the flat directory, beside thousands of untouched files.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path

from benchmarks.worktrees import (
    SEED,
    GeneratedWorktree,
    _disk_bytes,
    _editable,
    _fast_import,
    _pool,
    _settle_index,
    _untracked,
    git,
    label_for,
)

FLAT_DIR = "pages/flat"
OTHER_FILES = 20  # a few files elsewhere, as a real tree has


def names(n_files: int) -> list[str]:
    """``n_files`` paths: all but OTHER_FILES of them in FLAT_DIR."""
    flat = max(n_files - OTHER_FILES, 1)
    found = [f"{FLAT_DIR}/page{i:05d}.md" for i in range(flat)]
    found += [f"docs/note{i:02d}.md" for i in range(n_files - flat)]
    return found


def generate(root: Path, n_files: int, env: Mapping[str, str]) -> GeneratedWorktree:
    """The flat worktree of ``n_files`` tracked files at ``root`` (must not exist);
    only files of the flat directory are edited."""
    rng = random.Random(SEED)
    pool = _pool(rng)
    paths = names(n_files)
    root.mkdir(parents=True)
    git(root, env, "init", "-q", "-b", "main")
    _fast_import(root, env, paths, rng, pool, SEED)
    git(root, env, "reset", "-q", "--hard")  # git writes the files and the index
    _untracked(root, n_files, pool, SEED, ignored=True)
    _settle_index(root, env)
    editable = _editable([p for p in paths if p.startswith(FLAT_DIR + "/")], SEED)
    return GeneratedWorktree(
        f"flat {label_for(n_files)}", root, n_files, editable, _disk_bytes(root)
    )
