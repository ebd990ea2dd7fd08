"""snapshotter/history/records.py: the state's records and what the State answers."""

from __future__ import annotations

from snapshotter.checkpoints import Change, Record, Skipped
from snapshotter.history.records import Mark, RedoEntry, Restoring, State
from snapshotter.store.capture import Capture
from snapshotter.store.skips import Skip, Why


def record(id: int, session: str = "s", parent: int | None = None, **fields: object) -> Record:
    values: dict[str, object] = {
        "kind": "tool" if parent else "turn",
        "label": f"cp {id}",
        "before": f"b{id}",
        "after": f"a{id}",
        "files": [],
    }
    values.update(fields)
    return Record(id=id, session_id=session, parent=parent, **values)  # type: ignore[arg-type]


def redo(tree: str, after: str) -> RedoEntry:
    return RedoEntry(op="undo", checkpoints=[1], paths=["p"], tree=tree, after=after)


def test_adding_a_checkpoint_moves_next_id_and_ends_that_sessions_redo() -> None:
    state = State()
    state.session("s").redo.append(redo("t", "u"))
    state.session("other").redo.append(redo("t", "u"))
    added = state.add(record(7))
    assert added is state.checkpoints[-1] and state.next_id == 8
    assert state.sessions["s"].redo == [], "a new change ends redo"
    assert len(state.sessions["other"].redo) == 1, "only for its own session"


def test_lookups_by_id_and_parent() -> None:
    state = State()
    for cp in (record(1), record(2, parent=1), record(3, parent=1), record(4)):
        state.add(cp)
    found = state.by_id(3)
    assert found is not None and found.label == "cp 3"
    assert state.by_id(99) is None
    assert [cp.id for cp in state.children(1)] == [2, 3]
    assert state.children(4) == []


def test_session_makes_a_session_once() -> None:
    state = State()
    first = state.session("s")
    first.prompt = "p"
    assert state.session("s") is first and list(state.sessions) == ["s"]


def test_live_trees_are_every_tree_something_still_needs() -> None:
    state = State()
    state.add(record(1))
    sess = state.session("s")
    sess.last = Mark(tree="last", next_id=2)
    sess.turn = Mark(tree="turn", next_id=2)
    sess.tools = [Mark(tree="tool", next_id=2)]
    sess.redo = [redo("redo-before", "redo-after")]
    assert state.live_trees() == {
        "b1",
        "a1",
        "last",
        "turn",
        "tool",
        "redo-before",
        "redo-after",
    }
    state.restoring = Restoring(safety="safe", steps=[("step", ["p"])], temps={})
    assert {"safe", "step"} <= state.live_trees()


def test_a_mark_remembers_its_captures_skips_and_names_only_new_ones_later() -> None:
    first = Capture(
        tree="t1",
        skipped={
            "big": Skip("big", Why.TOO_LARGE, "9", 10, 1),
            "gone": Skip("gone", Why.TOO_LARGE, "9", 1, 1),
        },
        started=42,
    )
    mark = Mark.of(first, next_id=5)
    assert (mark.tree, mark.next_id, mark.at) == ("t1", 5, 42)
    assert mark.skips == {"big": ("too_large", 10, 1), "gone": ("too_large", 1, 1)}
    later = Capture(
        tree="t2",
        skipped={
            "big": Skip("big", Why.TOO_LARGE, "9", 10, 1),  # unchanged: not news
            "new": Skip("new", Why.UNREADABLE, "Permission denied", 0, 0),
            "gone": Skip("gone", Why.TOO_LARGE, "9", 2, 1),  # grew: skipped again, news
        },
    )
    assert mark.new_skips(later) == [
        Skipped("gone", "new file larger than 9 bytes"),
        Skipped("new", "unreadable: Permission denied"),
    ]


def test_a_record_becomes_the_apis_checkpoint_field_by_field() -> None:
    cp = record(
        3,
        parent=1,
        files=[Change("a.py", "modified")],
        skipped=[Skipped("big", "too large")],
        named_paths=["a.py"],
        tool_name="Edit",
        command=None,
        created_at="2026-01-01T00:00:00.000000Z",
    )
    model = cp.to_model()
    assert model.model_dump() == {
        "id": 3,
        "session_id": "s",
        "kind": "tool",
        "label": "cp 3",
        "created_at": "2026-01-01T00:00:00.000000Z",
        "before": "b3",
        "after": "a3",
        "files": [{"path": "a.py", "status": "modified"}],
        "skipped": [{"path": "big", "reason": "too large"}],
        "undone": False,
        "parent": 1,
        "named_paths": ["a.py"],
        "prompt": None,
        "reason": None,
        "tool_name": "Edit",
        "command": None,
    }
