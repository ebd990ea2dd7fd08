"""snapshotter/hooks/command.py: which events a hook posts (returns without waiting)."""

from __future__ import annotations

import json

import pytest

from snapshotter.hooks.command import _opens_session, peek


def raw(**fields: object) -> bytes:
    return json.dumps(fields).encode()


@pytest.mark.parametrize(
    ("sent", "args"),
    [
        (raw(hook_event_name="SessionStart", session_id="s", cwd="/w", source="startup"), []),
        (raw(hook_event_name="session_start", session_id="s", cwd="/w"), []),  # docker-agent
        (raw(hook_event_name="sessionStart", conversation_id="s", workspace_roots=["/w"]), []),
        (raw(sessionId="s", cwd="/w", timestamp=1), ["dialect=copilot", "event=sessionStart"]),
    ],
    ids=["claude-gemini-codex", "docker-agent", "cursor", "copilot-own"],
)
def test_every_runtimes_session_start_is_posted(sent: bytes, args: list[str]) -> None:
    assert _opens_session(sent, args)
    assert peek(sent, args) == ("session_start", "s")


@pytest.mark.parametrize(
    "sent",
    [
        # A tool that writes the words "SessionStart" must still wait for its capture.
        raw(
            hook_event_name="PreToolUse",
            session_id="s",
            cwd="/w",
            tool_name="Write",
            tool_input={"file_path": "/w/a.py", "content": '"hook_event_name": "SessionStart"'},
        ),
        raw(hook_event_name="UserPromptSubmit", session_id="s", cwd="/w", prompt="session_start"),
        b"not json, says SessionStart",
        b'["SessionStart"]',
    ],
    ids=["tool-writing-the-name", "prompt-naming-it", "not-json", "not-an-object"],
)
def test_nothing_else_is_posted(sent: bytes) -> None:
    assert not _opens_session(sent, [])
