"""Which checkpoints a store keeps: by age, by count per session, by size.

Pure functions over the persisted State, so gc can show (``--dry-run``) or
apply the same decision. A session is dropped whole, oldest first; the
session that was active most recently is never dropped for size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from snapshotter.config import (
    DEFAULT_MAX_AGE_DAYS,
    DEFAULT_MAX_CHECKPOINTS,
    DEFAULT_MAX_STORE_BYTES,
)
from snapshotter.history.records import State


@dataclass(frozen=True)
class Policy:
    max_age_days: float | None = DEFAULT_MAX_AGE_DAYS
    max_checkpoints: int | None = DEFAULT_MAX_CHECKPOINTS  # per session, top-level
    max_store_bytes: int | None = DEFAULT_MAX_STORE_BYTES


@dataclass
class Dropped:
    sessions: list[str] = field(default_factory=list)
    checkpoints: list[int] = field(default_factory=list)


def session_ages(state: State) -> dict[str, str]:
    """Each session's newest activity (ISO time), oldest first."""
    seen: dict[str, str] = {sid: s.touched for sid, s in state.sessions.items()}
    for cp in state.checkpoints:
        seen[cp.session_id] = max(seen.get(cp.session_id, ""), cp.created_at)
    return dict(sorted(seen.items(), key=lambda item: item[1]))


def drop_session(state: State, session_id: str, dropped: Dropped) -> None:
    dropped.sessions.append(session_id)
    dropped.checkpoints.extend(cp.id for cp in state.checkpoints if cp.session_id == session_id)
    state.checkpoints = [cp for cp in state.checkpoints if cp.session_id != session_id]
    state.sessions.pop(session_id, None)


def apply_age_and_count(state: State, policy: Policy, now: datetime | None = None) -> Dropped:
    dropped = Dropped()
    for session_id in _expired(state, policy, now):
        drop_session(state, session_id, dropped)
    if policy.max_checkpoints is not None:
        _trim_counts(state, policy.max_checkpoints, dropped)
    return dropped


def would_drop(state: State, policy: Policy, now: datetime | None = None) -> bool:
    """Whether ``apply_age_and_count`` would drop anything (``state`` is left as it is)."""
    if _expired(state, policy, now):
        return True
    limit = policy.max_checkpoints
    return limit is not None and any(len(ids) > limit for ids in _top_level(state).values())


def _expired(state: State, policy: Policy, now: datetime | None) -> list[str]:
    """The sessions idle longer than ``policy.max_age_days``, oldest first."""
    if policy.max_age_days is None:
        return []
    cutoff = (now or datetime.now(UTC)) - timedelta(days=policy.max_age_days)
    stamp = cutoff.strftime("%Y-%m-%dT%H:%M:%S")
    return [sid for sid, last in session_ages(state).items() if last[:19] < stamp]


def _top_level(state: State) -> dict[str, list[int]]:
    """Each session's top-level checkpoint ids, oldest first."""
    by_session: dict[str, list[int]] = {}
    for cp in state.checkpoints:
        if cp.parent is None:
            by_session.setdefault(cp.session_id, []).append(cp.id)
    return by_session


def _trim_counts(state: State, limit: int, dropped: Dropped) -> None:
    doomed: set[int] = set()
    for ids in _top_level(state).values():
        doomed.update(ids[: max(0, len(ids) - limit)])
    if not doomed:
        return
    doomed.update(cp.id for cp in state.checkpoints if cp.parent in doomed)
    dropped.checkpoints.extend(sorted(doomed))
    state.checkpoints = [cp for cp in state.checkpoints if cp.id not in doomed]
    for sess in state.sessions.values():
        # A redo entry naming a dropped checkpoint could no longer be redone exactly.
        sess.redo = [e for e in sess.redo if not doomed.intersection(e.checkpoints)]


def oldest_droppable(state: State) -> str | None:
    """The session to drop next for size: the oldest, never the newest one."""
    ages = list(session_ages(state))
    return ages[0] if len(ages) > 1 else None
