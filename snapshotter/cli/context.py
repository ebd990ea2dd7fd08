"""What every command shares: the context object and the common options."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from snapshotter.config import DEFAULT_MAX_NEW_FILE_SIZE, format_size

if TYPE_CHECKING:
    from snapshotter.engine import Engine
    from snapshotter.engine.serving import Resident


class Ctx:
    def __init__(self, data_dir: str | None, verbose: bool, resident: Resident | None) -> None:
        self.data_dir_opt = data_dir
        self.verbose = verbose
        self.resident = resident  # a command the hook server forked: captures go there

    @property
    def data_dir(self) -> Path:
        from snapshotter.config import data_dir
        from snapshotter.errors import BadInput

        found = data_dir(self.data_dir_opt)
        if found.exists() and not found.is_dir():
            raise BadInput(
                f"the data directory {found} is a file; name a directory "
                "(--data-dir or $SNAPSHOTTER_DATA_DIR)"
            )
        return found

    def engine(self, directory: str, *, create: bool = True, max_size: str | None = None) -> Engine:
        """The worktree's engine; without ``create``, NothingToDo when it has no store."""
        from snapshotter.config import DEFAULT_MAX_NEW_FILE_SIZE, parse_size
        from snapshotter.engine import Engine

        limit = parse_size(max_size) if max_size else DEFAULT_MAX_NEW_FILE_SIZE
        if not create:
            engine = self._existing(directory, limit)
        else:
            opened = Engine.open(
                directory,
                data_dir_path=self.data_dir,
                max_new_file_size=limit,
                resident=self.resident,
            )
            assert opened is not None  # create=True always opens one
            engine = opened
        if engine.recovered is not None:  # a killed restore, finished or rolled back (#21.4)
            from snapshotter.cli import output

            output.error(engine.recovered)
        return engine

    def _existing(self, directory: str, limit: int) -> Engine:
        """The engine of a worktree with snapshots; where there is none, the history of
        this directory still on disk and the command that gets it back (issue 21.5)."""
        from snapshotter.engine.moved import open_or_locate

        return open_or_locate(
            directory, data_dir=self.data_dir, max_new_file_size=limit, resident=self.resident
        )

    def session(self, engine: Engine, explicit: str | None) -> str:
        """The session a command acts on; a turn it left open (Esc) is closed first.

        ``explicit``: what ``--session`` named, an id or a unique prefix of one
        (an unknown one is an error, #26.2); else the newest session here.
        """
        found = engine.named_session(explicit) if explicit else engine.resolve_session()
        engine.close_interrupted(found)
        return found


pass_ctx = click.make_pass_decorator(Ctx)
dir_option = click.option(
    "-C",
    "directory",
    default=".",
    metavar="DIR",
    help="Run as if started in DIR (default: current directory).",
)
session_option = click.option(
    "--session",
    "session_id",
    metavar="ID",
    help="Session to act on (default: the newest one here).",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
dry_run_option = click.option(
    "--dry-run", is_flag=True, help="Show what would change; change nothing."
)
force_option = click.option(
    "--force", is_flag=True, help="Overwrite files changed since the checkpoint (redo undoes this)."
)
size_option = click.option(
    "--max-new-file-size",
    "max_size",
    metavar="SIZE",
    help="Skip new untracked files larger than SIZE "
    f"(default {format_size(DEFAULT_MAX_NEW_FILE_SIZE)}).",
)


max_files_option = click.option(
    "--max-files",
    type=int,
    default=None,
    metavar="N",
    help="Refuse worktrees with more files than N. Without it there is no cap, but a home "
    "directory, or far more untracked files than tracked ones, is refused.",
)
