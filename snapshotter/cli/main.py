"""The ``snapshotter`` command: parse, call the core, print. Nothing else.

Exit codes (SPEC §7) come from the exception classes and are mapped here,
in ``main``, and nowhere else.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

import click

if TYPE_CHECKING:
    from snapshotter.engine import Engine
    from snapshotter.store.workspace import Workspace


class Ctx:
    def __init__(self, data_dir: str | None, verbose: bool) -> None:
        self.data_dir_opt = data_dir
        self.verbose = verbose

    @property
    def data_dir(self) -> Path:
        from snapshotter.config import data_dir
        from snapshotter.errors import BadInput

        found = data_dir(self.data_dir_opt)
        if found.exists() and not found.is_dir():
            raise BadInput(f"the data directory {found} is a file; name a directory "
                           "(--data-dir or $SNAPSHOTTER_DATA_DIR)")
        return found

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
        from snapshotter.history.undo import resolve_session

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


max_files_option = click.option(
    "--max-files", type=int, default=None, metavar="N",
    help="Refuse worktrees with more files than N. Without it there is no cap, but a home "
         "directory, or far more untracked files than tracked ones, is refused.")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--data-dir", metavar="DIR", help="Where stores live (default: "
              "$SNAPSHOTTER_DATA_DIR, else the user data directory).")
@click.option("-C", "start_dir", metavar="DIR",
              type=click.Path(exists=True, file_okay=False),
              help="Run as if started in DIR (like git -C; before the command).")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for errors.")
@click.version_option(package_name="snapshotter")
@click.pass_context
def cli(ctx: click.Context, data_dir: str | None, start_dir: str | None, verbose: bool) -> None:
    """Snapshots and undo for a git worktree an AI agent edits.

    Agents record checkpoints through `snapshotter hook`; you list, inspect,
    undo, redo and reset them. Nothing is written to the repository's .git.
    """
    if data_dir:
        data_dir = os.path.abspath(os.path.expanduser(data_dir))  # before any -C
    if start_dir:
        os.chdir(start_dir)  # as git does: every relative path after it starts there
    ctx.obj = Ctx(data_dir, verbose)


@cli.command()
@click.option("--arg", "args", multiple=True, metavar="KEY=VALUE",
              help="Builtin argument, e.g. max_new_file_size=4MiB.")
@pass_ctx
def hook(c: Ctx, args: tuple[str, ...]) -> None:
    """Handle one agent hook event (JSON on stdin). Always exits 0."""
    from snapshotter.hooks.command import run

    sys.exit(run(getattr(sys.stdin, "buffer", None), c.data_dir_opt, list(args)))  # <&- too


@cli.command()
@dir_option
@size_option
@max_files_option
@pass_ctx
def capture(c: Ctx, directory: str, max_size: str | None, max_files: int) -> None:
    """Take a snapshot now and print its tree id."""
    from snapshotter.cli import output
    from snapshotter.names import display

    engine = c.engine(directory, max_size=max_size)
    engine.max_files = max_files
    output.progress(f"capturing{output.ELLIPSIS}")
    result = engine.capture()
    for skip in result.skipped.values():
        output.error(f"skipped {display(skip.path)}: {skip.reason}")
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
    from snapshotter.cli import output
    from snapshotter.errors import NothingToDo
    from snapshotter.history.undo import list_checkpoints

    if all_sessions and session_id:
        raise click.UsageError("give --session ID or --all, not both")
    try:
        engine = c.engine(directory, create=False)
        everyone = list_checkpoints(engine.store, None)
        session = None if all_sessions else c.session(engine, session_id)
    except NothingToDo:
        everyone, session = [], None
    cps = [cp for cp in everyone if session is None or cp.session_id == session]
    if as_json:
        output.emit_json([cp.model_dump(mode="json") for cp in cps])
        return
    others = len({cp.session_id for cp in everyone} - {session})
    output.checkpoints(cps, show_session=all_sessions, session=session, others=others)


def _checkpoint(c: Ctx, directory: str, checkpoint_id: int | None) -> tuple[Workspace, Any]:
    from snapshotter.errors import NotFound, NothingToDo
    from snapshotter.history.undo import list_checkpoints

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
    from snapshotter.cli import output

    _, cp = _checkpoint(c, directory, checkpoint_id)
    if as_json:
        output.emit_json(cp.model_dump(mode="json"))
    else:
        output.checkpoint_detail(cp)


def _diff_target(_ctx: click.Context, _param: click.Parameter,
                 value: str | None) -> tuple[int, bool] | None:
    """``ID`` (before → after) or ``ID..`` (before → the worktree now), as (id, to_now)."""
    if value is None:
        return None
    to_now = value.endswith("..")
    number = value[:-2] if to_now else value
    if not (number.isascii() and number.isdigit()):
        raise click.BadParameter(f"{value!r} is not a checkpoint: give ID or ID..")
    return int(number), to_now


@cli.command()
@click.argument("target", required=False, metavar="[ID | ID..]", callback=_diff_target)
@dir_option
@click.option("--to-now", is_flag=True,
              help="From the checkpoint's before to the worktree now (same as ID..).")
@click.option("--stat", is_flag=True, help="One line per file, as git diff --stat.")
@json_option
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto",
              show_default=True, help="Colour the output (auto: only on a terminal, "
              "not with NO_COLOR set).")
@click.option("--no-pager", is_flag=True, help="Never page the output.")
@pass_ctx
def diff(c: Ctx, target: tuple[int, bool] | None, directory: str, to_now: bool, stat: bool,
         as_json: bool, color: Literal["auto", "always", "never"], no_pager: bool) -> None:
    """Show what checkpoint ID changed (default: the newest one), as a unified diff.

    Without --to-now: the checkpoint's own files, before → after it.

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
    from snapshotter.cli import output, terminal
    from snapshotter.names import display, encode
    from snapshotter.store import changes

    checkpoint_id, dots = target if target is not None else (None, False)
    engine, cp = _checkpoint(c, directory, checkpoint_id)
    to, keep, skipped = _diff_end(c, engine, cp, to_now or dots)
    diffs = changes.file_diffs(engine.store, cp.before, to, keep)
    if as_json:
        output.emit_json({"checkpoint": cp.id, "from": cp.before, "to": to,
                          "to_now": to_now or dots, "files": [d.as_json() for d in diffs],
                          "skipped": [{"path": encode(p), "reason": r} for p, r in skipped]})
        return
    for path, reason in skipped:
        output.error(f"not in this diff: {display(path)} (skipped: {reason})")
    hue = terminal.use_color(color)
    data = (changes.stat_text(diffs, terminal.columns(), hue) if stat
            else changes.patch_text(diffs, hue))
    terminal.emit(data, page=not no_pager)


def _diff_end(c: Ctx, engine: Workspace, cp: Any, to_now: bool
              ) -> tuple[str, Callable[[str], bool], list[tuple[str, str]]]:
    """The tree a diff of ``cp`` ends at, the paths it shows, and (path, reason) of the
    files a fresh capture left out: the checkpoint's own files up to its ``after``,
    or, to now, everything in its session's directory."""
    if not to_now:
        return cp.after, {f.path for f in cp.files}.__contains__, []
    scoped = _session_scope(c, engine, cp.session_id)
    now = scoped.capture()
    skipped = sorted((s.path, s.reason) for s in now.skipped.values() if scoped.in_scope(s.path))
    return now.tree, scoped.in_scope, skipped


def _session_scope(c: Ctx, engine: Workspace, session_id: str) -> Workspace:
    """The engine over the directory the checkpoint's session works in (SPEC §3).

    That is where its checkpoints were recorded; with no record of it (or
    another worktree), -C DIR's scope.
    """
    from snapshotter.errors import NotAWorktree
    from snapshotter.git.worktree import find_worktree
    from snapshotter.history import sessions as session_scope

    kept = session_scope.kept_dir(c.data_dir, session_id)
    if kept is None:
        return engine
    try:
        worktree = find_worktree(kept)
    except NotAWorktree:
        return engine
    return engine.with_scope(worktree.scope) if worktree.root == engine.root else engine


@cli.command()
@restore_options
def undo(c: Ctx, directory: str, session_id: str | None, dry_run: bool, force: bool,
         as_json: bool) -> None:
    """Revert the newest checkpoint (a turn with its tools). Undoable with redo."""
    from snapshotter.cli import output
    from snapshotter.history import undo as history

    engine = c.engine(directory, create=False)
    rep = history.undo_last(engine, c.session(engine, session_id), force=force, dry_run=dry_run)
    output.report("undid", rep, as_json)


@cli.command()
@restore_options
def redo(c: Ctx, directory: str, session_id: str | None, dry_run: bool, force: bool,
         as_json: bool) -> None:
    """Re-apply what the last undo or reset reverted, exactly."""
    from snapshotter.cli import output
    from snapshotter.history import undo as history

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
    from snapshotter.cli import output
    from snapshotter.history import undo as history

    if (checkpoint_id is None) == (not original):
        raise click.UsageError("give a checkpoint ID or --original (not both)")
    engine = c.engine(directory, create=False)
    rep = history.reset(engine, c.session(engine, session_id), checkpoint_id, force=force,
                        dry_run=dry_run)
    output.report("reset", rep, as_json)


@cli.command(name="checkpoint")
@dir_option
@click.option("-m", "--message", default="", metavar="MSG", help="What this checkpoint is.")
@click.option("--session", "session_id", default="cli", show_default=True, metavar="ID",
              help="Session to record it in.")
@json_option
@pass_ctx
def checkpoint_cmd(c: Ctx, directory: str, message: str, session_id: str, as_json: bool) -> None:
    """Record what changed since the last snapshot as an undoable checkpoint.

    Run it before and after work you may want to take back; `snapshotter undo`
    then reverts exactly those changes. (`capture` only prints a tree id.)
    """
    from snapshotter.cli import output
    from snapshotter.errors import NothingToDo
    from snapshotter.history.recorder import Recorder

    engine = c.engine(directory)
    baseline = engine.store.last_tree() is None
    cp = Recorder(engine, session_id).checkpoint(message)
    if cp is None and baseline:
        click.echo("no earlier snapshot here: this one is the baseline; run "
                   "`snapshotter checkpoint` again after changes to record them", err=True)
        return
    if cp is None:
        raise NothingToDo("nothing changed since the last snapshot")
    if as_json:
        output.emit_json(cp.model_dump(mode="json"))
    else:
        click.echo(f"checkpoint {cp.id}: {output.counts(cp)}  {cp.label}")


@cli.command(name="restore")
@click.argument("checkpoint_id", type=int, metavar="ID")
@click.argument("paths", nargs=-1, required=True, metavar="[--] PATH...")
@click.option("--after", is_flag=True, help="As they were after the checkpoint, not before.")
@restore_options
def restore_cmd(c: Ctx, checkpoint_id: int, paths: tuple[str, ...], after: bool, directory: str,
                session_id: str | None, dry_run: bool, force: bool, as_json: bool) -> None:
    """Put chosen files back as they were before checkpoint ID (part of an undo).

    PATHs are relative to the current directory (or -C DIR); a directory takes
    the files below it. Like undo: refuses files edited since the checkpoint
    (exit 4, --force overrides), and `snapshotter redo` puts them back.
    """
    from snapshotter.cli import output
    from snapshotter.history import undo as history

    engine = c.engine(directory, create=False)
    base = os.path.abspath(directory)
    rels = [_worktree_path(engine.root, os.path.join(base, p)) for p in paths]
    rep = history.restore_files(engine, c.session(engine, session_id), checkpoint_id, rels,
                                after=after, force=force, dry_run=dry_run)
    output.report("restored", rep, as_json)


def _worktree_path(root: Path, path: str) -> str:
    """``path`` as a ``/``-separated path inside the worktree; an error outside it."""
    from snapshotter.errors import BadInput

    rel = os.path.relpath(os.path.realpath(path), root)
    if rel == "." or rel == ".." or rel.startswith(".." + os.sep):
        raise BadInput(f"{path} is not inside the worktree {root}")
    return Path(rel).as_posix()


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
@click.option("--budget-s", type=float, default=None, metavar="SECONDS",
              help="A bounded gc, as session_end runs it: a full repack only when needed.")
@click.option("--detached", is_flag=True,
              help="As session_end starts it: no output, failures go to the data dir's log.")
@pass_ctx
def gc(c: Ctx, directory: str, all_stores: bool, max_age_days: float, max_checkpoints: int,
       max_size: str, dry_run: bool, budget_s: float | None, detached: bool) -> None:
    """Compact the store: apply retention, pack what live checkpoints need, drop the rest.

    With --all, stores whose worktree is gone are deleted once idle for --max-age-days.
    """
    from snapshotter.cli import output
    from snapshotter.config import parse_size
    from snapshotter.engine import open_stores
    from snapshotter.gc import collect_store, drop_orphan_stores, run_detached
    from snapshotter.history.retention import Policy

    policy = Policy(max_age_days, max_checkpoints, parse_size(max_size))
    if detached:
        os.umask(0o077)  # a process of its own that never restores: what it writes is private
        run_detached(c.data_dir, directory, budget_s if budget_s is not None else 2.0, policy)
        return
    if all_stores:
        for root in drop_orphan_stores(c.data_dir, max_age_days, dry_run=dry_run):
            click.echo(f"{'would drop' if dry_run else 'dropped'} store {root}: worktree is gone")
    stores = open_stores(c.data_dir) if all_stores else [c.engine(directory, create=False).store]
    for store in stores:
        output.progress(f"gc {store.root}{output.ELLIPSIS}")
        report = collect_store(store, dry_run=dry_run, policy=policy, budget_s=budget_s)
        output.gc_report(store.worktree.root, report)


@cli.command(name="init")
@click.argument("agent", type=click.Choice(["claude-code", "docker-agent"]))
@click.argument("agent_file", required=False, type=click.Path(dir_okay=False), metavar="[FILE]")
@dir_option
@click.option("--global", "global_", is_flag=True,
              help="claude-code: ~/.claude/settings.json instead of the project's.")
@click.option("--agent", "agent_name", metavar="NAME",
              help="docker-agent: the agent in FILE to wire (default: root, else the first).")
@click.option("--dry-run", is_flag=True, help="Print the result; write nothing.")
def init(agent: str, agent_file: str | None, directory: str, global_: bool,
         agent_name: str | None, dry_run: bool) -> None:
    """Wire snapshotter's hooks into an agent's configuration.

    claude-code merges the hooks into DIR's .claude/settings.json (the git
    worktree's top, or ~/.claude/settings.json with --global). docker-agent
    adds them to one agent of the agent YAML FILE, or prints the block to
    paste without FILE. Hooks already there are kept, running init twice
    changes nothing, and a changed file is backed up beside itself first.
    """
    from snapshotter.cli import agent_setup

    command = agent_setup.hook_command()
    if agent == "claude-code":
        folder = Path.home() if global_ else _project_dir(directory)
        setup = agent_setup.setup_claude(agent_setup.claude_settings_path(folder),
                                         dry_run=dry_run, command=command)
    elif agent_file is None:
        click.echo(agent_setup.docker_agent_block(command=command), nl=False)
        return
    else:
        setup = agent_setup.setup_docker_agent(Path(agent_file), agent_name, dry_run=dry_run,
                                               command=command)
    if dry_run:
        click.echo(setup.text, nl=False)
    elif not setup.changed:
        click.echo(f"{setup.path}: already wired, nothing to change")
    else:
        saved = f" (backup: {setup.backup})" if setup.backup else ""
        click.echo(f"{setup.path}: hooks added{saved}")


def _project_dir(directory: str) -> Path:
    """The git worktree's top containing ``directory``, else ``directory`` itself."""
    from snapshotter.errors import NotAWorktree
    from snapshotter.git.worktree import find_worktree

    try:
        return find_worktree(directory).root
    except NotAWorktree:
        return Path(directory).resolve()


@cli.command()
@click.option("--keep", is_flag=True, help="Leave the throwaway repository in place.")
def demo(keep: bool) -> None:
    """Play a short agent session on a throwaway repository, then undo and redo it."""
    from snapshotter.cli.demo import run_demo

    run_demo(keep=keep)


def main(argv: list[str] | None = None) -> None:
    """Entry point: the one place errors become exit codes (SPEC §7)."""
    args = sys.argv[1:] if argv is None else argv
    # Global options come before the command, so only look there.
    command_at = next((i for i, a in enumerate(args) if a in cli.commands), len(args))
    verbose = bool({"-v", "--verbose"} & set(args[:command_at]))
    as_json = "--json" in args[command_at:]
    _fit_output_to_the_terminal()
    from snapshotter import progress

    try:
        with progress.shown_on_terminal():
            cli.main(args=args, prog_name="snapshotter", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except (click.Abort, KeyboardInterrupt):
        click.echo("snapshotter: interrupted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx else "snapshotter"
        _fail(f"{exc.format_message()} (see `{where} --help`)", exc.exit_code, as_json)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code, as_json)
    except Exception as exc:
        from snapshotter.errors import SnapshotterError

        if verbose:
            import traceback

            traceback.print_exc()
        if isinstance(exc, SnapshotterError):
            _fail(str(exc), exc.exit_code, as_json)
        where = _log_internal_error(args[:command_at])
        _fail(f"internal error: {type(exc).__name__}: {exc} (details in {where}; "
              "rerun with --verbose to see them here)", 1, as_json)
    sys.exit(0)


def _fail(message: str, code: int, as_json: bool) -> NoReturn:
    """One line on stderr; with ``--json`` the same error as a JSON object on stdout too."""
    from snapshotter.cli import output

    if as_json:
        output.emit_json({"error": message, "exit_code": code})
    output.error(message)
    sys.exit(code)


def _log_internal_error(global_args: list[str]) -> str:
    """Append the traceback of an unexpected bug to the data directory's log; where it went."""
    import traceback

    from snapshotter.config import data_dir, stores_dir

    explicit = next((a.split("=", 1)[1] for a in global_args if a.startswith("--data-dir=")),
                    None)
    if "--data-dir" in global_args[:-1]:
        explicit = global_args[global_args.index("--data-dir") + 1]
    try:
        path = stores_dir(data_dir(explicit)) / "errors.log"
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8", errors="replace") as f:
            f.write(f"--- snapshotter {' '.join(sys.argv[1:])}\n{traceback.format_exc()}")
        return str(path)
    except OSError:
        return "no log (the data directory is not writable)"


def _fit_output_to_the_terminal() -> None:
    """An stdout that cannot encode our symbols (PYTHONIOENCODING=latin-1) gets ASCII."""
    from snapshotter.cli import output

    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:  # a name it cannot encode is escaped, never a crash
            reconfigure(errors="backslashreplace")
    try:
        (output.NESTED + output.ARROW + output.ELLIPSIS).encode(sys.stdout.encoding or "ascii")
    except (UnicodeEncodeError, LookupError):
        output.use_ascii()
