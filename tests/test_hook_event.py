"""A hook event read without pydantic, exactly as ``HookInput`` reads it (#16.4).

``snapshotter hook`` reads its event with ``events.plain_event``: exact type
checks for input that ``HookInput`` would take unchanged, ``HookInput`` itself
for anything else (hooks/command.py). These tests hold the two to each other, on the recorded
sessions in fixtures/ and on odd input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from snapshotter.hooks import events
from snapshotter.hooks.events import FIELD_SHAPES, Event, plain_event
from snapshotter.hooks.wire import HookInput

SESSIONS = Path(__file__).resolve().parent.parent / "fixtures" / "sessions"
SHAPE_OF_TYPE = {
    "str": "str",
    "int": "int",
    "bool": "bool",
    "dict[str, Any] | None": "object?",
    "list[Any] | None": "array?",
    "list[dict[str, Any]] | None": "objects?",
    "Any": "any",
}


def recorded_events() -> list[dict[str, Any]]:
    found = []
    for path in sorted(SESSIONS.glob("*.json")):
        for step in json.loads(path.read_text())["steps"]:
            if "event" in step:
                found.append({"cwd": "/repo", **step["event"]})
    return found


def read_both(data: dict[str, Any]) -> tuple[dict[str, Any] | str, dict[str, Any] | str]:
    """What the hook's reading (plain, else HookInput) and HookInput alone make of ``data``:
    the values the builtin reads, or the error."""

    def values(found: Event | HookInput) -> dict[str, Any]:
        fields = {name: getattr(found, name) for name in Event.__slots__}
        return {**fields, "paths": found.named_paths(), "command": found.command()}

    try:
        plain: dict[str, Any] | str = values(plain_event(data) or HookInput.model_validate(data))
    except ValidationError as exc:
        plain = str(exc)
    try:
        model: dict[str, Any] | str = values(HookInput.model_validate(data))
    except ValidationError as exc:
        model = str(exc)
    return plain, model


def test_the_shape_table_is_hookinputs_fields() -> None:
    fields = HookInput.model_fields
    assert set(FIELD_SHAPES) == set(fields), "every field of HookInput, and no other"
    for name, info in fields.items():
        kind = info.annotation
        spelled = kind.__name__ if isinstance(kind, type) else str(kind).replace("typing.", "")
        assert FIELD_SHAPES[name] == SHAPE_OF_TYPE[spelled], name


def test_recorded_events_are_read_plainly_and_the_same() -> None:
    recorded = recorded_events()
    assert len(recorded) > 20, "the fixtures hold sessions"
    for data in recorded:
        plain, model = read_both(data)
        assert plain == model, data
    for data in recorded:
        assert plain_event(data) is not None, f"read plainly: {data}"


LONG_ID = "x" * (events.MAX_ID_CHARS + 1)
ODD: dict[str, dict[str, Any]] = {
    "claude names": {"hook_event_name": "PostToolUseFailure", "session_id": "s"},
    "lone surrogates": {"session_id": "a\ud800", "tool_name": "\udfff", "cwd": "/r\ud800"},
    "surrogate reason cut": {"reason": "\ud800" * 300},
    "long reason cut": {"reason": "r" * 500},
    "id at the limit": {"tool_use_id": "x" * events.MAX_ID_CHARS},
    "id over the limit": {"tool_use_id": LONG_ID},
    "id over the limit once cleaned": {"session_id": "\ud800" * 400},
    "number as a string": {"iteration": "3"},
    "bool as an int": {"input_tokens": True},
    "float as an int": {"context_limit": 2.0},
    "int as a string field": {"session_id": 5},
    "null string": {"cwd": None},
    "bool as a string": {"tool_error": "true"},
    "tool input a list": {"tool_input": ["path"]},
    "tool input null": {"tool_input": None},
    "paths": {"cwd": "/r", "tool_input": {"paths": ["a", "/b", 3, "", "c\0"], "path": "d"}},
    "commands": {"tool_input": {"cmd": "ls", "command": "  "}},
    "agent models not objects": {"from_agent_models": [1]},
    "agent models": {"from_agent_models": [{"a": 1}]},
    "messages an object": {"messages": {}},
    "unknown keys": {"color": "red", "tool_input": {"x": 1}},
    "big int": {"iteration": 10**30},
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_input_is_read_as_hookinput_reads_it(name: str) -> None:
    data = {"hook_event_name": "pre_tool_use", "session_id": "s", "cwd": "/r", **ODD[name]}
    plain, model = read_both(data)
    assert plain == model
