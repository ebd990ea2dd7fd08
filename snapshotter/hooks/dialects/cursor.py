"""Cursor: ``.cursor/hooks.json``; every payload carries ``conversation_id``
(its session) and ``workspace_roots``; tool events add ``tool_use_id``, ``cwd``
and ``tool_name`` (from Cursor's hooks documentation: fixtures/sessions/cursor)."""

from __future__ import annotations

from snapshotter.hooks.dialects import FAILED_TOOL, Dialect, camel_events

DIALECT = Dialect(
    name="cursor",
    title="Cursor",
    events=camel_events(turn_start="beforeSubmitPrompt", turn_end="stop"),
    reasons=FAILED_TOOL,
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
