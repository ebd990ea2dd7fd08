"""The rewind view's list, as data: checkpoints newest first, tools folded under turns.

Pure functions over ``Checkpoint`` values; no terminal library, so the unit
tier checks them directly and screen.py only draws what they return.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from snapshotter.names import display

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.models import Checkpoint


@dataclass(frozen=True)
class Row:
    """One line of the list: a checkpoint, how deep it sits (0: a turn or a tool of no
    turn; 1: a tool under its turn) and how many tools a turn holds."""

    cp: Checkpoint
    depth: int
    tools: int


def build(cps: Sequence[Checkpoint], unfolded: Iterable[int], query: str = "") -> list[Row]:
    """The rows to show, newest first: each top-level checkpoint, then its tools (newest
    first) when it is unfolded. ``query`` keeps the turns whose label, or a tool's, holds
    it (any case); a turn kept for a tool's sake shows its tools."""
    ids = {cp.id for cp in cps}
    children: dict[int, list[Checkpoint]] = {}
    for cp in cps:
        if cp.parent is not None and cp.parent in ids:
            children.setdefault(cp.parent, []).append(cp)
    shown = set(unfolded)
    needle = query.casefold()
    rows: list[Row] = []
    for cp in sorted(cps, key=lambda c: c.id, reverse=True):
        if cp.parent is not None and cp.parent in ids:
            continue
        tools = sorted(children.get(cp.id, []), key=lambda c: c.id, reverse=True)
        if needle and needle not in _label(cp):
            tools = [t for t in tools if needle in _label(t)]
            if not tools:
                continue
            shown.add(cp.id)
        rows.append(Row(cp, 0, len(children.get(cp.id, []))))
        if cp.id in shown:
            rows.extend(Row(t, 1, 0) for t in tools)
    return rows


def _label(cp: Checkpoint) -> str:
    return display(cp.label).casefold()


def back_to_before(cps: Sequence[Checkpoint], cp: Checkpoint) -> int | None:
    """What ``reset`` keeps to go back to just before ``cp`` (with its tools, for a
    turn): the session's newest checkpoint older than all of them; None when there is
    none (``reset --original``). A turn's tools are recorded before it, so they count."""
    group = [cp.id] + [c.id for c in cps if c.parent == cp.id]
    first = min(group)
    older = [c.id for c in cps if c.session_id == cp.session_id and c.id < first]
    return max(older, default=None)


def sessions(cps: Iterable[Checkpoint]) -> list[str]:
    """The sessions that have checkpoints, the one with the newest checkpoint first."""
    newest: dict[str, int] = {}
    for cp in cps:
        newest[cp.session_id] = max(newest.get(cp.session_id, 0), cp.id)
    return sorted(newest, key=lambda s: newest[s], reverse=True)


def when(stamp: str, now: datetime | None = None) -> str:
    """Local time (``HH:MM:SS`` today, else the day: ``Apr 28``) and its age, short enough
    for 80 columns: ``14:03:22 5 min ago``."""
    from snapshotter.cli.output import age, parse_time

    at = parse_time(stamp)
    now = now or datetime.now(UTC)
    local = at.astimezone()
    shape = "%H:%M:%S" if local.date() == now.astimezone().date() else "%b %d"
    return f"{local.strftime(shape)} {age(now - at)}"
