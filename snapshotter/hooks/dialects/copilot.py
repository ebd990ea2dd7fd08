"""GitHub Copilot CLI: camelCase events in ``.github/hooks/snapshotter.json``.

Its payloads name no event (nor does the hook's environment), so the command
``init`` writes does (``--arg event=preToolUse``); its fields are camelCase
(``sessionId``, ``toolName``, ``toolArgs``: ``bash`` ``{command}``, ``edit`` and
``create`` ``{path, ...}``) and no tool call has an id. Under Copilot a
repository's ``.claude/settings.json`` hooks run too, Claude-shaped without
``tool_use_id``. A preToolUse hook that fails denies the tool: ours exits 0.
(Recorded from Copilot CLI 1.0.102: fixtures/sessions/copilot.)
"""

from __future__ import annotations

from snapshotter.hooks.dialects import FAILED_TOOL, Dialect, camel_events

DIALECT = Dialect(
    name="copilot",
    title="GitHub Copilot CLI",
    events=camel_events(turn_start="userPromptSubmitted", turn_end="agentStop"),
    reasons=FAILED_TOOL,
    ignored=frozenset(
        (
            "errorOccurred",
            "notification",
            "permissionRequest",
            "preCompact",
            "subagentStart",
            "subagentStop",
        )
    ),
    fields={
        "sessionId": "session_id",
        "toolName": "tool_name",
        "toolArgs": "tool_input",
        "hookEventName": "hook_event_name",
    },
    config=".github/hooks/snapshotter.json",
    event_in_command=True,
)
