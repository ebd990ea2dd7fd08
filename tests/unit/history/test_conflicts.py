"""snapshotter/history/conflicts.py: never overwrite someone else's later change, unless forced.

The workspace is a table (tree -> path -> entry): the rule only compares entries.
"""

from __future__ import annotations

from typing import cast

import pytest

from snapshotter.checkpoints import Change, Record
from snapshotter.errors import Conflict
from snapshotter.history.conflicts import refuse_changed
from snapshotter.history.records import RedoEntry, State
from snapshotter.store.workspace import Workspace

TREES = {
    "wanted": {"p": "v0"},  # what the operation writes back
    "expected": {"p": "v1"},  # what the checkpoint left
    "mine": {"p": "v2"},  # a later checkpoint of this session
    "theirs": {"p": "v3"},  # a checkpoint of another session
    "undone": {"p": "v4"},  # what one of this session's operations left
}


class Table:
    def __init__(self, now: str | None) -> None:
        self.trees = {**TREES, "current": {"p": now} if now else {}}

    def entry(self, tree: str, path: str) -> str | None:
        return self.trees[tree].get(path)


def record(id: int, session: str, after: str) -> Record:
    files = [Change("p", "modified")]
    return Record(
        id=id, session_id=session, kind="turn", label="", before="b", after=after, files=files
    )


def history() -> State:
    state = State()
    state.add(record(1, "me", "expected"))
    state.add(record(2, "me", "mine"))
    state.add(record(3, "other", "theirs"))
    state.session("me").redo = [
        RedoEntry(op="undo", checkpoints=[2], paths=["p"], tree="x", after="undone")
    ]
    return state


def refuse(now: str | None, *, since: int = 1, force: bool = False) -> list[str]:
    workspace = cast(Workspace, Table(now))
    wanted, expected = {"p": "wanted"}, {"p": "expected"}
    return refuse_changed(workspace, history(), "me", "current", wanted, expected, since, force)


@pytest.mark.parametrize(
    ("now", "why"),
    [
        ("v0", "already as the operation would write it"),
        ("v1", "as the checkpoint left it"),
        ("v2", "as this session's later checkpoint left it"),
        ("v4", "as this session's undo left it"),
    ],
)
def test_a_change_snapshotter_made_is_no_conflict(now: str, why: str) -> None:
    assert refuse(now) == [], why


def test_another_sessions_checkpoint_is_named() -> None:
    with pytest.raises(Conflict) as caught:
        refuse("v3")
    assert caught.value.by == {"p": "checkpoint 3 of session other"}


def test_anything_else_is_yours() -> None:
    for now in ("v9", None):  # edited, or deleted
        with pytest.raises(Conflict) as caught:
            refuse(now)
        assert caught.value.paths == ["p"] and caught.value.by == {"p": "you"}


def test_a_checkpoint_older_than_the_operation_does_not_count() -> None:
    with pytest.raises(Conflict) as caught:
        refuse("v2", since=3)
    assert caught.value.by == {"p": "you"}


def test_force_returns_what_would_be_overwritten() -> None:
    assert refuse("v9", force=True) == ["p"]
    assert refuse("v0", force=True) == []
