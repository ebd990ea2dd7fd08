"""The public API's records, as pydantic models: what the API and ``--json`` hand out.

This is the API's shape, not the storage format: state.json is defined by
``history.records``' dataclasses alone (``history.codec`` derives its JSON).
A ``Checkpoint`` is built from its record in one place,
``history.records.Record.to_model``, field by field from the record's
attributes; its JSON is the stored checkpoint's, as the tests hold it.
``snapshotter hook`` never imports this module (issue 16.4).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer, ValidationInfo

from snapshotter import names
from snapshotter.config import Kind as Kind
from snapshotter.config import Status as Status
from snapshotter.config import now_iso as now_iso


def _name_from_json(value: object, info: ValidationInfo) -> object:
    return names.decode(value) if info.mode == "json" and isinstance(value, str) else value


# A worktree path: in memory the os.fsdecode'd name, in JSON (records and
# ``--json``) git's quoted form when its bytes are not UTF-8 (names.py).
PathName = Annotated[
    str, BeforeValidator(_name_from_json), PlainSerializer(names.encode, when_used="json")
]


class FileChange(BaseModel):
    """One file a checkpoint changed: its worktree path and how."""

    model_config = ConfigDict(frozen=True)

    path: PathName
    status: Status


class SkippedFile(BaseModel):
    """A file left out of a snapshot (too large, unreadable): undo cannot restore it."""

    model_config = ConfigDict(frozen=True)

    path: PathName
    reason: str


class Checkpoint(BaseModel):
    """One span in which files changed (a turn, or a tool call), undoable as a whole.

    ``before`` and ``after`` are tree ids in the shadow store; ``parent`` is the
    turn a tool checkpoint belongs to (SPEC §4).
    """

    id: int
    session_id: str
    kind: Kind
    label: str
    created_at: str = Field(default_factory=now_iso)
    before: str
    after: str
    files: list[FileChange]
    skipped: list[SkippedFile] = Field(default_factory=list)
    undone: bool = False
    parent: int | None = None
    # Worktree paths the tool's input named (``file_path``, ``path``, ...): such a
    # file belongs to this tool and its session, whoever else was running (SPEC §4).
    named_paths: list[PathName] = Field(default_factory=list)
    # The raw values behind ``label`` (issue 15): what the user asked, why the
    # turn ended, which tool ran and the shell command it was given.
    prompt: str | None = None
    reason: str | None = None
    tool_name: str | None = None
    command: str | None = None


class RestoreReport(BaseModel):
    """What one undo, redo or reset did (the ``--json`` document)."""

    model_config = ConfigDict(defer_build=True)  # never needed by ``snapshotter hook``

    checkpoint: list[int]
    restored: list[PathName]
    removed: list[PathName]
    skipped: list[PathName] = Field(default_factory=list)  # not in the snapshot: left alone
    dry_run: bool = False
