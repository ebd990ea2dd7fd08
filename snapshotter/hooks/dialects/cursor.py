"""Cursor: ``.cursor/hooks.json``; every payload carries ``conversation_id``
(its session) and ``workspace_roots``; tool events add ``tool_use_id``, ``cwd``
and ``tool_name`` (from Cursor's hooks documentation: fixtures/sessions/cursor)."""

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
        "postToolUseFailure": "post_tool_use",
        "stop": "turn_end",
        "sessionEnd": "session_end",
    },
    reasons={"postToolUseFailure": "failed"},  # its checkpoint is marked failed (#26.4)
    ignored=frozenset(
        (
            "subagentStart",
            "subagentStop",
            "beforeShellExecution",
            "afterShellExecution",
            "beforeMCPExecution",
            "afterMCPExecution",
            "beforeReadFile",
            "afterFileEdit",
            "preCompact",
            "afterAgentResponse",
            "afterAgentThought",
            "beforeTabFileRead",
            "afterTabFileEdit",
            "workspaceOpen",
        )
    ),
    fields={"conversation_id": "session_id"},
    config=".cursor/hooks.json",
    global_config=".cursor/hooks.json",
)
