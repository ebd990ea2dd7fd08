"""The safety snapshot an undo, redo, reset or restore takes before it writes (SPEC §5).

It must hold the current bytes of every path the operation touches, whatever
ignore rules or the size limit say (#12.1): that is the way back (the redo
entry's tree, the journal's rollback) and what refusals compare with
(conflicts.py). Paths the operation does not touch are not changed by it, so
they need no capture (issue 24.2): the touched paths are read and laid over
the newest snapshot of the worktree, so the operation costs the paths it
touches, never a walk of the tree, with a hook server running or not (a
command the server forked does the same: its warm capture would still
re-check every directory the undo just wrote). Only a store with no snapshot
to lay them over takes a capture.

The snapshot is returned as a ``Mark``: what the session's latest capture
becomes once the operation is done (its tree edited by the caller).
"""

from __future__ import annotations

import time
from collections.abc import Collection
from dataclasses import replace

from snapshotter.history.lost import missing
from snapshotter.history.records import Mark, State
from snapshotter.store.restore import check_path
from snapshotter.store.shadow import Store
from snapshotter.store.workspace import Workspace


def take_safety(workspace: Workspace, state: State, paths: Collection[str]) -> Mark:
    """The worktree now as far as ``paths`` go, each path's bytes held, as a mark.

    ``paths``: every path the operation may write or remove; one unsafe path
    rejects it all before anything is read or written.
    """
    for path in paths:
        check_path(path)
    whole = workspace.unguarded()  # the way back is never refused (walk.py's guard)
    store = whole.store
    base = _base(state, store)
    if base is not None:
        return Mark(
            tree=store.as_now(base.tree, paths),
            skips=dict(base.skips),
            next_id=state.next_id,
            at=time.time_ns(),
            ignored=None if base.ignored is None else list(base.ignored),
        )
    capture = whole.capture()
    return replace(Mark.of(capture, state.next_id), tree=store.hold(capture.tree, paths))


def _base(state: State, store: Store) -> Mark | None:
    """What the untouched paths are taken as: the newest known state of the worktree.

    That is a session's latest capture or operation, or the newest capture by
    anyone when it is newer (a ``snapshotter capture`` from the shell), with
    the skips and ignored paths of the session's (the stat cache keeps none).
    None when there is neither, or it was lost (then the caller walks).
    """
    marks = [s.last for s in state.sessions.values() if s.last is not None]
    newest = max(marks, key=lambda m: m.at, default=None)
    captured = store.newest_capture()
    if captured is not None and (newest is None or captured[1] > newest.at):
        tree = captured[0]
        return (
            Mark(tree=tree, next_id=state.next_id) if newest is None else replace(newest, tree=tree)
        )
    if newest is None or missing(store, newest.tree):
        return None
    return newest
