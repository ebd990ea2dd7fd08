"""Hook events, compatible with docker-agent's ``Input``/``Output`` JSON.

Other runtimes' input (Claude Code's PascalCase event names, Codex's, Gemini
CLI's...) is accepted and mapped to the docker-agent events the snapshot
builtin handles (SPEC §6); each runtime's names live in ``hooks.dialects``.

The wire models (``HookInput``, ``HookOutput``) are pydantic and live in
``hooks.wire``. ``snapshotter hook`` reads its event with ``plain_event``:
checks that accept exactly what ``HookInput`` takes unchanged, leaving
anything else to ``HookInput`` itself, so a hook process with an ordinary
event pays no pydantic import (issue 16.4).
"""

from __future__ import annotations

import os

from snapshotter.hooks.dialects.codex import PATCH_BEGIN, patch_paths

TYPE_CHECKING = False  # typing costs the hook process milliseconds it need not pay
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


SESSION_START = "session_start"
TURN_START = "turn_start"
TURN_END = "turn_end"
PRE_TOOL_USE = "pre_tool_use"
POST_TOOL_USE = "post_tool_use"
SESSION_END = "session_end"
PERMISSION_REQUEST = "permission_request"

MAX_ID_CHARS = 1024  # session and tool ids, tool names: longer is a bad input
MAX_REASON_CHARS = 200
PATH_KEYS = ("file_path", "notebook_path", "path")  # and "paths", a list

USER_PROMPT_SUBMIT = "user_prompt_submit"  # docker-agent's: read for the turn's label only

SNAPSHOT_EVENTS = (
    SESSION_START,
    TURN_START,
    TURN_END,
    PRE_TOOL_USE,
    POST_TOOL_USE,
    SESSION_END,
    USER_PROMPT_SUBMIT,
)
TOOL_EVENTS = (PRE_TOOL_USE, POST_TOOL_USE, PERMISSION_REQUEST)


def our_event_name(name: str) -> str:
    """Any runtime's event name as ours (``hooks.dialects``): ``Stop`` → ``turn_end``."""
    from snapshotter.hooks.dialects import event_names

    return event_names().get(name, name)


# -- what the snapshot builtin reads of an event --------------------------------------------


def without_lone_surrogates(value: str) -> str:
    # JSON may carry "\ud800"; the persisted state would store it as U+FFFD,
    # so the next event of the same session or tool would no longer match.
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def command_of(tool_input: dict[str, Any] | None) -> str | None:
    """A shell tool's command (Claude Code's Bash ``command``, docker-agent's ``cmd``)."""
    data = tool_input or {}
    found = data.get("command", data.get("cmd"))
    return found if isinstance(found, str) and found.strip() else None


def named_paths_of(tool_input: dict[str, Any] | None, cwd: str) -> list[str]:
    """Absolute paths the tool's input names as the files it writes.

    Claude Code's Write/Edit/MultiEdit say ``file_path`` (NotebookEdit
    ``notebook_path``), docker-agent's file tools ``path`` or ``paths``,
    Gemini CLI's ``file_path``, Codex's ``apply_patch`` its patch text's file
    lines (both sides of a move); relative ones are relative to the event's ``cwd``.
    """
    data = tool_input or {}
    named: list[Any] = [data.get(key) for key in PATH_KEYS]
    if isinstance(data.get("paths"), list):
        named.extend(data["paths"])
    for key in ("command", "input", "patch"):  # Codex's apply_patch: the patch text
        text = data.get(key)
        if isinstance(text, str) and text.lstrip().startswith(PATCH_BEGIN):
            named.extend(patch_paths(text))
    return [
        os.path.normpath(os.path.join(cwd, p))
        for p in named
        if isinstance(p, str) and p and "\0" not in p
    ]


class Event:
    """One event as the snapshot builtin reads it: ``HookInput``'s values, without pydantic.

    A ``HookInput`` has the same attributes and methods, so either may be handed
    to the builtin.
    """

    __slots__ = (
        "cwd",
        "hook_event_name",
        "prompt",
        "reason",
        "session_id",
        "tool_input",
        "tool_name",
        "tool_use_id",
    )

    def __init__(self, fields: dict[str, Any]) -> None:
        self.session_id: str = fields.get("session_id", "")
        self.cwd: str = fields.get("cwd", "")
        self.hook_event_name: str = fields.get("hook_event_name", "")
        self.tool_name: str = fields.get("tool_name", "")
        self.tool_use_id: str = fields.get("tool_use_id", "")
        self.tool_input: dict[str, Any] | None = fields.get("tool_input")
        self.reason: str = fields.get("reason", "")
        self.prompt: str = fields.get("prompt", "")

    @property
    def event(self) -> str:
        return self.hook_event_name

    def command(self) -> str | None:
        return command_of(self.tool_input)

    def named_paths(self) -> list[str]:
        return named_paths_of(self.tool_input, self.cwd)


# HookInput's fields by the one JSON shape each takes unchanged (tests hold this
# table to HookInput's own fields): "str", "int", "bool", "object?" (an object or
# null), "array?", "objects?" (an array of objects, or null), "any".
_STR = (
    "session_id cwd hook_event_name agent_name model_id last_user_message tool_name "
    "tool_use_id source reason stop_response prompt parent_session_id notification_level "
    "notification_message from_agent to_agent agent_switch_kind approval_decision "
    "approval_source compaction_reason summary transcript_path"
)
_INT = (
    "iteration previous_max_iterations new_max_iterations input_tokens output_tokens context_limit"
)
FIELD_SHAPES: dict[str, str] = {
    **dict.fromkeys(_STR.split(), "str"),
    **dict.fromkeys(_INT.split(), "int"),
    "tool_error": "bool",
    "tool_input": "object?",
    "messages": "array?",
    "from_agent_models": "objects?",
    "tool_response": "any",
}
# Validated as HookInput does: surrogates replaced, then bounded or cut.
CLEANED = ("session_id", "tool_use_id", "tool_name", "reason", "cwd")
BOUNDED = ("session_id", "tool_use_id", "tool_name")


def plain_event(data: dict[str, Any]) -> Event | None:
    """The event ``data`` (a JSON object) holds, as ``HookInput.model_validate`` reads it.

    None unless every field has its exact type: a number as a string, a wrong
    type or an id too long is ``HookInput``'s to convert or reject.
    """
    if not _plain(data):
        return None
    fields = dict(data)
    for name in CLEANED:
        value = fields.get(name)
        if value:
            fields[name] = without_lone_surrogates(value)
    if "reason" in fields:
        fields["reason"] = fields["reason"][:MAX_REASON_CHARS]
    event = fields.get("hook_event_name")
    if event:
        fields["hook_event_name"] = our_event_name(event)
    return Event(fields)


def _plain(data: dict[str, Any]) -> bool:
    """Does every field of ``data`` have its exact shape (so HookInput would change nothing)?"""
    for key, value in data.items():
        shape = FIELD_SHAPES.get(key, "any")  # an unknown key: ignored by both
        if shape != "any" and not _SHAPES[shape](value):
            return False
    return not any(
        len(without_lone_surrogates(data[name])) > MAX_ID_CHARS for name in BOUNDED if name in data
    )


_SHAPES: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: type(v) is str,
    "int": lambda v: type(v) is int,
    "bool": lambda v: type(v) is bool,
    "object?": lambda v: v is None or type(v) is dict,
    "array?": lambda v: v is None or type(v) is list,
    "objects?": lambda v: v is None or (type(v) is list and all(type(i) is dict for i in v)),
}
