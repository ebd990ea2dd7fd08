"""snapshotter/cli/rewind/rows.py: the rewind view's list, what "go back" keeps, sessions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from snapshotter.cli.rewind import rows
from snapshotter.models import Checkpoint


def cp(id: int, label: str = "", session: str = "s", **fields: object) -> Checkpoint:
    values: dict[str, object] = {
        "id": id,
        "session_id": session,
        "kind": "tool" if fields.get("parent") else "turn",
        "label": label or f"turn {id}",
        "before": "a" * 40,
        "after": "b" * 40,
        "files": [],
        **fields,
    }
    return Checkpoint.model_validate(values)


# Turn 3 holds tools 1 and 2 (recorded before it, as a turn ends after its tools);
# turn 5 holds tool 4; tool 6 belongs to no turn.
SESSION = [
    cp(1, "Edit app.py", parent=3),
    cp(2, "shell: rm old.py", parent=3),
    cp(3, "fix the login bug"),
    cp(4, "Write new.py", parent=5),
    cp(5, "add a test"),
    cp(6, "Edit late.py"),
]


def shown(found: list[rows.Row]) -> list[tuple[int, int, int]]:
    return [(r.cp.id, r.depth, r.tools) for r in found]


def test_newest_first_with_tools_folded_under_their_turn() -> None:
    assert shown(rows.build(SESSION, [])) == [(6, 0, 0), (5, 0, 1), (3, 0, 2)]
    assert shown(rows.build(SESSION, [3])) == [
        (6, 0, 0),
        (5, 0, 1),
        (3, 0, 2),
        (2, 1, 0),
        (1, 1, 0),
    ], "an unfolded turn shows its tools under it, newest first"


def test_a_search_keeps_turns_whose_label_or_a_tool_s_holds_it() -> None:
    assert shown(rows.build(SESSION, [], "LOGIN")) == [(3, 0, 2)], "any case; folded"
    assert shown(rows.build(SESSION, [], "rm old")) == [(3, 0, 2), (2, 1, 0)], (
        "a turn kept for a tool's sake shows that tool"
    )
    assert rows.build(SESSION, [], "nowhere") == []


def test_a_tool_whose_turn_is_not_listed_stands_alone() -> None:
    other = [cp(7, "Edit x.py", parent=99)]
    assert shown(rows.build(other, [])) == [(7, 0, 0)]


def test_going_back_keeps_the_newest_checkpoint_older_than_the_whole_group() -> None:
    by_id = {c.id: c for c in SESSION}
    assert rows.back_to_before(SESSION, by_id[5]) == 3, "before turn 5 and its tool 4"
    assert rows.back_to_before(SESSION, by_id[3]) is None, "nothing before: --original"
    assert rows.back_to_before(SESSION, by_id[2]) == 1, "inside a turn: its earlier tool stays"
    assert rows.back_to_before(SESSION, by_id[6]) == 5


def test_going_back_looks_only_at_the_checkpoint_s_own_session() -> None:
    mixed = [cp(1, session="other"), cp(2), cp(3, session="other"), cp(4)]
    assert rows.back_to_before(mixed, mixed[3]) == 2
    assert rows.back_to_before(mixed, mixed[1]) is None


def test_sessions_are_ordered_by_their_newest_checkpoint() -> None:
    mixed = [cp(1, session="a"), cp(2, session="b"), cp(3, session="a"), cp(4, session="c")]
    assert rows.sessions(mixed) == ["c", "a", "b"]


def test_when_is_local_time_and_age() -> None:
    now = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    stamp = (now - timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    local = (now - timedelta(minutes=5)).astimezone().strftime("%H:%M:%S")
    assert rows.when(stamp, now) == f"{local} 5 min ago"
    old = (now - timedelta(days=3)).isoformat()
    assert rows.when(old, now).endswith(" 3 days ago")
    assert len(rows.when(old, now)) <= 20, "fits the list's column"
