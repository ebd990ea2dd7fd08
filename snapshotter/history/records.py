"""The state's records: checkpoints, pending spans, redo stacks, a restore's journal.

These dataclasses, with ``checkpoints``' (the checkpoints themselves, which
the API's models share), are state.json's one definition: ``codec`` derives
the document's JSON from their fields (a ``Name`` field is a worktree path)
and ``state_file`` loads and saves it. Adding a field here is the whole edit.
Session ids are only keys in the document, never parts of a path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from snapshotter.checkpoints import Record, Skipped
from snapshotter.config import now_iso
from snapshotter.names import Name
from snapshotter.store.skips import Why

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.store.capture import Capture

MAX_PENDING_TOOLS = 64

RedoOp = Literal["undo", "reset", "restore"]
JournalOp = Literal["undo", "redo", "reset", "restore"]


@dataclass(kw_only=True)
class Mark:
    """A capture remembered as the start of a span (turn, tool, session)."""

    tree: str
    skips: dict[Name, tuple[str, int, int]] = field(default_factory=dict)  # Why, size, mtime
    next_id: int  # the store's next checkpoint id when the span started
    tool_use_id: str | None = None
    tool_name: str = ""
    named: list[Name] = field(default_factory=list)  # paths the tool's input names
    command: str | None = None  # a shell tool's command, for the label
    at: int = 0  # time.time_ns() when its capture began (0: unknown)
    # Ignored paths its walk saw (a directory ends in ``/``); None: not known (#26.3).
    ignored: list[Name] | None = None

    @classmethod
    def of(cls, capture: Capture, next_id: int) -> Mark:
        skips = {p: (s.why.value, s.size, s.mtime_ns) for p, s in capture.skipped.items()}
        return cls(
            tree=capture.tree,
            skips=skips,
            next_id=next_id,
            at=capture.started,
            ignored=capture.ignored,
        )

    def ignored_gone(self, later: Capture) -> list[str]:
        """Ignored paths this mark's walk saw and ``later``'s did not: deleted, or no
        longer ignored or no longer looked at (the caller tells which)."""
        if self.ignored is None or later.ignored is None:
            return []
        now = set(later.ignored)
        return [p for p in self.ignored if p not in now]

    def new_skips(self, later: Capture) -> list[Skipped]:
        """Skips of ``later`` that appeared or changed since this mark: compared by
        kind, size and time, never by the sentence (rewording one is no new skip)."""
        return [
            Skipped(p, s.reason)
            for p, s in sorted(later.skipped.items())
            if not self._kept(p, s.why, s.size, s.mtime_ns)
        ]

    def _kept(self, path: str, why: Why, size: int, mtime_ns: int) -> bool:
        kept = self.skips.get(path)
        return kept is not None and kept[1:] == (size, mtime_ns) and Why.of(kept[0]) == why


@dataclass(kw_only=True)
class RedoEntry:
    op: RedoOp
    checkpoints: list[int]
    paths: list[Name]
    tree: str  # the state just before the undo: what redo puts back
    after: str  # the state the undo left: a redo refuses if the user changed it since
    at: int = 0  # time.time_ns() of the undo: which session a plain redo acts on (#26.1)


@dataclass(kw_only=True)
class Restoring:
    """The journal of a restore under way (see journal.py).

    Saved with the operation's redo entry before the first worktree write, so
    the next command can finish a killed undo, redo or reset (#13.1).
    """

    safety: str  # every path below as it was before: a path still so may be written
    steps: list[tuple[str, list[Name]]]  # (tree, paths) to make match it, in order
    temps: dict[Name, Name]  # path → the temp file name its write may create (#13.4)
    op: JournalOp | None = None  # what it is part of, for the line recovery prints (#21.4)
    checkpoints: list[int] = field(default_factory=list)
    # Rolling it back (#21.4: it failed or was cancelled): each step's paths go
    # back to ``safety`` while they are as the step's tree has them.
    rollback: bool = False


@dataclass(kw_only=True)
class SessionState:
    touched: str = field(default_factory=now_iso)  # last event (for retention)
    last: Mark | None = None  # the session's latest capture, a fallback start
    turn: Mark | None = None
    turn_tools: list[int] = field(default_factory=list)
    tools: list[Mark] = field(default_factory=list)
    redo: list[RedoEntry] = field(default_factory=list)
    prompt: str | None = None  # what the user asked last: the next turn's label


@dataclass(kw_only=True)
class State:
    """The whole document, state.json (``state_file`` loads and saves it)."""

    version: Literal[1] = 1
    next_id: int = 1
    checkpoints: list[Record] = field(default_factory=list)
    sessions: dict[str, SessionState] = field(default_factory=dict)
    restoring: Restoring | None = None  # a restore's journal, until it is done

    def session(self, session_id: str) -> SessionState:
        return self.sessions.setdefault(session_id, SessionState())

    def by_id(self, checkpoint_id: int) -> Record | None:
        for cp in self.checkpoints:
            if cp.id == checkpoint_id:
                return cp
        return None

    def children(self, parent: int) -> list[Record]:
        return [cp for cp in self.checkpoints if cp.parent == parent]

    def add(self, checkpoint: Record) -> Record:
        self.checkpoints.append(checkpoint)
        self.next_id = checkpoint.id + 1
        self.session(checkpoint.session_id).redo.clear()  # a new change ends redo
        return checkpoint

    def live_trees(self) -> set[str]:
        """Every tree a checkpoint, a pending span or a redo entry still needs."""
        trees: set[str] = set()
        for cp in self.checkpoints:
            trees.update((cp.before, cp.after))
        for sess in self.sessions.values():
            marks = [sess.last, sess.turn, *sess.tools]
            trees.update(m.tree for m in marks if m is not None)
            for entry in sess.redo:
                trees.update((entry.tree, entry.after))
        if self.restoring is not None:
            trees.add(self.restoring.safety)
            trees.update(tree for tree, _paths in self.restoring.steps)
        return trees
