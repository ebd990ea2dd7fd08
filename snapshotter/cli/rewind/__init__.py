"""``snapshotter rewind``: pick a checkpoint in a full-screen view and go back (issue 27).

This module is imported on every CLI start (cli/main.py registers the
command), so it imports only click and the shared context; the view and
prompt_toolkit (the ``tui`` extra) are imported when the command runs.
``snapshotter hook`` never reaches it (cli/launcher.py).

rows.py lays out the list, view.py holds the state and does what the keys
ask through the Engine, screen.py draws it and binds the keys.
"""

from __future__ import annotations

import sys

import click

from snapshotter.cli.context import Ctx, dir_option, pass_ctx, session_option

HELP_KEYS = """\
\b
Keys:
  up/down j/k   move (in the list, the files or the diff: Tab switches)
  right/left    show or fold a turn's tools (also Space, Enter)
  r             go back to before the highlighted checkpoint (reset)
  u / R         undo the newest checkpoint / redo the last undo
  Space, f      choose files in the files pane / put them back as they
                were before the highlighted checkpoint (restore)
  d             the whole diff in the pager
  /             search labels (Enter keeps it, Esc clears it)
  s             the next session of this worktree
  q, Esc        quit
"""


@click.command(epilog=HELP_KEYS)
@dir_option
@session_option
@click.option("--mouse", is_flag=True, help="Click a row to highlight it; the wheel moves.")
@pass_ctx
def rewind(c: Ctx, directory: str, session_id: str | None, mouse: bool) -> None:
    """Pick a checkpoint full-screen: see what each turn did, go back in one key.

    Newest first, turns labelled with the prompt and their tools folded under
    them, with the highlighted checkpoint's files and diff. Keys that change
    files (go back, undo, redo, restore files) show what they will change and
    ask once; they do what reset, undo, redo and restore do, with the same
    refusals (files you edited since: F overwrites, as --force) and redo puts
    it back. Needs a terminal and the tui extra: pip install 'snapshotter[tui]'.
    """
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise click.UsageError(
            "rewind needs a terminal; use `snapshotter list` (and diff, reset) in scripts"
        )
    try:
        from snapshotter.cli.rewind import screen
    except ImportError as exc:
        if exc.name is None or not exc.name.startswith("prompt_toolkit"):
            raise
        raise click.ClickException(
            "rewind needs prompt_toolkit: pip install 'snapshotter[tui]'"
        ) from None
    from snapshotter import progress
    from snapshotter.cli import terminal
    from snapshotter.cli.rewind.view import View

    engine = c.engine(directory, create=False)
    view = View(engine, c.session(engine, session_id), color=terminal.use_color("auto"))
    with progress.hidden():  # a count on stderr would draw over the view
        screen.application(view, mouse=mouse).run()
