"""The rewind view's state, and what each key does to it, through the Engine only.

screen.py draws a ``View`` and binds keys to its methods; nothing here knows
the terminal library, so what a key does is the same in a terminal, under
the test harness and in the unit tier.

Every key that changes files asks first (issue 27.2): ``ask_*`` runs the
engine's operation as a dry run and keeps it as ``pending`` (what it will
restore and remove, or the refusal with the files named and who changed
them); ``confirm`` does it, with the CLI's guarantees (the engine's undo,
redo, reset and restore_files: your bytes stored first, redo puts them
back); ``cancel`` drops it. After an action the list is read again and
``message`` says what happened and that redo brings it back.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from snapshotter.cli.rewind import rows
from snapshotter.errors import Conflict, SnapshotterError
from snapshotter.names import display

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.checkpoints import Restoration
    from snapshotter.engine import Engine, FileDiff
    from snapshotter.models import Checkpoint

Focus = Literal["list", "files", "diff"]
FOCI: tuple[Focus, ...] = ("list", "files", "diff")
PANE_LINES = 2000  # of a diff in its pane; a larger one is cut there (the pager has it all)
# A file's bytes must not drive the terminal: C0 controls but tab and newline, and DEL.
_CONTROLS = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]")


@dataclass
class Pending:
    """A key that changes files, pressed and not yet confirmed.

    ``title`` says what it does and the command that does the same; ``plan``
    the engine's dry run (with ``--force`` when it was refused); ``refused``
    the files changed since the checkpoint, each with who changed them.
    """

    title: str
    verb: str
    act: Callable[..., Restoration]
    plan: Restoration | None = None
    refused: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """What it will change, one line per file; a refusal first, files named."""
        out: list[str] = []
        if self.refused:
            out.append("refused: changed since the checkpoint")
            out += [f"  {display(p)} (by {who})" for p, who in self.refused.items()]
            out.append("with --force it would")
        if self.plan is not None:
            out += [f"  restore {display(p)}" for p in self.plan.restored]
            out += [f"  remove  {display(p)}" for p in self.plan.removed]
            out += [f"  ! left alone {display(p)} (not in the snapshot)" for p in self.plan.skipped]
        return out


class View:
    """One session's checkpoints in a worktree, the highlighted one, and its files."""

    def __init__(self, engine: Engine, session: str, *, color: bool) -> None:
        self.engine = engine
        self.session = session
        self.color = color
        self.everyone: list[Checkpoint] = []
        self.rows: list[rows.Row] = []
        self.index = 0
        self.unfolded: set[int] = set()
        self.query = ""
        self.focus: Focus = "list"
        self.file_index = 0
        self.chosen: set[str] = set()
        self.diff_line = 0
        self.pending: Pending | None = None
        self.message = ""
        self._diffs: dict[int, list[FileDiff]] = {}
        self._shown: int | None = None  # the checkpoint the panes show
        self._text: tuple[int | None, str] = (None, "")  # and its diff, as the pane shows it
        self.reload()

    # -- what is shown -------------------------------------------------------------------

    @property
    def checkpoints(self) -> list[Checkpoint]:
        """The session's checkpoints, ordered by id."""
        return [cp for cp in self.everyone if cp.session_id == self.session]

    @property
    def current(self) -> Checkpoint | None:
        """The highlighted checkpoint (None when the list is empty)."""
        return self.rows[self.index].cp if self.rows else None

    @property
    def other_sessions(self) -> int:
        """How many other sessions recorded checkpoints in this worktree."""
        return sum(s != self.session for s in rows.sessions(self.everyone))

    def reload(self) -> None:
        """Read the checkpoints again and keep the same one highlighted."""
        keep = self.current.id if self.current is not None else None
        self.everyone = self.engine.checkpoints()
        self._rebuild(keep)

    def _rebuild(self, keep: int | None) -> None:
        self.rows = rows.build(self.checkpoints, self.unfolded, self.query)
        ids = [r.cp.id for r in self.rows]
        self._highlight(ids.index(keep) if keep in ids else min(self.index, len(ids) - 1))

    def _highlight(self, index: int) -> None:
        """Highlight row ``index``; another checkpoint starts its panes afresh."""
        self.index = max(0, index)
        shown = self.current.id if self.current is not None else None
        if shown != self._shown:
            self._shown = shown
            self.file_index, self.diff_line = 0, 0
            self.chosen.clear()

    def files(self) -> list[FileDiff]:
        """The highlighted checkpoint's files, as its diff has them (before → after)."""
        cp = self.current
        if cp is None:
            return []
        if cp.id not in self._diffs:
            self._diffs[cp.id] = self.engine.checkpoint_diff(cp).files
        return self._diffs[cp.id]

    def diff_text(self) -> str:
        """The highlighted checkpoint's diff for the pane: coloured as ``snapshotter diff``
        colours it (git's colours) when ``color``; tabs expanded, control bytes shown
        as ``^X`` (a file's bytes must not drive the terminal); its first
        ``PANE_LINES`` lines (``d`` pages the whole diff). Worked out once per checkpoint:
        the pane is drawn again on every key."""
        from snapshotter.cli.diff_render import patch_text

        cp = self.current
        key = cp.id if cp is not None else None
        if self._text[0] != key or key is None:
            shown = [
                dataclasses.replace(d, patches=[_printable(p) for p in d.patches])
                for d in self.files()
            ]
            lines = patch_text(shown, self.color).decode("utf-8", "replace").split("\n")
            if len(lines) > PANE_LINES:
                more = len(lines) - PANE_LINES
                lines = [*lines[:PANE_LINES], f"... {more} more lines: d shows the whole diff"]
            self._text = (key, "\n".join(lines))
        return self._text[1]

    def full_diff(self, color: bool) -> bytes:
        """The highlighted checkpoint's diff, byte for byte as ``snapshotter diff ID``."""
        from snapshotter.cli.diff_render import patch_text

        return patch_text(self.files(), color)

    # -- moving ----------------------------------------------------------------------------

    def move(self, delta: int) -> None:
        """Up (negative) or down the pane that has the focus."""
        if self.focus == "list":
            self._highlight(min(self.index + delta, len(self.rows) - 1))
        elif self.focus == "files":
            self.file_index = max(0, min(self.file_index + delta, len(self.files()) - 1))
        else:
            lines = self.diff_text().count("\n")
            self.diff_line = max(0, min(self.diff_line + delta, lines - 1))

    def unfold(self, show: bool) -> None:
        """Show (or fold away) the highlighted turn's tools; on a tool, fold its turn."""
        cp = self.current
        if cp is None:
            return
        turn = cp.parent if cp.parent is not None and self.rows[self.index].depth else cp.id
        if show:
            self.unfolded.add(turn)
        else:
            self.unfolded.discard(turn)
        self._rebuild(cp.id if show else turn)

    def cycle_focus(self) -> None:
        self.focus = FOCI[(FOCI.index(self.focus) + 1) % len(FOCI)]

    def toggle_file(self) -> None:
        """Choose (or drop) the file under the cursor for ``ask_restore``."""
        files = self.files()
        if files:
            path = files[self.file_index].path
            self.chosen.symmetric_difference_update({path})

    def search(self, query: str) -> None:
        """Keep only the turns whose label (or a tool's) holds ``query``; "" shows all."""
        self.query = query
        self._rebuild(self.current.id if self.current is not None else None)

    def next_session(self) -> None:
        """Show the next session of this worktree (newest first, round)."""
        order = rows.sessions(self.everyone)
        if not order:
            return
        at = order.index(self.session) + 1 if self.session in order else 0
        self.session = order[at % len(order)]
        self.engine.close_interrupted(self.session)  # as every command acting on it does
        self.unfolded.clear()
        self.index = 0
        self.reload()
        self.message = f"session {display(self.session)}"

    # -- changing files (each asks first) --------------------------------------------------

    def ask_back(self) -> None:
        """Go back to before the highlighted checkpoint: ``reset`` to the one before it."""
        cp = self.current
        if cp is None:
            return
        keep = rows.back_to_before(self.checkpoints, cp)
        command = "reset --original" if keep is None else f"reset {keep}"
        self._ask(
            f"go back to before checkpoint {cp.id} (snapshotter {command})",
            "reset",
            lambda **how: self.engine.reset(self.session, keep, **how),
        )

    def ask_undo(self) -> None:
        self._ask(
            "undo the newest checkpoint (snapshotter undo)",
            "undid",
            lambda **how: self.engine.undo(self.session, **how),
        )

    def ask_redo(self) -> None:
        self._ask(
            "redo what the last undo, reset or restore took away (snapshotter redo)",
            "redid",
            lambda **how: self.engine.redo(self.session, **how),
        )

    def ask_restore(self) -> None:
        """Put the chosen files (else the one under the cursor) back as they were
        before the highlighted checkpoint: ``restore ID -- PATH...``."""
        cp, files = self.current, self.files()
        if cp is None or not files:
            return
        paths = sorted(self.chosen) or [files[self.file_index].path]
        named = " ".join(display(p) for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
        self._ask(
            f"put {len(paths)} file(s) back as before checkpoint {cp.id} "
            f"(snapshotter restore {cp.id} -- {named})",
            "restored",
            lambda **how: self.engine.restore_files(self.session, cp.id, paths, **how),
        )

    def _ask(self, title: str, verb: str, act: Callable[..., Restoration]) -> None:
        """Keep ``act`` as pending with its dry run; on a refusal, the files and the dry
        run with ``--force``. Nothing to do, or an error, is only a message."""
        self.message = ""
        pending = Pending(title, verb, act)
        try:
            pending.plan = act(force=False, dry_run=True)
        except Conflict as exc:
            pending.refused = exc.by
            try:
                pending.plan = act(force=True, dry_run=True)
            except SnapshotterError as again:
                self.message = str(again)
                return
        except SnapshotterError as exc:
            self.message = str(exc)
            return
        self.pending = pending

    def confirm(self, force: bool = False) -> None:
        """Do what is pending (``force``: over a refusal; redo brings the edits back).

        What it would do is worked out again first: if that is no longer what
        the question showed (an agent recorded a checkpoint, a file changed),
        the question shows the new plan, or the refusal, and waits again.
        """
        pending = self.pending
        if pending is None or (pending.refused and not force):
            return
        try:
            fresh = pending.act(force=force, dry_run=True)
            if not _same(fresh, pending.plan):
                pending.plan = fresh
                self.message = "changed since you looked: this is what it would do now"
                return
            rep = pending.act(force=force, dry_run=False)
        except Conflict as exc:
            pending.refused = exc.by
            pending.plan = None
            self.message = "files changed since you looked: see what is refused"
            return
        except SnapshotterError as exc:
            self.message = str(exc)
            rep = None
        self.pending = None
        self._diffs.clear()
        self._text = (None, "")
        self.reload()
        if rep is not None:
            self.message = _done(pending.verb, rep)

    def cancel(self) -> None:
        self.pending = None
        self.message = "cancelled: nothing changed"


def _same(plan: Restoration, shown: Restoration | None) -> bool:
    """Whether a dry run would do what the question showed."""
    return shown is not None and (plan.checkpoint, plan.restored, plan.removed) == (
        shown.checkpoint,
        shown.restored,
        shown.removed,
    )


def _done(verb: str, rep: Restoration) -> str:
    """What an action did, and how to take it back."""
    ids = ", ".join(str(i) for i in rep.checkpoint)
    said = f"{verb} checkpoint {ids}: {len(rep.restored)} restored, {len(rep.removed)} removed"
    if verb == "redid":
        return f"{said}; u (undo) takes it back"
    return f"{said}; R (redo) puts it back"


def _printable(patch: bytes) -> bytes:
    """``patch`` with control bytes shown as ``^X``, then tabs expanded (8 columns, as
    a terminal sets them)."""
    shown = _CONTROLS.sub(lambda m: b"^" + bytes([m.group()[0] ^ 0x40]), patch)
    if b"\t" not in shown:
        return shown
    return b"\n".join(line.expandtabs(8) for line in shown.split(b"\n"))
