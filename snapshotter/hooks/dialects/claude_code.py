"""Claude Code: PascalCase events in ``.claude/settings.json``, timeouts in seconds."""

from __future__ import annotations

from snapshotter.hooks.dialects import Dialect

DIALECT = Dialect(
    name="claude-code",
    title="Claude Code",
    named_in_command=False,  # (its names are the default)
    events={
        "SessionStart": "session_start",
        "UserPromptSubmit": "turn_start",
        "PreToolUse": "pre_tool_use",
        "PostToolUse": "post_tool_use",
        # A failed or interrupted tool (keys ``error``, ``is_interrupt``) ends its span too.
        "PostToolUseFailure": "post_tool_use",
        "Stop": "turn_end",
        "SessionEnd": "session_end",
    },
    matchers=frozenset(("PreToolUse", "PostToolUse", "PostToolUseFailure")),
    reasons={"PostToolUseFailure": "failed"},  # its checkpoint is marked failed (#26.4)
    ignored=frozenset(
        ("Notification", "SubagentStop", "PreCompact", "PermissionRequest", "SubagentStart")
    ),
    config=".claude/settings.json",
    global_config=".claude/settings.json",
    # Claude Code cancels a SessionEnd hook after 1.5 s whatever we ask; ours returns first.
    session_end_timeout_s=5,
)
