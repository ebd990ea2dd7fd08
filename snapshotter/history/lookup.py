"""Finding what a command acts on: a session, its checkpoints, the directory the
session works in, and where a diff of a checkpoint ends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from snapshotter.errors import NotAWorktree, NotFound, NothingToDo
from snapshotter.git.worktree import find_worktree
from snapshotter.history import sessions
from snapshotter.history.state_file import load
from snapshotter.models import Checkpoint
from snapshotter.store.shadow import Store
from snapshotter.store.workspace import Workspace


def default_session(store: Store) -> str | None:
    """The session with the newest checkpoint in this worktree, or one whose turn or
    tool opened after it and is still open (an interrupted turn, #21.6)."""
    state = load(store)
    newest = state.checkpoints[-1] if state.checkpoints else None
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


def list_checkpoints(store: Store, session_id: str | None) -> list[Checkpoint]:
    """Checkpoints ordered by id; one session's, or every session's when None."""
    state = load(store)
    return [
        cp.to_model()
        for cp in state.checkpoints
        if session_id is None or cp.session_id == session_id
    ]


def find_checkpoint(
    workspace: Workspace, checkpoint_id: int | None, session_id: str | None = None
) -> Checkpoint:
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
    workspace: Workspace, data_dir: Path, cp: Checkpoint, to_now: bool
) -> tuple[str, Callable[[str], bool], list[tuple[str, str]]]:
    """Where a diff of ``cp`` ends, the paths it shows, and (path, reason) of files a
    fresh capture left out: the checkpoint's own files up to its ``after``, or, to
    now, everything in its session's directory."""
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
