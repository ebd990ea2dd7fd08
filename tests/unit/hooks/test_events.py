"""snapshotter/hooks/events.py: the fields the snapshot builtin reads of an event.

That ``Event`` and pydantic's ``HookInput`` agree on recorded and odd input
is tests/functional/test_hook_event.py's; these pin ``Event``'s own contract.
"""

from __future__ import annotations

from typing import Any

import pytest

from snapshotter.errors import BadInput
from snapshotter.hooks import events
from snapshotter.hooks.events import Event


def test_good_input_is_read_with_our_event_names() -> None:
    found = Event.read(
        {
            "session_id": "s",
            "cwd": "/repo",
            "hook_event_name": "PreToolUse",
            "tool_name": "Edit",
            "tool_use_id": "t1",
            "tool_input": {"file_path": "src/a.py"},
            "prompt": "fix it",
        }
    )
    assert (found.session_id, found.cwd, found.event, found.tool_name) == (
        "s",
        "/repo",
        "pre_tool_use",
        "Edit",
    )
    assert found.tool_use_id == "t1" and found.prompt == "fix it"
    assert found.named_paths() == ["/repo/src/a.py"] and found.command() is None


def test_fields_left_out_have_their_defaults_and_others_are_left_alone() -> None:
    found = Event.read({"hook_event_name": "turn_end", "iteration": "three", "color": [1]})
    assert (found.session_id, found.cwd, found.reason, found.tool_input) == ("", "", "", None)
    assert not hasattr(found, "iteration") and not hasattr(found, "color")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"session_id": 5}, "session_id: Input should be a valid string"),
        ({"cwd": None}, "cwd: Input should be a valid string"),
        ({"tool_input": ["a"]}, "tool_input: Input should be a valid dictionary"),
        ({"reason": True}, "reason: Input should be a valid string"),
        (
            {"tool_use_id": "x" * (events.MAX_ID_CHARS + 1)},
            f"tool_use_id: Value error, longer than {events.MAX_ID_CHARS} characters",
        ),
    ],
)
def test_a_wrong_type_is_bad_input_naming_the_field(data: dict[str, Any], said: str) -> None:
    with pytest.raises(BadInput) as caught:
        Event.read(data)
    assert str(caught.value) == f"hook input has wrong types: {said}"


def test_values_are_cleaned_for_the_state_they_are_kept_in() -> None:
    found = Event.read(
        {"session_id": "a\ud800", "reason": "r" * 500, "tool_use_id": "x" * events.MAX_ID_CHARS}
    )
    # A lone surrogate would not survive the state file: replaced, so it encodes.
    assert found.session_id.rstrip("\ufffd") == "a" and found.session_id.encode("utf-8")
    assert found.reason == "r" * events.MAX_REASON_CHARS
    assert len(found.tool_use_id) == events.MAX_ID_CHARS


def test_our_event_name_maps_every_runtimes_names() -> None:
    assert events.our_event_name("Stop") == "turn_end"
    assert events.our_event_name("AfterAgent") == "turn_end"
    assert events.our_event_name("BeforeTool") == "pre_tool_use"
    assert events.our_event_name("turn_start") == "turn_start"
    assert events.our_event_name("SomethingNew") == "SomethingNew"


def test_command_of_reads_either_spelling_and_skips_blank() -> None:
    assert _tool({"command": "ls"}).command() == "ls"
    assert _tool({"cmd": "make"}).command() == "make"
    assert _tool({"command": "   "}).command() is None
    assert _tool({"command": ["ls"]}).command() is None
    assert _tool(None).command() is None


def test_named_paths_are_absolute_and_normalized() -> None:
    tool_input = {
        "file_path": "../x/./a.py",
        "notebook_path": "/abs/n.ipynb",
        "path": "",
        "paths": ["b", 3, "c\0d", "/e"],
    }
    assert _named(tool_input, "/repo/sub") == [
        "/repo/x/a.py",
        "/abs/n.ipynb",
        "/repo/sub/b",
        "/e",
    ]
    assert _named(None, "/r") == []
    assert _named({"paths": "not-a-list"}, "/r") == []


def test_an_apply_patch_names_every_file_it_writes() -> None:
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Update File: a.txt",
            "*** Add File: new.txt",
            "*** Delete File: d.txt",
            "*** Update File: m.txt",
            "*** Move to: n.txt",
            "*** End Patch",
        ]
    )
    for key in ("command", "input", "patch"):
        assert _named({key: "  " + patch}, "/r") == [
            "/r/a.txt",
            "/r/new.txt",
            "/r/d.txt",
            "/r/m.txt",
            "/r/n.txt",
        ]
    assert _named({"command": "echo '*** Add File: x'"}, "/r") == []


def _tool(tool_input: object, cwd: str = "/r") -> events.Event:
    """An event whose tool input is ``tool_input`` (None: no input at all)."""
    fields: dict[str, Any] = {"hook_event_name": "post_tool", "session_id": "s", "cwd": cwd}
    if tool_input is not None:
        fields["tool_input"] = tool_input
    return events.Event(fields)


def _named(tool_input: object, cwd: str) -> list[str]:
    return _tool(tool_input, cwd).named_paths()
