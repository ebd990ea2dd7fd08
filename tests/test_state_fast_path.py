"""state.json read and written without pydantic, exactly as its pydantic schema would (#16.4).

A hook process loads and saves the state on every event, so history/records.py
reads it with the json module into plain objects; the pydantic models
(history/schema.py, models.Checkpoint) stay the definition. These tests hold
the two to each other: what the plain path writes, the schema reads and
writes back byte for byte; every document, odd or damaged, reads the same
either way, or fails with the same error.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import event, hook_in_process, make_repo, store_root, write

from snapshotter.errors import StoreError
from snapshotter.history import records, schema
from snapshotter.history.records import Change, Mark, Record, RedoEntry, Restoring, Skipped, State

UNDECODABLE = os.fsdecode(b"caf\xe9.txt")  # not UTF-8: kept in git's quoted form in JSON


def rich_state() -> State:
    """A state with every kind of value the document holds, awkward names included."""
    state = State(next_id=3)
    sess = state.session("s\u00e9")
    sess.prompt = 'fix "it"\n\u00fc\x1b'
    sess.last = Mark(tree="t1", skips={UNDECODABLE: ("too large", 5, 7)}, next_id=1, at=12)
    sess.turn = Mark(tree="t2", next_id=2, tool_use_id="u", tool_name="Edit", named=['"q'])
    sess.tools = [Mark(tree="t3", next_id=2, command="rm -rf build")]
    sess.turn_tools = [2]
    sess.redo = [RedoEntry(op="undo", checkpoints=[1], paths=[UNDECODABLE], tree="a", after="b")]
    state.checkpoints = [
        Record(
            id=1,
            session_id="s\u00e9",
            kind="turn",
            label="l\x1b",
            before="a",
            after="b",
            files=[Change(UNDECODABLE, "added"), Change("d/x.py", "deleted")],
            skipped=[Skipped("big.bin", "new file larger than 2 bytes")],
            undone=True,
            prompt="p",
            reason="interrupted",
        ),
        Record(
            id=2,
            session_id="s\u00e9",
            kind="tool",
            label="Edit x",
            before="b",
            after="c",
            files=[Change("x", "modified")],
            parent=1,
            named_paths=[UNDECODABLE, "\\back"],
            tool_name="Edit",
            command="c",
        ),
    ]
    state.restoring = Restoring(
        safety="s",
        steps=[("t1", [UNDECODABLE, "a"]), ("t2", [])],
        temps={UNDECODABLE: ".tmp"},
        op="redo",
        checkpoints=[1, 2],
        rollback=True,
    )
    return state


def by_schema(raw: bytes) -> State:
    """The state as the pydantic schema alone reads ``raw`` (the reference)."""
    document = schema.State.model_validate_json(raw).model_dump(mode="json")
    return records.parse(json.dumps(document, ensure_ascii=False).encode(), Path("state.json"))


@pytest.fixture
def no_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail on any use of the pydantic schema: the plain path must do it all."""
    monkeypatch.setitem(sys.modules, "snapshotter.history.schema", None)


def test_what_the_plain_path_writes_the_schema_writes_back_byte_for_byte() -> None:
    raw = records.dump(rich_state())
    assert schema.State.model_validate_json(raw).model_dump_json().encode() == raw


def test_what_the_schema_writes_the_plain_path_reads_back(no_schema: None) -> None:
    state = rich_state()
    raw = records.dump(state)
    assert records.parse(raw, Path("state.json")) == state, "read back as it was"
    assert records.dump(records.parse(raw, Path("state.json"))) == raw


def test_checkpoints_handed_out_are_the_schema_models() -> None:
    for record in rich_state().checkpoints:
        model = record.to_model()
        document = json.loads(records.dump(State(checkpoints=[record])))["checkpoints"][0]
        assert model.model_dump(mode="json") == document, "the same checkpoint"
        assert model.files[0].path == record.files[0].path, "names as they are, not quoted"


def test_a_real_sessions_state_reads_the_same_both_ways(
    tmp_path: Path, data_dir: Path, no_schema: None
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n"})
    steps: list[tuple[str, dict[str, Any]]] = [
        ("session_start", {}),
        ("turn_start", {"prompt": "edit a\nplease"}),
        ("pre_tool_use", {"tool_name": "Write", "tool_input": {"path": str(root / "a.txt")}}),
    ]
    for name, fields in steps:
        assert hook_in_process(event(name, root, **fields), data_dir) == (0, "", "")
    write(root, "a.txt", "changed\n")
    write(root, os.fsdecode(b"n\xe9w.txt"), "new\n")
    tool: dict[str, Any] = {"tool_name": "Write", "tool_input": {"path": str(root / "a.txt")}}
    for name, fields in [("post_tool_use", tool), ("turn_end", {"reason": "normal"})]:
        assert hook_in_process(event(name, root, **fields), data_dir) == (0, "", "")
    raw = (store_root(data_dir) / "state.json").read_bytes()
    assert len(json.loads(raw)["checkpoints"]) == 2, "a tool and its turn were recorded"
    plain = records.parse(raw, Path("state.json"))
    sys.modules.pop("snapshotter.history.schema")  # the reference may use it
    assert plain == by_schema(raw)
    assert schema.State.model_validate_json(raw).model_dump_json().encode() == raw


def base_document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(records.dump(rich_state()))
    return document


def edited(path: str, value: object) -> bytes:
    """The rich document with the value at ``path`` (keys and indexes, ``/``-separated) set;
    ``...`` removes it."""
    document = base_document()
    *parents, last = path.split("/")
    node: Any = document
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    key_or_index: Any = int(last) if isinstance(node, list) else last
    if value is ...:
        del node[key_or_index]
    else:
        node[key_or_index] = value
    return json.dumps(document).encode()


# Documents save never writes: valid ones the schema converts, and damaged ones.
ODD = {
    # (``touched`` is given: left out, it is now, which differs by microseconds.)
    "defaults left out": json.dumps(
        {"sessions": {"s": {"touched": "t", "last": {"tree": "t", "next_id": 1}}}}
    ).encode(),
    "empty object": b"{}",
    "extra key": edited("extra", 1),
    "extra key in a checkpoint": edited("checkpoints/0/extra", 1),
    "number as a string": edited("next_id", "3"),
    "whole float as an int": edited("next_id", 3.0),
    "bool as an int": edited("checkpoints/0/id", True),
    "version 2": edited("version", 2),
    "unknown status": edited("checkpoints/0/files/0/status", "renamed"),
    "unknown kind": edited("checkpoints/0/kind", "span"),
    "skip of two values": edited('sessions/s\u00e9/last/skips/"caf\\351.txt"', ["r", 1]),
    "skip size as a string": edited('sessions/s\u00e9/last/skips/"caf\\351.txt"', ["r", "1", 2]),
    "step of three values": edited("restoring/steps/0", ["t", [], 1]),
    "required field missing": edited("checkpoints/1/before", ...),
    "null where a list goes": edited("checkpoints/0/files", None),
    "sessions a list": edited("sessions", []),
    "a path not a string": edited("checkpoints/0/named_paths", [1]),
    "created_at null": edited("checkpoints/0/created_at", None),
    "escaped lone surrogate": b'{"sessions": {"\\ud800": {}}}',
    "escaped surrogate pair": b'{"sessions": {"\\ud83d\\ude00": {"touched": "t"}}}',
    "encoded surrogate": b'{"sessions": {"\xed\xa0\x80": {}}}',
    "not UTF-8": b'{"sessions": {"\xe9": {}}}',
    "BOM": b"\xef\xbb\xbf{}",
    "NaN": b'{"next_id": NaN}',
    "truncated": records.dump(rich_state())[:-7],
    "not JSON": b"<html>",
    "empty file": b"",
    "a list": b"[]",
    "deeply nested": b"[" * 100_000,
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_an_odd_or_damaged_document_reads_as_the_schema_reads_it(name: str) -> None:
    raw = ODD[name]
    path = Path("state.json")
    try:
        expected: State | str = by_schema(raw)
    except StoreError as exc:
        expected = str(exc)
    except ValueError as exc:  # pydantic's ValidationError, read here without records
        expected = f"{path} is damaged ({exc.error_count()} errors); move it away"  # type: ignore[attr-defined]
    try:
        found: State | str = records.parse(raw, path)
    except StoreError as exc:
        found = str(exc)
    assert found == expected
    if isinstance(found, State) and isinstance(expected, State):  # True == 1, but not in JSON
        assert records.dump(found) == records.dump(expected)


def test_a_damaged_file_is_named_with_the_schemas_count(tmp_path: Path) -> None:
    """As before the plain path: ``<path> is damaged (N errors); move it away``."""
    raw = edited("checkpoints/1/before", ...)
    with pytest.raises(StoreError, match=r"state\.json is damaged \(1 errors\); move it away"):
        records.parse(raw, tmp_path / "state.json")
