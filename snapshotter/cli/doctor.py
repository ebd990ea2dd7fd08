"""`snapshotter doctor`: is every wired runtime's hook really arriving here? (issue 22.7)

A hook that never fires records nothing and says nothing (Codex skips an
untrusted hook silently; Gemini CLI ignores an untrusted folder's hooks; an
agent may not find `snapshotter` on its PATH). For the worktree of DIR this
says, per runtime: where its hooks are configured, when an event from it
last arrived, and what to check when none did; and the events that arrived
that snapshotter does not know.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from snapshotter.cli.context import Ctx, dir_option, json_option, pass_ctx

if TYPE_CHECKING:
    from pathlib import Path

    from snapshotter.hooks.dialects import Dialect


@click.command()
@dir_option
@json_option
@pass_ctx
def doctor(c: Ctx, directory: str, as_json: bool) -> None:
    """Say, per agent runtime wired here, whether its hook events arrive.

    For each runtime whose hooks are configured for this worktree (its project
    file, or the user's), the file, when an event from it last arrived, and
    what to check when none did; whether `snapshotter` is on this PATH; and
    events that arrived that snapshotter does not know. Exit 0 when every wired
    runtime has sent an event, 1 otherwise.
    """
    import json
    import shutil
    import time

    from snapshotter.cli import output
    from snapshotter.cli.agent_setup.json_config import HINTS, wires
    from snapshotter.cli.setup import project_dir
    from snapshotter.config import stores_dir
    from snapshotter.errors import NothingToDo
    from snapshotter.hooks.builtin import SEEN_PREFIX
    from snapshotter.hooks.dialects import all_dialects

    project = project_dir(directory)
    try:
        store_root: Path | None = c.engine(directory, create=False).store_dir
    except NothingToDo:
        store_root = None
    now = time.time()
    runtimes: list[dict[str, Any]] = []
    for dialect in all_dialects():
        files = [path for path in _configs(dialect, project) if wires(path)]
        last = _seen(store_root, f"{SEEN_PREFIX}{dialect.name}") if store_root else None
        if not files and last is None:
            continue
        problem = None
        if last is None:
            hint = HINTS.get(dialect.name)
            problem = "no event has arrived yet" + (f": {hint}" if hint else "")
        runtimes.append(
            {
                "runtime": dialect.name,
                "title": dialect.title,
                "configured": [str(p) for p in files],
                "last_event": None
                if last is None
                else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(last)),
                "seconds_ago": None if last is None else round(now - last),
                "problem": problem,
            }
        )
    on_path = shutil.which("snapshotter")
    unknown: dict[str, float] = {}
    try:
        found = json.loads((stores_dir(c.data_dir) / "hook-unknown.json").read_bytes())
        unknown = {k: v for k, v in found.items() if isinstance(v, (int, float))}
    except (OSError, ValueError, AttributeError):
        pass
    report = {
        "worktree": str(project),
        "store": None if store_root is None else str(store_root),
        "snapshotter_on_path": on_path,
        "runtimes": runtimes,
        "unknown_events": sorted(unknown),
    }
    if as_json:
        output.emit_json(report)
    else:
        _show(report)
    if any(r["problem"] for r in runtimes) or not on_path:
        raise SystemExit(1)


def _configs(dialect: Dialect, project: Path) -> list[Path]:
    """The runtime's project file and the user's, where it has them."""
    from pathlib import Path

    from snapshotter.cli.agent_setup.json_config import config_path

    found = []
    if dialect.config:
        found.append(config_path(dialect, project))
    if dialect.global_config:
        found.append(config_path(dialect, Path.home(), global_=True))
    return found


def _seen(store_root: Path, name: str) -> float | None:
    try:
        return (store_root / name).stat().st_mtime
    except OSError:
        return None


def _show(report: dict[str, Any]) -> None:
    from datetime import timedelta

    from snapshotter.cli.output import age

    click.echo(f"worktree {report['worktree']}")
    click.echo(f"store    {report['store'] or 'none yet: no event has arrived here'}")
    on_path = report["snapshotter_on_path"]
    click.echo(
        f"PATH     {on_path}"
        if on_path
        else "PATH     `snapshotter` is not on this PATH: "
        "agents started from here cannot run `snapshotter hook`"
    )
    runtimes = report["runtimes"]
    if not runtimes:
        click.echo("no agent runtime is wired here (`snapshotter init NAME` wires one)")
    for r in runtimes:
        where = ", ".join(r["configured"]) or "(not in a file init knows)"
        when = (
            f"last event {age(timedelta(seconds=r['seconds_ago']))}"
            if r["seconds_ago"] is not None
            else r["problem"]
        )
        click.echo(f"{r['title']:<20} {where}\n{'':<20} {when}")
    unknown = report["unknown_events"]
    if unknown:
        click.echo(f"events snapshotter does not know (see hook.log): {', '.join(unknown)}")
