"""Each agent runtime's hook dialect, one module each (issue 22.1).

A dialect says what the runtime calls each lifecycle event (mapped onto
docker-agent's names, our vocabulary), which of its events snapshotter leaves
alone on purpose, how its payload's fields map onto ours, and where and how
``snapshotter init`` wires it. The hook reads events with it and ``init``
writes configs with it, so the two cannot drift apart.

Kept free of heavy imports: ``snapshotter hook`` loads this on every event.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Dialect:
    """One runtime's hooks: its events, its payload's fields, its config.

    A plain class, not a dataclass: the hook process builds these on every
    event, and ``dataclasses`` costs it milliseconds (issue 16.4).
    """

    __slots__ = (
        "budgeted",
        "config",
        "event_in_command",
        "events",
        "fields",
        "global_config",
        "ignored",
        "matchers",
        "name",
        "named_in_command",
        "reasons",
        "session_end_timeout_s",
        "timeout_unit",
        "title",
    )

    def __init__(
        self,
        *,
        name: str,
        title: str,
        events: dict[str, str],
        matchers: frozenset[str] = frozenset(),
        ignored: frozenset[str] = frozenset(),
        fields: dict[str, str] | None = None,
        config: str = "",
        global_config: str = "",
        timeout_unit: int = 1,
        session_end_timeout_s: int = 5,
        event_in_command: bool = False,
        named_in_command: bool = True,
        reasons: dict[str, str] | None = None,
        budgeted: frozenset[str] = frozenset(),
    ) -> None:
        self.name = name  # what ``snapshotter init NAME`` takes
        self.title = title  # the runtime, for people
        self.events = events  # its event name → ours; the events ``init`` wires, in order
        self.matchers = matchers  # its events that take a tool matcher
        self.ignored = ignored  # its events snapshotter leaves alone on purpose
        self.fields = fields or {}  # its field name → ours
        self.config = config  # the project's config file ``init`` writes, below the worktree
        self.global_config = global_config  # the user's, below the home directory
        self.timeout_unit = timeout_unit  # its config's timeouts: seconds times this (ms: 1000)
        self.session_end_timeout_s = session_end_timeout_s  # within its SessionEnd budget
        self.event_in_command = event_in_command  # its payloads name no event: --arg event=
        self.named_in_command = named_in_command  # init adds --arg dialect=NAME: who sent it
        self.reasons = reasons or {}  # its event → the reason it means (Codex's Interrupt)
        self.budgeted = budgeted  # its events whose hooks it cuts short


def camel_events(turn_start: str, turn_end: str) -> dict[str, str]:
    """Copilot CLI's and Cursor's events, in the order ``init`` wires them: the same
    camelCase names but for a turn's start and end. A failed tool has an event of
    its own, ``postToolUseFailure`` (its reason: ``FAILED_TOOL``)."""
    return {
        "sessionStart": "session_start",
        turn_start: "turn_start",
        "preToolUse": "pre_tool_use",
        "postToolUse": "post_tool_use",
        "postToolUseFailure": "post_tool_use",
        turn_end: "turn_end",
        "sessionEnd": "session_end",
    }


# camel_events' failed tool: its checkpoint is marked failed (#26.4).
FAILED_TOOL = {"postToolUseFailure": "failed"}


def all_dialects() -> tuple[Dialect, ...]:
    from snapshotter.hooks.dialects import (
        claude_code,
        codex,
        copilot,
        cursor,
        docker_agent,
        gemini,
        qwen,
    )

    return (
        docker_agent.DIALECT,
        claude_code.DIALECT,
        codex.DIALECT,
        gemini.DIALECT,
        copilot.DIALECT,
        cursor.DIALECT,
        qwen.DIALECT,
    )


def by_name(name: str) -> Dialect | None:
    return next((d for d in all_dialects() if d.name == name), None)


_NAMES: dict[str, str] = {}


def event_names() -> dict[str, str]:
    """Every runtime's event name → ours, for payloads that name their event.

    docker-agent's own names are ours already. Names two runtimes spell alike
    map alike (Claude Code, Codex and Qwen Code share Claude's); Cursor's
    camelCase ones are read only from payloads that are Cursor's (see
    ``normalize``), since docker-agent has a ``stop`` of its own.
    """
    if not _NAMES:
        for dialect in all_dialects():
            if dialect.name not in ("docker-agent", "cursor"):
                _NAMES.update(dialect.events)
    return _NAMES


def known_ignored() -> frozenset[str]:
    """Events some runtime sends that snapshotter leaves alone on purpose."""
    names: set[str] = set()
    for dialect in all_dialects():
        names.update(dialect.ignored)
    return frozenset(names)


def source_of(data: dict[str, Any], options: dict[str, str]) -> str | None:
    """Which runtime's hook sent ``data``: its ``--arg dialect=NAME``, its fields, or
    its event's name (``doctor`` says when each last sent one)."""
    found = detect(data, options)
    if found is not None:
        return found.name
    event = data.get("hook_event_name")
    for dialect in all_dialects():
        if dialect.name in ("docker-agent", "claude-code", "gemini") and event in dialect.events:
            return dialect.name
    return None


def detect(data: dict[str, Any], options: dict[str, str]) -> Dialect | None:
    """The dialect of a payload: named by the hook's ``--arg dialect=NAME``, else told
    by its fields; None for the ones that need no translation (event names only)."""
    named = options.get("dialect")
    if named:
        return by_name(named)
    from snapshotter.hooks.dialects import copilot, cursor

    if "conversation_id" in data:
        return cursor.DIALECT
    if "sessionId" in data and "session_id" not in data:
        return copilot.DIALECT
    return None


def normalize(data: dict[str, Any], options: dict[str, str]) -> dict[str, Any]:
    """``data`` with our field names and event name, whatever runtime sent it."""
    dialect = detect(data, options)
    fields = dict(data)
    if dialect is not None:
        for theirs, ours in dialect.fields.items():
            if theirs in fields and ours not in fields:
                fields[ours] = fields.pop(theirs)
        if dialect.name == "cursor" and not fields.get("cwd"):
            roots = fields.get("workspace_roots")
            if isinstance(roots, list) and roots and isinstance(roots[0], str):
                fields["cwd"] = roots[0]
        if isinstance(fields.get("tool_input"), str):  # Copilot's toolArgs: JSON text
            import json

            try:
                parsed = json.loads(fields["tool_input"])
            except ValueError:
                parsed = None
            fields["tool_input"] = parsed if isinstance(parsed, dict) else None
    event = fields.get("hook_event_name") or options.get("event") or ""
    if isinstance(event, str) and event:
        mapping = dialect.events if dialect is not None else event_names()
        fields["hook_event_name"] = mapping.get(event, event)
        reason = event_reasons().get(event) if dialect is None else dialect.reasons.get(event)
        if reason:
            fields["reason"] = reason
    if fields.get("tool_error") is True and fields.get("hook_event_name") == "post_tool_use":
        fields["reason"] = "failed"  # docker-agent's failed tool call (#26.4)
    return fields


def event_reasons() -> dict[str, str]:
    """Events that end a turn in a way of their own (Codex's ``Interrupt``)."""
    found: dict[str, str] = {}
    for dialect in all_dialects():
        if dialect.name not in ("docker-agent", "cursor"):
            found.update(dialect.reasons)
    return found
