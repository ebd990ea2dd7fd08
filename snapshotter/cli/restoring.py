"""Commands that restore: `undo`, `redo`, `reset`, `restore` (all undoable)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from snapshotter.cli.context import (
    Ctx,
    restore_options,
)


@click.command()
@restore_options
def undo(
    c: Ctx, directory: str, session_id: str | None, dry_run: bool, force: bool, as_json: bool
) -> None:
    """Revert the newest checkpoint (a turn with its tools). Undoable with redo."""
    from snapshotter.cli import output

    engine = c.engine(directory, create=False)
    rep = engine.undo(c.session(engine, session_id), force=force, dry_run=dry_run)
    output.report("undid", rep, as_json)


@click.command()
@restore_options
def redo(
    c: Ctx, directory: str, session_id: str | None, dry_run: bool, force: bool, as_json: bool
) -> None:
    """Re-apply what the last undo or reset reverted, exactly."""
    from snapshotter.cli import output

    engine = c.engine(directory, create=False)
    rep = engine.redo(c.session(engine, session_id), force=force, dry_run=dry_run)
    output.report("redid", rep, as_json)


@click.command()
@click.argument("checkpoint_id", type=int, required=False, metavar="ID")
@click.option("--original", is_flag=True, help="Revert all of the session's checkpoints.")
@restore_options
def reset(
    c: Ctx,
    checkpoint_id: int | None,
    original: bool,
    directory: str,
    session_id: str | None,
    dry_run: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Revert every checkpoint after ID, or all of them with --original."""
    from snapshotter.cli import output

    if (checkpoint_id is None) == (not original):
        raise click.UsageError("give a checkpoint ID or --original (not both)")
    engine = c.engine(directory, create=False)
    rep = engine.reset(c.session(engine, session_id), checkpoint_id, force=force, dry_run=dry_run)
    output.report("reset", rep, as_json)


@click.command(name="restore")
@click.argument("checkpoint_id", type=int, metavar="ID")
@click.argument("paths", nargs=-1, required=True, metavar="[--] PATH...")
@click.option("--after", is_flag=True, help="As they were after the checkpoint, not before.")
@restore_options
def restore_cmd(
    c: Ctx,
    checkpoint_id: int,
    paths: tuple[str, ...],
    after: bool,
    directory: str,
    session_id: str | None,
    dry_run: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Put chosen files back as they were before checkpoint ID (part of an undo).

    PATHs are relative to the current directory (or -C DIR); a directory takes
    the files below it. Like undo: refuses files edited since the checkpoint
    (exit 4, --force overrides), and `snapshotter redo` puts them back.
    """
    from snapshotter.cli import output

    engine = c.engine(directory, create=False)
    base = os.path.abspath(directory)
    rels = [_worktree_path(engine.root, os.path.join(base, p)) for p in paths]
    rep = engine.restore_files(
        c.session(engine, session_id),
        checkpoint_id,
        rels,
        after=after,
        force=force,
        dry_run=dry_run,
    )
    output.report("restored", rep, as_json)


def _worktree_path(root: Path, path: str) -> str:
    """``path`` as a ``/``-separated path inside the worktree; an error outside it."""
    from snapshotter.errors import BadInput

    rel = os.path.relpath(os.path.realpath(path), root)
    if rel == "." or rel == ".." or rel.startswith(".." + os.sep):
        raise BadInput(f"{path} is not inside the worktree {root}")
    return Path(rel).as_posix()
