"""Commands that set up: `init` (wire an agent's hooks) and `demo`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from snapshotter.cli.context import dir_option

if TYPE_CHECKING:
    from snapshotter.cli.agent_setup.config_files import Setup

AGENTS = ("claude-code", "docker-agent", "codex", "gemini", "copilot", "cursor", "qwen")


@click.command(name="init")
@click.argument("agent", type=click.Choice(AGENTS))
@click.argument("agent_file", required=False, type=click.Path(dir_okay=False), metavar="[FILE]")
@dir_option
@click.option(
    "--global",
    "global_",
    is_flag=True,
    help="The user's config in the home directory instead of the project's "
    "(claude-code, codex, gemini, cursor, qwen).",
)
@click.option(
    "--agent",
    "agent_name",
    metavar="NAME",
    help="docker-agent: the agent in FILE to wire (default: root, else the first).",
)
@click.option(
    "--trust",
    is_flag=True,
    help="codex: also trust the project and these hooks in $CODEX_HOME/config.toml "
    "(Codex skips untrusted hooks silently).",
)
@click.option(
    "--mcp",
    is_flag=True,
    help="Also register `snapshotter mcp`, the agent's undo (claude-code, gemini, codex).",
)
@click.option("--dry-run", is_flag=True, help="Print the result; write nothing.")
def init(
    agent: str,
    agent_file: str | None,
    directory: str,
    global_: bool,
    agent_name: str | None,
    trust: bool,
    mcp: bool,
    dry_run: bool,
) -> None:
    """Wire snapshotter's hooks into an agent's configuration.

    \b
    claude-code  .claude/settings.json
    codex        .codex/hooks.json (Codex runs a hook only once trusted: /hooks, or --trust)
    gemini       .gemini/settings.json (timeouts in ms)
    copilot      .github/hooks/snapshotter.json
    cursor       .cursor/hooks.json
    qwen         .qwen/settings.json (timeouts in ms)
    docker-agent one agent of the agent YAML FILE; without FILE, the block to paste

    \b
    --mcp also registers `snapshotter mcp` (the agent's own undo):
    claude-code  .mcp.json, approved and its tools allowed in .claude/settings.json
    gemini       mcpServers in .gemini/settings.json
    codex        [mcp_servers] in .codex/config.toml (--global: $CODEX_HOME/config.toml)

    Files are below the git worktree's top of DIR, or the home directory with
    --global. Hooks already there are kept, running init twice changes
    nothing, and a changed file is backed up beside itself first.
    """
    from snapshotter.cli.agent_setup import codex_trust, docker_agent, json_config, mcp_config
    from snapshotter.cli.agent_setup.hook_entry import hook_command
    from snapshotter.hooks.dialects import by_name

    command = hook_command()
    notes: list[str] = []
    setups = []
    if mcp:
        mcp_config.refuse(agent, command, global_=global_)
    if agent == "docker-agent":
        if agent_file is None:
            click.echo(docker_agent.block(command=command), nl=False)
            return
        setup = docker_agent.setup(Path(agent_file), agent_name, dry_run=dry_run, command=command)
    else:
        dialect = by_name(agent)
        assert dialect is not None  # (click's choices are the dialects' names)
        project = project_dir(directory)
        if not global_:
            _refuse_outside_git(directory)
        folder = Path.home() if global_ else project
        path = json_config.config_path(dialect, folder, global_=global_)
        also = mcp_config.in_settings(agent, command) if mcp else None
        setup = json_config.setup_json(path, dialect, dry_run=dry_run, command=command, also=also)
        if mcp:
            own = mcp_config.own_file(agent, project, command, global_=global_, dry_run=dry_run)
            setups += [own] if own is not None else []
            notes += [mcp_config.NOTES[agent]] if agent in mcp_config.NOTES else []
        if trust and agent != "codex":
            raise click.UsageError("--trust is for codex")
        if trust and not dry_run:
            trusted = codex_trust.trust(path, project if not global_ else folder)
            if trusted.changed:
                notes.append(f"{trusted.path}: the project and snapshotter's hooks trusted")
        notes += json_config.notes_for(dialect, project, trusted=trust)
    for done, what in [(setup, "hooks added"), *((s, "MCP server added") for s in setups)]:
        _said(done, what, dry_run, titled=bool(setups))
    for note in notes:
        click.echo(note, err=True)


def _said(setup: Setup, what: str, dry_run: bool, *, titled: bool) -> None:
    """What init did to one file (with --dry-run, the file as it would be)."""
    if dry_run:
        if titled:
            click.echo(f"# {setup.path}")
        click.echo(setup.text, nl=False)
    elif not setup.changed:
        click.echo(f"{setup.path}: already wired, nothing to change")
    else:
        saved = f" (backup: {setup.backup})" if setup.backup else ""
        click.echo(f"{setup.path}: {what}{saved}")


def _refuse_outside_git(directory: str) -> None:
    """Project hooks outside a git worktree would record nothing: say so, write
    nothing (#26.6: ``init`` used to write ``./.claude/settings.json`` silently)."""
    from snapshotter.engine import worktree_root
    from snapshotter.errors import NotAWorktree

    try:
        worktree_root(directory)
    except NotAWorktree:
        raise NotAWorktree(
            f"{os.path.abspath(directory)} (hooks wired here would record nothing; run init "
            "in your project, or use --global)"
        ) from None


def project_dir(directory: str) -> Path:
    """The git worktree's top containing ``directory``, else ``directory`` itself."""
    from snapshotter.engine import worktree_root
    from snapshotter.errors import NotAWorktree

    try:
        return worktree_root(directory)
    except NotAWorktree:
        return Path(directory).resolve()


@click.command()
@click.option("--keep", is_flag=True, help="Leave the throwaway repository in place.")
def demo(keep: bool) -> None:
    """Play a short agent session on a throwaway repository, then undo and redo it."""
    from snapshotter.cli.demo import run_demo

    run_demo(keep=keep)
