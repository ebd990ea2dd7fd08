"""The one refusal rule of undo, redo, reset and restore (#21.3, #21.6).

An operation never overwrites a file someone changed after the checkpoint it
restores, unless forced; a change snapshotter itself made (this session's
later checkpoints and operations) is no one's edit. Who changed a file is
named in the Conflict, so the user knows whose work they would clobber.
"""

from __future__ import annotations

from snapshotter.errors import Conflict
from snapshotter.history.records import State
from snapshotter.store.workspace import Workspace


def refuse_changed(
    workspace: Workspace,
    state: State,
    session_id: str,
    current: str,
    wanted: dict[str, str],
    expected: dict[str, str],
    since: int,
    force: bool,
) -> list[str]:
    """Conflict over the paths someone else changed; with ``force``, those paths.

    ``wanted``: path → the tree the operation takes it from; ``expected``:
    path → the tree the operation's checkpoint left it as. A path is no
    conflict when it already is as the operation would write it, is where the
    checkpoint left it, or is as snapshotter itself last left it: a later
    checkpoint of this session (``since``: the operation's oldest checkpoint)
    or one of the session's undo, redo, reset or restore operations. Anything
    else someone changed since: Conflict, naming who, unless ``force`` (then
    those paths are returned, to be overwritten).

    ``current`` is the safety tree: it holds every path's bytes, so a file the
    capture left out (ignored, too large) is compared by its content too.
    """
    changed: dict[str, str] = {}
    entry = workspace.entry
    for path in sorted(wanted):
        now = entry(current, path)
        if now == entry(wanted[path], path) or now == entry(expected[path], path):
            continue
        who = _left_by(workspace, state, session_id, since, path, now)
        if who is not None:
            changed[path] = who
    if changed and not force:
        raise Conflict(changed, by=changed)
    return sorted(changed)


def _left_by(
    workspace: Workspace, state: State, session_id: str, since: int, path: str, now: object
) -> str | None:
    """Who left ``path`` as ``now``: None for snapshotter itself (this session's
    later checkpoints and operations), else another session's checkpoint, else you."""
    sess = state.sessions.get(session_id)
    redo = sess.redo if sess is not None else []
    if any(path in r.paths and workspace.entry(r.after, path) == now for r in redo):
        return None
    for cp in reversed(state.checkpoints):
        if cp.id < since:
            break
        if any(f.path == path for f in cp.files) and workspace.entry(cp.after, path) == now:
            if cp.session_id == session_id:
                return None
            return f"checkpoint {cp.id} of session {cp.session_id}"
    return "you"
