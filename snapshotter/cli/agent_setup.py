"""``snapshotter init``: wire the hooks into an agent's configuration, idempotently.

Pasting JSON by hand was the first thing new users got wrong. The merge keeps
every hook that is already there, adds ours only where it is missing (so a
second run changes nothing) and keeps a backup of any file it changes.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from snapshotter.errors import SnapshotterError
from snapshotter.fileio import write_atomic
from snapshotter.hooks.dialects import Dialect, claude_code, docker_agent

HOOK_COMMAND = "snapshotter hook"
TIMEOUT_S = 60  # docker-agent's default; a hook waits at most 50 s for the store lock


@dataclass(frozen=True)
class Setup:
    """What ``init`` did (or, with ``--dry-run``, would do) to one file."""

    path: Path | None  # None: nothing to write, the text is for pasting
    text: str  # the file's new content, or the block to paste
    changed: bool
    backup: Path | None = None


def is_ours(command: object) -> bool:
    """``snapshotter hook`` however it is spelled (a path, extra ``--arg`` options)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return len(words) >= 2 and os.path.basename(words[0]) == "snapshotter" and words[1] == "hook"


def hook_command() -> str:
    """``snapshotter hook``, or this script's full path when ``snapshotter`` is not on PATH.

    An agent runs the hook through its own PATH: a command it cannot find
    fails every event, and in docker-agent a failing pre_tool_use blocks the tool.
    """
    import shutil
    import sys

    if shutil.which("snapshotter"):
        return HOOK_COMMAND
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(script) == "snapshotter" and os.access(script, os.X_OK):
        return f"{shlex.quote(script)} hook"
    return HOOK_COMMAND


def _timeout_s(dialect: Dialect, event: str) -> int:
    """Seconds the runtime may give the hook: within its budget for session ends."""
    short = dialect.events.get(event) == "session_end" or event in dialect.budgeted
    return dialect.session_end_timeout_s if short else TIMEOUT_S


# -- runtimes configured in JSON (Claude Code, Codex, Gemini CLI, Qwen Code, Copilot, Cursor) --


def config_path(dialect: Dialect, folder: Path, *, global_: bool = False) -> Path:
    """Where ``init`` writes the runtime's hooks: below the project, or the home directory."""
    relative = dialect.global_config if global_ else dialect.config
    if not relative:
        raise SnapshotterError(
            f"{dialect.title} has no user-wide hooks file; run init in a project"
        )
    return folder / relative


def claude_settings_path(folder: Path) -> Path:
    """A project's (or, given the home directory, the user's) Claude Code settings."""
    return config_path(claude_code.DIALECT, folder)


def _entry(dialect: Dialect, event: str, command: str) -> dict[str, Any]:
    """One hook entry in the runtime's own words."""
    if dialect.named_in_command:
        command = f"{command} --arg dialect={dialect.name}"
    if dialect.event_in_command:
        command = f"{command} --arg event={event}"
    seconds = _timeout_s(dialect, event)
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


def merge_claude(settings: dict[str, Any], command: str = HOOK_COMMAND) -> dict[str, Any]:
    return merge_hooks(settings, claude_code.DIALECT, command)


def setup_json(
    path: Path, dialect: Dialect, *, dry_run: bool = False, command: str = HOOK_COMMAND
) -> Setup:
    """Merge our hooks into the runtime's JSON config at ``path`` (made if missing)."""
    old_text = _read_text(path)
    try:
        settings = json.loads(old_text) if old_text.strip() else {}
    except ValueError as exc:
        raise SnapshotterError(
            f"{path} is not JSON ({exc}); fix or move it, then run init again"
        ) from exc
    if not isinstance(settings, dict):
        raise SnapshotterError(f"{path} does not hold a JSON object; fix or move it first")
    merged = merge_hooks(settings, dialect, command)
    if merged == settings:
        return Setup(path, old_text, changed=False)
    text = json.dumps(merged, indent=2) + "\n"
    return _write(path, old_text, text, dry_run)


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


def trust_codex(hooks_file: Path, project: Path, *, dry_run: bool = False) -> Setup:
    """Trust the project and snapshotter's hooks in ``$CODEX_HOME/config.toml``.

    Codex runs a project's hooks only when the project is trusted and each hook's
    ``trusted_hash`` (``dialects.codex.trusted_hash``) is recorded under
    ``[hooks.state."FILE:EVENT:GROUP:HANDLER"]``; without them it skips them
    silently. Only our own hooks are trusted; a table that is already there is
    never written twice (Codex would then load no hook at all).
    """
    import tomllib

    from snapshotter.hooks.dialects import codex

    home = os.environ.get("CODEX_HOME") or str(Path.home() / ".codex")
    path = Path(home) / "config.toml"
    old_text = _read_text(path)
    try:
        current = tomllib.loads(old_text)
    except tomllib.TOMLDecodeError as exc:
        raise SnapshotterError(f"{path} is not TOML ({exc}); fix it, then run init again") from exc
    hooks = json.loads(hooks_file.read_text("utf-8")).get("hooks", {})
    state = current.get("hooks", {}).get("state", {})
    lines: list[str] = []
    if str(project) not in current.get("projects", {}):
        lines += [f"[projects.{json.dumps(str(project))}]", 'trust_level = "trusted"', ""]
    for event, groups in hooks.items():
        for g, group in enumerate(groups if event in codex.LABELS else []):
            for h, handler in enumerate(group.get("hooks", [])):
                if not is_ours(handler.get("command")):
                    continue
                key = f"{hooks_file}:{codex.LABELS[event]}:{g}:{h}"
                digest = codex.trusted_hash(event, group.get("matcher"), handler)
                have = state.get(key)
                if isinstance(have, dict) and have.get("trusted_hash") == digest:
                    continue
                if have is not None:
                    raise SnapshotterError(
                        f"{path} trusts another version of {key}; trust snapshotter's "
                        "hooks with /hooks in Codex instead"
                    )
                lines += [f"[hooks.state.{json.dumps(key)}]", f'trusted_hash = "{digest}"', ""]
    if not lines:
        return Setup(path, old_text, changed=False)
    kept = old_text if not old_text or old_text.endswith("\n") else old_text + "\n"
    text = kept + ("\n" if kept else "") + "# trusted by snapshotter init codex --trust\n"
    text += "\n".join(lines)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SnapshotterError(
            f"cannot add the trust to {path} ({exc}); trust the hooks with /hooks in Codex"
        ) from exc
    return _write(path, old_text, text, dry_run)


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


def setup_claude(path: Path, *, dry_run: bool = False, command: str = HOOK_COMMAND) -> Setup:
    return setup_json(path, claude_code.DIALECT, dry_run=dry_run, command=command)


# -- docker-agent ---------------------------------------------------------------


def docker_agent_block(indent: str = "", command: str = HOOK_COMMAND) -> str:
    """The ``hooks:`` mapping for an agent, as YAML, indented by ``indent``."""
    lines = ["hooks:"]
    dialect = docker_agent.DIALECT
    for event in dialect.events:
        tool = event in dialect.matchers
        hook = ["type: command", f"command: {command}", f"timeout: {_timeout_s(dialect, event)}"]
        lines.append(f"  {event}:")
        if tool:
            lines += ['    - matcher: "*"', "      hooks:", f"        - {hook[0]}"]
            lines += [f"          {item}" for item in hook[1:]]
        else:
            lines += [f"    - {hook[0]}", *(f"      {item}" for item in hook[1:])]
    return "".join(f"{indent}{line}\n" for line in lines)


def setup_docker_agent(
    path: Path, agent: str | None, *, dry_run: bool = False, command: str = HOOK_COMMAND
) -> Setup:
    """Add the hooks to one agent of an agent YAML file (``agents: NAME: hooks:``)."""
    old_text = _read_text(path)
    if not old_text:
        raise SnapshotterError(f"{path} is empty or missing; run without a file to print the block")
    lines = old_text.splitlines(keepends=True)
    start, end, indent, name = _agent_block(lines, agent, path)
    body = lines[start:end]
    if any(is_ours(line.partition("command:")[2].strip().strip("'\"")) for line in body):
        return Setup(path, old_text, changed=False)
    if any(line.startswith(f"{indent}hooks:") for line in body):
        raise SnapshotterError(
            f"agent {name!r} in {path} already has hooks of its own; add these "
            f"entries to them by hand (`snapshotter init docker-agent` prints them)"
        )
    while end > start and not lines[end - 1].strip():
        end -= 1  # keep blank lines after the agent where they were
    if lines[end - 1] and not lines[end - 1].endswith("\n"):
        lines[end - 1] += "\n"
    new_lines = [*lines[:end], docker_agent_block(indent, command), *lines[end:]]
    return _write(path, old_text, "".join(new_lines), dry_run)


def _agent_block(lines: list[str], agent: str | None, path: Path) -> tuple[int, int, str, str]:
    """(first body line, end, the body's indent, name) of the agent to wire."""
    try:
        top = next(i for i, line in enumerate(lines) if line.rstrip() == "agents:")
    except StopIteration:
        raise SnapshotterError(f"{path} has no top-level `agents:` mapping") from None
    agents: list[tuple[str, int, int]] = []  # name, line, indent
    child_indent: int | None = None
    for i in range(top + 1, len(lines)):
        text = lines[i]
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        indent = len(text) - len(text.lstrip(" "))
        if indent == 0:
            break
        if child_indent is None:
            child_indent = indent
        if indent == child_indent and text.rstrip().endswith(":"):
            agents.append((text.strip()[:-1].strip("'\""), i, indent))
    if not agents:
        raise SnapshotterError(f"{path} defines no agents under `agents:`")
    names = [a[0] for a in agents]
    wanted = agent or ("root" if "root" in names else names[0])
    if wanted not in names:
        raise SnapshotterError(f"no agent {wanted!r} in {path} (it has: {', '.join(names)})")
    k = names.index(wanted)
    _, line, indent = agents[k]
    end = agents[k + 1][1] if k + 1 < len(agents) else _block_end(lines, line, indent)
    body_indent = _body_indent(lines[line + 1 : end]) or indent + 2
    return line + 1, end, " " * body_indent, wanted


def _block_end(lines: list[str], line: int, indent: int) -> int:
    for i in range(line + 1, len(lines)):
        text = lines[i]
        if (
            text.strip()
            and not text.lstrip().startswith("#")
            and len(text) - len(text.lstrip(" ")) <= indent
        ):
            return i
    return len(lines)


def _body_indent(body: list[str]) -> int | None:
    for text in body:
        if text.strip() and not text.lstrip().startswith("#"):
            return len(text) - len(text.lstrip(" "))
    return None


# -- files ------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotterError(f"cannot read {path}: {exc}") from exc


def _write(path: Path, old_text: str, text: str, dry_run: bool) -> Setup:
    if dry_run:
        return Setup(path, text, changed=True)
    backup = None
    try:
        mode = path.stat().st_mode & 0o777 if old_text else 0o666 & ~_umask()
        if old_text:
            backup = path.with_name(f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}.bak")
            write_atomic(backup, old_text.encode("utf-8"))
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, text.encode("utf-8"))
        os.chmod(path, mode)  # the user's file keeps its mode (temp files are 0600)
    except OSError as exc:
        raise SnapshotterError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return Setup(path, text, changed=True, backup=backup)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
