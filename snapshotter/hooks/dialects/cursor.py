"""Cursor: ``.cursor/hooks.json``; payloads carry ``conversation_id`` and
``workspace_roots`` instead of a session id and a ``cwd``."""

from __future__ import annotations

from snapshotter.hooks.dialects import Dialect

DIALECT = Dialect(
    name="cursor",
    title="Cursor",
    events={
        "sessionStart": "session_start",
        "beforeSubmitPrompt": "turn_start",
        "preToolUse": "pre_tool_use",
        "postToolUse": "post_tool_use",
        "stop": "turn_end",
        "sessionEnd": "session_end",
    },
    ignored=frozenset(
        ("beforeShellExecution", "afterShellExecution", "beforeMCPExecution", "afterFileEdit")
    ),
    fields={"conversation_id": "session_id"},
    config=".cursor/hooks.json",
    global_config=".cursor/hooks.json",
)
