"""Everything the CLI prints goes through here: human text or one JSON document."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from snapshotter.checkpoints import NOT_HELD_IGNORED, Record
from snapshotter.config import MANUAL_SESSION
from snapshotter.names import display, encode

if TYPE_CHECKING:
    from snapshotter.checkpoints import Restoration
    from snapshotter.engine.maintenance import GcReport
    from snapshotter.engine.moved import Recovered

# Where stdout cannot encode them (PYTHONIOENCODING=latin-1), use_ascii() swaps these.
NESTED = "├ "  # a tool of the turn listed right below it
ARROW = "→"
ELLIPSIS = "…"


def use_ascii() -> None:
    """stdout's encoding lacks our symbols: print their ASCII stand-ins instead."""
    global NESTED, ARROW, ELLIPSIS
    NESTED, ARROW, ELLIPSIS = "+ ", "->", "..."


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


LEGEND = "+added ~modified -deleted files"  # what ``counts`` shows, said where it first appears


def counts(cp: Record) -> str:
    added = sum(f.status == "added" for f in cp.files)
    modified = sum(f.status == "modified" for f in cp.files)
    deleted = sum(f.status == "deleted" for f in cp.files)
    return f"+{added} ~{modified} -{deleted}"


def _when(cp: Record, now: datetime | None = None) -> str:
    """Local time, with how long ago (records stay UTC; people read their own clock)."""
    at = parse_time(cp.created_at)
    local = at.astimezone()
    now = now or datetime.now(UTC)
    day = "%H:%M:%S" if local.date() == now.astimezone().date() else "%Y-%m-%d %H:%M"
    return f"{local.strftime(day)} ({age(now - at)})"


def parse_time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def age(delta: timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}{'s' if unit == 'day' and n > 1 else ''} ago"
    return "just now" if seconds < 10 else f"{seconds} s ago"


def _by_hand(cp: Record) -> bool:
    """Whether the user recorded ``cp`` with ``snapshotter checkpoint``."""
    return cp.reason == "checkpoint"


# The columns before and after WHAT: ``ID  WHEN  KIND  `` and ``  +1 ~1 -0`` with room.
_OTHER_COLUMNS = 5 + 2 + 22 + 2 + 6 + 2 + 2 + 13
MIN_LABEL = 36  # WHAT's width at 80 columns, and in pipes (scripts see one layout)


@dataclass(frozen=True)
class _Look:
    """How the ``list`` table is drawn: WHAT's width, and colour or not (as git decides)."""

    width: int = MIN_LABEL
    color: bool = False

    def paint(self, text: str, **style: Any) -> str:
        return click.style(text, **style) if self.color and text else text


def _header(look: _Look) -> str:
    return f"{'ID':>5}  {'WHEN':<22}  {'KIND':<6}  {'WHAT':<{look.width}}  FILES"


def _line(cp: Record, indent: str, now: datetime, look: _Look = _Look()) -> str:
    notes = []
    lost = sum(s.reason == NOT_HELD_IGNORED for s in cp.skipped)
    if len(cp.skipped) > lost:
        notes.append(look.paint(f"! {len(cp.skipped) - lost} skipped", fg="red"))
    if lost:  # ignored files it deleted (#26.3)
        notes.append(look.paint(f"! {lost} ignored deleted, not held", fg="red"))
    if cp.reason == "failed":
        notes.append(look.paint("(failed)", fg="red"))  # the runtime said the tool failed
    if cp.undone:
        notes.append(look.paint("(undone)", dim=True))
    if cp.kind == "turn" and not cp.files and not cp.skipped:
        # A save point (#26.1) names a state; a turn whose tools changed files and
        # changed them back (#21.1) did nothing: undo passes both by.
        notes.append("(save point)" if _by_hand(cp) else "(no net change)")
    kind = f"{indent}{'mark' if _by_hand(cp) else cp.kind}"
    label = display(cp.label)
    width = look.width
    label = label if len(label) <= width else label[: width - 1] + ELLIPSIS
    ident = look.paint(f"{cp.id:>5}", fg="yellow")  # as git log colours commit ids
    tail = "".join(f"  {n}" for n in notes)
    return f"{ident}  {_when(cp, now):<22}  {kind:<6}  {label:<{width}}  {counts(cp)}{tail}"


def checkpoints(
    cps: Sequence[Record],
    show_session: bool = False,
    session: str | None = None,
    others: int = 0,
    *,
    columns: int = 80,
    color: bool = False,
) -> None:
    """The ``list`` table; ``session`` is the one shown, ``others`` how many more exist.

    ``columns``: the terminal's width, which WHAT widens to fill (#26.4);
    ``color``: ids, skips, failures and undone checkpoints coloured as git would.
    """
    look = _Look(max(MIN_LABEL, columns - _OTHER_COLUMNS), color)

    def say(text: str) -> None:
        click.echo(text, color=color)  # (click would strip colour off a terminal)

    if session is not None:
        more = (
            (f"; {others} other session{'s' if others > 1 else ''} here (`snapshotter list --all`)")
            if others
            else ""
        )
        yours = any(cp.session_id == MANUAL_SESSION for cp in cps) and session != MANUAL_SESSION
        more = f", and yours (session {MANUAL_SESSION}){more}" if yours else more
        say(look.paint(f"session {display(session)}", bold=True) + more)
    if not cps:
        say("no checkpoints")
        return
    now = datetime.now(UTC)
    say(_header(look))
    ids = {cp.id for cp in cps}
    shown = None
    for cp in cps:
        if cp.parent is not None and cp.parent in ids:
            continue  # printed with its turn
        if show_session and cp.session_id != shown:
            shown = cp.session_id
            say(look.paint(f"session {display(shown)}", bold=True))
        # A turn's tools ended before it: listed just above it, so ids read in
        # order (#26.4), each marked as the turn's.
        children = [c for c in cps if c.parent == cp.id]
        for child in (c for c in children if c.id < cp.id):
            say(_line(child, NESTED, now, look))
        say(_line(cp, "", now, look))
        for child in (c for c in children if c.id > cp.id):
            say(_line(child, NESTED, now, look))
    reasons = {s.reason == NOT_HELD_IGNORED for cp in cps for s in cp.skipped}
    if False in reasons:
        say(
            "! skipped files are not in the snapshot; undo cannot restore them "
            "(see `snapshotter show ID`)"
        )
    if True in reasons:
        say(
            "! ignored files deleted were never stored; undo cannot bring them back "
            "(see `snapshotter show ID`)"
        )


def checkpoint_detail(cp: Record) -> None:
    """``show``: the checkpoint in full, as a person reads it: the local time, the
    whole prompt, the command, whether the tool failed (#26.4); then its files."""
    state = "undone" if cp.undone else "active"
    parent = f", part of turn {cp.parent}" if cp.parent is not None else ""
    failed = ", the tool failed" if cp.reason == "failed" else ""
    kind = "checkpoint by hand" if _by_hand(cp) else cp.kind
    click.echo(f"checkpoint {cp.id}  {kind}  {display(cp.label)}  ({state}{parent}{failed})")
    local = parse_time(cp.created_at).astimezone()
    ago = age(datetime.now(UTC) - parse_time(cp.created_at))
    click.echo(f"when    {local.strftime('%Y-%m-%d %H:%M:%S %z')} ({ago})")
    click.echo(f"session {cp.session_id}")
    if cp.prompt and cp.prompt != cp.label:
        lines = [display(line) for line in cp.prompt.splitlines()] or [""]
        click.echo(f"asked   {lines[0]}")
        for line in lines[1:]:
            click.echo(f"        {line}")
    if cp.command:
        click.echo(f"ran     {display(cp.command)}")
    if cp.reason and cp.reason not in ("checkpoint", "failed", "normal", "turn_end"):
        click.echo(f"ended   {cp.reason}")
    click.echo(f"trees {cp.before[:12]} {ARROW} {cp.after[:12]}")
    mark = {"added": "+", "modified": "~", "deleted": "-"}
    for f in cp.files:
        click.echo(f"  {mark[f.status]} {display(f.path)}")
    for s in cp.skipped:
        if s.reason == NOT_HELD_IGNORED:
            click.echo(f"  ! {display(s.path)}  (deleted; {s.reason}: undo cannot bring it back)")
        else:
            click.echo(f"  ! {display(s.path)}  (skipped: {s.reason}; undo cannot restore it)")


_INFINITIVE = {"undid": "undo", "redid": "redo", "reset": "reset", "restored": "restore"}


SHOWN_FILES = 10  # a report names this many files, then "… and N more" (--verbose: all)


def report(verb: str, rep: Restoration, as_json: bool, verbose: bool = False) -> None:
    """What an undo, redo, reset or restore did: one line, then the files (the first
    ``SHOWN_FILES`` of them unless ``verbose``: a restore of 950 files reads, #26.4)."""
    if as_json:
        from snapshotter import codec

        emit_json(codec.write(rep))  # RestoreReport's document, without pydantic
        return
    done = "would restore" if rep.dry_run else "restored"
    gone = "would remove" if rep.dry_run else "removed"
    said = f"would {_INFINITIVE[verb]}" if rep.dry_run else verb
    click.echo(
        f"{said} {_which(rep.checkpoint)}: {len(rep.restored)} {done}, {len(rep.removed)} {gone}"
    )
    lines = [(done, p) for p in rep.restored] + [(gone, p) for p in rep.removed]
    shown = lines if verbose or len(lines) <= SHOWN_FILES else lines[: SHOWN_FILES - 1]
    for what, path in shown:
        click.echo(f"  {what:<8} {display(path)}")
    if len(shown) < len(lines):
        click.echo(f"  {ELLIPSIS} and {len(lines) - len(shown)} more (--verbose lists them all)")
    for path in rep.skipped:
        click.echo(f"  ! left alone {display(path)} (skipped when recorded: not in the snapshot)")
    for path in rep.not_held if verb != "redid" else ():  # (a redo deletes them again)
        click.echo(f"  ! not brought back {display(path)} (not held: ignored, never stored)")
    if not rep.dry_run and verb in ("undid", "reset", "restored"):
        click.echo("run `snapshotter redo` to put it back")


def _which(ids: Sequence[int]) -> str:
    """``checkpoint 3``, ``checkpoints 3, 7, 9``; ``your edits`` for a redo that puts
    back only what a forced operation overwrote (it has no checkpoint, #26.6)."""
    if not ids:
        return "your edits"
    plural = "s" if len(ids) > 1 else ""
    return f"checkpoint{plural} {', '.join(str(i) for i in ids)}"


def recover_report(done: Recovered, dry_run: bool, as_json: bool) -> None:
    """What ``recover`` wrote back (or would), and what it left alone."""
    if as_json:
        emit_json(
            {
                "worktree": str(done.worktree),
                "tree": done.tree,
                "dry_run": dry_run,
                "restored": [encode(p) for p in done.written],
                "kept": [encode(p) for p in done.kept],
                "failed": [encode(p) for p in done.failed],
            }
        )
        return
    verb = "would write back" if dry_run else "wrote back"
    click.echo(f"{verb} {len(done.written)} file(s) into {done.worktree}")
    each(done.written, "  {}")
    each(done.kept, "left alone (its bytes are not in the store): {}", error)
    each(done.failed, "could not write: {}", error)


def each(paths: Iterable[str], line: str, say: Callable[[str], None] = click.echo) -> None:
    """``line`` once per path, its ``{}`` the path as git shows it (``names.display``)."""
    for path in paths:
        say(line.format(display(path)))


def gc_report(worktree: object, rep: GcReport) -> None:
    dropped = rep.dropped
    dry = rep.reason.startswith("dry run")
    verb = "would drop" if dry else "dropped"
    freed = f"would free about {human_size(rep.freed)}" if dry else f"freed {human_size(rep.freed)}"
    size = (
        human_size(rep.bytes_before)
        if dry
        else f"{human_size(rep.bytes_before)} {ARROW} {human_size(rep.bytes_after)}"
    )
    note = f" ({rep.reason})" if rep.reason and not dry else ""
    click.echo(
        f"{display(str(worktree))}: {verb} {len(dropped.sessions)} sessions and "
        f"{len(dropped.checkpoints)} checkpoints; kept {rep.objects_kept} objects "
        f"({rep.live_trees} trees); {size}, {freed}{note}"
    )


def human_size(n: int) -> str:
    """``1.5 MiB``, as people read sizes."""
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} bytes"  # unreachable: the loop returns at GiB


def error(message: str) -> None:
    click.echo(f"snapshotter: {message}", err=True)


def progress(message: str) -> None:
    """Progress for long work, only when a person is watching stderr."""
    if sys.stderr.isatty():
        click.echo(message, err=True)
