"""The event ``snapshotter hook`` reads: the builtin's fields only, without pydantic (#16.4).

``events.Event`` is the one definition of what the hook takes from an event
(its annotations and ``events.CLEAN``); every other field is the runtime's
own and is left alone whatever its type. ``HookInput``, docker-agent's whole
payload for a runtime's registry and the API, cleans the same fields by the
same rules: on the recorded sessions in fixtures/ and on odd input, both give
the builtin the same values, or the same error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from snapshotter.errors import BadInput
from snapshotter.hooks import events
from snapshotter.hooks.events import Event
from snapshotter.hooks.wire import HookInput

SESSIONS = Path(__file__).resolve().parents[2] / "fixtures" / "sessions"
READ = list(Event.__annotations__)  # the fields the builtin reads


def recorded_events() -> list[dict[str, Any]]:
    found = []
    for path in sorted(SESSIONS.glob("*.json")):
        for step in json.loads(path.read_text())["steps"]:
            if "event" in step:
                found.append({"cwd": "/repo", **step["event"]})
    return found


def values(found: Event | HookInput) -> dict[str, Any]:
    """What the builtin reads of an event."""
    fields = {name: getattr(found, name) for name in READ}
    return {**fields, "paths": found.named_paths(), "command": found.command()}


def read_both(data: dict[str, Any]) -> tuple[dict[str, Any] | str, dict[str, Any] | str]:
    """What the hook (``Event.read``) and ``HookInput`` make of the builtin's fields of ``data``:
    their values, or the error the hook logs."""
    try:
        ours: dict[str, Any] | str = values(Event.read(data))
    except BadInput as exc:
        ours = str(exc)
    try:
        theirs: dict[str, Any] | str = values(
            HookInput.model_validate({k: v for k, v in data.items() if k in READ})
        )
    except ValidationError as exc:
        said = [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3]]
        more = f" (and {exc.error_count() - 3} more)" if exc.error_count() > 3 else ""
        theirs = f"hook input has wrong types: {'; '.join(said)}{more}"
    return ours, theirs


def test_recorded_events_are_read_as_hookinput_reads_them() -> None:
    recorded = recorded_events()
    assert len(recorded) > 20, "the fixtures hold sessions"
    for data in recorded:
        ours, theirs = read_both(data)
        assert isinstance(ours, dict) and ours == theirs, data
        assert ours == values(HookInput.model_validate(data)), "the other fields change nothing"


LONG_ID = "x" * (events.MAX_ID_CHARS + 1)
ODD: dict[str, dict[str, Any]] = {
    "claude names": {"hook_event_name": "PostToolUseFailure", "session_id": "s"},
    "lone surrogates": {"session_id": "a\ud800", "tool_name": "\udfff", "cwd": "/r\ud800"},
    "surrogate reason cut": {"reason": "\ud800" * 300},
    "long reason cut": {"reason": "r" * 500},
    "id at the limit": {"tool_use_id": "x" * events.MAX_ID_CHARS},
    "id over the limit": {"tool_use_id": LONG_ID},
    "id over the limit once cleaned": {"session_id": "\ud800" * 400},
    "int as a string field": {"session_id": 5},
    "null string": {"cwd": None},
    "tool input a list": {"tool_input": ["path"]},
    "tool input null": {"tool_input": None},
    "four wrong": {"session_id": 1, "cwd": 2, "tool_name": 3, "prompt": 4},
    "paths": {"cwd": "/r", "tool_input": {"paths": ["a", "/b", 3, "", "c\0"], "path": "d"}},
    "commands": {"tool_input": {"cmd": "ls", "command": "  "}},
}
# Fields the builtin does not read, of types HookInput would convert or refuse.
NOT_READ: dict[str, dict[str, Any]] = {
    "number as a string": {"iteration": "3"},
    "not a number": {"iteration": "three"},
    "bool as an int": {"input_tokens": True},
    "float as an int": {"context_limit": 2.5},
    "bool as a string": {"tool_error": "true"},
    "agent models not objects": {"from_agent_models": [1]},
    "messages an object": {"messages": {}},
    "unknown keys": {"color": "red", "tool_input": {"x": 1}},
}


@pytest.mark.parametrize("name", sorted(ODD) + sorted(NOT_READ))
def test_odd_input_is_read_as_hookinput_reads_it(name: str) -> None:
    data = {"hook_event_name": "pre_tool_use", "session_id": "s", "cwd": "/r"}
    data.update(ODD.get(name) or NOT_READ[name])
    ours, theirs = read_both(data)
    assert ours == theirs
    if name in NOT_READ:
        assert isinstance(ours, dict), "a field the builtin does not read is left alone"


def test_a_wrong_type_is_named_in_the_hooks_log_line() -> None:
    with pytest.raises(BadInput) as caught:
        Event.read({"session_id": 1, "cwd": 2, "tool_name": 3, "prompt": 4})
    assert str(caught.value) == (
        "hook input has wrong types: session_id: Input should be a valid string; "
        "cwd: Input should be a valid string; tool_name: Input should be a valid string "
        "(and 1 more)"
    )
