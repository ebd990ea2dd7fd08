"""Commands that look: `list`, `show`, `diff`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from snapshotter.cli.context import (
    Ctx,
    dir_option,
    json_option,
    pass_ctx,
    session_option,
)

color_option = click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colour the output (auto: only on a terminal, not with NO_COLOR set).",
)

if TYPE_CHECKING:
    from snapshotter.checkpoints import Record
    from snapshotter.cli.terminal import ColorChoice
    from snapshotter.engine import Engine


@click.command("list")
@dir_option
@session_option
@click.option("--all", "all_sessions", is_flag=True, help="List every session's checkpoints.")
@json_option
@color_option
@pass_ctx
def list_(
    c: Ctx,
    directory: str,
    session_id: str | None,
    all_sessions: bool,
    as_json: bool,
    color: ColorChoice,
) -> None:
    """List checkpoints by id, newest session by default; each tool marked ├ above its turn.

    Your own checkpoints (`snapshotter checkpoint`, session cli) are listed
    beside the session's, as KIND mark. FILES counts what each one changed:
    +added ~modified -deleted files. WHAT widens to the terminal's width.
    """
    from snapshotter.cli import output
    from snapshotter.config import MANUAL_SESSION
    from snapshotter.errors import NothingToDo, WorktreeMoved

    if all_sessions and session_id:
        raise click.UsageError("give --session ID or --all, not both")
    try:
        engine = c.engine(directory, create=False)
        session = None if all_sessions else c.session(engine, session_id)
        everyone = engine.records()
    except NothingToDo as exc:
        everyone, session = [], None
        if isinstance(exc, WorktreeMoved):
            output.error(str(exc))  # stdout keeps the (empty) list; the way back on stderr
        else:  # no event ever arrived here: a runtime's hooks may be wired but silent
            from snapshotter.cli.agent_setup.json_config import silent_wiring
            from snapshotter.cli.setup import project_dir

            for note in silent_wiring(project_dir(directory)):
                output.error(note)
    # The user's own checkpoints (`checkpoint`) show beside the agent's (#26.1).
    shown = {session} if session_id else {session, MANUAL_SESSION}
    cps = [cp for cp in everyone if session is None or cp.session_id in shown]
    if as_json:
        output.emit_json([cp.to_model().model_dump(mode="json") for cp in cps])
        return
    others = len({cp.session_id for cp in everyone} - shown)
    from snapshotter.cli import terminal

    output.checkpoints(
        cps,
        show_session=all_sessions,
        session=session,
        others=others,
        columns=terminal.columns(),
        color=terminal.use_color(color),
    )


def _checkpoint(c: Ctx, directory: str, named: str | None) -> tuple[Engine, Record]:
    """The worktree's engine and the checkpoint named, by id or message (default: the
    session's newest)."""
    from snapshotter.errors import NotFound, NothingToDo

    try:
        engine = c.engine(directory, create=False)
    except NothingToDo:
        if named is None:
            raise
        # An id the user named that does not exist is an error (1), not "nothing to do".
        raise NotFound(
            f"no checkpoint {named} in this worktree (no snapshots recorded here yet)"
        ) from None
    return engine, engine.record(None) if named is None else engine.named_record(named)


@click.command()
@click.argument("checkpoint_id", metavar="ID")
@dir_option
@json_option
@pass_ctx
def show(c: Ctx, checkpoint_id: str, directory: str, as_json: bool) -> None:
    """Show one checkpoint's files, with their status and any skipped files.

    ID is its number, or the message it was given (`checkpoint -m MSG`).
    """
    from snapshotter.cli import output

    _, cp = _checkpoint(c, directory, checkpoint_id)
    if as_json:
        output.emit_json(cp.to_model().model_dump(mode="json"))
    else:
        output.checkpoint_detail(cp)


def _diff_target(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> tuple[str, str | None, bool] | None:
    """``A`` (before → after), ``A..`` (before A → the worktree now) or ``A..B``
    (before A → after B), as (A, B, to_now); each an id or a checkpoint's message."""
    if value is None:
        return None
    first, dots, last = value.partition("..")
    if not first:
        raise click.BadParameter(f"{value!r} is not a checkpoint: give ID, ID.. or ID..ID")
    return first, last or None, bool(dots) and not last


@click.command()
@click.argument("target", required=False, metavar="[ID | ID.. | ID..ID]", callback=_diff_target)
@dir_option
@click.option(
    "--to-now",
    is_flag=True,
    help="From the checkpoint's before to the worktree now (same as ID..).",
)
@click.option("--stat", is_flag=True, help="One line per file, as git diff --stat.")
@json_option
@color_option
@click.option("--no-pager", is_flag=True, help="Never page the output.")
@pass_ctx
def diff(
    c: Ctx,
    target: tuple[str, str | None, bool] | None,
    directory: str,
    to_now: bool,
    stat: bool,
    as_json: bool,
    color: ColorChoice,
    no_pager: bool,
) -> None:
    """Show what checkpoint ID changed (default: the newest one), as a unified diff.

    Without --to-now: the checkpoint's own files, before → after it.

    A..B: from before checkpoint A to after checkpoint B, every file that
    differs (what A, B and all between them did). An ID may also be the
    message a checkpoint was given (`snapshotter checkpoint -m before`;
    `diff before..` shows everything since).

    With --to-now (or ID..): from before the checkpoint to the worktree as it
    is now, later edits by you included. A fresh capture is taken and every
    file that differs is shown, not only the checkpoint's own files, within
    the directory its session works in (else -C DIR's). New files too large
    to capture are named on stderr, not diffed.

    --stat lays out columns as git does: COLUMNS, else the terminal's width,
    else 80; binary files show their sizes (Bin OLD -> NEW bytes).

    --json prints {checkpoint, from, to, to_now, files, skipped}: each file
    with path, status (added/modified/deleted), binary, added and removed
    line counts (null for a binary file), old_size and new_size in bytes
    (null where the file does not exist).

    On a terminal the output is coloured as git colours it and goes through
    a pager: $SNAPSHOTTER_PAGER, else $PAGER, else "less -FRX" (LESS=FRX is
    set when LESS is unset); "" or "cat" means none. Not on a terminal:
    no colour (unless --color=always) and no pager.
    """
    from snapshotter.cli import diff_render, output, terminal
    from snapshotter.names import display, encode

    first, last, dots = target if target is not None else (None, None, False)
    engine, cp = _checkpoint(c, directory, first)
    until = engine.named_record(last) if last is not None else None
    if until is not None and until.id < cp.id:
        raise click.BadParameter(f"{first}..{last}: checkpoint {until.id} comes before {cp.id}")
    shown = engine.checkpoint_diff(cp, to_now=to_now or dots, until=until)
    if as_json:
        output.emit_json(
            {
                "checkpoint": cp.id,
                "from": cp.before,
                "to": shown.to,
                "to_now": shown.to_now,
                "files": [diff_render.file_json(d) for d in shown.files],
                "skipped": [{"path": encode(p), "reason": r} for p, r in shown.skipped],
            }
        )
        return
    for path, reason in shown.skipped:
        output.error(f"not in this diff: {display(path)} (skipped: {reason})")
    hue = terminal.use_color(color)
    data = (
        diff_render.stat_text(shown.files, terminal.columns(), hue)
        if stat
        else diff_render.patch_text(shown.files, hue)
    )
    terminal.emit(data, page=not no_pager)
