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

from snapshotter.hooks.dialects import Dialect

DIALECT = Dialect(
    name="copilot",
    title="GitHub Copilot CLI",
    events={
        "sessionStart": "session_start",
        "userPromptSubmitted": "turn_start",
        "preToolUse": "pre_tool_use",
        "postToolUse": "post_tool_use",
        "postToolUseFailure": "post_tool_use",
        "agentStop": "turn_end",
        "sessionEnd": "session_end",
    },
    reasons={"postToolUseFailure": "failed"},  # its checkpoint is marked failed (#26.4)
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
