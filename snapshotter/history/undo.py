"""Undo, redo, reset and restore (SPEC §5): restores that are themselves undoable.

Every operation first takes its safety snapshot (safety.py), holding the
current bytes of every path it will touch whatever ignore rules say; with no
hook server running it reads those paths only, never walking the tree. Undo
and reset refuse when a file they would touch changed after its checkpoint
(conflicts.py), and push the safety snapshot on the session's redo stack, so
redo puts back the exact state before the undo, later user edits included.
The outcome is saved with a journal before the first file is written
(journal.py); a restore that fails part way or is cancelled is rolled back
there, and the records before the operation are saved again.
"""

from __future__ import annotations

import time
from collections import defaultdict

from snapshotter.checkpoints import NOT_HELD_IGNORED, Record, Restoration
from snapshotter.config import MANUAL_SESSION
from snapshotter.errors import NotFound, NothingToDo, StoreError
from snapshotter.history import journal
from snapshotter.history.conflicts import refuse_changed
from snapshotter.history.lookup import default_in
from snapshotter.history.lost import require
from snapshotter.history.records import Mark, RedoEntry, RedoOp, State
from snapshotter.history.safety import take_safety
from snapshotter.history.state_file import editing
from snapshotter.store.restore import RestoreResult, check_path
from snapshotter.store.workspace import Workspace


def undo_last(
    workspace: Workspace, session_id: str, *, force: bool = False, dry_run: bool = False
) -> Restoration:
    """Revert the session's newest not-undone top-level checkpoint."""
    with editing(workspace.store) as state:
        target = _newest_top_level(state, session_id)
        if target is None:
            raise NothingToDo(f"nothing to undo in session {session_id}")
        return _revert(workspace, state, session_id, [target], "undo", force, dry_run)


def reset(
    workspace: Workspace,
    session_id: str,
    keep: int | None,
    *,
    force: bool = False,
    dry_run: bool = False,
) -> Restoration:
    """Revert every checkpoint after ``keep`` (all of them when ``keep`` is None).

    Those of the session and, beside them, the user's own (``MANUAL_SESSION``):
    a reset goes back to a state of the worktree as ``list`` shows it (#26.1).
    Resetting to a checkpoint of the user's own takes the agent's after it along.
    """
    with editing(workspace.store) as state:
        covered = _beside(state, session_id)
        if keep is not None:
            anchor = state.by_id(keep)
            if anchor is None or anchor.session_id not in covered:
                raise NotFound(
                    f"no checkpoint {keep} in session {session_id} (see `snapshotter list --all`)"
                )
        targets = _after(state, covered, keep or 0)
        if not targets:
            raise NothingToDo(f"nothing after checkpoint {keep or 0} to reset")
        owner = targets[-1].session_id  # its redo entry goes where a plain redo looks
        return _revert(workspace, state, owner, targets, "reset", force, dry_run)


def _beside(state: State, session_id: str) -> set[str]:
    """The sessions a reset in ``session_id`` covers: it and the user's own."""
    if session_id != MANUAL_SESSION:
        return {session_id, MANUAL_SESSION}
    agent = default_in(state)
    return {MANUAL_SESSION} if agent is None else {MANUAL_SESSION, agent}


def restore_files(
    workspace: Workspace,
    session_id: str,
    checkpoint_id: int,
    paths: list[str],
    *,
    after: bool = False,
    force: bool = False,
    dry_run: bool = False,
) -> Restoration:
    """Put ``paths`` back as they were before checkpoint ``checkpoint_id`` (``after``: after it).

    Part of a checkpoint, with undo's guarantees: the safety capture holds the
    current bytes, a file edited since the checkpoint is refused without
    ``force``, and redo puts everything back. The checkpoint itself stays as it
    is (not marked undone): only these files moved. A path naming a directory
    takes the files below it that the checkpoint changed or its tree holds.
    """
    with editing(workspace.store) as state:
        cp = state.by_id(checkpoint_id)
        if cp is None:
            raise NotFound(
                f"no checkpoint {checkpoint_id} in this worktree (see `snapshotter list --all`)"
            )
        source, other = (cp.after, cp.before) if after else (cp.before, cp.after)
        require(workspace.store, "restore", [(cp.id, source)], [(cp.id, other)], force=force)
        chosen = _expand(workspace, state, cp, [source, other], paths)
        safety = take_safety(workspace, state, chosen)
        refuse_changed(
            workspace,
            state,
            session_id,
            safety.tree,
            dict.fromkeys(chosen, source),
            dict.fromkeys(chosen, other),
            cp.id,
            force,
        )
        steps = [(source, chosen)]
        if dry_run:
            return _report(state, [cp.id], _plan(workspace, steps), dry_run)
        new_tree = _after_tree(workspace, safety.tree, steps)
        result = _run(
            workspace, state, session_id, "restore", [cp.id], chosen, safety, steps, new_tree
        )
        return _report(state, [cp.id], result, dry_run)


def _expand(
    workspace: Workspace, state: State, cp: Record, trees: list[str], paths: list[str]
) -> list[str]:
    """Worktree paths for ``paths``: files as given, directories as the files below them."""
    touched = {f.path for c in (cp, *state.children(cp.id)) for f in c.files}
    chosen: set[str] = set()
    for path in paths:
        check_path(path)
        below = {p for p in touched if p.startswith(path + "/")}
        for tree in trees:
            below.update(workspace.store.files_under(tree, path))
        if below:
            chosen.update(below)
        elif any(workspace.entry(tree, path) is not None for tree in trees) or path in touched:
            chosen.add(path)
        else:
            raise NotFound(f"{path} is in neither side of checkpoint {cp.id}")
    return sorted(chosen)


def redo(
    workspace: Workspace, session_id: str, *, force: bool = False, dry_run: bool = False
) -> Restoration:
    """Put back what the session's last undo or reset took away."""
    with editing(workspace.store) as state:
        sess = state.session(session_id)
        if not sess.redo:
            raise NothingToDo(f"nothing to redo in session {session_id}")
        entry = sess.redo[-1]
        require(workspace.store, "redo", [(None, entry.tree)], [(None, entry.after)], force=force)
        safety = take_safety(workspace, state, entry.paths)
        changed = refuse_changed(
            workspace,
            state,
            session_id,
            safety.tree,
            dict.fromkeys(entry.paths, entry.tree),
            dict.fromkeys(entry.paths, entry.after),
            min(entry.checkpoints, default=state.next_id),
            force,
        )
        steps = [(entry.tree, list(entry.paths))]
        if dry_run:
            return _report(state, entry.checkpoints, _plan(workspace, steps), dry_run)
        after = _after_tree(workspace, safety.tree, steps)
        sess.redo.pop()
        if changed:  # --force over files changed since the undo: one more redo puts them back
            sess.redo.append(
                RedoEntry(
                    op="undo",
                    checkpoints=[],
                    paths=changed,
                    tree=safety.tree,
                    after=after,
                    at=time.time_ns(),
                )
            )
        sess.last = _left(safety, after, state)
        _rebase_open_spans(workspace, state, entry.tree, entry.paths)
        for cp_id in entry.checkpoints if entry.op != "restore" else ():  # a part: no flag
            cp = state.by_id(cp_id)
            if cp is not None:
                _set_undone(state, cp, False)
        result = journal.run(
            workspace.store, state, safety.tree, steps, op="redo", checkpoints=entry.checkpoints
        )
        return _report(state, entry.checkpoints, result, dry_run)


# -- internals ---------------------------------------------------------------


def _newest_top_level(state: State, session_id: str) -> Record | None:
    """The checkpoint ``undo`` reverts: never a tool of a closed turn, and never a
    turn that ended where it began (#21.1): undoing it would change nothing."""
    for cp in reversed(state.checkpoints):
        if (
            cp.session_id == session_id
            and cp.parent is None
            and not cp.undone
            and (cp.files or cp.skipped)
        ):
            return cp
    return None


def _after(state: State, sessions: set[str], keep: int) -> list[Record]:
    """Live checkpoints after ``keep``; a turn holding ``keep`` is split into its tools."""
    anchor = state.by_id(keep)
    holder = anchor.parent if anchor is not None else None
    picked: list[Record] = []
    for cp in state.checkpoints:
        if cp.session_id not in sessions or cp.undone or cp.id <= keep:
            continue
        if cp.id == holder:
            picked.extend(c for c in state.children(cp.id) if c.id > keep and not c.undone)
        elif cp.parent is None:
            picked.append(cp)
    return sorted(picked, key=lambda c: c.id)


def _revert(
    workspace: Workspace,
    state: State,
    session_id: str,
    targets: list[Record],
    op: str,
    force: bool,
    dry_run: bool,
) -> Restoration:
    # The newest checkpoint touching a path says what it must look like now;
    # the oldest one says what to put back.
    expected: dict[str, str] = {}
    restore_from: dict[str, str] = {}
    for cp in sorted(targets, key=lambda c: c.id):
        for f in cp.files:
            expected[f.path] = cp.after
            restore_from.setdefault(f.path, cp.before)
    paths = sorted(restore_from)
    require(
        workspace.store,
        op,
        [(cp.id, cp.before) for cp in targets],
        [(cp.id, cp.after) for cp in targets],
        force=force,
    )
    safety = take_safety(workspace, state, paths)
    refuse_changed(
        workspace,
        state,
        session_id,
        safety.tree,
        restore_from,
        expected,
        min(cp.id for cp in targets),
        force,
    )
    steps = sorted(_group(restore_from).items())
    ids = [cp.id for cp in targets]
    if dry_run:
        return _report(state, ids, _plan(workspace, steps), dry_run)
    # Everything the restore leads to is worked out and saved, with its journal,
    # before the first file is written (journal.py): what the worktree will be is
    # the safety tree with the restored paths as their checkpoints have them.
    after = _after_tree(workspace, safety.tree, steps)
    for cp in targets:
        _set_undone(state, cp, True)
    redo_op: RedoOp = "undo" if op == "undo" else "reset"
    result = _run(workspace, state, session_id, redo_op, ids, paths, safety, steps, after)
    return _report(state, ids, result, dry_run)


def _run(
    workspace: Workspace,
    state: State,
    session_id: str,
    op: RedoOp,
    ids: list[int],
    paths: list[str],
    safety: Mark,
    steps: list[tuple[str, list[str]]],
    after: str,
) -> RestoreResult:
    """Note what redo needs and restore ``steps`` (journal.run), the worktree going
    from ``safety`` to ``after`` at ``paths``: the open spans, the redo entry and the session's
    latest capture are saved with the journal, before the first file is written."""
    _rebase_open_spans(workspace, state, after, paths)
    sess = state.session(session_id)
    sess.redo.append(
        RedoEntry(
            op=op, checkpoints=ids, paths=paths, tree=safety.tree, after=after, at=time.time_ns()
        )
    )
    sess.last = _left(safety, after, state)
    return journal.run(workspace.store, state, safety.tree, steps, op=op, checkpoints=ids)


def _left(safety: Mark, tree: str, state: State) -> Mark:
    """The worktree as an operation leaves it (``tree``), as the session's latest
    capture: newer than the safety snapshot (so a ``checkpoint`` starts from it, #21.6)."""
    return Mark(
        tree=tree,
        skips=safety.skips,
        next_id=state.next_id,
        at=time.time_ns(),
        ignored=safety.ignored,
    )


def _after_tree(workspace: Workspace, safety: str, steps: list[tuple[str, list[str]]]) -> str:
    """What the worktree is once ``steps`` are restored over ``safety``."""
    return workspace.store.edit_tree(
        safety, {p: workspace.entry(tree, p) for tree, paths in steps for p in paths}
    )


def _rebase_open_spans(workspace: Workspace, state: State, tree: str, paths: list[str]) -> None:
    """An undo, redo or reset is nobody's edit: open turns and tools, and every
    session's latest capture, see it as done.

    Otherwise a turn open (in any session) while files are restored records the
    restore as its own change, and undoing that turn re-applies what was undone.
    """
    rebased: dict[str, str] = {}
    for sess in state.sessions.values():
        for mark in (sess.turn, *sess.tools, sess.last):
            if mark is None:
                continue
            if mark.tree not in rebased:
                rebased[mark.tree] = _with_paths_from(workspace, mark.tree, tree, paths)
            mark.tree = rebased[mark.tree]


def _with_paths_from(workspace: Workspace, base: str, source: str, paths: list[str]) -> str:
    """``base`` with ``paths`` as they are in ``source`` (absent there: removed)."""
    try:
        changes = {path: workspace.entry(source, path) for path in paths}
        return workspace.store.edit_tree(base, changes)
    except (OSError, KeyError, ValueError, StoreError):  # (ObjectError is a StoreError)
        return base  # e.g. a file/directory clash: the span keeps its old start


def _set_undone(state: State, cp: Record, undone: bool) -> None:
    cp.undone = undone
    for child in state.children(cp.id):
        child.undone = undone


def _group(path_to_tree: dict[str, str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for path, tree in path_to_tree.items():
        groups[tree].append(path)
    return dict(groups)


def _plan(workspace: Workspace, steps: list[tuple[str, list[str]]]) -> RestoreResult:
    total = RestoreResult()
    for tree, paths in steps:
        done = workspace.plan_restore(tree, paths)
        total.restored.extend(done.restored)
        total.removed.extend(done.removed)
    total.restored.sort()
    total.removed.sort()
    return total


def _report(state: State, ids: list[int], result: RestoreResult, dry_run: bool) -> Restoration:
    """What was done, naming the skipped files a restore could not bring back, and the
    ignored ones the checkpoints deleted (never held)."""
    found = [s for cp in state.checkpoints if cp.id in ids or cp.parent in ids for s in cp.skipped]
    return Restoration(
        checkpoint=ids,
        restored=result.restored,
        removed=result.removed,
        skipped=sorted({s.path for s in found if s.reason != NOT_HELD_IGNORED}),
        not_held=sorted({s.path for s in found if s.reason == NOT_HELD_IGNORED}),
        dry_run=dry_run,
    )
