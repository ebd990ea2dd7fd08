"""The ``snapshotter`` command: parse, call the core, print. Nothing else.

Exit codes (SPEC §7) come from the exception classes and are mapped here,
in ``main``, and nowhere else.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, NoReturn

import click

from snapshotter.cli.context import Ctx

if TYPE_CHECKING:
    from snapshotter.engine.serving import Resident


class _ClosedPipe(Exception):
    """stdout's reader went away; past click, which would make it exit 1."""


# Each command's module, imported when that command runs (or ``--help`` lists them
# all): a command pays for its own imports only (``list`` none of ``init``'s).
COMMANDS = {
    "hook": "recording:hook",
    "capture": "recording:capture",
    "list": "review:list_",
    "show": "review:show",
    "diff": "review:diff",
    "undo": "restoring:undo",
    "redo": "restoring:redo",
    "reset": "restoring:reset",
    "checkpoint": "recording:checkpoint_cmd",
    "restore": "restoring:restore_cmd",
    "log": "oplog:log",
    "mcp": "mcp_server:mcp",
    "rewind": "rewind:rewind",
    "recover": "moved:recover",
    "adopt": "moved:adopt",
    "doctor": "doctor:doctor",
    "gc": "maintenance:gc",
    "init": "setup:init",
    "demo": "setup:demo",
}


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            self.add_command(_load(cmd_name))
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise _ClosedPipe from exc


def _load(name: str) -> click.Command:
    import importlib

    module, attribute = COMMANDS[name].split(":")
    command = getattr(importlib.import_module(f"snapshotter.cli.{module}"), attribute)
    assert isinstance(command, click.Command) and command.name == name, (name, command)
    return command


def load_all() -> dict[str, click.Command]:
    """Every command, imported (the hook server's warm-up, so a forked command imports
    nothing; and the tests that read every command's options)."""
    ctx = click.Context(cli)
    found = {name: cli.get_command(ctx, name) for name in COMMANDS}
    return {name: command for name, command in found.items() if command is not None}


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--data-dir",
    metavar="DIR",
    help="Where stores live (default: $SNAPSHOTTER_DATA_DIR, else the user data directory).",
)
@click.option(
    "-C",
    "start_dir",
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False),
    help="Run as if started in DIR (like git -C; before the command).",
)
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
    # ``main``'s resident, if any, comes in as click's obj (a command the hook server forked).
    ctx.obj = Ctx(data_dir, verbose, resident=ctx.obj)


def main(argv: list[str] | None = None, resident: Resident | None = None) -> None:
    """Entry point: the one place errors become exit codes (SPEC §7).

    ``resident``: where a command forked by the hook server sends its captures
    (cli/served.py); None everywhere else.
    """
    args = sys.argv[1:] if argv is None else argv
    # Global options come before the command, so only look there.
    command_at = next((i for i, a in enumerate(args) if a in COMMANDS), len(args))
    verbose = bool({"-v", "--verbose"} & set(args[:command_at]))
    as_json = "--json" in args[command_at:]
    _fit_output_to_the_terminal()
    from snapshotter import progress

    try:
        with progress.shown_on_terminal():
            cli.main(args=args, prog_name="snapshotter", standalone_mode=False, obj=resident)
        sys.stdout.flush()  # a reader gone (`| head`) shows here, not at exit
    except (BrokenPipeError, _ClosedPipe):
        _closed_pipe()
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
            _fail(exc.cli_message, exc.exit_code, as_json)
        where = _log_internal_error(args[:command_at])
        _fail(
            f"internal error: {type(exc).__name__}: {exc} (details in {where}; "
            "rerun with --verbose to see them here)",
            1,
            as_json,
        )
    sys.exit(0)


def _closed_pipe() -> NoReturn:
    """The reader of stdout went away: stop quietly with 141, as git does (it dies of
    SIGPIPE), whether the command ran here or in the hook server (#26.6)."""
    import contextlib

    with contextlib.suppress(OSError, ValueError):  # (no file descriptor: a test's stream)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing more to flush into the closed pipe
    sys.exit(141)


def _fail(message: str, code: int, as_json: bool) -> NoReturn:
    """One line on stderr; with ``--json`` the same error as a JSON object on stdout too."""
    from snapshotter.cli import output

    if as_json:
        import contextlib

        with contextlib.suppress(BrokenPipeError):  # the line on stderr still says it
            output.emit_json({"error": message, "exit_code": code})
    output.error(message)
    sys.exit(code)


def _log_internal_error(global_args: list[str]) -> str:
    """Append the traceback of an unexpected bug to the data directory's log; where it went."""
    import traceback

    from snapshotter.cli.argv import data_dir_option
    from snapshotter.config import data_dir, stores_dir

    # The global options may come in any order: the first --data-dir among them counts.
    found = (data_dir_option(global_args[i:])[0] for i in range(len(global_args)))
    explicit = next((d for d in found if d is not None), None)
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
