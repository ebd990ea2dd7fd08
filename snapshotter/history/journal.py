"""A restore's journal: the way back is durable before the first worktree write.

An undo, redo or reset works out everything first (the safety tree holding
every path it will touch, its redo entry, the checkpoints it marks, the temp
file names it may create) and saves it as one state, with the journal, before
it writes a single file (#13.1, #13.2: a full disk fails here, with the
worktree untouched). A kill at any instant after that leaves the journal in
state.json; the next process to open the store (any command, any hook)
finishes the restore: a path still as the safety tree has it is written, a
path already restored is left, and a path the user changed since is never
touched. Only the temp names the journal lists are ever removed (#13.4).

A restore that fails part way (a full worktree disk, EACCES, EIO) or that
Ctrl-C cancels is rolled back instead (#21.4): the records before the
operation are saved with the journal turned round (``rollback``), every path
already written goes back to the safety tree, and the records say "not
undone". What cannot be put back now (the disk is still full) stays in that
journal, for the next open to finish. Recovery returns one line saying what
it did; the CLI prints it and a hook logs it (the engine prints nothing).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
from collections.abc import Iterator

from snapshotter.errors import (
    RestoreCancelled,
    RestoreFailed,
    SnapshotterError,
    StoreError,
    WorktreeWriteFailed,
)
from snapshotter.fileio import temp_name
from snapshotter.history.records import JournalOp, Restoring, State
from snapshotter.history.state_file import STATE_FILE, load, parse, save
from snapshotter.store import restore as restore_mod
from snapshotter.store.shadow import Store

_DONE = {"undo": "undone", "redo": "redone", "reset": "reset", "restore": "restored"}
_NO_SPACE = (errno.ENOSPC, errno.EDQUOT)


def run(
    store: Store,
    state: State,
    safety: str,
    steps: list[tuple[str, list[str]]],
    *,
    op: JournalOp,
    checkpoints: list[int],
) -> restore_mod.RestoreResult:
    """Save ``state`` (the operation's outcome) with its journal, then restore ``steps``.

    ``safety`` must hold the current bytes of every path in ``steps``
    (Store.hold). state.json must still hold the records before the
    operation: a failure or Ctrl-C after the journal is saved rolls the
    worktree back and reinstates them (RestoreFailed, RestoreCancelled).
    """
    before = _document(store)
    temps = {rel: temp_name() for _t, paths in steps for rel in paths}
    journal = Restoring(
        safety=safety, steps=steps, temps=temps, op=op, checkpoints=list(checkpoints)
    )
    state.restoring = journal
    total = restore_mod.RestoreResult()
    saved = False
    try:
        with _sigint_held():  # the journal is on disk, or not, when Ctrl-C counts
            _save(store, state, durable=True)
            saved = True
        for tree, paths in steps:
            _add(total, restore_mod.restore(store, tree, paths, safety=safety, temps=temps))
    except (Exception, KeyboardInterrupt) as exc:
        if not saved:
            raise  # nothing was written, and state.json is as before
        error = _roll_back(store, before, journal, exc)
        if error is exc:
            raise
        raise error from exc
    _close(store, state)
    total.restored.sort()
    total.removed.sort()
    return total


def recover(store: Store) -> str | None:
    """Finish (or finish rolling back) a restore a killed process left half done.

    Called under the store lock. Returns one line saying what it did and what
    ``redo``/``undo`` would do next, or None when there was nothing to do.
    Never raises: a path that cannot be written now (a full disk) keeps the
    journal, narrowed to those paths, for the next open; a step whose tree is
    missing is dropped, so it cannot block every later open.
    """
    try:
        state = load(store)
    except StoreError:
        return None
    journal = state.restoring
    if journal is None:
        return None
    root = store.worktree.root
    restore_mod.remove_temps(root, journal.temps)  # first: their names are reused below
    failed = _replay(store, journal)
    if not failed:
        restore_mod.remove_temps(root, journal.temps)
    state.restoring = _narrowed(journal, failed)
    try:
        save(store, state)
    except OSError:  # (a full data disk) the journal stays: tried again next open
        return f"could not finish {_what(journal)}: cannot save {store.root / STATE_FILE}"
    return _recovered_line(journal, failed)


# -- rolling back ----------------------------------------------------------------------------


def _roll_back(
    store: Store, before: bytes | None, journal: Restoring, exc: BaseException
) -> Exception:
    """Put the worktree and the records back as they were; the error to raise instead.

    Ctrl-C waits meanwhile, so a second one cannot leave the rollback half done.
    """
    back = dataclasses.replace(journal, rollback=True)
    with _sigint_held(then_raise=False):
        previous = _previous_state(store, before)
        previous.restoring = back
        journalled = _try_save(store, previous, durable=True)
        failed = _replay(store, back)
        if not failed:
            restore_mod.remove_temps(store.worktree.root, back.temps)
        previous.restoring = _narrowed(back, failed)
        closed = _try_save(store, previous)
    outcome = _outcome(journal, failed, saved=journalled or closed, cause=exc)
    op = journal.op or "restore"
    if isinstance(exc, KeyboardInterrupt):
        return RestoreCancelled(op, outcome)
    if isinstance(exc, WorktreeWriteFailed):
        return RestoreFailed(op, exc.path, exc.cause, outcome)
    if isinstance(exc, SnapshotterError):
        return RestoreFailed(op, None, str(exc), outcome)
    assert isinstance(exc, Exception)
    return exc  # a bug: reported as one, with the worktree rolled back


def _outcome(journal: Restoring, failed: list[str], *, saved: bool, cause: BaseException) -> str:
    op = journal.op or "restore"
    if not saved:  # state.json still holds the outcome and its journal
        return f"the records could not be saved, so the next snapshotter command finishes the {op}"
    if not failed:
        return f"nothing was {_DONE[op]} (the worktree is as before)"
    space = isinstance(cause, WorktreeWriteFailed) and cause.errno in _NO_SPACE
    fix = "free space" if space else "fix that"
    return (
        f"the worktree is partly restored ({len(failed)} files not yet put back): "
        f"{fix}, then any snapshotter command rolls it back"
    )


def _previous_state(store: Store, before: bytes | None) -> State:
    if before is None:
        return State()
    return parse(before, store.root / STATE_FILE)


def _document(store: Store) -> bytes | None:
    """state.json's bytes as they are before the operation (None: no file yet)."""
    try:
        return (store.root / STATE_FILE).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StoreError(f"cannot read {store.root / STATE_FILE}: {exc.strerror}") from exc


# -- replaying a journal ---------------------------------------------------------------------


def _replay(store: Store, journal: Restoring) -> list[str]:
    """Restore the journal's steps (forward, or back to ``safety``); the paths that failed."""
    failed: list[str] = []
    for tree, paths in journal.steps:
        source, guard = (journal.safety, tree) if journal.rollback else (tree, journal.safety)
        try:
            done = restore_mod.restore(
                store, source, paths, safety=guard, temps=journal.temps, tolerant=True
            )
        except Exception:  # e.g. a missing tree: one bad step must not block every open
            continue
        failed.extend(done.failed)
    return failed


def _narrowed(journal: Restoring, failed: list[str]) -> Restoring | None:
    """The journal of what is left to do (None: all done)."""
    if not failed:
        return None
    left = set(failed)
    steps = [(tree, [p for p in paths if p in left]) for tree, paths in journal.steps]
    return dataclasses.replace(
        journal,
        steps=[(tree, paths) for tree, paths in steps if paths],
        temps={p: t for p, t in journal.temps.items() if p in left},
    )


def _what(journal: Restoring) -> str:
    ids = journal.checkpoints
    if journal.op is None:
        return "a restore"
    noun = "checkpoint" if len(ids) == 1 else "checkpoints"
    of = f" of {noun} {', '.join(map(str, ids))}" if ids else ""
    if journal.op == "restore":
        of = f" of files from {noun} {', '.join(map(str, ids))}" if ids else " of files"
    article = "an" if journal.op == "undo" else "a"
    return f"{article} {journal.op}{of}"


def _recovered_line(journal: Restoring, failed: list[str]) -> str:
    what, count = _what(journal), sum(len(paths) for _tree, paths in journal.steps)
    if failed:
        verb = "rolling back" if journal.rollback else "finishing"
        return (
            f"could not finish {verb} {what} that was interrupted ({len(failed)} of "
            f"{count} files cannot be written yet); the next snapshotter command tries again"
        )
    op = journal.op or "restore"
    if journal.rollback:
        return (
            f"rolled back {what} that failed or was interrupted ({count} files); "
            f"nothing was {_DONE[op]}, `snapshotter {op}` tries again"
        )
    back = "undo" if op == "redo" else "redo"
    return (
        f"finished {what} that was interrupted ({count} files); `snapshotter {back}` takes it back"
    )


# -- saving and signals ----------------------------------------------------------------------


def _close(store: Store, state: State) -> None:
    state.restoring = None
    _save(store, state)


def _try_save(store: Store, state: State, *, durable: bool = False) -> bool:
    try:
        save(store, state, durable=durable)
    except OSError:
        return False
    return True


def _save(store: Store, state: State, *, durable: bool = False) -> None:
    """Save, with a full or read-only disk as one clear error.

    ``durable`` is the journal's save, before any write: the worktree is as it was.
    """
    try:
        save(store, state, durable=durable)
    except OSError as exc:
        untouched = "; the worktree was not changed" if durable else ""
        raise StoreError(
            f"cannot write to the store {store.root}: {exc.strerror or exc}{untouched}"
        ) from exc


@contextlib.contextmanager
def _sigint_held(*, then_raise: bool = True) -> Iterator[None]:
    """Ctrl-C waits until the block is done; ``then_raise``: it counts after it.

    Only Python's own Ctrl-C handler is held back (not a pager's SIG_IGN), and
    only in the main thread, the one place a handler can be set.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    got: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, _frame: got.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if got and then_raise:
        raise KeyboardInterrupt


def _add(total: restore_mod.RestoreResult, one: restore_mod.RestoreResult) -> None:
    total.restored.extend(one.restored)
    total.removed.extend(one.removed)
    total.kept.extend(one.kept)
    total.failed.extend(one.failed)
