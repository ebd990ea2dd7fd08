"""snapshotter/hooks/dialects/: each runtime's payloads read as our events.

The payloads are the recorded (or documented) sessions in fixtures/sessions;
tests/functional/test_dialects.py drives the same shapes through real hook processes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from snapshotter.hooks import dialects
from snapshotter.hooks.dialects import codex, copilot, cursor, detect, normalize
from snapshotter.hooks.events import SNAPSHOT_EVENTS, TOOL_EVENTS, Event

SESSIONS = Path(__file__).resolve().parents[3] / "fixtures" / "sessions"
# fixture -> the dialect ``init`` names in the command it writes (None: none named)
RECORDED = {
    "claude_code_session.json": None,
    "claude_code_cd_interrupt.json": None,
    "claude_code_subagents.json": None,
    "docker_agent_two_turns.json": None,
    "docker_agent_errors.json": None,
    "codex/session.json": "codex",
    "codex/interrupted.json": "codex",
    "copilot/session.json": "copilot",
    "cursor/session.json": "cursor",
    "gemini/session.json": "gemini",
    "gemini/interrupted.json": "gemini",
    "qwen/session.json": "qwen",
}


def recorded(name: str) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Each event of a fixture, with the ``--arg`` options its hook command passes."""
    found = []
    named = RECORDED[name]
    for step in json.loads((SESSIONS / name).read_text())["steps"]:
        if "event" not in step:
            continue
        options = {} if named is None else {"dialect": named}
        if "hook" in step:  # Copilot: the event is named by the command, not the payload
            options["event"] = step["hook"]
        found.append((step["event"], options))
    return found


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_every_recorded_event_is_one_of_ours_or_left_alone_on_purpose(name: str) -> None:
    ignored = dialects.known_ignored()
    ours = 0
    for data, options in recorded(name):
        event = Event.read(normalize(data, options))
        assert event.session_id, (name, data)
        if event.event in ignored:
            continue
        assert event.event in SNAPSHOT_EVENTS, (name, event.event)
        if "/" in name:  # (the older fixtures leave cwd to the replayer)
            assert event.cwd, (name, data)
        if event.event in TOOL_EVENTS:
            assert event.tool_name, (name, data)
        ours += 1
    assert ours >= 4, "a session holds a turn at least"


@pytest.mark.parametrize(
    "name", sorted(n for n, d in RECORDED.items() if d not in (None, "copilot"))
)
def test_naming_the_dialect_changes_nothing_for_payloads_that_name_their_event(name: str) -> None:
    for data, options in recorded(name):
        assert normalize(data, options) == normalize(data, {}), data


def test_copilot_camel_case_fields_and_json_tool_args() -> None:
    options = {"dialect": "copilot", "event": "preToolUse"}
    sent = {"sessionId": "s", "cwd": "/r", "toolName": "bash", "toolArgs": '{"command": "ls"}'}
    found = Event.read(normalize(sent, options))
    assert (found.session_id, found.event, found.tool_name) == ("s", "pre_tool_use", "bash")
    assert found.command() == "ls"
    assert normalize({**sent, "toolArgs": "not json"}, options)["tool_input"] is None
    assert normalize({**sent, "toolArgs": "[1]"}, options)["tool_input"] is None
    assert detect({"sessionId": "s"}, {}) is copilot.DIALECT, "told by its fields"
    assert detect({"sessionId": "s", "session_id": "t"}, {}) is None


def test_cursor_conversation_and_workspace_root() -> None:
    sent = {"conversation_id": "c", "workspace_roots": ["/w", "/x"], "hook_event_name": "stop"}
    assert detect(sent, {}) is cursor.DIALECT
    found = Event.read(normalize(sent, {}))
    assert (found.session_id, found.cwd, found.event) == ("c", "/w", "turn_end")
    own_cwd = normalize({**sent, "cwd": "/own"}, {})
    assert own_cwd["cwd"] == "/own", "a cwd of its own wins"
    assert normalize({"hook_event_name": "stop"}, {})["hook_event_name"] == "stop", (
        "docker-agent's own stop is no Cursor stop"
    )


def test_codex_interrupt_ends_the_turn_as_interrupted() -> None:
    for options in ({}, {"dialect": "codex"}):
        found = normalize({"session_id": "s", "hook_event_name": "Interrupt"}, options)
        assert (found["hook_event_name"], found["reason"]) == ("turn_end", "interrupted")
    assert "reason" not in normalize({"hook_event_name": "Stop"}, {})


def test_a_named_dialect_and_an_unknown_one() -> None:
    assert detect({}, {"dialect": "gemini"}) is dialects.by_name("gemini")
    assert detect({}, {"dialect": "nonesuch"}) is None
    assert normalize({"hook_event_name": "Unheard"}, {})["hook_event_name"] == "Unheard"
    assert normalize({}, {"event": "BeforeAgent"})["hook_event_name"] == "turn_start"


def test_source_of_says_which_runtime_sent_an_event() -> None:
    assert dialects.source_of({"hook_event_name": "Stop"}, {}) == "claude-code"
    assert dialects.source_of({"hook_event_name": "turn_end"}, {}) == "docker-agent"
    assert dialects.source_of({"hook_event_name": "AfterAgent"}, {}) == "gemini"
    assert dialects.source_of({"conversation_id": "c"}, {}) == "cursor"
    assert dialects.source_of({}, {"dialect": "qwen"}) == "qwen"
    assert dialects.source_of({"hook_event_name": "Unheard"}, {}) is None


def test_every_dialect_maps_onto_our_events_and_ignores_none_of_them() -> None:
    found = dialects.all_dialects()
    assert len({d.name for d in found}) == len(found)
    for dialect in found:
        assert set(dialect.events.values()) <= set(SNAPSHOT_EVENTS), dialect.name
        assert not set(dialect.events) & dialect.ignored, dialect.name
        assert dialect.matchers <= set(dialect.events), dialect.name
        assert dialects.by_name(dialect.name) is dialect


def test_codex_patch_paths() -> None:
    text = "*** Begin Patch\n*** Update File: a\n*** Move to:   b  \n*** Add File:\n+x\n"
    assert codex.patch_paths(text) == ["a", "b"]


def test_codex_trusts_a_hook_by_its_hash_with_timeouts_filled_in_as_codex_does() -> None:
    import hashlib

    identity = (
        '{"event_name":"stop","hooks":[{"async":false,"command":"snapshotter hook",'
        '"timeout":600,"type":"command"}]}'
    )
    expected = "sha256:" + hashlib.sha256(identity.encode()).hexdigest()
    assert codex.trusted_hash("Stop", None, {"command": "snapshotter hook"}) == expected
    hook: dict[str, object] = {"command": "snapshotter hook"}
    budget = codex.trusted_hash("SessionEnd", None, hook)
    assert budget == codex.trusted_hash("SessionEnd", None, {**hook, "timeout": 1})
    assert budget != codex.trusted_hash("SessionEnd", None, {**hook, "timeout": 3})
    assert codex.trusted_hash("SessionEnd", None, {**hook, "timeout": 30}) == (
        codex.trusted_hash("SessionEnd", None, {**hook, "timeout": 3})
    ), "3 s at most"
    pre = codex.trusted_hash("PreToolUse", None, hook)
    assert pre == codex.trusted_hash("PreToolUse", None, {**hook, "timeout": 600})
    assert pre != codex.trusted_hash("PreToolUse", "*", hook), "a matcher is part of it"
    assert pre != codex.trusted_hash("PreToolUse", None, {**hook, "statusMessage": "s"})
