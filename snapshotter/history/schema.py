"""state.json's schema, as pydantic models: the definition ``records`` reads and writes by.

``records`` keeps the state in plain objects and reads a document through
these models whenever it is not exactly as they would write it (an older or
hand-edited file, a damaged one): their ``ValidationError`` is then the error
reported. tests/test_state_fast_path.py holds the two readings to each other.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from snapshotter.config import now_iso
from snapshotter.models import Checkpoint, PathName


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


class RedoEntry(BaseModel):
    op: Literal["undo", "reset", "restore"]
    checkpoints: list[int]
    paths: list[PathName]
    tree: str  # the state just before the undo: what redo puts back
    after: str  # the state the undo left: a redo refuses if the user changed it since


class Restoring(BaseModel):
    """The journal of a restore under way (see journal.py)."""

    safety: str  # every path below as it was before: a path still so may be written
    steps: list[tuple[str, list[PathName]]]  # (tree, paths) to make match it, in order
    temps: dict[PathName, PathName]  # path → the temp file name its write may create (#13.4)
    op: Literal["undo", "redo", "reset", "restore"] | None = None  # for recovery's line (#21.4)
    checkpoints: list[int] = Field(default_factory=list)
    rollback: bool = False  # put each step's paths back as ``safety`` has them (#21.4)


class SessionState(BaseModel):
    touched: str = Field(default_factory=now_iso)  # last event (for retention)
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
