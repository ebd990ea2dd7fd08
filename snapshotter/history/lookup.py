"""Finding what a command acts on: a checkpoint, the directory its session
works in, and where a diff of it ends."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from snapshotter.errors import NotAWorktree, NotFound, NothingToDo
from snapshotter.git.worktree import find_worktree
from snapshotter.history import sessions
from snapshotter.history.undo import list_checkpoints, resolve_session
from snapshotter.models import Checkpoint
from snapshotter.store.workspace import Workspace


def find_checkpoint(
    engine: Workspace, checkpoint_id: int | None, session_id: str | None = None
) -> Checkpoint:
    """Checkpoint ``checkpoint_id`` of the worktree, in any session; without an id,
    the newest top-level checkpoint of ``session_id`` (default: the newest session)."""
    cps = list_checkpoints(engine.store, None)
    if checkpoint_id is None:
        session = resolve_session(engine.store, session_id)
        mine = [cp for cp in cps if cp.session_id == session and cp.parent is None]
        if not mine:
            raise NothingToDo("no checkpoints yet")
        return mine[-1]
    for cp in cps:
        if cp.id == checkpoint_id:
            return cp
    raise NotFound(f"no checkpoint {checkpoint_id} in this worktree (see `snapshotter list --all`)")


def session_workspace(engine: Workspace, data_dir: Path, session_id: str) -> Workspace:
    """The workspace over the directory a session works in (SPEC §3).

    That is where its checkpoints were recorded; with no record of it (or
    another worktree), the engine's own scope.
    """
    kept = sessions.kept_dir(data_dir, session_id)
    if kept is None:
        return engine
    try:
        worktree = find_worktree(kept)
    except NotAWorktree:
        return engine
    return engine.with_scope(worktree.scope) if worktree.root == engine.root else engine


def diff_end(
    engine: Workspace, data_dir: Path, cp: Checkpoint, to_now: bool
) -> tuple[str, Callable[[str], bool], list[tuple[str, str]]]:
    """Where a diff of ``cp`` ends, the paths it shows, and (path, reason) of files a
    fresh capture left out: the checkpoint's own files up to its ``after``, or, to
    now, everything in its session's directory."""
    if not to_now:
        return cp.after, {f.path for f in cp.files}.__contains__, []
    scoped = session_workspace(engine, data_dir, cp.session_id)
    now = scoped.capture()
    skipped = sorted((s.path, s.reason) for s in now.skipped.values() if scoped.in_scope(s.path))
    return now.tree, scoped.in_scope, skipped


def close_interrupted(engine: Workspace, data_dir: Path, session_id: str) -> None:
    """Close the turn or tool the session left open (Esc: no ``Stop``), in its directory,
    before a command reads or restores its history (#21.6)."""
    from snapshotter.history.recorder import Recorder

    Recorder(session_workspace(engine, data_dir, session_id), session_id).close_interrupted()
