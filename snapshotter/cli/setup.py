"""Commands that set up: `init` (wire an agent's hooks) and `demo`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from snapshotter.cli.context import (
    dir_option,
)

if TYPE_CHECKING:
    pass


@click.command(name="init")
@click.argument("agent", type=click.Choice(["claude-code", "docker-agent"]))
@click.argument("agent_file", required=False, type=click.Path(dir_okay=False), metavar="[FILE]")
@dir_option
@click.option(
    "--global",
    "global_",
    is_flag=True,
    help="claude-code: ~/.claude/settings.json instead of the project's.",
)
@click.option(
    "--agent",
    "agent_name",
    metavar="NAME",
    help="docker-agent: the agent in FILE to wire (default: root, else the first).",
)
@click.option("--dry-run", is_flag=True, help="Print the result; write nothing.")
def init(
    agent: str,
    agent_file: str | None,
    directory: str,
    global_: bool,
    agent_name: str | None,
    dry_run: bool,
) -> None:
    """Wire snapshotter's hooks into an agent's configuration.

    claude-code merges the hooks into DIR's .claude/settings.json (the git
    worktree's top, or ~/.claude/settings.json with --global). docker-agent
    adds them to one agent of the agent YAML FILE, or prints the block to
    paste without FILE. Hooks already there are kept, running init twice
    changes nothing, and a changed file is backed up beside itself first.
    """
    from snapshotter.cli import agent_setup

    command = agent_setup.hook_command()
    if agent == "claude-code":
        folder = Path.home() if global_ else _project_dir(directory)
        setup = agent_setup.setup_claude(
            agent_setup.claude_settings_path(folder), dry_run=dry_run, command=command
        )
    elif agent_file is None:
        click.echo(agent_setup.docker_agent_block(command=command), nl=False)
        return
    else:
        setup = agent_setup.setup_docker_agent(
            Path(agent_file), agent_name, dry_run=dry_run, command=command
        )
    if dry_run:
        click.echo(setup.text, nl=False)
    elif not setup.changed:
        click.echo(f"{setup.path}: already wired, nothing to change")
    else:
        saved = f" (backup: {setup.backup})" if setup.backup else ""
        click.echo(f"{setup.path}: hooks added{saved}")


def _project_dir(directory: str) -> Path:
    """The git worktree's top containing ``directory``, else ``directory`` itself."""
    from snapshotter.errors import NotAWorktree
    from snapshotter.git.worktree import find_worktree

    try:
        return find_worktree(directory).root
    except NotAWorktree:
        return Path(directory).resolve()


@click.command()
@click.option("--keep", is_flag=True, help="Leave the throwaway repository in place.")
def demo(keep: bool) -> None:
    """Play a short agent session on a throwaway repository, then undo and redo it."""
    from snapshotter.cli.demo import run_demo

    run_demo(keep=keep)
