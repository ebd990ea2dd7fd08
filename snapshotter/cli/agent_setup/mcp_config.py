"""``snapshotter init AGENT --mcp``: `snapshotter mcp` registered with the runtime (issue 25.5).

Where each runtime reads its MCP servers (project, or home with ``--global``):

- Claude Code: ``.mcp.json`` ``mcpServers`` (project; ``--global`` is not
  offered: Claude keeps user servers in ``~/.claude.json``, its own state
  file). Claude asks the user to approve a project server; ``init`` approves
  it where asked (``enabledMcpjsonServers`` in ``.claude/settings.json``) and
  allows its tools (``permissions.allow: mcp__snapshotter``).
- Gemini CLI: ``mcpServers`` in ``.gemini/settings.json``.
- Codex: ``[mcp_servers.snapshotter]`` in ``.codex/config.toml`` (read in a
  trusted project only), or ``$CODEX_HOME/config.toml`` with ``--global``.

Like the hooks: an entry already there (perhaps with the user's own options,
``--allow-force``) is kept, a second run changes nothing, a changed file is
backed up first.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

from snapshotter.cli.agent_setup.config_files import Setup, read_json, read_text, write
from snapshotter.errors import SnapshotterError

SERVER = "snapshotter"
MCP_AGENTS = ("claude-code", "gemini", "codex")
TOOLS_RULE = f"mcp__{SERVER}"  # Claude Code: every tool of the server


def server_entry(hook_command: str) -> dict[str, Any]:
    """How a runtime starts the server: the same executable as the hooks."""
    executable = shlex.split(hook_command)[0]
    return {"command": executable, "args": ["mcp"]}


def in_settings(agent: str, hook_command: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """What ``--mcp`` adds to the runtime's hooks file, merged in the same write:
    Claude Code's approval of the server, Gemini CLI's server itself."""
    if agent == "claude-code":
        return approve_in_claude
    if agent == "gemini":
        return lambda settings: with_server(Path(".gemini/settings.json"), settings, hook_command)
    return lambda settings: settings


NOTES = {
    "claude-code": "note: Claude Code honours the approval and the allow rule (mcp__snapshotter) "
    "in a trusted folder only: start `claude` here once and accept its trust dialog",
    "codex": "note: Codex reads .codex/config.toml in a trusted project only (`snapshotter "
    "init codex --trust`, or trust it in Codex)",
}


def refuse(agent: str, hook_command: str, *, global_: bool) -> None:
    """Where ``--mcp`` has nothing to write: said before anything is written."""
    if agent not in MCP_AGENTS:
        raise SnapshotterError(f"--mcp is for {', '.join(MCP_AGENTS)}; not {agent}")
    if agent == "claude-code" and global_:
        executable = server_entry(hook_command)["command"]
        raise SnapshotterError(
            "Claude Code keeps user-wide MCP servers in ~/.claude.json: run "
            f"`claude mcp add --scope user {SERVER} -- {executable} mcp` instead"
        )


def own_file(
    agent: str, project: Path, hook_command: str, *, global_: bool, dry_run: bool
) -> Setup | None:
    """The server registered in a file of its own (Claude Code's ``.mcp.json``,
    Codex's ``config.toml``); None where it goes in the hooks file."""
    entry = server_entry(hook_command)
    if agent == "claude-code":
        path = project / ".mcp.json"
        old_text, document = read_json(path)
        merged = with_server(path, document, hook_command, type="stdio")
        if merged == document:
            return Setup(path, old_text, changed=False)
        return write(path, old_text, json.dumps(merged, indent=2) + "\n", dry_run)
    if agent == "codex":
        home = Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex")
        path = home / "config.toml" if global_ else project / ".codex" / "config.toml"
        return _merge_toml(path, entry, dry_run)
    return None


def with_server(
    path: Path, document: dict[str, Any], hook_command: str, **extra: str
) -> dict[str, Any]:
    """``document`` with ``mcpServers.snapshotter`` unless one is there (the user's own
    options, ``--allow-force``, are kept)."""
    servers = document.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise SnapshotterError(f'{path}: "mcpServers" is not an object; fix it by hand first')
    if SERVER in servers:
        return document
    return {**document, "mcpServers": {**servers, SERVER: {**extra, **server_entry(hook_command)}}}


def approve_in_claude(settings: dict[str, Any]) -> dict[str, Any]:
    """Claude Code's settings with the project server approved and its tools allowed."""
    enabled = settings.get("enabledMcpjsonServers", [])
    permissions = settings.get("permissions", {})
    allow = permissions.get("allow", []) if isinstance(permissions, dict) else None
    if not isinstance(enabled, list) or not isinstance(allow, list):
        raise SnapshotterError(
            'the settings\' "enabledMcpjsonServers" or "permissions" is not as Claude Code '
            "writes it; fix it by hand first"
        )
    merged = dict(settings)
    if SERVER not in enabled:
        merged["enabledMcpjsonServers"] = [*enabled, SERVER]
    if TOOLS_RULE not in allow:
        merged["permissions"] = {**permissions, "allow": [*allow, TOOLS_RULE]}
    return merged


def _merge_toml(path: Path, entry: dict[str, Any], dry_run: bool) -> Setup:
    """``[mcp_servers.snapshotter]`` appended to the TOML file at ``path`` unless it is there."""
    import tomllib

    old_text = read_text(path)
    try:
        current = tomllib.loads(old_text)
    except tomllib.TOMLDecodeError as exc:
        raise SnapshotterError(f"{path} is not TOML ({exc}); fix it, then run init again") from exc
    if SERVER in current.get("mcp_servers", {}):
        return Setup(path, old_text, changed=False)
    kept = old_text if not old_text or old_text.endswith("\n") else old_text + "\n"
    table = (
        f"# the agent's undo: snapshotter init codex --mcp\n[mcp_servers.{SERVER}]\n"
        f"command = {json.dumps(entry['command'])}\nargs = {json.dumps(entry['args'])}\n"
    )
    return write(path, old_text, kept + ("\n" if kept else "") + table, dry_run)
