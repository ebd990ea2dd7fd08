"""Everything the CLI prints goes through here: human text or one JSON document."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from snapshotter.models import Checkpoint, RestoreReport

if TYPE_CHECKING:
    from snapshotter.gc import GcReport


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def counts(cp: Checkpoint) -> str:
    added = sum(f.status == "added" for f in cp.files)
    modified = sum(f.status == "modified" for f in cp.files)
    deleted = sum(f.status == "deleted" for f in cp.files)
    return f"+{added} ~{modified} -{deleted}"


def _when(cp: Checkpoint) -> str:
    return cp.created_at[:19].replace("T", " ")


def _line(cp: Checkpoint, indent: str) -> str:
    undone = "  (undone)" if cp.undone else ""
    skipped = f"  ! {len(cp.skipped)} skipped" if cp.skipped else ""
    kind = f"{indent}{cp.kind}"
    return (
        f"{cp.id:>5}  {_when(cp)}  {kind:<6}  {cp.label[:24]:<24}  "
        f"{counts(cp)}{skipped}{undone}"
    )


def checkpoints(cps: Sequence[Checkpoint], show_session: bool = False) -> None:
    if not cps:
        click.echo("no checkpoints")
        return
    ids = {cp.id for cp in cps}
    session = None
    for cp in cps:
        if cp.parent is not None and cp.parent in ids:
            continue  # printed under its turn
        if show_session and cp.session_id != session:
            session = cp.session_id
            click.echo(f"session {session}")
        click.echo(_line(cp, ""))
        for child in (c for c in cps if c.parent == cp.id):
            click.echo(_line(child, "└ "))
    warned = [cp for cp in cps if cp.skipped]
    if warned:
        click.echo("! skipped files are not in the snapshot; undo cannot restore them "
                   "(see `snapshotter show ID`)")


def checkpoint_detail(cp: Checkpoint) -> None:
    state = "undone" if cp.undone else "active"
    parent = f", part of turn {cp.parent}" if cp.parent is not None else ""
    click.echo(f"checkpoint {cp.id}  {cp.kind} {cp.label}  {cp.created_at}  ({state}{parent})")
    click.echo(f"session {cp.session_id}")
    click.echo(f"trees {cp.before[:12]} → {cp.after[:12]}")
    mark = {"added": "+", "modified": "~", "deleted": "-"}
    for f in cp.files:
        click.echo(f"  {mark[f.status]} {f.path}")
    for s in cp.skipped:
        click.echo(f"  ! {s.path}  (skipped: {s.reason}; undo cannot restore it)")


def report(verb: str, rep: RestoreReport, as_json: bool) -> None:
    if as_json:
        emit_json(rep.model_dump())
        return
    ids = ", ".join(str(i) for i in rep.checkpoint)
    prefix = "would " if rep.dry_run else ""
    click.echo(f"{prefix}{verb} checkpoint {ids}: "
               f"{len(rep.restored)} restored, {len(rep.removed)} removed")
    for path in rep.restored:
        click.echo(f"  restored {path}")
    for path in rep.removed:
        click.echo(f"  removed  {path}")
    for path in rep.skipped:
        click.echo(f"  ! left alone {path} (skipped when recorded: not in the snapshot)")
    if not rep.dry_run and verb in ("undid", "reset"):
        click.echo("run `snapshotter redo` to put it back")


def gc_report(worktree: object, rep: GcReport) -> None:
    dropped = rep.dropped
    verb = "would drop" if rep.skipped.startswith("dry run") else "dropped"
    click.echo(f"{worktree}: {verb} {len(dropped.sessions)} sessions and "
               f"{len(dropped.checkpoints)} checkpoints; kept {rep.objects_kept} objects "
               f"({rep.live_trees} trees); {rep.bytes_before} → {rep.bytes_after} bytes, "
               f"freed {rep.freed}" + (f" ({rep.skipped})" if rep.skipped else ""))


def error(message: str) -> None:
    click.echo(f"snapshotter: {message}", err=True)


def progress(message: str) -> None:
    """Progress for long work, only when a person is watching stderr."""
    if sys.stderr.isatty():
        click.echo(message, err=True)
