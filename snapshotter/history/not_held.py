"""What undo cannot bring back because it was never held: ignored files a span deleted.

An agent that runs ``rm -rf .vscode`` or ``git clean -fdx`` deletes files the
ignore rules keep out of every capture, so no undo restores them. The walk
remembers the ignored paths it saw and passed by (walk.py); a span whose end
no longer finds one that its start saw, and which is gone from disk, reports it
on the checkpoint as skipped, "not held: ignored", so ``show``, ``list --json``
and undo's report say so (#26.3).
"""

from __future__ import annotations

import os

from snapshotter.checkpoints import NOT_HELD_IGNORED, Skipped
from snapshotter.history.records import Mark
from snapshotter.store.capture import Capture
from snapshotter.store.workspace import Workspace


def ignored_deleted(workspace: Workspace, start: Mark, capture: Capture) -> list[Skipped]:
    """The ignored files and directories (``name/``) seen at ``start`` and deleted by
    ``capture``, within the workspace's scope."""
    return [
        Skipped(rel, NOT_HELD_IGNORED)
        for rel in start.ignored_gone(capture)
        if _deleted(workspace, rel, capture.tree)
    ]


def _deleted(workspace: Workspace, rel: str, tree: str) -> bool:
    """Whether ignored ``rel`` is gone: not on disk, and not captured in ``tree``
    either (an ignore rule that no longer matches makes it an ordinary file)."""
    path = rel.rstrip("/")
    return (
        workspace.in_scope(path)
        and workspace.store.entry(tree, path) is None
        and not os.path.lexists(os.path.join(workspace.root, path))
    )
