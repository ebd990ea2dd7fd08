"""Commands that record: `hook` (one agent event), `capture`, `checkpoint`."""

from __future__ import annotations

import sys

import click

from snapshotter.cli.context import (
    Ctx,
    dir_option,
    json_option,
    max_files_option,
    pass_ctx,
    size_option,
)


@click.command()
@click.option(
    "--arg",
    "args",
    multiple=True,
    metavar="KEY=VALUE",
    help="Builtin argument, e.g. max_new_file_size=4MiB.",
)
@pass_ctx
def hook(c: Ctx, args: tuple[str, ...]) -> None:
    """Handle one agent hook event (JSON on stdin). Always exits 0."""
    from snapshotter.hooks.command import run

    sys.exit(run(getattr(sys.stdin, "buffer", None), c.data_dir_opt, list(args)))  # <&- too


@click.command()
@dir_option
@size_option
@max_files_option
@pass_ctx
def capture(c: Ctx, directory: str, max_size: str | None, max_files: int) -> None:
    """Take a snapshot now and print its tree id."""
    from dataclasses import replace

    from snapshotter.cli import output
    from snapshotter.names import display

    engine = c.engine(directory, max_size=max_size)
    engine.options = replace(engine.options, max_files=max_files)
    output.progress(f"capturing{output.ELLIPSIS}")
    result = engine.capture()
    for skip in result.skipped.values():
        output.error(f"skipped {display(skip.path)}: {skip.reason}")
    click.echo(result.tree)


@click.command(name="checkpoint")
@dir_option
@click.option("-m", "--message", default="", metavar="MSG", help="What this checkpoint is.")
@click.option(
    "--session",
    "session_id",
    default="cli",
    show_default=True,
    metavar="ID",
    help="Session to record it in.",
)
@json_option
@pass_ctx
def checkpoint_cmd(c: Ctx, directory: str, message: str, session_id: str, as_json: bool) -> None:
    """Record what changed since the last snapshot as an undoable checkpoint.

    Run it before and after work you may want to take back; `snapshotter undo`
    then reverts exactly those changes. With -m MSG it is always recorded, a
    save point even when nothing changed: `snapshotter reset --to MSG` goes
    back to this state, `snapshotter diff MSG..` shows what changed since.
    (`capture` only prints a tree id.)
    """
    from snapshotter.cli import output
    from snapshotter.errors import NothingToDo

    engine = c.engine(directory)
    baseline = not engine.has_snapshot()
    cp = engine.checkpoint(message, session_id)
    if cp is None and baseline:
        click.echo(
            "no earlier snapshot here: this one is the baseline; run "
            "`snapshotter checkpoint` again after changes to record them",
            err=True,
        )
        return
    if cp is None:
        raise NothingToDo("nothing changed since the last snapshot")
    if as_json:
        output.emit_json(cp.model_dump(mode="json"))
    else:
        what = output.counts(cp) if cp.files else "save point"
        click.echo(f"checkpoint {cp.id}: {what}  {cp.label}")
