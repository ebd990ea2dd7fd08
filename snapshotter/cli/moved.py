"""Commands for a worktree that was renamed or lost its ``.git``: `adopt`, `recover`."""

from __future__ import annotations

import click

from snapshotter.cli.context import Ctx, dir_option, dry_run_option, json_option, pass_ctx


@click.command()
@click.argument("old_path", required=False, metavar="[OLD_PATH]")
@dir_option
@pass_ctx
def adopt(c: Ctx, old_path: str | None, directory: str) -> None:
    """Attach the history of a worktree that was moved (renamed) to its new place.

    Run it in the moved worktree (or -C DIR). Without OLD_PATH it takes the one
    store whose worktree no longer exists and whose newest snapshot looks like
    this worktree; OLD_PATH names the old place instead. The store is moved
    to this worktree's key, under its lock, and from then on list, undo, redo
    and reset here see the whole history. Refused (exit 1) when this worktree
    already has checkpoints of its own; a store here without any is replaced.
    """
    from snapshotter.engine.moved import adopt as adopt_history

    old, found = adopt_history(c.data_dir, directory, old_path)
    click.echo(
        f"adopted the history of {old}: {found.checkpoints} checkpoint(s) "
        f"now belong to {found.worktree}"
    )


@click.command()
@click.argument("checkpoint_id", type=int, required=False, metavar="[ID]")
@click.option("--before", is_flag=True, help="The files as they were before checkpoint ID.")
@dir_option
@dry_run_option
@json_option
@pass_ctx
def recover(
    c: Ctx, checkpoint_id: int | None, before: bool, directory: str, dry_run: bool, as_json: bool
) -> None:
    """Write back the files of a worktree whose .git is gone, from snapshotter's store.

    For a directory that is no longer a git worktree (`rm -rf .git`), where
    undo cannot work: the files of its newest snapshot (or of checkpoint ID,
    as after it; --before: as before it) are written back into the whole
    worktree the store records, found by this directory's path (or -C DIR).
    Files only: nothing is removed, no .git is created, nothing is written
    outside the worktree, and a file whose current bytes the store does not
    hold is left alone (listed as kept). Run `git init` or restore your .git
    to record and undo again.
    """
    from snapshotter.cli import output
    from snapshotter.engine.moved import recover as recover_files

    done = recover_files(c.data_dir, directory, checkpoint_id, before=before, dry_run=dry_run)
    output.recover_report(done, dry_run, as_json)
