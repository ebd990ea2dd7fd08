"""The engine: the one door to one worktree's snapshots and history (SPEC §8).

Everything a runtime or the CLI does to a worktree is a method of ``Engine``:
capture, list, show, diff, undo, redo, reset, restore, checkpoint, gc, and
the recorder a hook drives. cli/ and hooks/ import nothing below this layer
(pyproject's import contract); what spans the data directory rather than one
worktree is in this package's other modules (sessions, moved, maintenance).
The engine prints nothing: what it has to say comes back as values.

Each method imports the history it needs when called, so ``snapshotter hook``
(one process per agent event) loads only what capturing needs (issue 16.4).

Over 400 lines on purpose: it is the whole door, one short method an
operation with its contract, and splitting it would hide one of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict, Unpack, overload

from snapshotter.config import DEFAULT_MAX_FILES, DEFAULT_MAX_NEW_FILE_SIZE, Actor, data_dir
from snapshotter.errors import NothingToDo
from snapshotter.git.worktree import find_worktree
from snapshotter.history.state_file import restore_pending
from snapshotter.store.capture import CaptureOptions
from snapshotter.store.changes import FileDiff
from snapshotter.store.shadow import Store
from snapshotter.store.workspace import Workspace

if TYPE_CHECKING:
    from snapshotter.checkpoints import Record, Restoration
    from snapshotter.history.maintenance import GcReport
    from snapshotter.history.oplog import Operation as Operation
    from snapshotter.history.recorder import Recorder
    from snapshotter.history.retention import Policy
    from snapshotter.models import Checkpoint
    from snapshotter.store.resident import Resident

__all__ = [
    "Actor",
    "CheckpointDiff",
    "Engine",
    "FileDiff",
    "OpenOptions",
    "RestoreOptions",
    "commit_all",
    "load_commands",
    "open_existing",
    "worktree_root",
]


@dataclass(frozen=True)
class CheckpointDiff:
    """What ``snapshotter diff`` shows of a checkpoint.

    From its ``before`` tree to ``to`` (its ``after``, or a fresh capture when
    ``to_now``); ``files`` the paths that differ and are shown; ``skipped``
    (path, reason) of files the fresh capture left out, so they are not in it.
    """

    checkpoint: Record  # a ``Checkpoint`` model, or its stored record
    to: str
    to_now: bool
    files: list[FileDiff]
    skipped: list[tuple[str, str]]


class OpenOptions(TypedDict, total=False):
    """How ``Engine.open`` opens a worktree's store: each may be left out."""

    data_dir_path: str | os.PathLike[str] | None  # default: config.data_dir's
    max_new_file_size: int  # a larger new file is skipped; default DEFAULT_MAX_NEW_FILE_SIZE
    max_files: int | None  # a cap on the worktree's files; default DEFAULT_MAX_FILES (none)
    resident: Resident | None  # a long-lived process's watchers and caches (the hook server's)


class RestoreOptions(TypedDict, total=False):
    """How an undo, redo, reset or restore goes: each may be left out (default False).

    Passed on as they are to history/undo.py, whose parameters they are.
    """

    force: bool  # write over files edited since (redo brings the edits back); else Conflict
    dry_run: bool  # change nothing: the report says what it would do


class Engine(Workspace):
    """Snapshots and history of the worktree containing a directory, limited to its subtree.

    The API other runtimes build on (SPEC §8). From the Workspace: ``capture``,
    ``changes``, ``diff``, ``restore`` (files from a tree), ``entry``. Here:
    opening by directory, and the history of checkpoints and sessions.
    ``recovered``: what opening it did about a restore a killed process left
    half done (one line, for the caller to show), or None.
    """

    recovered: str | None = None

    @overload
    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str] = ".",
        *,
        create: Literal[True] = True,
        **options: Unpack[OpenOptions],
    ) -> Engine: ...

    @overload
    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str] = ".",
        *,
        create: bool,
        **options: Unpack[OpenOptions],
    ) -> Engine | None: ...

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str] = ".",
        *,
        create: bool = True,
        **options: Unpack[OpenOptions],
    ) -> Engine | None:
        """Open the store of the worktree containing ``directory``, as ``options`` say
        (``OpenOptions``: the data directory, the capture's limits, a resident).

        Creates the store on first use, so with the default ``create=True``
        the result is always an engine. With ``create=False`` it is None when
        no snapshot was ever taken there. Raises NotAWorktree outside git.
        """
        unknown = options.keys() - OpenOptions.__optional_keys__
        if unknown:  # a misspelt option is an error, as it would be with named parameters
            raise TypeError(f"Engine.open() got unexpected options: {', '.join(sorted(unknown))}")
        worktree = find_worktree(directory)
        notes: list[str] = []
        store = Store.open(
            data_dir(options.get("data_dir_path")),
            worktree,
            create=create,
            recover=lambda store: _finish_restore(store, notes),
            resident=options.get("resident"),
        )
        if store is None:
            return None
        capture = CaptureOptions.for_store(
            store.root,
            options.get("max_new_file_size", DEFAULT_MAX_NEW_FILE_SIZE),
            options.get("max_files", DEFAULT_MAX_FILES),
        )
        engine = cls(worktree, store, capture)
        engine.recovered = notes[0] if notes else None
        return engine

    @property
    def data_dir(self) -> Path:
        """The data directory this engine's store lives in (its hook.log, its sessions)."""
        return self.store.root.parent.parent

    @property
    def store_dir(self) -> Path:
        """This worktree's store directory (``doctor`` shows it; hooks leave marks there)."""
        return self.store.root

    def has_snapshot(self) -> bool:
        """Whether any capture of this worktree was taken before (by anyone)."""
        return self.store.last_tree() is not None

    # -- recording ---------------------------------------------------------------------

    def recorder(self, session_id: str) -> Recorder:
        """What turns a session's lifecycle events into checkpoints (SPEC §4)."""
        from snapshotter.history.recorder import Recorder

        return Recorder(self, session_id)

    def checkpoint(
        self, label: str = "", session_id: str = "cli", *, by: Actor = "shell"
    ) -> Checkpoint | None:
        """Record what changed since the last snapshot as one undoable checkpoint.

        With a ``label``, always: a save point even when nothing changed, which
        ``reset`` and ``diff`` find by that label. Without one, None when
        nothing changed or when there was no snapshot before (this capture is
        then the baseline the next checkpoint starts from). ``by``: who asked, for
        the operation log.
        """
        from snapshotter.history import oplog

        recorded = self.recorder(session_id).checkpoint(label)
        if recorded is None:
            return None
        oplog.log_checkpoint(self.store, by, session_id, recorded.id, len(recorded.files))
        return recorded.to_model()

    def close_interrupted(self, session_id: str) -> None:
        """Close the turn or tool the session left open (Esc: no ``Stop``), as the next
        prompt would, so what it changed can be listed and undone (#21.6)."""
        from snapshotter.history.lookup import close_interrupted

        close_interrupted(self, self.data_dir, session_id)

    # -- looking -------------------------------------------------------------------------

    def resolve_session(self, *preferred: str | None) -> str:
        """The first of ``preferred`` that is set, else the session with the newest
        checkpoint (or open turn) here; NothingToDo when there is none."""
        from snapshotter.history.lookup import resolve_session

        return resolve_session(self.store, *preferred)

    def agent_session(self, *candidates: str | None) -> str:
        """The session an agent's request acts on: the first of ``candidates`` this
        worktree's history knows (a runtime's session id may be one it never reported
        to the hooks: Claude Code's under ``--continue``), else the default session
        (the one with an open turn or the newest checkpoint); NothingToDo when none."""
        from snapshotter.history.lookup import known_session, resolve_session

        known = next((s for s in candidates if s and known_session(self.store, s)), None)
        return resolve_session(self.store, known)

    def operations(self, session_id: str | None = None) -> list[Operation]:
        """The operation log, oldest first: who undid, redid, reset, restored or
        checkpointed what (one session's, or everyone's when None)."""
        from snapshotter.history import oplog

        return oplog.read(self.store, session_id)

    def named_session(self, given: str) -> str:
        """The session ``given`` names: its id, or a prefix of one id only (as git
        takes object ids); NotFound, with the closest names, for any other."""
        from snapshotter.history.lookup import named_session

        return named_session(self.store, given)

    def acting_session(self, session_id: str, op: Literal["undo", "redo"]) -> str:
        """Which of ``session_id`` and the user's own checkpoints (session ``cli``) a
        plain undo or redo acts on: the one with the newer thing to take back."""
        from snapshotter.history.lookup import beside_manual

        return beside_manual(self.store, session_id, op)

    def named_checkpoint(self, name: str) -> Checkpoint:
        """The checkpoint ``name`` names: an id, else the newest one labelled ``name``
        (``checkpoint -m``'s message, or what the user asked); NotFound else."""
        return self.named_record(name).to_model()

    def checkpoints(self, session_id: str | None = None) -> list[Checkpoint]:
        """Checkpoints ordered by id: one session's, or every session's when None."""
        return [record.to_model() for record in self.records(session_id)]

    def show(self, checkpoint_id: int | None, session_id: str | None = None) -> Checkpoint:
        """Checkpoint ``checkpoint_id``, in any session (NotFound if there is none); without
        an id, the newest top-level one of ``session_id`` (default: the newest session)."""
        return self.record(checkpoint_id, session_id).to_model()

    # The same three as the stored records: the attributes of the models above,
    # without building them. The CLI's text output reads these, so that `list`,
    # `show` and `diff` never load pydantic (~120 ms of a command's start-up).

    def named_record(self, name: str) -> Record:
        """``named_checkpoint``, as its stored record."""
        from snapshotter.history.lookup import by_name

        return by_name(self.store, name)

    def records(self, session_id: str | None = None) -> list[Record]:
        """``checkpoints``, as their stored records."""
        from snapshotter.history.lookup import list_checkpoints

        return list_checkpoints(self.store, session_id)

    def record(self, checkpoint_id: int | None, session_id: str | None = None) -> Record:
        """``show``, as its stored record."""
        from snapshotter.history.lookup import find_checkpoint

        return find_checkpoint(self, checkpoint_id, session_id)

    def checkpoint_diff(
        self, checkpoint: Record, *, to_now: bool = False, until: Record | None = None
    ) -> CheckpointDiff:
        """What ``checkpoint`` changed: its own files, before → after it; or with
        ``to_now``, every file that differs from its before to the worktree now
        (a fresh capture), or with ``until``, to after that checkpoint, within
        the directory its session works in."""
        from snapshotter.history.lookup import diff_end
        from snapshotter.store.changes import file_diffs

        to, keep, skipped = diff_end(self, self.data_dir, checkpoint, to_now, until)
        files = file_diffs(self.store, checkpoint.before, to, keep)
        return CheckpointDiff(checkpoint, to, to_now, files, skipped)

    def file_diffs(self, before: str, after: str) -> list[FileDiff]:
        """Every path that differs between two trees, with its line counts, sizes and
        patches: what ``diff`` prints as text, as data (a ``--stat`` is drawn from it)."""
        from snapshotter.store.changes import file_diffs

        return file_diffs(self.store, before, after)

    # -- restoring (each one undoable: SPEC §5) ------------------------------------------

    # Each one done (not a dry run) is logged with ``by``, who asked (history/oplog.py).

    def undo(
        self, session_id: str, *, by: Actor = "shell", **how: Unpack[RestoreOptions]
    ) -> Restoration:
        """Revert the session's newest checkpoint (a turn with its tools).

        Conflict when a file it would touch changed since, unless ``force``;
        NothingToDo when nothing is left to undo.
        """
        from snapshotter.history.undo import undo_last

        return self._logged("undo", by, session_id, undo_last(self, session_id, **how))

    def redo(
        self, session_id: str, *, by: Actor = "shell", **how: Unpack[RestoreOptions]
    ) -> Restoration:
        """Put back exactly what the session's last undo, reset or restore took away."""
        from snapshotter.history.undo import redo

        return self._logged("redo", by, session_id, redo(self, session_id, **how))

    def reset(
        self,
        session_id: str,
        keep: int | None,
        *,
        by: Actor = "shell",
        **how: Unpack[RestoreOptions],
    ) -> Restoration:
        """Revert every checkpoint of the session after ``keep`` (None: all of them)."""
        from snapshotter.history.undo import reset

        return self._logged("reset", by, session_id, reset(self, session_id, keep, **how))

    def restore_files(
        self,
        session_id: str,
        checkpoint_id: int,
        paths: list[str],
        *,
        after: bool = False,
        by: Actor = "shell",
        **how: Unpack[RestoreOptions],
    ) -> Restoration:
        """Put worktree ``paths`` back as they were before checkpoint ``checkpoint_id``
        (``after``: after it); a directory takes the files below it. Part of an undo,
        with its guarantees: refused over later edits unless ``force``, and redo
        puts everything back."""
        from snapshotter.history.undo import restore_files

        done = restore_files(self, session_id, checkpoint_id, paths, after=after, **how)
        return self._logged("restore", by, session_id, done)

    def _logged(self, op: str, by: Actor, session_id: str, rep: Restoration) -> Restoration:
        from snapshotter.history import oplog

        oplog.log_restore(self.store, op, by, session_id, rep)
        return rep

    # -- keeping the store small ---------------------------------------------------------

    def gc(
        self,
        *,
        dry_run: bool = False,
        budget_s: float | None = None,
        policy: Policy | None = None,
    ) -> GcReport:
        """Apply retention (``policy``; default: the default one) and compact the store.

        ``budget_s`` bounds it as session_end's gc is bounded: a full repack only
        when needed. ``dry_run`` changes nothing and says what it would do.
        """
        from snapshotter.history.maintenance import collect

        return collect(self, dry_run=dry_run, budget_s=budget_s, policy=policy)

    def gc_due(self, policy: Policy | None = None) -> bool:
        """Whether a bounded gc (``gc(budget_s=...)``) would change anything: session_end
        starts no gc process for a store with nothing to drop or compact."""
        from snapshotter.history.maintenance import due
        from snapshotter.history.retention import Policy

        return due(self.store, policy or Policy())


def _finish_restore(store: Store, notes: list[str]) -> None:
    """Finish a restore a killed process left half done (the journal), if there is one;
    decided from state.json's bytes, so a capture never loads the restore code.
    What it did goes to ``notes``: the engine writes nothing to stderr itself."""
    if restore_pending(store.root):
        from snapshotter.history import journal

        note = journal.recover(store)
        if note is not None:
            notes.append(note)


def open_existing(directory: str | os.PathLike[str], **options: Unpack[OpenOptions]) -> Engine:
    """The engine of a worktree that already has snapshots; NothingToDo otherwise."""
    engine = Engine.open(directory, create=False, **options)
    if engine is None:
        raise NothingToDo("no snapshots recorded for this worktree yet")
    return engine


def worktree_root(directory: str | os.PathLike[str]) -> Path:
    """The top directory of the git worktree containing ``directory``; NotAWorktree else."""
    return find_worktree(directory).root


def commit_all(root: Path, message: str, *, name: str, email: str) -> str:
    """Make ``root`` a git repository (if it is not one) and commit every file its
    ignore rules keep, with no git binary: the demo's throwaway repository."""
    from snapshotter.git.commit import commit_all as commit

    return commit(root, message, name=name, email=email)


def load_commands() -> None:
    """Import what looking at and restoring history needs, so a process that forks
    commands (the hook server) loads it once instead of in every child."""
    import snapshotter.engine.moved
    import snapshotter.history.lookup
    import snapshotter.history.oplog  # every undo, redo, reset and restore logs itself
    import snapshotter.history.undo
    import snapshotter.store.restore  # noqa: F401
    from snapshotter.git.objects import preload

    preload()  # libgit2: every restore reads objects (a first event waits for none of it)
