"""Hook events, compatible with docker-agent's ``Input``/``Output`` JSON.

Other runtimes' input (Claude Code's PascalCase event names, Codex's, Gemini
CLI's...) is accepted and mapped to the docker-agent events the snapshot
builtin handles (SPEC §6); each runtime's names live in ``hooks.dialects``.

``snapshotter hook`` reads only the fields the builtin uses (``Event.read``),
without pydantic (issue 16.4); docker-agent's whole payload and the hooks'
answers are the pydantic wire models of ``hooks.wire``, for a runtime's
registry and the API.
"""

from __future__ import annotations

import os

from snapshotter.hooks.dialects.codex import PATCH_BEGIN, patch_paths

TYPE_CHECKING = False  # typing costs the hook process milliseconds it need not pay
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    class _Fields(Protocol):
        """The fields ``Reading`` reads."""

        cwd: str
        hook_event_name: str
        tool_input: dict[str, Any] | None


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


class Reading:
    """What the builtin reads of an event beyond its fields, the same for ``Event``
    and ``wire.HookInput`` (each has the fields ``_Fields`` names)."""

    @property
    def event(self: _Fields) -> str:
        return self.hook_event_name

    def command(self: _Fields) -> str | None:
        """A shell tool's command (Claude Code's Bash ``command``, docker-agent's ``cmd``)."""
        data = self.tool_input or {}
        found = data.get("command", data.get("cmd"))
        return found if isinstance(found, str) and found.strip() else None

    def named_paths(self: _Fields) -> list[str]:
        """Absolute paths the tool's input names as the files it writes.

        Claude Code's Write/Edit/MultiEdit say ``file_path`` (NotebookEdit
        ``notebook_path``), docker-agent's file tools ``path`` or ``paths``,
        Gemini CLI's ``file_path``, Codex's ``apply_patch`` its patch text's file
        lines (both sides of a move); relative ones are relative to the event's ``cwd``.
        """
        data = self.tool_input or {}
        named: list[Any] = [data.get(key) for key in PATH_KEYS]
        if isinstance(data.get("paths"), list):
            named.extend(data["paths"])
        for key in ("command", "input", "patch"):  # Codex's apply_patch: the patch text
            text = data.get(key)
            if isinstance(text, str) and text.lstrip().startswith(PATCH_BEGIN):
                named.extend(patch_paths(text))
        return [
            os.path.normpath(os.path.join(self.cwd, p))
            for p in named
            if isinstance(p, str) and p and "\0" not in p
        ]


class Event(Reading):
    """One event as the snapshot builtin reads it: the fields it uses, checked, and no other.

    The annotations below are the one definition of what ``snapshotter hook``
    takes from an event: each field's JSON type (``_KINDS``), cleaned as
    ``CLEAN`` says. Every other field is the runtime's own and is left alone,
    whatever its type. ``wire.HookInput`` (docker-agent's whole payload, for a
    runtime's registry and the API) cleans these fields by the same rules and
    has the same attributes and methods, so either may be handed to the builtin.
    """

    # Read as text (``from __future__ import annotations``), so no typing import.
    session_id: str
    cwd: str
    hook_event_name: str
    tool_name: str
    tool_use_id: str
    tool_input: dict[str, Any] | None
    reason: str
    prompt: str

    def __init__(self, fields: dict[str, Any]) -> None:
        """``fields``: values already read (``read``); a field left out has its default."""
        for name, kind in self.__annotations__.items():
            setattr(self, name, fields.get(name, _KINDS[kind][1]))

    @classmethod
    def read(cls, data: dict[str, Any]) -> Event:
        """The event ``data`` (a JSON object, in our names: ``dialects.normalize``) holds.

        BadInput names the fields of a wrong type (the first three), in the words
        pydantic would use, as ``HookInput`` does for the same fields."""
        fields: dict[str, Any] = {}
        errors = []
        for name, kind in cls.__annotations__.items():
            if name not in data:
                continue
            value, (types, _default, should_be) = data[name], _KINDS[kind]
            if type(value) not in types:
                errors.append(f"{name}: {should_be}")
                continue
            clean = CLEAN.get(name)
            try:
                fields[name] = value if clean is None else clean(value)
            except ValueError as exc:
                errors.append(f"{name}: Value error, {exc}")
        if errors:
            from snapshotter.errors import BadInput

            more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
            raise BadInput(f"hook input has wrong types: {'; '.join(errors[:3])}{more}")
        return cls(fields)


# An annotation of ``Event``: the JSON types it takes, its default, and what
# pydantic says of another type.
_KINDS: dict[str, tuple[tuple[type, ...], object, str]] = {
    "str": ((str,), "", "Input should be a valid string"),
    "dict[str, Any] | None": ((dict, type(None)), None, "Input should be a valid dictionary"),
}


def _id(value: str) -> str:
    # Kept in the store's state, which every later event loads and saves:
    # a megabyte-long id would slow down every hook of that worktree for good.
    value = without_lone_surrogates(value)
    if len(value) > MAX_ID_CHARS:
        raise ValueError(f"longer than {MAX_ID_CHARS} characters")
    return value


def _reason(value: str) -> str:
    return without_lone_surrogates(value)[:MAX_REASON_CHARS]  # a checkpoint label, kept


# How a field of ``Event`` is cleaned once its type is right (the others: as they are).
CLEAN: dict[str, Callable[[str], str]] = {
    "session_id": _id,
    "cwd": without_lone_surrogates,
    "hook_event_name": our_event_name,
    "tool_name": _id,
    "tool_use_id": _id,
    "reason": _reason,
}
