"""Opening the engine a hook event's session works in (SPEC §3).

A session's first event fixes its directory, whatever later events' ``cwd``
says (agents ``cd``); history/sessions.py keeps that record. This is the one
place a hook turns (session, cwd) into an engine.
"""

from __future__ import annotations

from pathlib import Path

from snapshotter.engine import Engine, OpenOptions
from snapshotter.history import sessions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.store.resident import Resident


def open_session(
    data_dir: Path,
    session_id: str,
    cwd: str,
    project_dir: str | None,
    *,
    max_new_file_size: int,
    max_files: int | None,
    resident: Resident | None = None,
) -> Engine:
    """The engine of the directory ``session_id`` works in, created on first use.

    That is the directory its first event recorded; for a session with no
    record, ``project_dir`` (the runtime's project, when it says) else ``cwd``,
    recorded now unless another process's first event came first (then the
    winner's). Raises NotAWorktree when that directory is not in a git worktree.
    """
    kept = sessions.kept_dir(data_dir, session_id)
    directory = kept or sessions.first_dir(cwd, project_dir)
    options = OpenOptions(
        data_dir_path=data_dir,
        max_new_file_size=max_new_file_size,
        max_files=max_files,
        resident=resident,
    )
    engine = Engine.open(directory, **options)
    if kept is None:
        winner = sessions.claim(data_dir, session_id, directory)
        if winner != directory:  # another process's first event came first
            engine = Engine.open(winner, **options)
    return engine


def first_stop(data_dir: Path, session_id: str) -> str | None:
    """The directory a session was recording in, the first time it turns out to be no
    git worktree any more (its ``.git`` is gone); None after that, and for a session
    that never recorded (outside git from the start: a silent no-op, SPEC §3)."""
    recorded = sessions.recorded_dir(data_dir, session_id)
    if recorded is None or not sessions.first_stop(data_dir, session_id):
        return None
    return recorded
