"""The runtimes configured in JSON (Claude Code, Codex, Gemini CLI, Qwen Code, Copilot,
Cursor): where their hooks file is, our hook merged into it, and whether a file runs it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from snapshotter.cli.agent_setup.config_files import Setup, read_json, write
from snapshotter.cli.agent_setup.hook_entry import HOOK_COMMAND, is_ours, timeout_s
from snapshotter.errors import SnapshotterError
from snapshotter.hooks.dialects import Dialect, claude_code


def config_path(dialect: Dialect, folder: Path, *, global_: bool = False) -> Path:
    """Where ``init`` writes the runtime's hooks: below the project, or the home directory."""
    relative = dialect.global_config if global_ else dialect.config
    if not relative:
        raise SnapshotterError(
            f"{dialect.title} has no user-wide hooks file; run init in a project"
        )
    return folder / relative


def _entry(dialect: Dialect, event: str, command: str) -> dict[str, Any]:
    """One hook entry in the runtime's own words."""
    if dialect.named_in_command:
        command = f"{command} --arg dialect={dialect.name}"
    if dialect.event_in_command:
        command = f"{command} --arg event={event}"
    seconds = timeout_s(dialect, event)
    if dialect.name == "copilot":
        return {"type": "command", "bash": command, "timeoutSec": seconds}
    if dialect.name == "cursor":
        return {"command": command}
    return {"type": "command", "command": command, "timeout": seconds * dialect.timeout_unit}


def _commands(groups: list[Any]) -> list[object]:
    """Every command in an event's list, grouped (Claude's shape) or not (Copilot, Cursor)."""
    found: list[object] = []
    for item in groups:
        if not isinstance(item, dict):
            continue
        found += [item.get("command"), item.get("bash")]
        inner = item.get("hooks", [])
        if isinstance(inner, list):
            found += [h.get("command") for h in inner if isinstance(h, dict)]
    return found


def merge_hooks(
    settings: dict[str, Any], dialect: Dialect, command: str = HOOK_COMMAND
) -> dict[str, Any]:
    """``settings`` with our hook on every event of the runtime it is not already on."""
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SnapshotterError('the settings\' "hooks" is not an object; fix it by hand first')
    merged = {**hooks}
    for event in dialect.events:
        groups = merged.get(event, [])
        if not isinstance(groups, list):
            raise SnapshotterError(
                f"the settings' hooks.{event} is not a list; fix it by hand first"
            )
        if any(is_ours(c) for c in _commands(groups)):
            continue
        entry = _entry(dialect, event, command)
        if dialect.name in ("copilot", "cursor"):
            merged[event] = [*groups, entry]
            continue
        group: dict[str, Any] = {"matcher": "*"} if event in dialect.matchers else {}
        group["hooks"] = [entry]
        merged[event] = [*groups, group]
    extra = {"version": 1} if dialect.name in ("copilot", "cursor") else {}
    return {**extra, **settings, "hooks": merged}


def setup_json(
    path: Path,
    dialect: Dialect,
    *,
    dry_run: bool = False,
    command: str = HOOK_COMMAND,
    also: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Setup:
    """Merge our hooks into the runtime's JSON config at ``path`` (made if missing);
    ``also``: more of ours merged in the same write (``init --mcp``'s server)."""
    old_text, settings = read_json(path)
    merged = merge_hooks(settings, dialect, command)
    if also is not None:
        merged = also(merged)
    if merged == settings:
        return Setup(path, old_text, changed=False)
    text = json.dumps(merged, indent=2) + "\n"
    return write(path, old_text, text, dry_run)


def notes_for(dialect: Dialect, project: Path, *, trusted: bool = False) -> list[str]:
    """What the user must know once the runtime is wired (one line each)."""
    notes = []
    if dialect.name == "codex" and not trusted:
        notes.append(
            "note: Codex skips a hook until you trust it, without a word: run /hooks in "
            "Codex and trust snapshotter's, or run init again with --trust"
        )
    if dialect.name == "copilot" and _wires_claude(project):
        notes.append(
            "note: .claude/settings.json wires snapshotter too, and Copilot runs those "
            "hooks as well; each event then arrives twice, which records nothing twice"
        )
    return notes


HINTS = {
    "codex": "Codex runs it only once trusted: /hooks in Codex, or `snapshotter init codex "
    "--trust`",
    "gemini": "Gemini CLI runs project hooks only in a trusted folder",
}


def silent_wiring(project: Path) -> list[str]:
    """One line per runtime wired in ``project`` (a worktree that has received no
    event at all), saying what to check (issue 22.7)."""
    from snapshotter.hooks.dialects import all_dialects

    notes = []
    for dialect in all_dialects():
        if dialect.config and wires(config_path(dialect, project)):
            hint = HINTS.get(dialect.name, "")
            notes.append(
                f"{dialect.title} is wired here ({dialect.config}) but no event has arrived "
                f"yet; is `snapshotter` on the PATH the agent uses?{' ' + hint if hint else ''}"
            )
    return notes


def wires(path: Path) -> bool:
    """Whether the JSON config at ``path`` runs ``snapshotter hook`` on some event."""
    try:
        settings = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return False
    hooks = settings.get("hooks") if isinstance(settings, dict) else None
    return isinstance(hooks, dict) and any(
        isinstance(groups, list) and any(is_ours(c) for c in _commands(groups))
        for groups in hooks.values()
    )


def _wires_claude(project: Path) -> bool:
    return wires(config_path(claude_code.DIALECT, project))
