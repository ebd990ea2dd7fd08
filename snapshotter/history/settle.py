"""A span's real changes: a file that was only re-classified is no change (#12.1, #13.6).

Between two captures a file can enter or leave the capture without being
touched: an ignore rule changed, ``git add`` made it visible, the size limit
now keeps it out. The recorder asks here before it calls such a file added
or deleted, so undo never deletes or removes a file the span did not make.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace
from pathlib import Path

from snapshotter.checkpoints import Change
from snapshotter.fileio import lstat_within
from snapshotter.history.records import Mark
from snapshotter.store.capture import Capture
from snapshotter.store.shadow import Store
from snapshotter.store.skips import Skip, Why
from snapshotter.store.tree_rules import TreeRules


def settle(
    store: Store, start: Mark, capture: Capture, files: list[Change], limit: int
) -> tuple[list[Change], Mark, Capture]:
    """The span's real changes: a file that was only re-classified is no change.

    - ``deleted`` but still on disk: it left the capture because a rule changed
      (#12.1). Reported as a skip, and the span's start is taken without it, so
      undo never removes it.
    - ``added`` where the rules in force when the span began would not have
      captured it (``made_visible``): it may have been there all along, until
      an ignore rule or ``git add`` made it visible (#13.6). The start gets it
      too, so undo never deletes it. Any other added file was not there: the
      span added it, even with older times (#21.2: a renamed directory keeps
      its files' times).
    Returns the files left, the start (its tree edited) and the capture (its
    skips extended).
    """
    root = store.worktree.root
    edits: dict[str, tuple[int, bytes] | None] = {}
    skipped = dict(capture.skipped)
    rules = TreeRules(store, start.tree)
    for f in files:
        if f.status == "added":
            if made_visible(rules, start, f.path, limit):
                edits[f.path] = store.entry(capture.tree, f.path)
        elif f.status == "deleted":
            st = _lstat_within(root, f.path)
            if st is not None and not stat.S_ISDIR(st.st_mode):
                edits[f.path] = None
                skipped.setdefault(f.path, Skip(f.path, Why.LEFT, "", st.st_size, st.st_mtime_ns))
    if not edits:
        return files, start, capture
    tree = store.edit_tree(start.tree, edits)
    return (
        [f for f in files if f.path not in edits],
        replace(start, tree=tree),
        replace(capture, skipped=skipped),
    )


def made_visible(rules: TreeRules, start: Mark, rel: str, limit: int) -> bool:
    """Would the capture that began the span have left ``rel`` out, were it there?

    ``rel`` is not in the start tree. Left out: ignored by the start tree's
    ``.gitignore`` files and the excludes, or skipped then (too large,
    unreadable; itself or a directory above it), or over the size limit when
    the start's skips are unknown (a start that was no capture: ``at`` 0).
    """
    if any(p in start.skips for p in _self_and_parents(rel)):
        return True
    if rules.ignores(rel):
        return True
    if start.at:
        return False  # not ignored, not skipped: the start capture would hold it
    st = _lstat_within(rules.store.worktree.root, rel)
    return st is not None and stat.S_ISREG(st.st_mode) and st.st_size > limit


def _self_and_parents(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:n]) for n in range(len(parts), 0, -1)]


def _lstat_within(root: Path, rel: str) -> os.stat_result | None:
    """``lstat`` of ``rel`` reached through real directories only; None if not there."""
    try:
        return lstat_within(root, rel)
    except OSError:
        return None
