"""`gc`: retention and compaction of the stores."""

from __future__ import annotations

import os

import click

from snapshotter.cli.context import (
    Ctx,
    dir_option,
    dry_run_option,
    pass_ctx,
)
from snapshotter.config import (
    DEFAULT_MAX_AGE_DAYS,
    DEFAULT_MAX_CHECKPOINTS,
    DEFAULT_MAX_STORE_BYTES,
    format_size,
)


@click.command()
@dir_option
@click.option("--all", "all_stores", is_flag=True, help="Every store in the data directory.")
@click.option(
    "--max-age-days",
    type=float,
    default=DEFAULT_MAX_AGE_DAYS,
    show_default=True,
    help="Drop sessions idle for longer than this.",
)
@click.option(
    "--max-checkpoints",
    type=int,
    default=DEFAULT_MAX_CHECKPOINTS,
    show_default=True,
    help="Keep at most this many checkpoints per session (oldest go first).",
)
@click.option(
    "--max-size",
    default=format_size(DEFAULT_MAX_STORE_BYTES),
    show_default=True,
    metavar="SIZE",
    help="Size budget per store; oldest sessions are dropped to meet it.",
)
@dry_run_option
@click.option(
    "--budget-s",
    type=float,
    default=None,
    metavar="SECONDS",
    help="A bounded gc, as session_end runs it: a full repack only when needed.",
)
@click.option(
    "--detached",
    is_flag=True,
    help="As session_end starts it: no output, failures go to the data dir's log.",
)
@pass_ctx
def gc(
    c: Ctx,
    directory: str,
    all_stores: bool,
    max_age_days: float,
    max_checkpoints: int,
    max_size: str,
    dry_run: bool,
    budget_s: float | None,
    detached: bool,
) -> None:
    """Compact the store: apply retention, pack what live checkpoints need, drop the rest.

    With --all, stores whose worktree is gone are deleted once idle for --max-age-days.
    """
    from snapshotter.cli import output
    from snapshotter.config import parse_size
    from snapshotter.engine.maintenance import Policy, all_engines, drop_orphans, run_detached

    policy = Policy(max_age_days, max_checkpoints, parse_size(max_size))
    if detached:
        os.umask(0o077)  # a process of its own that never restores: what it writes is private
        run_detached(c.data_dir, directory, budget_s if budget_s is not None else 2.0, policy)
        return
    if all_stores:
        for root in drop_orphans(c.data_dir, max_age_days, dry_run=dry_run):
            click.echo(f"{'would drop' if dry_run else 'dropped'} store {root}: worktree is gone")
    engines = all_engines(c.data_dir) if all_stores else [c.engine(directory, create=False)]
    for engine in engines:
        output.progress(f"gc {engine.store_dir}{output.ELLIPSIS}")
        report = engine.gc(dry_run=dry_run, policy=policy, budget_s=budget_s)
        output.gc_report(engine.root, report)
