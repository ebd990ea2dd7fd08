"""snapshotter/history/retention.py: which sessions and checkpoints gc keeps."""

from __future__ import annotations

from datetime import UTC, datetime

from snapshotter.checkpoints import Record
from snapshotter.history.records import RedoEntry, SessionState, State
from snapshotter.history.retention import (
    Policy,
    apply_age_and_count,
    oldest_droppable,
    session_ages,
)

NOW = datetime(2026, 3, 31, 12, 0, tzinfo=UTC)


def record(id: int, session: str, day: int, parent: int | None = None) -> Record:
    return Record(
        id=id,
        session_id=session,
        kind="tool" if parent else "turn",
        label="",
        created_at=f"2026-03-{day:02d}T10:00:00.000000Z",
        before="b",
        after="a",
        files=[],
        parent=parent,
    )


def state(*records: Record, touched: dict[str, int] | None = None) -> State:
    found = State()
    for cp in records:
        found.add(cp)  # (its session is touched now: set back below)
    for sess in found.sessions.values():
        sess.touched = "2026-03-01T00:00:00Z"
    for session, day in (touched or {}).items():
        found.sessions[session] = SessionState(touched=f"2026-03-{day:02d}T00:00:00Z")
    return found


def test_a_sessions_age_is_its_newest_checkpoint_or_event() -> None:
    found = state(
        record(1, "a", 5), record(2, "a", 9), record(3, "b", 2), touched={"b": 20, "c": 1}
    )
    assert session_ages(found) == {
        "c": "2026-03-01T00:00:00Z",
        "a": "2026-03-09T10:00:00.000000Z",
        "b": "2026-03-20T00:00:00Z",
    }, "oldest first"


def test_sessions_idle_past_the_age_limit_are_dropped_whole() -> None:
    found = state(record(1, "old", 1), record(2, "old", 2, parent=1), record(3, "new", 30))
    dropped = apply_age_and_count(found, Policy(max_age_days=10, max_checkpoints=None), NOW)
    assert (dropped.sessions, dropped.checkpoints) == (["old"], [1, 2])
    assert [cp.id for cp in found.checkpoints] == [3] and "old" not in found.sessions
    assert apply_age_and_count(found, Policy(max_age_days=None, max_checkpoints=None), NOW) == (
        type(dropped)()
    )


def test_each_session_keeps_its_newest_turns_with_their_tools() -> None:
    found = state(
        record(1, "s", 28),
        record(2, "s", 28, parent=1),
        record(3, "s", 29),
        record(4, "s", 30),
        record(5, "t", 30),
    )
    found.session("s").redo = [
        RedoEntry(op="undo", checkpoints=[2], paths=[], tree="x", after="y"),
        RedoEntry(op="undo", checkpoints=[4], paths=[], tree="x", after="y"),
    ]
    dropped = apply_age_and_count(found, Policy(max_age_days=None, max_checkpoints=2), NOW)
    assert dropped.checkpoints == [1, 2] and dropped.sessions == []
    assert [cp.id for cp in found.checkpoints] == [3, 4, 5]
    assert [e.checkpoints for e in found.sessions["s"].redo] == [[4]], "no redo of what went"


def test_the_size_limit_drops_the_oldest_session_but_never_the_last() -> None:
    assert oldest_droppable(state(record(1, "a", 5), record(2, "b", 1))) == "b"
    assert oldest_droppable(state(record(1, "a", 5))) is None
    assert oldest_droppable(State()) is None


def test_would_drop_says_whether_apply_drops_anything_and_changes_nothing() -> None:
    """session_end decides from it whether to start a gc process at all."""
    import copy

    from snapshotter.history.retention import would_drop

    shapes = [
        state(),
        state(record(1, "old", 1), record(2, "new", 30)),
        state(record(1, "s", 30), record(2, "s", 30, parent=1), record(3, "s", 30)),
        state(record(1, "s", 30), record(2, "s", 30), record(3, "s", 30)),
        state(touched={"idle": 2}),
    ]
    policies = [
        Policy(max_age_days=10, max_checkpoints=None),
        Policy(max_age_days=None, max_checkpoints=2),
        Policy(max_age_days=None, max_checkpoints=3),
        Policy(max_age_days=40, max_checkpoints=5),
        Policy(max_age_days=None, max_checkpoints=None),
    ]
    answers = set()
    for shape in shapes:
        for policy in policies:
            kept = copy.deepcopy(shape)
            answer = would_drop(shape, policy, NOW)
            assert shape == kept, "would_drop changed the state"
            dropped = apply_age_and_count(copy.deepcopy(shape), policy, NOW)
            assert answer == bool(dropped.checkpoints or dropped.sessions), (shape, policy)
            answers.add(answer)
    assert answers == {True, False}, "both answers were asked for"
