"""Commands that restore: `undo`, `redo`, `reset`, `restore` (all undoable)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.engine import Engine, RestoreOptions
    from snapshotter.models import RestoreReport


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

    @property
    def how(self) -> RestoreOptions:
        return {"force": self.force, "dry_run": self.dry_run}

    def engine(self) -> Engine:
        return self.c.engine(self.directory, create=False)

    def session(self, engine: Engine) -> str:
        return self.c.session(engine, self.session_id)

    def report(self, verb: str, rep: RestoreReport) -> None:
        from snapshotter.cli import output

        output.report(verb, rep, self.as_json)

    def run(self, verb: str, act: Callable[[Engine, str], RestoreReport]) -> None:
        """``act`` on the worktree's engine and the session, reported as ``verb`` did it."""
        engine = self.engine()
        self.report(verb, act(engine, self.session(engine)))


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
        **own: object,
    ) -> None:
        fn(Restoring(c, directory, session_id, dry_run, force, as_json), **own)

    wrapped: Callable[..., None] = command
    for option in (pass_ctx, json_option, force_option, dry_run_option, session_option, dir_option):
        wrapped = option(wrapped)
    return wrapped


@click.command()
@restore_options
def undo(r: Restoring) -> None:
    """Revert the newest checkpoint (a turn with its tools). Undoable with redo."""
    r.run("undid", lambda engine, session: engine.undo(session, **r.how))


@click.command()
@restore_options
def redo(r: Restoring) -> None:
    """Re-apply what the last undo or reset reverted, exactly."""
    r.run("redid", lambda engine, session: engine.redo(session, **r.how))


@click.command()
@click.argument("checkpoint_id", type=int, required=False, metavar="ID")
@click.option("--original", is_flag=True, help="Revert all of the session's checkpoints.")
@restore_options
def reset(r: Restoring, checkpoint_id: int | None, original: bool) -> None:
    """Revert every checkpoint after ID, or all of them with --original."""
    if (checkpoint_id is None) == (not original):
        raise click.UsageError("give a checkpoint ID or --original (not both)")
    r.run("reset", lambda engine, session: engine.reset(session, checkpoint_id, **r.how))


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
