"""What a checkpoint is: its fields, defined once for the store and the API.

These plain dataclasses are state.json's checkpoints (``history.records``
keeps them in its ``State``; ``codec`` derives their JSON) and the
source of the API's pydantic models (``models`` derives ``Checkpoint``,
``FileChange`` and ``SkippedFile`` from them, field by field). So adding a
checkpoint field here is the whole edit, for the document and for ``--json``.
They live at the bottom so that both sides can see them, and import no
pydantic: a hook process records checkpoints on every event (issue 16.4).
``Restoration`` is what an undo, redo, reset or restore did, likewise the source
of the API's ``RestoreReport``: a restore from the shell loads no pydantic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from snapshotter.config import Kind, Status, now_iso
from snapshotter.names import Name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.models import Checkpoint, RestoreReport


@dataclass(frozen=True)
class Change:
    """One file a checkpoint changed: its worktree path and how."""

    path: Name
    status: Status


@dataclass(frozen=True)
class Skipped:
    """A file left out of a snapshot (too large, unreadable): undo cannot restore it."""

    path: Name
    reason: str


# The reason of an ignored file (or directory, ``name/``) the walk had seen that a
# span deleted: never in the store, so undo cannot bring it back (#26.3).
NOT_HELD_IGNORED = "not held: ignored"


@dataclass(kw_only=True)
class Record:
    """One span in which files changed (a turn, or a tool call), undoable as a whole.

    ``before`` and ``after`` are tree ids in the shadow store; ``parent`` is the
    turn a tool checkpoint belongs to (SPEC §4).
    """

    id: int
    session_id: str
    kind: Kind
    label: str
    created_at: str = field(default_factory=now_iso)
    before: str
    after: str
    files: list[Change]
    skipped: list[Skipped] = field(default_factory=list)
    undone: bool = False
    parent: int | None = None
    # Worktree paths the tool's input named (``file_path``, ``path``, ...): such a
    # file belongs to this tool and its session, whoever else was running (SPEC §4).
    named_paths: list[Name] = field(default_factory=list)
    # The raw values behind ``label`` (issue 15): what the user asked, why the
    # turn ended, which tool ran and the shell command it was given.
    prompt: str | None = None
    reason: str | None = None
    tool_name: str | None = None
    command: str | None = None

    def to_model(self) -> Checkpoint:
        """The API's ``Checkpoint`` of this record (read from its attributes, field by field)."""
        from snapshotter.models import Checkpoint

        return Checkpoint.model_validate(self, from_attributes=True)


@dataclass
class Restoration:
    """What one undo, redo, reset or restore did (the ``--json`` document)."""

    checkpoint: list[int]
    restored: list[Name]
    removed: list[Name]
    skipped: list[Name] = field(default_factory=list)  # not in the snapshot: left alone
    # Ignored files (``name/``: directories) the checkpoints deleted: never stored, so
    # not brought back (#26.3).
    not_held: list[Name] = field(default_factory=list)
    dry_run: bool = False

    def to_model(self) -> RestoreReport:
        """The API's ``RestoreReport`` of this record."""
        from snapshotter.models import RestoreReport

        return RestoreReport.model_validate(self, from_attributes=True)
