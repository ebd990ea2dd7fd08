"""`snapshotter log`: the operation log, who undid, redid, reset, restored or checkpointed what.

The agent can undo through `snapshotter mcp` (issue 25.4): this is where the
user sees that it did, and which `snapshotter redo` takes it back.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from snapshotter.cli.context import Ctx, dir_option, json_option, pass_ctx, session_option

if TYPE_CHECKING:
    from snapshotter.engine import Operation

_HEADER = (
    f"{'WHEN':<24}  {'BY':<5}  {'OPERATION':<9}  {'CHECKPOINTS':<12}  {'FILES':>5}  REDO WOULD"
)


@click.command(name="log")
@dir_option
@session_option
@click.option("--all", "all_sessions", is_flag=True, help="Every session's operations.")
@json_option
@pass_ctx
def log(c: Ctx, directory: str, session_id: str | None, all_sessions: bool, as_json: bool) -> None:
    """Show who undid, redid, reset, restored or checkpointed what, oldest first.

    BY is `shell` (you), `agent` (through `snapshotter mcp`) or `hook` (a
    runtime's API). REDO WOULD says what `snapshotter redo` would take back
    right after that operation. Newest session by default; --json prints a list
    of {at, op, by, session_id, checkpoints, paths, redo}.
    """
    from snapshotter.cli import output
    from snapshotter.errors import NothingToDo

    if all_sessions and session_id:
        raise click.UsageError("give --session ID or --all, not both")
    try:
        engine = c.engine(directory, create=False)
        session = None if all_sessions else engine.resolve_session(session_id)
        ops = engine.operations(session)
    except NothingToDo:
        ops, session = [], None
    if as_json:
        output.emit_json([op.to_json() for op in ops])
        return
    if not ops:
        click.echo("no undo, redo, reset, restore or checkpoint here yet", err=True)
        return
    click.echo(_HEADER if session is None else f"session {session}\n{_HEADER}")
    now = datetime.now(UTC)
    for op in ops:
        click.echo(_line(op, now))


def _line(op: Operation, now: datetime) -> str:
    from snapshotter.cli.output import age, parse_time

    at = parse_time(op.at)
    local = at.astimezone()
    day = "%H:%M:%S" if local.date() == now.astimezone().date() else "%m-%d %H:%M"
    when = f"{local.strftime(day)} ({age(now - at)})"
    ids = ", ".join(str(i) for i in op.checkpoints) or "-"
    redo = "-"
    if op.redo is not None:
        named = ", ".join(str(i) for i in op.redo["checkpoints"])
        redo = f"reverse the {op.redo['op']}" + (f" of {named}" if named else "")
    return f"{when:<24}  {op.by:<5}  {op.op:<9}  {ids:<12}  {op.paths:>5}  {redo}"
