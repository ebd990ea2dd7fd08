"""docker-agent: our vocabulary (SPEC §6); its agent YAML's ``hooks:`` mapping."""

from __future__ import annotations

from snapshotter.hooks.dialects import Dialect

DIALECT = Dialect(
    name="docker-agent",
    title="docker-agent",
    named_in_command=False,  # (its names are the default)
    # Each event is ours by its own name; ``user_prompt_submit`` is read for the turn's label.
    events={
        name: name
        for name in (
            "session_start",
            "user_prompt_submit",
            "turn_start",
            "pre_tool_use",
            "post_tool_use",
            "turn_end",
            "session_end",
        )
    },
    matchers=frozenset(("pre_tool_use", "post_tool_use")),
    ignored=frozenset(
        (
            "permission_request",
            "before_llm_call",
            "after_llm_call",
            "pre_compact",
            "subagent_stop",
            "on_user_input",
            "stop",
            "notification",
            "on_error",
            "on_max_iterations",
            "on_agent_switch",
            "on_session_resume",
            "on_tool_approval_decision",
            "before_compaction",
            "after_compaction",
            "tool_response_transform",
        )
    ),
)
