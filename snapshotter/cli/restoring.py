"""Commands that restore: `undo`, `redo`, `reset`, `restore` (all undoable)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import click

from snapshotter.cli.context import (
    Ctx,
    dir_option,
    dry_run_option,
    force_option,
    json_option,
    pass_ctx,
    session_option,
)

verbose_option = click.option(
    "-v", "--verbose", is_flag=True, help="List every file restored or removed (not ten)."
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.checkpoints import Restoration
    from snapshotter.engine import Engine, RestoreOptions


@dataclass(frozen=True)
class Restoring:
    """What every restoring command is given (``restore_options``, SPEC §7), and the
    steps they share: the worktree's engine, the session, the report."""

    c: Ctx
    directory: str
    session_id: str | None
    dry_run: bool
    force: bool
    as_json: bool
    verbose: bool  # every file in the report, not the first ten

    @property
    def how(self) -> RestoreOptions:
        return {"force": self.force, "dry_run": self.dry_run}

    def engine(self) -> Engine:
        return self.c.engine(self.directory, create=False)

    def session(self, engine: Engine, implied: str | None = None) -> str:
        """``--session``'s, else ``implied`` (the session of a checkpoint named), else
        the newest session here."""
        if self.session_id is None and implied is not None:
            engine.close_interrupted(implied)
            return implied
        return self.c.session(engine, self.session_id)

    def plain(self, engine: Engine, op: Literal["undo", "redo"]) -> str:
        """The session a plain undo or redo acts on: ``--session``'s, else the newest
        session's or the user's own checkpoints (session cli), whichever is newer."""
        session = self.session(engine)
        return session if self.session_id else engine.acting_session(session, op)

    def report(self, verb: str, rep: Restoration) -> None:
        from snapshotter.cli import output

        output.report(verb, rep, self.as_json, self.verbose)


def restore_options(fn: Callable[..., None]) -> Callable[..., None]:
    """The options undo, redo, reset and restore share, handed to ``fn`` as one
    ``Restoring`` (its first argument) before the command's own."""

    @functools.wraps(fn)
    def command(
        c: Ctx,
        directory: str,
        session_id: str | None,
        dry_run: bool,
        force: bool,
        as_json: bool,
        verbose: bool,
        **own: object,
    ) -> None:
        listed = verbose or c.verbose
        fn(Restoring(c, directory, session_id, dry_run, force, as_json, listed), **own)

    wrapped: Callable[..., None] = command
    for option in (
        pass_ctx,
        verbose_option,
        json_option,
        force_option,
        dry_run_option,
        session_option,
        dir_option,
    ):
        wrapped = option(wrapped)
    return wrapped


@click.command()
@click.argument("given", nargs=-1, metavar="")
@restore_options
def undo(r: Restoring, given: tuple[str, ...]) -> None:
    """Revert the newest checkpoint (a turn with its tools, or one of yours from
    `snapshotter checkpoint`). Undoable with redo.

    To go back to checkpoint ID: `snapshotter reset ID` reverts every one after
    it; `snapshotter restore ID -- PATH` puts chosen files back as before it.
    """
    if given:
        name = given[0]
        raise click.UsageError(
            f"undo takes no checkpoint: it reverts the newest one; `snapshotter reset {name}` "
            f"reverts every checkpoint after {name}, `snapshotter restore {name} -- PATH` "
            f"puts files back as they were before it"
        )
    engine = r.engine()
    r.report("undid", engine.undo(r.plain(engine, "undo"), **r.how))


@click.command()
@restore_options
def redo(r: Restoring) -> None:
    """Re-apply what the last undo or reset reverted, exactly."""
    engine = r.engine()
    r.report("redid", engine.redo(r.plain(engine, "redo"), **r.how))


@click.command()
@click.argument("checkpoint_id", required=False, metavar="ID")
@click.option(
    "--to",
    "to",
    metavar="MSG|ID",
    help="The checkpoint to go back to: its id, or the message it was given "
    "(`snapshotter checkpoint -m MSG`; the newest with that message).",
)
@click.option("--original", is_flag=True, help="Revert all of the session's checkpoints.")
@restore_options
def reset(r: Restoring, checkpoint_id: str | None, to: str | None, original: bool) -> None:
    """Revert every checkpoint after ID (or --to MSG), or all of them with --original.

    The session is the checkpoint's (as `show ID` finds it), else --session's,
    else the newest here. The checkpoints you recorded yourself with
    `snapshotter checkpoint` (session cli) count beside the agent's: a reset
    goes back to the worktree as `list` shows it at that checkpoint.
    """
    if checkpoint_id is not None and to is not None:
        raise click.UsageError("give a checkpoint ID or --to MSG, not both")
    named = checkpoint_id if checkpoint_id is not None else to
    if (named is None) == (not original):
        raise click.UsageError("give a checkpoint ID, --to MSG or --original (one of them)")
    engine = r.engine()
    anchor = engine.named_checkpoint(named) if named is not None else None
    session = r.session(engine, anchor.session_id if anchor is not None else None)
    keep = anchor.id if anchor is not None else None
    r.report("reset", engine.reset(session, keep, **r.how))


@click.command(name="restore")
@click.argument("checkpoint_id", type=int, metavar="ID")
@click.argument("paths", nargs=-1, required=True, metavar="[--] PATH...")
@click.option("--after", is_flag=True, help="As they were after the checkpoint, not before.")
@restore_options
def restore_cmd(r: Restoring, checkpoint_id: int, paths: tuple[str, ...], after: bool) -> None:
    """Put chosen files back as they were before checkpoint ID (part of an undo).

    PATHs are relative to the current directory (or -C DIR); a directory takes
    the files below it. Like undo: refuses files edited since the checkpoint
    (exit 4, --force overrides), and `snapshotter redo` puts them back.
    """
    engine = r.engine()
    base = os.path.abspath(r.directory)
    rels = [_worktree_path(engine.root, os.path.join(base, p)) for p in paths]
    rep = engine.restore_files(r.session(engine), checkpoint_id, rels, after=after, **r.how)
    r.report("restored", rep)


def _worktree_path(root: Path, path: str) -> str:
    """``path`` as a ``/``-separated path inside the worktree; an error outside it."""
    from snapshotter.errors import BadInput

    rel = os.path.relpath(os.path.realpath(path), root)
    if rel == "." or rel == ".." or rel.startswith(".." + os.sep):
        raise BadInput(f"{path} is not inside the worktree {root}")
    return Path(rel).as_posix()
