"""The ``snapshotter`` command: parse, call the core, print. Nothing else.

Exit codes (SPEC §7) come from the exception classes and are mapped here,
in ``main``, and nowhere else.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from snapshotter.engine import Engine


class Ctx:
    def __init__(self, data_dir: str | None, verbose: bool) -> None:
        self.data_dir_opt = data_dir
        self.verbose = verbose

    @property
    def data_dir(self) -> Path:
        from snapshotter.config import data_dir

        return data_dir(self.data_dir_opt)

    def engine(
        self, directory: str, *, create: bool = True, max_size: str | None = None
    ) -> Engine:
        """The worktree's engine; without ``create``, NothingToDo when it has no store."""
        from snapshotter.config import DEFAULT_MAX_NEW_FILE_SIZE, parse_size
        from snapshotter.engine import Engine, open_existing

        limit = parse_size(max_size) if max_size else DEFAULT_MAX_NEW_FILE_SIZE
        if not create:
            return open_existing(directory, data_dir_path=self.data_dir, max_new_file_size=limit)
        engine = Engine.open(directory, data_dir_path=self.data_dir, max_new_file_size=limit)
        assert engine is not None  # create=True always opens one
        return engine

    def session(self, engine: Engine, explicit: str | None) -> str:
        from snapshotter.history import resolve_session

        return resolve_session(engine.store, explicit)


pass_ctx = click.make_pass_decorator(Ctx)
dir_option = click.option("-C", "directory", default=".", metavar="DIR",
                          help="Run as if started in DIR (default: current directory).")
session_option = click.option("--session", "session_id", metavar="ID",
                              help="Session to act on (default: the newest one here).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
dry_run_option = click.option("--dry-run", is_flag=True,
                              help="Show what would change; change nothing.")
force_option = click.option("--force", is_flag=True,
                            help="Overwrite files changed since the checkpoint (redo undoes this).")
size_option = click.option("--max-new-file-size", "max_size", metavar="SIZE",
                           help="Skip new untracked files larger than SIZE (default 2MiB).")


def restore_options(fn: Callable[..., None]) -> Callable[..., None]:
    """The options undo, redo and reset share (SPEC §7)."""
    for option in (pass_ctx, json_option, force_option, dry_run_option, session_option,
                   dir_option):
        fn = option(fn)
    return fn


max_files_option = click.option("--max-files", type=int, default=200_000, show_default=True,
                                help="Refuse worktrees with more files than this.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--data-dir", metavar="DIR", help="Where stores live (default: "
              "$SNAPSHOTTER_DATA_DIR, else the user data directory).")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for errors.")
@click.version_option(package_name="snapshotter")
@click.pass_context
def cli(ctx: click.Context, data_dir: str | None, verbose: bool) -> None:
    """Snapshots and undo for a git worktree an AI agent edits.

    Agents record checkpoints through `snapshotter hook`; you list, inspect,
    undo, redo and reset them. Nothing is written to the repository's .git.
    """
    ctx.obj = Ctx(data_dir, verbose)


@cli.command()
@click.option("--arg", "args", multiple=True, metavar="KEY=VALUE",
              help="Builtin argument, e.g. max_new_file_size=4MiB.")
@pass_ctx
def hook(c: Ctx, args: tuple[str, ...]) -> None:
    """Handle one agent hook event (JSON on stdin). Always exits 0."""
    from snapshotter.hooks.command import run

    sys.exit(run(sys.stdin.buffer, c.data_dir_opt, list(args)))


@cli.command()
@dir_option
@size_option
@max_files_option
@pass_ctx
def capture(c: Ctx, directory: str, max_size: str | None, max_files: int) -> None:
    """Take a snapshot now and print its tree id."""
    from snapshotter import output

    engine = c.engine(directory, max_size=max_size)
    engine.max_files = max_files
    output.progress("capturing…")
    result = engine.capture()
    for skip in result.skipped.values():
        output.error(f"skipped {skip.path}: {skip.reason}")
    click.echo(result.tree)


@cli.command("list")
@dir_option
@session_option
@click.option("--all", "all_sessions", is_flag=True, help="List every session's checkpoints.")
@json_option
@pass_ctx
def list_(
    c: Ctx, directory: str, session_id: str | None, all_sessions: bool, as_json: bool
) -> None:
    """List checkpoints, newest session by default; tools indented under turns."""
    from snapshotter import output
    from snapshotter.errors import NothingToDo
    from snapshotter.history import list_checkpoints

    if all_sessions and session_id:
        raise click.UsageError("give --session ID or --all, not both")
    try:
        engine = c.engine(directory, create=False)
        session = None if all_sessions else c.session(engine, session_id)
        cps = list_checkpoints(engine.store, session)
    except NothingToDo:
        cps = []
    if as_json:
        output.emit_json([cp.model_dump() for cp in cps])
    else:
        output.checkpoints(cps, show_session=all_sessions)


def _checkpoint(c: Ctx, directory: str, checkpoint_id: int | None) -> tuple[Engine, Any]:
    from snapshotter.errors import NotFound, NothingToDo
    from snapshotter.history import list_checkpoints

    try:
        engine = c.engine(directory, create=False)
    except NothingToDo:
        if checkpoint_id is None:
            raise
        # An id the user named that does not exist is an error (1), not "nothing to do".
        raise NotFound(f"no checkpoint {checkpoint_id} in this worktree "
                       "(no snapshots recorded here yet)") from None
    cps = list_checkpoints(engine.store, None)
    if checkpoint_id is None:
        session = c.session(engine, None)
        mine = [cp for cp in cps if cp.session_id == session and cp.parent is None]
        if not mine:
            raise NothingToDo("no checkpoints yet")
        return engine, mine[-1]
    for cp in cps:
        if cp.id == checkpoint_id:
            return engine, cp
    raise NotFound(f"no checkpoint {checkpoint_id} in this worktree (see `snapshotter list --all`)")


@cli.command()
@click.argument("checkpoint_id", type=int, metavar="ID")
@dir_option
@json_option
@pass_ctx
def show(c: Ctx, checkpoint_id: int, directory: str, as_json: bool) -> None:
    """Show one checkpoint's files, with their status and any skipped files."""
    from snapshotter import output

    _, cp = _checkpoint(c, directory, checkpoint_id)
    if as_json:
        output.emit_json(cp.model_dump())
    else:
        output.checkpoint_detail(cp)


@cli.command()
@click.argument("checkpoint_id", type=int, required=False, metavar="[ID]")
@dir_option
@click.option("--stat", is_flag=True, help="Summary of changed files only.")
@pass_ctx
def diff(c: Ctx, checkpoint_id: int | None, directory: str, stat: bool) -> None:
    """Unified diff of a checkpoint, before → after (default: the newest)."""
    engine, cp = _checkpoint(c, directory, checkpoint_id)
    paths = {f.path for f in cp.files}
    text = (engine.diff_stat if stat else engine.diff)(cp.before, cp.after, paths)
    click.echo(text, nl=False)


@cli.command()
@restore_options
def undo(c: Ctx, directory: str, session_id: str | None, dry_run: bool, force: bool,
         as_json: bool) -> None:
    """Revert the newest checkpoint (a turn with its tools). Undoable with redo."""
    from snapshotter import history, output

    engine = c.engine(directory, create=False)
    rep = history.undo_last(engine, c.session(engine, session_id), force=force, dry_run=dry_run)
    output.report("undid", rep, as_json)


@cli.command()
@restore_options
def redo(c: Ctx, directory: str, session_id: str | None, dry_run: bool, force: bool,
         as_json: bool) -> None:
    """Re-apply what the last undo or reset reverted, exactly."""
    from snapshotter import history, output

    engine = c.engine(directory, create=False)
    rep = history.redo(engine, c.session(engine, session_id), force=force, dry_run=dry_run)
    output.report("redid", rep, as_json)


@cli.command()
@click.argument("checkpoint_id", type=int, required=False, metavar="ID")
@click.option("--original", is_flag=True, help="Revert all of the session's checkpoints.")
@restore_options
def reset(c: Ctx, checkpoint_id: int | None, original: bool, directory: str,
          session_id: str | None, dry_run: bool, force: bool, as_json: bool) -> None:
    """Revert every checkpoint after ID, or all of them with --original."""
    from snapshotter import history, output

    if (checkpoint_id is None) == (not original):
        raise click.UsageError("give a checkpoint ID or --original (not both)")
    engine = c.engine(directory, create=False)
    rep = history.reset(engine, c.session(engine, session_id), checkpoint_id, force=force,
                        dry_run=dry_run)
    output.report("reset", rep, as_json)


@cli.command()
@dir_option
@click.option("--all", "all_stores", is_flag=True, help="Every store in the data directory.")
@click.option("--max-age-days", type=float, default=30.0, show_default=True,
              help="Drop sessions idle for longer than this.")
@click.option("--max-checkpoints", type=int, default=1000, show_default=True,
              help="Keep at most this many checkpoints per session (oldest go first).")
@click.option("--max-size", default="1GiB", show_default=True, metavar="SIZE",
              help="Size budget per store; oldest sessions are dropped to meet it.")
@dry_run_option
@pass_ctx
def gc(c: Ctx, directory: str, all_stores: bool, max_age_days: float, max_checkpoints: int,
       max_size: str, dry_run: bool) -> None:
    """Compact the store: apply retention, pack what live checkpoints need, drop the rest."""
    from snapshotter import output
    from snapshotter.config import parse_size
    from snapshotter.engine import open_stores
    from snapshotter.gc import collect_store
    from snapshotter.retention import Policy

    policy = Policy(max_age_days, max_checkpoints, parse_size(max_size))
    stores = open_stores(c.data_dir) if all_stores else [c.engine(directory, create=False).store]
    for store in stores:
        output.progress(f"gc {store.root}…")
        output.gc_report(store.worktree.root, collect_store(store, dry_run=dry_run, policy=policy))


@cli.command()
@click.option("--keep", is_flag=True, help="Leave the throwaway repository in place.")
def demo(keep: bool) -> None:
    """Play a short agent session on a throwaway repository, then undo and redo it."""
    from snapshotter.demo import run_demo

    run_demo(keep=keep)


def main(argv: list[str] | None = None) -> None:
    """Entry point: the one place errors become exit codes (SPEC §7)."""
    args = sys.argv[1:] if argv is None else argv
    # Global options come before the command, so only look there.
    command_at = next((i for i, a in enumerate(args) if a in cli.commands), len(args))
    verbose = bool({"-v", "--verbose"} & set(args[:command_at]))
    try:
        cli.main(args=args, prog_name="snapshotter", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "snapshotter"
        click.echo(f"snapshotter: {exc.format_message()} (see `{where} --help`)", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(f"snapshotter: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except Exception as exc:
        from snapshotter.errors import SnapshotterError

        if verbose:
            import traceback

            traceback.print_exc()
        from snapshotter import output

        if isinstance(exc, SnapshotterError):
            output.error(str(exc))
            sys.exit(exc.exit_code)
        output.error(f"internal error: {type(exc).__name__}: {exc} (rerun with --verbose)")
        sys.exit(1)
    sys.exit(0)
