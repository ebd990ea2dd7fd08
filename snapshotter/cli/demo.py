"""``snapshotter demo``: a recorded agent session on a throwaway repository.

Every event goes through the real hook path (a ``snapshotter hook`` process
fed JSON on stdin), and every command shown is the real CLI.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from snapshotter.cli.output import LEGEND
from snapshotter.cli.replay import build_repo, load_recipe, load_session, replay

SESSION = "docker_agent_two_turns"


def run_demo(keep: bool = False) -> None:
    base = Path(tempfile.mkdtemp(prefix="snapshotter-demo-"))
    repo, data = base / "repo", base / "data"
    try:
        session = load_session(SESSION)
        build_repo(repo, load_recipe(session["repo"]))
        click.secho(f"# a throwaway repository: {repo}", bold=True)
        click.secho(f"# replaying '{session['name']}' through `snapshotter hook`", bold=True)
        count = replay(session, repo, lambda event: _hook(data, event))
        click.echo(f"{count} hook events sent")
        _run(data, repo, ["list"])
        click.secho(f"# FILES: {LEGEND}", bold=True)
        for args in (
            ["diff", "--stat"],
            ["diff"],
            ["undo"],
            ["list"],
            ["redo"],
            ["show", "3"],
        ):
            _run(data, repo, args)
        if not (repo / "src" / "config.py").exists():
            click.secho(
                "# after redo, src/config.py is deleted again, as the agent left it", bold=True
            )
    finally:
        _stop_hook_server(data)
        if keep:
            click.echo(f"kept {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)


def _stop_hook_server(data: Path) -> None:
    """The demo's data dir is thrown away, so its hook server goes too."""
    import contextlib

    from snapshotter.hooks import client

    path = client.socket_path(data)
    if path is not None and path.exists():
        with contextlib.suppress(OSError):
            client.stop(path)


def _cmd(data: Path) -> list[str]:
    # -P: not the current directory's ``snapshotter/`` (the demo is often run in a
    # clone of this repository) but the one this process runs.
    return [sys.executable, "-P", "-m", "snapshotter", "--data-dir", str(data)]


def _hook(data: Path, event: dict[str, object]) -> None:
    done = subprocess.run(
        [*_cmd(data), "hook"], input=json.dumps(event).encode(), capture_output=True, check=False
    )
    if done.returncode != 0 or done.stderr:
        click.echo(done.stderr.decode(errors="replace"), err=True)


def _run(data: Path, repo: Path, args: list[str]) -> None:
    click.secho(f"\n$ snapshotter {' '.join(args)}", bold=True)
    done = subprocess.run(
        [*_cmd(data), *args, "-C", str(repo)], capture_output=True, text=True, check=False
    )
    click.echo(done.stdout, nl=False)
    if done.stderr:
        click.echo(done.stderr, nl=False, err=True)
