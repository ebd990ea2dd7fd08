"""state.json: the records' dataclasses are its one definition (history/records.py).

``codec`` derives the document's JSON from their fields, and reads exactly
what it writes; anything else goes to the lenient reading, pydantic over the
same dataclasses (history/state_file.py), which converts what it can and names
what is wrong. These tests pin the byte format (a document the earlier,
hand-written code wrote reads and writes back byte for byte), hold the two
readings to each other on odd and damaged documents, and show that a new
field needs no edit beyond its class.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from builders import event, hook_in_process, make_repo, store_root, write

from snapshotter import codec
from snapshotter.checkpoints import Change, Record, Skipped
from snapshotter.errors import StoreError
from snapshotter.history import state_file
from snapshotter.history.records import Mark, RedoEntry, Restoring, State
from snapshotter.names import Name

UNDECODABLE = os.fsdecode(b"caf\xe9.txt")  # not UTF-8: kept in git's quoted form in JSON


def rich_state() -> State:
    """A state with every kind of value the document holds, awkward names included."""
    state = State(next_id=3)
    sess = state.session("s\u00e9")
    sess.touched = "2026-05-01T10:00:03Z"
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
            created_at="2026-05-01T10:00:01Z",
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
            created_at="2026-05-01T10:00:02Z",
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


# ``rich_state()`` as the hand-written reader and writer before issue 23 wrote it.
WRITTEN_BEFORE = (
    b'{"version":1,"next_id":3,"checkpoints":[{"id":1,"session_id":"s\xc3\xa9",'
    b'"kind":"turn","label":"l\\u001b","created_at":"2026-05-01T10:00:01Z",'
    b'"before":"a","after":"b","files":[{"path":"\\"caf\\\\351.txt\\"",'
    b'"status":"added"},{"path":"d/x.py","status":"deleted"}],'
    b'"skipped":[{"path":"big.bin","reason":"new file larger than 2 bytes"}],'
    b'"undone":true,"parent":null,"named_paths":[],"prompt":"p",'
    b'"reason":"interrupted","tool_name":null,"command":null},{"id":2,'
    b'"session_id":"s\xc3\xa9","kind":"tool","label":"Edit x",'
    b'"created_at":"2026-05-01T10:00:02Z","before":"b","after":"c",'
    b'"files":[{"path":"x","status":"modified"}],"skipped":[],"undone":false,'
    b'"parent":1,"named_paths":["\\"caf\\\\351.txt\\"","\\\\back"],"prompt":null,'
    b'"reason":null,"tool_name":"Edit","command":"c"}],'
    b'"sessions":{"s\xc3\xa9":{"touched":"2026-05-01T10:00:03Z","last":{"tree":"t1",'
    b'"skips":{"\\"caf\\\\351.txt\\"":["too large",5,7]},"next_id":1,"tool_use_id":null,'
    b'"tool_name":"","named":[],"command":null,"at":12},"turn":{"tree":"t2",'
    b'"skips":{},"next_id":2,"tool_use_id":"u","tool_name":"Edit",'
    b'"named":["\\"\\\\\\"q\\""],"command":null,"at":0},"turn_tools":[2],'
    b'"tools":[{"tree":"t3","skips":{},"next_id":2,"tool_use_id":null,'
    b'"tool_name":"","named":[],"command":"rm -rf build","at":0}],'
    b'"redo":[{"op":"undo","checkpoints":[1],"paths":["\\"caf\\\\351.txt\\""],'
    b'"tree":"a","after":"b"}],"prompt":"fix \\"it\\"\\n\xc3\xbc\\u001b"}},'
    b'"restoring":{"safety":"s","steps":[["t1",["\\"caf\\\\351.txt\\"","a"]],["t2",[]]],'
    b'"temps":{"\\"caf\\\\351.txt\\"":".tmp"},"op":"redo","checkpoints":[1,2],'
    b'"rollback":true}}'
)


def lenient(raw: bytes) -> State:
    """The state as the lenient reading alone makes of ``raw`` (the reference)."""
    return state_file._lenient(raw, Path("state.json"))


@pytest.fixture
def no_pydantic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail on any use of pydantic: the plain reading must do it all (a hook never imports it)."""
    monkeypatch.setitem(sys.modules, "pydantic", None)
    monkeypatch.setitem(sys.modules, "pydantic_core", None)


# Fields added since (#26: a mark's ignored paths, when an undo was), each at its
# class's end with a default: earlier versions' documents still load.
WRITTEN_NOW = (
    WRITTEN_BEFORE.replace(b'"at":12}', b'"at":12,"ignored":null}')
    .replace(b'"at":0}', b'"at":0,"ignored":null}')
    .replace(b'"after":"b"}]', b'"after":"b","at":0}]')
)


def test_the_document_is_byte_for_byte_what_earlier_versions_wrote(no_pydantic: None) -> None:
    assert state_file.dump(rich_state()) == WRITTEN_NOW, "the byte format, new fields at the end"
    assert state_file.parse(WRITTEN_BEFORE, Path("state.json")) == rich_state(), "old stores load"


def test_the_lenient_reading_reads_the_document_the_same() -> None:
    assert lenient(WRITTEN_BEFORE) == rich_state()


def test_checkpoints_handed_out_are_the_stored_ones() -> None:
    """The API's ``Checkpoint`` (``list --json``) has the stored checkpoint's JSON."""
    for record in rich_state().checkpoints:
        model = record.to_model()
        document = json.loads(state_file.dump(State(checkpoints=[record])))["checkpoints"][0]
        assert model.model_dump(mode="json") == document, "the same checkpoint"
        assert model.files[0].path == record.files[0].path, "names as they are, not quoted"


def test_a_real_sessions_state_reads_the_same_both_ways(
    tmp_path: Path, data_dir: Path, no_pydantic: None
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
    plain = state_file.parse(raw, Path("state.json"))
    assert state_file.dump(plain) == raw, "written back as it was"
    sys.modules.pop("pydantic")  # the reference uses it
    sys.modules.pop("pydantic_core")
    assert plain == lenient(raw)


def edited(path: str, value: object) -> bytes:
    """The rich document with the value at ``path`` (keys and indexes, ``/``-separated) set;
    ``...`` removes it."""
    document = json.loads(WRITTEN_BEFORE)
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


DAMAGED = "state.json is damaged (1 errors); move it away"
# Documents save never writes, and what reading them gives (as before issue 23):
# valid ones the lenient reading converts (None), damaged ones its error.
ODD: dict[str, tuple[bytes, str | None]] = {
    # (``touched`` is given: left out, it is now, which differs by microseconds.)
    "defaults left out": (
        json.dumps(
            {"sessions": {"s": {"touched": "t", "last": {"tree": "t", "next_id": 1}}}}
        ).encode(),
        None,
    ),
    "empty object": (b"{}", None),
    "extra key": (edited("extra", 1), None),
    "extra key in a checkpoint": (edited("checkpoints/0/extra", 1), None),
    "number as a string": (edited("next_id", "3"), None),
    "whole float as an int": (edited("next_id", 3.0), None),
    "bool as an int": (edited("checkpoints/0/id", True), None),
    "skip size as a string": (
        edited('sessions/s\u00e9/last/skips/"caf\\351.txt"', ["r", "1", 2]),
        None,
    ),
    "escaped surrogate pair": (b'{"sessions": {"\\ud83d\\ude00": {"touched": "t"}}}', None),
    "version 2": (edited("version", 2), DAMAGED),
    "unknown status": (edited("checkpoints/0/files/0/status", "renamed"), DAMAGED),
    "unknown kind": (edited("checkpoints/0/kind", "span"), DAMAGED),
    "skip of two values": (edited('sessions/s\u00e9/last/skips/"caf\\351.txt"', ["r", 1]), DAMAGED),
    "step of three values": (edited("restoring/steps/0", ["t", [], 1]), DAMAGED),
    "required field missing": (edited("checkpoints/1/before", ...), DAMAGED),
    "null where a list goes": (edited("checkpoints/0/files", None), DAMAGED),
    "sessions a list": (edited("sessions", []), DAMAGED),
    "a path not a string": (edited("checkpoints/0/named_paths", [1]), DAMAGED),
    "created_at null": (edited("checkpoints/0/created_at", None), DAMAGED),
    "two damaged fields": (b'{"next_id": "x", "checkpoints": {}}', DAMAGED.replace("1", "2")),
    "escaped lone surrogate": (b'{"sessions": {"\\ud800": {}}}', DAMAGED),
    "encoded surrogate": (b'{"sessions": {"\xed\xa0\x80": {}}}', DAMAGED),
    "not UTF-8": (b'{"sessions": {"\xe9": {}}}', DAMAGED),
    "BOM": (b"\xef\xbb\xbf{}", DAMAGED),
    "NaN": (b'{"next_id": NaN}', DAMAGED),
    "truncated": (WRITTEN_BEFORE[:-7], DAMAGED),
    "not JSON": (b"<html>", DAMAGED),
    "empty file": (b"", DAMAGED),
    "a list": (b"[]", DAMAGED),
    "deeply nested": (b"[" * 100_000, DAMAGED),
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_an_odd_or_damaged_document_reads_as_the_lenient_reading_reads_it(name: str) -> None:
    raw, error = ODD[name]
    try:
        found: State | str = state_file.parse(raw, Path("state.json"))
    except StoreError as exc:
        found = str(exc)
    try:
        expected: State | str = lenient(raw)
    except StoreError as exc:
        expected = str(exc)
    assert found == expected
    if error is not None:
        assert found == error
    elif isinstance(found, State) and isinstance(expected, State):  # True == 1, but not in JSON
        assert state_file.dump(found) == state_file.dump(expected)


# -- the codec: a field is read and written by its annotation alone ------------------------------


@dataclass(kw_only=True)
class Tagged(Record):
    """A checkpoint with fields ``Record`` lacks: no edit anywhere else reads and writes them."""

    tags: list[Name] = field(default_factory=list)
    weight: int | None = None
    shape: Literal["a", "b"] = "a"
    pairs: dict[Name, tuple[str, int]] = field(default_factory=dict)
    mark: Mark | None = None


def test_a_new_field_needs_no_edit_but_its_own(no_pydantic: None) -> None:
    fields = vars(rich_state().checkpoints[0])
    mark = Mark(tree="t", next_id=1, named=[UNDECODABLE])
    record = Tagged(
        **fields, tags=[UNDECODABLE], weight=3, shape="b", pairs={"p": ("x", 1)}, mark=mark
    )
    document = json.loads(json.dumps(codec.write(record)))
    assert list(document)[-5:] == ["tags", "weight", "shape", "pairs", "mark"], "in class order"
    assert document["tags"] == ['"caf\\351.txt"'], "a Name is written quoted when it must be"
    assert document["pairs"] == {"p": ["x", 1]} and document["mark"]["named"] == document["tags"]
    assert codec.read(Tagged, document) == record, "read back as it was"
    del document["tags"], document["mark"]
    assert codec.read(Tagged, document) == Tagged(**{**vars(record), "tags": [], "mark": None})
    for key, odd in [("shape", "c"), ("weight", "3"), ("pairs", {"p": ["x", 1, 2]}), ("x", 1)]:
        with pytest.raises(codec.Odd):
            codec.read(Tagged, {**document, key: odd})


@dataclass
class Measured:
    size: float


def test_a_field_json_cannot_hold_as_written_is_refused_at_once() -> None:
    with pytest.raises(TypeError, match="no JSON form"):
        codec.write(Measured(1.5))


@dataclass
class Tree:
    name: str
    kids: list[Tree] = field(default_factory=list)


def test_a_class_may_hold_itself() -> None:
    tree = Tree("a", [Tree("b", [Tree("c")])])
    document = codec.write(tree)
    assert document == {"name": "a", "kids": [{"name": "b", "kids": [{"name": "c", "kids": []}]}]}
    assert codec.read(Tree, document) == tree


@dataclass
class Fresh:
    name: str


def test_a_reader_being_built_is_not_used_by_another_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hook server reads states in several threads: the second waits for the build."""
    building, go_on = threading.Event(), threading.Event()
    real = codec._object_reader

    def slow(cls: type) -> Any:
        building.set()
        go_on.wait(5)
        return real(cls)

    monkeypatch.setattr(codec, "_object_reader", slow)
    found: list[Fresh | BaseException] = []

    def read() -> None:
        try:
            found.append(codec.read(Fresh, {"name": "x"}))
        except BaseException as exc:  # (a RecursionError, were it handed a stand-in)
            found.append(exc)

    first, second = threading.Thread(target=read), threading.Thread(target=read)
    first.start()
    assert building.wait(5)
    second.start()
    second.join(0.2)
    go_on.set()
    first.join(5)
    second.join(5)
    assert found == [Fresh("x"), Fresh("x")]


def test_a_state_saved_already_is_not_written_again(tmp_path: Path) -> None:
    """``editing`` rewrites state.json only when the document differs from the file
    (an undo's journal closes with the very state its ``editing`` would save again)."""
    from builders import open_engine

    root = make_repo(tmp_path / "repo", {"a.txt": "a"})
    engine = open_engine(root, tmp_path / "data")
    store = engine.store
    path = store.root / state_file.STATE_FILE
    with state_file.editing(store) as state:
        state.session("s").prompt = "first"
    with state_file.editing(store) as state:
        state.session("s").prompt = "saved inside"
        state_file.save(store, state)  # as journal.run saves the outcome
        saved = path.stat().st_ino
    assert path.stat().st_ino == saved, "the same bytes: not replaced on the way out"
    with state_file.editing(store) as state:
        state.session("s").prompt = "second"
    assert path.stat().st_ino != saved, "a change is written"
    assert state_file.load(store).session("s").prompt == "second"
