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
"""

from __future__ import annotations

import contextlib

from snapshotter.errors import StoreError
from snapshotter.fileio import TEMP_PREFIX
from snapshotter.history.records import Restoring, State, load, save
from snapshotter.store import restore as restore_mod
from snapshotter.store.shadow import Store


def run(
    store: Store, state: State, safety: str, steps: list[tuple[str, list[str]]]
) -> restore_mod.RestoreResult:
    """Save ``state`` (the operation's outcome) with its journal, then restore ``steps``.

    ``safety`` must hold the current bytes of every path in ``steps``
    (Store.hold). A failure after the journal is saved keeps the saved
    state: its redo entry is the way back from a half-done restore.
    """
    import secrets

    temps = {rel: f"{TEMP_PREFIX}{secrets.token_hex(6)}" for _t, paths in steps for rel in paths}
    state.restoring = Restoring(safety=safety, steps=steps, temps=temps)
    _save(store, state, durable=True)
    total = restore_mod.RestoreResult()
    try:
        for tree, paths in steps:
            _add(total, restore_mod.restore(store, tree, paths, safety=safety, temps=temps))
    except Exception:
        _close(store, state)
        raise
    # (A KeyboardInterrupt leaves the journal: the next command finishes the restore.)
    _close(store, state)
    total.restored.sort()
    total.removed.sort()
    return total


def recover(store: Store) -> None:
    """Finish a restore a killed process left half done; called under the store lock.

    Never raises: a path that cannot be restored now is left as it is, and
    the journal is closed so that one bad path cannot block every later open.
    """
    try:
        state = load(store)
    except StoreError:
        return
    journal = state.restoring
    if journal is None:
        return
    root = store.worktree.root
    restore_mod.remove_temps(root, journal.temps)  # first: their names are reused below
    for tree, paths in journal.steps:
        try:
            restore_mod.restore(
                store, tree, paths, safety=journal.safety, temps=journal.temps, tolerant=True
            )
        except Exception:  # e.g. a missing tree: one bad step must not block every open
            continue
    restore_mod.remove_temps(root, journal.temps)
    state.restoring = None
    with contextlib.suppress(OSError):  # (a full disk) the journal stays: tried again next open
        save(store, state)


def _close(store: Store, state: State) -> None:
    state.restoring = None
    _save(store, state)


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


def _add(total: restore_mod.RestoreResult, one: restore_mod.RestoreResult) -> None:
    total.restored.extend(one.restored)
    total.removed.extend(one.removed)
    total.kept.extend(one.kept)
    total.failed.extend(one.failed)
