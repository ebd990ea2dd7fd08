"""Hook wire models, compatible with docker-agent's ``Input``/``Output`` JSON (pydantic).

``snapshotter hook`` reads an ordinary event without them (``events.plain_event``);
a runtime's registry (registry.py) and the API use these.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from snapshotter.hooks.events import (
    MAX_ID_CHARS,
    MAX_REASON_CHARS,
    command_of,
    named_paths_of,
    our_event_name,
    without_lone_surrogates,
)


class HookInput(BaseModel):
    """One event, as docker-agent sends it on stdin; unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore")

    session_id: str = ""
    cwd: str = ""
    hook_event_name: str = ""
    agent_name: str = ""
    model_id: str = ""
    iteration: int = 0
    last_user_message: str = ""
    tool_name: str = ""
    tool_use_id: str = ""
    tool_input: dict[str, Any] | None = None
    tool_response: Any = None
    tool_error: bool = False
    messages: list[Any] | None = None
    source: str = ""
    reason: str = ""
    stop_response: str = ""
    prompt: str = ""
    parent_session_id: str = ""
    notification_level: str = ""
    notification_message: str = ""
    from_agent: str = ""
    to_agent: str = ""
    agent_switch_kind: str = ""
    from_agent_models: list[dict[str, Any]] | None = None
    previous_max_iterations: int = 0
    new_max_iterations: int = 0
    approval_decision: str = ""
    approval_source: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    context_limit: int = 0
    compaction_reason: str = ""
    summary: str = ""
    # Claude Code only.
    transcript_path: str = ""

    @field_validator("session_id", "tool_use_id", "tool_name", "reason", "cwd")
    @classmethod
    def _no_lone_surrogates(cls, value: str) -> str:
        return without_lone_surrogates(value)

    @field_validator("session_id", "tool_use_id", "tool_name")
    @classmethod
    def _bounded(cls, value: str) -> str:
        # Kept in the store's state, which every later event loads and saves:
        # a megabyte-long id would slow down every hook of that worktree for good.
        if len(value) > MAX_ID_CHARS:
            raise ValueError(f"longer than {MAX_ID_CHARS} characters")
        return value

    @field_validator("reason")
    @classmethod
    def _short_reason(cls, value: str) -> str:
        return value[:MAX_REASON_CHARS]  # a checkpoint label, kept in the state

    @field_validator("hook_event_name")
    @classmethod
    def _normalise_event(cls, value: str) -> str:
        return our_event_name(value)

    @property
    def event(self) -> str:
        return self.hook_event_name

    def command(self) -> str | None:
        """A shell tool's command (see ``events.command_of``)."""
        return command_of(self.tool_input)

    def named_paths(self) -> list[str]:
        """Absolute paths the tool's input names (see ``events.named_paths_of``)."""
        return named_paths_of(self.tool_input, self.cwd)


# Answers are read only by a runtime's executor (registry.py), never by
# ``snapshotter hook``: their validators are built on first use (issue 16.4).


class HookSpecificOutput(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)

    hook_event_name: str = ""
    permission_decision: str = ""
    permission_decision_reason: str = ""
    updated_input: dict[str, Any] | None = None
    additional_context: str = ""


class HookOutput(BaseModel):
    """What a hook may answer; the snapshot builtin answers nothing."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    continue_: bool | None = Field(default=None, alias="continue")  # a Python keyword
    stop_reason: str = ""
    suppress_output: bool = False
    system_message: str = ""
    decision: str = ""
    reason: str = ""
    hook_specific_output: HookSpecificOutput | None = None

    def is_blocked(self) -> bool:
        return self.decision == "block" or self.continue_ is False

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_defaults=True)
