"""Undo, redo and reset (SPEC §5): restores that are themselves undoable.

Every operation first captures the worktree (the safety capture). Undo and
reset refuse when a file they would touch changed after its checkpoint, and
push the safety capture on the session's redo stack, so redo puts back the
exact state before the undo, later user edits included.
"""

from __future__ import annotations

from collections import defaultdict

from snapshotter.engine import Engine
from snapshotter.errors import Conflict, NotFound, NothingToDo, StoreError
from snapshotter.models import Checkpoint, RestoreReport
from snapshotter.restore import RestoreResult, check_path, occupied
from snapshotter.state import Mark, RedoEntry, State, editing, load, save
from snapshotter.store import Capture, Store


def default_session(store: Store) -> str | None:
    """The session with the newest checkpoint in this worktree."""
    state = load(store)
    return state.checkpoints[-1].session_id if state.checkpoints else None


def resolve_session(store: Store, *preferred: str | None) -> str:
    """The first of ``preferred`` that is set, else the default session."""
    found = next((s for s in preferred if s), None) or default_session(store)
    if not found:
        raise NothingToDo("no checkpoints in this worktree yet")
    return found


def undo_last(engine: Engine, session_id: str, *, force: bool = False,
              dry_run: bool = False) -> RestoreReport:
    """Revert the session's newest not-undone top-level checkpoint."""
    with editing(engine.store) as state:
        target = _newest_top_level(state, session_id)
        if target is None:
            raise NothingToDo(f"nothing to undo in session {session_id}")
        return _revert(engine, state, session_id, [target], "undo", force, dry_run)


def reset(engine: Engine, session_id: str, keep: int | None, *, force: bool = False,
          dry_run: bool = False) -> RestoreReport:
    """Revert every checkpoint after ``keep`` (all of them when ``keep`` is None)."""
    with editing(engine.store) as state:
        if keep is not None:
            anchor = state.by_id(keep)
            if anchor is None or anchor.session_id != session_id:
                raise NotFound(f"no checkpoint {keep} in session {session_id}")
        targets = _after(state, session_id, keep or 0)
        if not targets:
            raise NothingToDo(f"nothing after checkpoint {keep or 0} to reset")
        return _revert(engine, state, session_id, targets, "reset", force, dry_run)


def redo(engine: Engine, session_id: str, *, force: bool = False,
         dry_run: bool = False) -> RestoreReport:
    """Put back what the session's last undo or reset took away."""
    with editing(engine.store) as state:
        sess = state.session(session_id)
        if not sess.redo:
            raise NothingToDo(f"nothing to redo in session {session_id}")
        entry = sess.redo[-1]
        current = _unscoped(engine).capture()
        _refuse_changed(engine, current.tree, {entry.after: entry.paths}, force)
        result = _apply(engine, {entry.tree: entry.paths}, dry_run)
        if not dry_run:
            sess.redo.pop()
            after = _with_paths_from(engine, current.tree, entry.tree, entry.paths)
            sess.last = Mark.of(Capture(after, current.skipped), state.next_id)
            _rebase_open_spans(engine, state, entry.tree, entry.paths)
            for cp_id in entry.checkpoints:
                cp = state.by_id(cp_id)
                if cp is not None:
                    _set_undone(state, cp, False)
        return _report(state, entry.checkpoints, result, dry_run)


# -- internals ---------------------------------------------------------------


def _newest_top_level(state: State, session_id: str) -> Checkpoint | None:
    for cp in reversed(state.checkpoints):
        if cp.session_id == session_id and cp.parent is None and not cp.undone:
            return cp
    return None


def _after(state: State, session_id: str, keep: int) -> list[Checkpoint]:
    """Live checkpoints after ``keep``; a turn holding ``keep`` is split into its tools."""
    anchor = state.by_id(keep)
    holder = anchor.parent if anchor is not None else None
    picked: list[Checkpoint] = []
    for cp in state.checkpoints:
        if cp.session_id != session_id or cp.undone or cp.id <= keep:
            continue
        if cp.id == holder:
            picked.extend(c for c in state.children(cp.id) if c.id > keep and not c.undone)
        elif cp.parent is None:
            picked.append(cp)
    return sorted(picked, key=lambda c: c.id)


def _revert(engine: Engine, state: State, session_id: str, targets: list[Checkpoint],
            op: str, force: bool, dry_run: bool) -> RestoreReport:
    # The newest checkpoint touching a path says what it must look like now;
    # the oldest one says what to put back.
    expected: dict[str, str] = {}
    restore_from: dict[str, str] = {}
    for cp in sorted(targets, key=lambda c: c.id):
        for f in cp.files:
            expected[f.path] = cp.after
            restore_from.setdefault(f.path, cp.before)
    unscoped = _unscoped(engine)
    safety = unscoped.capture()
    _refuse_changed(engine, safety.tree, _group(expected), force)
    groups = _group(restore_from)
    ids = [cp.id for cp in targets]
    if dry_run:
        return _report(state, ids, _apply(engine, groups, dry_run), dry_run)
    try:
        result = _apply(engine, groups, dry_run)
    except BaseException:
        # Some files may already be written: keep the way back (redo) anyway.
        after = unscoped.capture()
        state.session(session_id).redo.append(RedoEntry(
            op="undo" if op == "undo" else "reset", checkpoints=[], paths=sorted(restore_from),
            tree=safety.tree, after=after.tree))
        save(engine.store, state)  # the failure leaves the transaction: keep this much
        raise
    # What the worktree now is, without a second scan: the safety capture with
    # the restored paths as their checkpoint trees have them.
    after_tree = safety.tree
    for tree, paths in groups.items():
        after_tree = _with_paths_from(engine, after_tree, tree, paths)
    after = Capture(after_tree, safety.skipped)
    for cp in targets:
        _set_undone(state, cp, True)
    _rebase_open_spans(engine, state, after.tree, sorted(restore_from))
    sess = state.session(session_id)
    sess.redo.append(RedoEntry(op="undo" if op == "undo" else "reset", checkpoints=ids,
                               paths=sorted(restore_from), tree=safety.tree, after=after.tree))
    sess.last = Mark.of(after, state.next_id)
    return _report(state, ids, result, dry_run)


def _rebase_open_spans(engine: Engine, state: State, tree: str, paths: list[str]) -> None:
    """An undo, redo or reset is nobody's edit: open turns and tools see it as done.

    Otherwise a turn open (in any session) while files are restored records the
    restore as its own change, and undoing that turn re-applies what was undone.
    """
    rebased: dict[str, str] = {}
    for sess in state.sessions.values():
        for mark in (sess.turn, *sess.tools):
            if mark is None:
                continue
            if mark.tree not in rebased:
                rebased[mark.tree] = _with_paths_from(engine, mark.tree, tree, paths)
            mark.tree = rebased[mark.tree]


def _with_paths_from(engine: Engine, base: str, source: str, paths: list[str]) -> str:
    """``base`` with ``paths`` as they are in ``source`` (absent there: removed)."""
    import pygit2

    try:
        changes = {path: engine.entry(source, path) for path in paths}
        return engine.store.edit_tree(base, changes)
    except (pygit2.GitError, OSError, KeyError, ValueError, StoreError):
        return base  # e.g. a file/directory clash: the span keeps its old start


def _set_undone(state: State, cp: Checkpoint, undone: bool) -> None:
    cp.undone = undone
    for child in state.children(cp.id):
        child.undone = undone


def _group(path_to_tree: dict[str, str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for path, tree in path_to_tree.items():
        groups[tree].append(path)
    return dict(groups)


def _refuse_changed(
    engine: Engine, current: str, expected: dict[str, list[str]], force: bool
) -> None:
    """Conflict unless every path is as ``expected`` says (tree → its paths).

    A path also counts as changed when a file sits there that ``current`` (the
    safety capture) lacks — too large, unreadable, replaced mid-capture —
    because writing over it could never be redone.
    """
    changed = sorted({
        p
        for tree, paths in expected.items()
        for p in paths
        if engine.entry(current, p) != engine.entry(tree, p)
        or (engine.entry(current, p) is None and occupied(engine.root, p))
    })
    if changed and not force:
        raise Conflict(changed)


def _apply(engine: Engine, groups: dict[str, list[str]], dry_run: bool) -> RestoreResult:
    for paths in groups.values():  # one unsafe path rejects it all before any write
        for path in paths:
            check_path(path)
    total = RestoreResult()
    for tree, paths in groups.items():
        done = engine.plan_restore(tree, paths) if dry_run else engine.restore(tree, paths)
        total.restored.extend(done.restored)
        total.removed.extend(done.removed)
    total.restored.sort()
    total.removed.sort()
    return total


def _unscoped(engine: Engine) -> Engine:
    """The same store over the whole worktree: a safety capture must see every path."""
    return engine.with_scope("")


def _report(state: State, ids: list[int], result: RestoreResult,
            dry_run: bool) -> RestoreReport:
    """What was done, naming the skipped files a restore could not bring back."""
    skipped = sorted({
        s.path
        for cp in state.checkpoints
        if cp.id in ids or cp.parent in ids
        for s in cp.skipped
    })
    return RestoreReport(checkpoint=ids, restored=result.restored, removed=result.removed,
                         skipped=skipped, dry_run=dry_run)


def list_checkpoints(store: Store, session_id: str | None) -> list[Checkpoint]:
    """Checkpoints ordered by id; one session's, or every session's when None."""
    state = load(store)
    return [cp for cp in state.checkpoints if session_id is None or cp.session_id == session_id]
