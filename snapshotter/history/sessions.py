"""Where a session works: fixed by its first event, whatever later events say.

Claude Code sends its shell's *current* directory as ``cwd``: after the agent
runs ``cd src``, every later event of the session names ``<repo>/src``, and a
capture scoped to that would miss ``README.md`` edited in the same turn. So
the first event of a session decides its directory (SPEC §3). It is kept in
the data directory, keyed by a hash of the session id (ids
are never parts of a path), where every later event, in any process, finds it.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from snapshotter.config import sessions_dir
from snapshotter.fileio import temp_name


def kept_dir(data_dir: Path, session_id: str) -> str | None:
    """The directory the session's first event recorded, if it still exists."""
    kept = _read(_record_path(data_dir, session_id), session_id)
    return kept if kept is not None and os.path.isdir(kept) else None


def recorded_dir(data_dir: Path, session_id: str) -> str | None:
    """The directory the session's first event recorded, whether or not it still exists."""
    return _read(_record_path(data_dir, session_id), session_id)


def first_dir(event_cwd: str, project_dir: str | None) -> str:
    """Where a session with no record works: the runtime's project, else the event's cwd."""
    if project_dir and os.path.isdir(project_dir):
        return os.path.abspath(project_dir)
    return event_cwd


def claim(data_dir: Path, session_id: str, directory: str) -> str:
    """Record ``directory`` unless another process recorded one first; the winner's.

    Called only once ``directory`` proved to be in a worktree, so bad input and
    events outside git leave nothing behind.
    """
    record = _record_path(data_dir, session_id)
    body = json.dumps({"session_id": session_id, "dir": directory}).encode()  # ASCII
    try:
        record.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = record.with_name(temp_name())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(body)
        try:
            os.link(tmp, record)  # atomic and never replaces: the first event wins
        except FileExistsError:
            winner = kept_dir(data_dir, session_id)
            return winner if winner is not None else directory
        finally:
            os.unlink(tmp)
    except OSError:
        return directory  # no record (read-only data dir): today's rule still holds
    return directory


def first_stop(data_dir: Path, session_id: str) -> bool:
    """Whether this is the first time the session's capture stopped (its worktree is
    gone); remembered beside its record, so a hook says so once, not on every event."""
    marker = _record_path(data_dir, session_id).with_suffix(".stopped")
    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        return False
    except OSError:
        return True  # no marker possible (read-only data dir): say it again rather than never
    return True


def forget_older_than(data_dir: Path, max_age_s: float, now: float) -> int:
    """Drop records of sessions not seen for ``max_age_s``; returns how many."""
    records = folder(data_dir)
    dropped = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(records):
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime > max_age_s:
                    os.unlink(entry.path)
                    dropped += 1
    return dropped


def _record_path(data_dir: Path, session_id: str) -> Path:
    import xxhash

    name = xxhash.xxh3_128_hexdigest(session_id.encode("utf-8", "surrogatepass"))
    return folder(data_dir) / f"{name}.json"


def folder(data_dir: Path) -> Path:
    """Where session records live (see config.sessions_dir)."""
    return sessions_dir(data_dir)


def _read(record: Path, session_id: str) -> str | None:
    try:
        with open(record, "rb") as f:
            data = json.loads(f.read(64 * 1024))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("session_id") != session_id:
        return None  # a hash collision or a damaged record: not this session's
    found = data.get("dir")
    if isinstance(found, str):
        with contextlib.suppress(OSError):
            os.utime(record)  # seen now: retention counts from the last event
        return found
    return None
