"""Persisted per-store state: checkpoints, pending starts and redo stacks.

One JSON document per store, replaced atomically under the store lock, so an
event handled in a fresh process sees exactly what an in-memory one would and
a crash leaves either the old or the new state. Objects are always written
before the state that names them, so no record ever points at nothing.
Session ids are only keys in this document, never parts of a path.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from snapshotter.errors import StoreError
from snapshotter.fileio import write_atomic
from snapshotter.models import Checkpoint, PathName, SkippedFile, now_iso
from snapshotter.store.shadow import Capture, Store

STATE_FILE = "state.json"
MAX_PENDING_TOOLS = 64


class Mark(BaseModel):
    """A capture remembered as the start of a span (turn, tool, session)."""

    tree: str
    skips: dict[PathName, tuple[str, int, int]] = Field(default_factory=dict)  # reason, size, mtime
    next_id: int  # the store's next checkpoint id when the span started
    tool_use_id: str | None = None
    tool_name: str = ""
    named: list[PathName] = Field(default_factory=list)  # paths the tool's input names
    command: str | None = None  # a shell tool's command, for the label
    at: int = 0  # time.time_ns() when its capture began (0: unknown)

    @classmethod
    def of(cls, capture: Capture, next_id: int, **extra: str | None) -> Mark:
        skips = {p: (s.reason, s.size, s.mtime_ns) for p, s in capture.skipped.items()}
        return cls(tree=capture.tree, skips=skips, next_id=next_id, at=capture.started, **extra)  # type: ignore[arg-type]

    def new_skips(self, later: Capture) -> list[SkippedFile]:
        """Skips of ``later`` that appeared or changed since this mark."""
        return [
            SkippedFile(path=p, reason=s.reason)
            for p, s in sorted(later.skipped.items())
            if self.skips.get(p) != (s.reason, s.size, s.mtime_ns)
        ]


class RedoEntry(BaseModel):
    op: Literal["undo", "reset", "restore"]
    checkpoints: list[int]
    paths: list[PathName]
    tree: str  # the state just before the undo: what redo puts back
    after: str  # the state the undo left: a redo refuses if the user changed it since


class Restoring(BaseModel):
    """The journal of a restore under way (see journal.py).

    Saved with the operation's redo entry before the first worktree write, so
    the next command can finish a killed undo, redo or reset (#13.1).
    """

    safety: str  # every path below as it was before: a path still so may be written
    steps: list[tuple[str, list[PathName]]]  # (tree, paths) to make match it, in order
    temps: dict[PathName, PathName]  # path → the temp file name its write may create (#13.4)


class SessionState(BaseModel):
    touched: str = Field(default_factory=lambda: now_iso())  # last event (for retention)
    last: Mark | None = None  # the session's latest capture, a fallback start
    turn: Mark | None = None
    turn_tools: list[int] = Field(default_factory=list)
    tools: list[Mark] = Field(default_factory=list)
    redo: list[RedoEntry] = Field(default_factory=list)
    prompt: str | None = None  # what the user asked last: the next turn's label


class State(BaseModel):
    version: Literal[1] = 1
    next_id: int = 1
    checkpoints: list[Checkpoint] = Field(default_factory=list)
    sessions: dict[str, SessionState] = Field(default_factory=dict)
    restoring: Restoring | None = None  # a restore's journal, until it is done

    def session(self, session_id: str) -> SessionState:
        return self.sessions.setdefault(session_id, SessionState())

    def by_id(self, checkpoint_id: int) -> Checkpoint | None:
        for cp in self.checkpoints:
            if cp.id == checkpoint_id:
                return cp
        return None

    def children(self, parent: int) -> list[Checkpoint]:
        return [cp for cp in self.checkpoints if cp.parent == parent]

    def add(self, checkpoint: Checkpoint) -> Checkpoint:
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


def load(store: Store) -> State:
    path = store.root / STATE_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return State()
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return State.model_validate_json(raw)
    except ValidationError as exc:
        raise StoreError(f"{path} is damaged ({exc.error_count()} errors); move it away") from exc


def save(store: Store, state: State, *, durable: bool = False) -> None:
    write_atomic(store.root / STATE_FILE, state.model_dump_json().encode(), durable=durable)


@contextmanager
def editing(store: Store) -> Iterator[State]:
    """Load, let the caller change, save — all under the store lock."""
    with store.locked():
        state = load(store)
        yield state
        save(store, state)


def restore_pending(root: Path) -> bool:
    """Whether state.json names a restore under way (read raw: no pydantic on every open).

    ``"restoring": {`` can only be that key: quotes inside paths are escaped.
    """
    import re

    try:
        return re.search(rb'"restoring"\s*:\s*\{', (root / "state.json").read_bytes()) is not None
    except OSError:
        return False
