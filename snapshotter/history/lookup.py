"""Finding what a command acts on: a session, its checkpoints, the directory the
session works in, and where a diff of a checkpoint ends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from snapshotter.checkpoints import Record
from snapshotter.config import MANUAL_SESSION
from snapshotter.errors import NotAWorktree, NotFound, NothingToDo
from snapshotter.git.worktree import find_worktree
from snapshotter.history import sessions
from snapshotter.history.records import State
from snapshotter.history.state_file import load
from snapshotter.store.shadow import Store
from snapshotter.store.workspace import Workspace


def default_session(store: Store) -> str | None:
    """The session with the newest checkpoint in this worktree, or one whose turn or
    tool opened after it and is still open (an interrupted turn, #21.6).

    The user's own checkpoints (``MANUAL_SESSION``) count only when no other
    session recorded any: a save point must not hide the agent's session (#26.1).
    """
    return default_in(load(store))


def default_in(state: State) -> str | None:
    """``default_session`` of a state already loaded."""
    agents = [cp for cp in state.checkpoints if cp.session_id != MANUAL_SESSION]
    mine = agents or state.checkpoints
    newest = mine[-1] if mine else None
    best = (newest.id, 0) if newest else None
    found = newest.session_id if newest else None
    for session_id, sess in state.sessions.items():
        for mark in (sess.turn, *sess.tools):
            if mark is not None and (best is None or (mark.next_id, mark.at) > best):
                best, found = (mark.next_id, mark.at), session_id
    return found


def known_session(store: Store, session_id: str) -> bool:
    """Whether this worktree's history has heard of the session (an event, a checkpoint)."""
    state = load(store)
    return session_id in state.sessions or any(
        cp.session_id == session_id for cp in state.checkpoints
    )


def resolve_session(store: Store, *preferred: str | None) -> str:
    """The first of ``preferred`` that is set, else the default session."""
    found = next((s for s in preferred if s), None) or default_session(store)
    if not found:
        raise NothingToDo("no checkpoints in this worktree yet")
    return found


def named_session(store: Store, given: str) -> str:
    """The session a user named: its id, or a prefix of one id only, as git takes
    object ids (#26.2). NotFound, with the closest names, for any other."""
    state = load(store)
    known = sorted({cp.session_id for cp in state.checkpoints} | set(state.sessions))
    if given in known:
        return given
    starting = [s for s in known if s.startswith(given)]
    if len(starting) == 1:
        return starting[0]
    if starting:
        raise NotFound(f"session {given} is ambiguous: it starts {', '.join(starting[:5])}")
    close = _close(given, known)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise NotFound(f"no session {given} in this worktree{hint} (see `snapshotter list --all`)")


def _close(given: str, known: list[str]) -> list[str]:
    """Up to three of ``known`` that ``given`` may have meant: like it, or with a start
    like it (a mistyped prefix of a long id)."""
    import difflib

    def likeness(name: str) -> float:
        whole = difflib.SequenceMatcher(None, given, name).ratio()
        start = difflib.SequenceMatcher(None, given, name[: len(given)]).ratio()
        return max(whole, start)

    scored = sorted(((likeness(k), k) for k in known), reverse=True)
    return [k for score, k in scored[:3] if score >= 0.6]


def beside_manual(store: Store, session_id: str, op: Literal["undo", "redo"]) -> str:
    """Which of ``session_id`` and the user's own session (``MANUAL_SESSION``) a plain
    ``undo`` or ``redo`` acts on: the one with the newer checkpoint to undo, or the
    newer undo to redo (#26.1: a checkpoint by hand is undone before the agent's)."""
    if session_id == MANUAL_SESSION:
        return session_id
    state = load(store)

    def newest(session: str) -> tuple[int, int]:
        if op == "redo":
            sess = state.sessions.get(session)
            return (sess.redo[-1].at, 1) if sess is not None and sess.redo else (-1, 0)
        ids = [cp.id for cp in state.checkpoints if _undoable(cp, session)]
        return (max(ids), 1) if ids else (-1, 0)

    return max((session_id, MANUAL_SESSION), key=newest)


def _undoable(cp: Record, session_id: str) -> bool:
    """Whether a plain ``undo`` in ``session_id`` could take ``cp`` back (undo.py's rule)."""
    return (
        cp.session_id == session_id
        and cp.parent is None
        and not cp.undone
        and bool(cp.files or cp.skipped)
    )


def by_name(store: Store, name: str) -> Record:
    """The checkpoint a user named: its id, else the newest one whose message (a
    ``checkpoint -m`` label or what the user asked) is ``name`` (#26.1)."""
    state = load(store)
    if name.isascii() and name.isdigit():
        found = state.by_id(int(name))
        if found is None:
            raise NotFound(f"no checkpoint {name} in this worktree (see `snapshotter list --all`)")
        return found
    for cp in reversed(state.checkpoints):
        if name in (cp.label, cp.prompt):
            return cp
    import difflib

    labels = list(dict.fromkeys(cp.label for cp in reversed(state.checkpoints)))
    close = difflib.get_close_matches(name, labels, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise NotFound(f"no checkpoint named {name!r} in this worktree{hint}")


def list_checkpoints(store: Store, session_id: str | None) -> list[Record]:
    """Checkpoints ordered by id; one session's, or every session's when None."""
    state = load(store)
    return [cp for cp in state.checkpoints if session_id is None or cp.session_id == session_id]


def find_checkpoint(
    workspace: Workspace, checkpoint_id: int | None, session_id: str | None = None
) -> Record:
    """Checkpoint ``checkpoint_id`` of the worktree, in any session; without an id,
    the newest top-level checkpoint of ``session_id`` (default: the newest session)."""
    cps = list_checkpoints(workspace.store, None)
    if checkpoint_id is None:
        session = resolve_session(workspace.store, session_id)
        mine = [cp for cp in cps if cp.session_id == session and cp.parent is None]
        if not mine:
            raise NothingToDo("no checkpoints yet")
        return mine[-1]
    for cp in cps:
        if cp.id == checkpoint_id:
            return cp
    raise NotFound(f"no checkpoint {checkpoint_id} in this worktree (see `snapshotter list --all`)")


def session_workspace(workspace: Workspace, data_dir: Path, session_id: str) -> Workspace:
    """The workspace over the directory a session works in (SPEC §3).

    That is where its checkpoints were recorded; with no record of it (or
    another worktree), ``workspace`` itself.
    """
    kept = sessions.kept_dir(data_dir, session_id)
    if kept is None:
        return workspace
    try:
        worktree = find_worktree(kept)
    except NotAWorktree:
        return workspace
    return workspace.with_scope(worktree.scope) if worktree.root == workspace.root else workspace


def diff_end(
    workspace: Workspace,
    data_dir: Path,
    cp: Record,
    to_now: bool,
    until: Record | None = None,
) -> tuple[str, Callable[[str], bool], list[tuple[str, str]]]:
    """Where a diff of ``cp`` ends, the paths it shows, and (path, reason) of files a
    fresh capture left out: the checkpoint's own files up to its ``after``; or,
    to now or to after ``until`` (``diff A..B``), everything in its session's
    directory."""
    if until is not None:
        scoped = session_workspace(workspace, data_dir, cp.session_id)
        return until.after, scoped.in_scope, []
    if not to_now:
        return cp.after, {f.path for f in cp.files}.__contains__, []
    scoped = session_workspace(workspace, data_dir, cp.session_id)
    now = scoped.capture()
    skipped = sorted((s.path, s.reason) for s in now.skipped.values() if scoped.in_scope(s.path))
    return now.tree, scoped.in_scope, skipped


def close_interrupted(workspace: Workspace, data_dir: Path, session_id: str) -> None:
    """Close the turn or tool the session left open (Esc: no ``Stop``), in its directory,
    before a command reads or restores its history (#21.6)."""
    from snapshotter.history.recorder import Recorder

    Recorder(session_workspace(workspace, data_dir, session_id), session_id).close_interrupted()
