"""Hook wire models, compatible with docker-agent's ``Input``/``Output`` JSON (pydantic).

A runtime's registry (registry.py) and the API use these; ``snapshotter hook``
reads only the fields the builtin uses, without pydantic (``events.Event``),
and ``HookInput`` cleans those fields by the same rules (``events.CLEAN``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from snapshotter.hooks.events import CLEAN, Reading


class HookInput(BaseModel, Reading):
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

    @field_validator(*CLEAN)
    @classmethod
    def _as_the_hook_reads_it(cls, value: str, info: ValidationInfo) -> str:
        """The builtin's fields cleaned as ``snapshotter hook`` cleans them (``events.CLEAN``)."""
        return CLEAN[info.field_name or ""](value)


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
