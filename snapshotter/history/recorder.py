"""Turning an agent's lifecycle into checkpoints (SPEC §4).

Each method is one lifecycle moment: capture, then compare with the span's
start and record a checkpoint only when files in scope changed. Everything
happens under the store lock inside one state transaction, so concurrent hook
processes never lose or duplicate a checkpoint. Checkpoints are returned as the
state keeps them (``Record``; ``to_model()`` gives the API's ``Checkpoint``).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import Path

from snapshotter.config import Kind, now_iso
from snapshotter.errors import StoreError, UnsafePath
from snapshotter.history import labels
from snapshotter.history.records import (
    MAX_PENDING_TOOLS,
    Change,
    Mark,
    Record,
    State,
    editing,
    load,
)
from snapshotter.store.capture import Capture
from snapshotter.store.changes import statuses
from snapshotter.store.restore import check_path
from snapshotter.store.shadow import Store
from snapshotter.store.tree_rules import TreeRules
from snapshotter.store.walk import Skip
from snapshotter.store.workspace import Workspace


class Recorder:
    """The checkpointing side of one session on one worktree."""

    def __init__(self, engine: Workspace, session_id: str) -> None:
        self.engine = engine
        self.session_id = session_id

    def session_start(self) -> Record | None:
        """A baseline; a turn left open by an earlier run of the session is closed.

        A turn opened moments ago, in which nothing changed yet, is joined
        instead: some runtimes (Copilot CLI) start a prompt's hooks without
        waiting for ``sessionStart``'s, so it may arrive after the prompt.
        """
        with editing(self.engine.store) as state:
            sess = state.session(self.session_id)
            captured = self._capture_pair(state)
            turn = sess.turn
            if turn is not None and not sess.turn_tools and captured[0].tree == turn.tree:
                sess.last = captured[1]
                return None  # nothing changed since the turn began: it goes on
            closed = None
            if sess.turn is not None:
                closed = self._end_turn(state, "interrupted", captured)
            sess.last = captured[1]
            return closed

    def turn_start(self, prompt: str = "") -> Record | None:
        """Open a turn; one still open was interrupted (no ``Stop``) and is closed first."""
        with editing(self.engine.store) as state:
            closed = self._close_interrupted(state)
            sess = state.session(self.session_id)
            if prompt:
                sess.prompt = labels.bounded(prompt)
            sess.turn = self._capture(state)
            sess.turn_tools = []
            return closed

    def turn_end(self, reason: str) -> Record | None:
        with editing(self.engine.store) as state:
            return self._end_turn(state, reason or "turn_end")

    def checkpoint(self, label: str) -> Record | None:
        """A checkpoint by hand: what changed since the last snapshot of this worktree.

        The last snapshot is the newest of: any session's latest capture, the
        worktree as the last undo, redo, reset or restore left it (#21.6), and
        the newest capture by anyone. None when nothing changed, or when there
        was no snapshot before (this capture is then the baseline the next
        checkpoint starts from).
        """
        with editing(self.engine.store) as state:
            sess = state.session(self.session_id)
            start = _newest_mark(state, self.engine.store)
            capture, mark = self._capture_pair(state)
            cp = None
            if start is not None:
                cp = self._record(
                    state,
                    "turn",
                    labels.first_line(label) or "checkpoint",
                    start,
                    capture,
                    prompt=label or None,
                    reason="checkpoint",
                )
            sess.last = mark
            return cp

    def remember_prompt(self, prompt: str) -> None:
        """What the user asked (docker-agent's user_prompt_submit): the next turn's label."""
        if prompt:
            with editing(self.engine.store) as state:
                state.session(self.session_id).prompt = labels.bounded(prompt)

    def tool_start(
        self,
        tool_use_id: str | None,
        tool_name: str,
        named: Sequence[str] = (),
        command: str | None = None,
    ) -> None:
        """``named``: worktree paths the tool's input says it writes."""
        with editing(self.engine.store) as state:
            sess = state.session(self.session_id)
            mark = self._capture(state)
            mark = replace(
                mark,
                tree=self._fresh(mark.tree, named),
                tool_use_id=tool_use_id or None,
                tool_name=tool_name,
                named=sorted(set(named)),
                command=labels.bounded(command) if command else None,
            )
            sess.tools = [*sess.tools, mark][-MAX_PENDING_TOOLS:]

    def tool_end(
        self,
        tool_use_id: str | None,
        tool_name: str,
        named: Sequence[str] = (),
        command: str | None = None,
    ) -> Record | None:
        with editing(self.engine.store) as state:
            sess = state.session(self.session_id)
            start = _pop_tool(sess.tools, tool_use_id, tool_name) or sess.last
            capture, mark = self._capture_pair(state)
            if start is None:
                return None
            start = replace(
                start,
                named=sorted({*start.named, *named}),
                command=start.command or (labels.bounded(command) if command else None),
            )
            capture = Capture(
                self._fresh(capture.tree, start.named), capture.skipped, capture.started
            )
            mark = replace(mark, tree=capture.tree)
            name = tool_name or "tool"
            cp = self._record(
                state,
                "tool",
                labels.for_tool(name, start.named, start.command),
                start,
                capture,
                tool_name=name,
                command=start.command,
                outside=start.named,
            )
            if cp is not None and sess.turn is not None:
                sess.turn_tools.append(cp.id)
            sess.last = mark
            return cp

    def session_end(self) -> Record | None:
        """Close a turn the runtime never ended, so its changes are not lost.

        It was interrupted (Claude Code sends ``SessionEnd`` and no ``Stop`` when
        Ctrl-C ends a turn), and is labelled so, as the next prompt would.
        """
        with editing(self.engine.store) as state:
            sess = state.session(self.session_id)
            cp = self._end_turn(state, "interrupted") if sess.turn is not None else None
            sess.tools = []
            return cp

    def close_interrupted(self) -> Record | None:
        """Close what the runtime left open, as the next prompt would (#21.6).

        Claude Code sends no ``PostToolUse`` and no ``Stop`` when the user
        presses Esc; a command run from the shell then closes the open turn as
        ``interrupted`` (or, with no turn, the oldest open tool), so ``undo``
        reverts the damage in flight and ``list`` shows it.
        """
        if not _open(load(self.engine.store), self.session_id):
            return None  # (read only: a command on a full disk still reads)
        with editing(self.engine.store) as state:
            sess = state.sessions.get(self.session_id)
            if sess is None or not _open(state, self.session_id):
                return None
            if sess.turn is not None:
                return self._end_turn(state, "interrupted")
            start, sess.tools = sess.tools[0], []
            capture, mark = self._capture_pair(state)
            capture = Capture(
                self._fresh(capture.tree, start.named), capture.skipped, capture.started
            )
            name = start.tool_name or "tool"
            cp = self._record(
                state,
                "tool",
                labels.first_line(
                    "interrupted: " + labels.for_tool(name, start.named, start.command)
                ),
                start,
                capture,
                reason="interrupted",
                tool_name=name,
                command=start.command,
                outside=start.named,
            )
            sess.last = replace(mark, tree=capture.tree)
            return cp

    # -- helpers -----------------------------------------------------------

    def _close_interrupted(self, state: State) -> Record | None:
        """A turn the runtime never ended (Esc: no ``Stop``) ends here, as session_end does."""
        if state.session(self.session_id).turn is None:
            return None
        return self._end_turn(state, "interrupted")

    def _end_turn(
        self, state: State, reason: str, captured: tuple[Capture, Mark] | None = None
    ) -> Record | None:
        """Record the turn; one whose tools recorded checkpoints is recorded even when
        it ends where it began (#21.1), so its tools stay under it and undo skips it.
        ``captured``: the worktree now, when the caller has just captured it."""
        sess = state.session(self.session_id)
        start = sess.turn or sess.last
        capture, mark = captured or self._capture_pair(state)
        tools = [c for c in map(state.by_id, sess.turn_tools) if c is not None]
        cp = None
        if start is not None:
            start, capture = self._named_outside(start, capture, tools)
            cp = self._record(
                state,
                "turn",
                labels.for_turn(sess.prompt, reason),
                start,
                capture,
                prompt=sess.prompt,
                reason=reason,
                keep_empty=bool(tools),
                outside={p for c in tools for p in c.named_paths},
            )
        if cp is not None:
            for child in tools:
                child.parent = cp.id
        sess.turn, sess.turn_tools, sess.tools = None, [], []
        sess.last = mark
        return cp

    def _fresh(self, tree: str, named: Sequence[str]) -> str:
        """``tree`` with the named paths outside the session's directory as they are now.

        A scoped capture walks its directory only (the rest stays as last
        captured), but a file a tool names is that tool's wherever it lies in
        the worktree (#21.6).
        """
        outside = [p for p in named if not self.engine.in_scope(p) and _plain(p)]
        if not outside:
            return tree
        store = self.engine.store
        try:
            return store.hold(store.edit_tree(tree, dict.fromkeys(outside)), outside)
        except StoreError:  # unreadable: the span keeps what the capture had
            return tree

    def _named_outside(
        self, start: Mark, capture: Capture, tools: list[Record]
    ) -> tuple[Mark, Capture]:
        """The turn's span with the files its tools named outside its directory:
        each as the first tool to touch it found it, and as it is now."""
        store = self.engine.store
        first: dict[str, tuple[int, bytes] | None] = {}
        for tool in sorted(tools, key=lambda c: c.id):
            for f in tool.files:
                if f.path in tool.named_paths and not self.engine.in_scope(f.path):
                    first.setdefault(f.path, store.entry(tool.before, f.path))
        if not first:
            return start, capture
        before = store.edit_tree(start.tree, first)
        after = self._fresh(capture.tree, sorted(first))
        return replace(start, tree=before), Capture(after, capture.skipped, capture.started)

    def _capture(self, state: State) -> Mark:
        mark = self._capture_pair(state)[1]
        state.session(self.session_id).last = mark
        return mark

    def _capture_pair(self, state: State) -> tuple[Capture, Mark]:
        capture = self.engine.capture()
        state.session(self.session_id).touched = now_iso()
        return capture, Mark.of(capture, state.next_id)

    def _record(
        self,
        state: State,
        kind: Kind,
        label: str,
        start: Mark,
        capture: Capture,
        *,
        prompt: str | None = None,
        reason: str | None = None,
        tool_name: str | None = None,
        command: str | None = None,
        keep_empty: bool = False,
        outside: Collection[str] = (),
    ) -> Record | None:
        """Record the span as a checkpoint if files in scope changed (the rest: label sources).

        ``keep_empty``: record it even when nothing changed. ``outside``: paths
        outside the session's directory that a tool named, and so are in scope.
        """
        in_scope = self.engine.in_scope
        found = statuses(
            self.engine.store, start.tree, capture.tree, lambda p: in_scope(p) or p in outside
        )
        files = [Change(path, status) for path, status in found]
        files, start, capture = settle(
            self.engine.store, start, capture, files, self.engine.options.max_new_file_size
        )  # #12.1, #13.6, #21.2
        owners = _named_owners(state, start)
        files = [f for f in files if self._ours(state, kind, start, capture, owners, f.path)]
        skipped = [s for s in start.new_skips(capture) if self.engine.in_scope(s.path)]
        if not files and not skipped and not keep_empty:
            return None
        return state.add(
            Record(
                id=state.next_id,
                session_id=self.session_id,
                kind=kind,
                label=label,
                before=start.tree,
                after=capture.tree,
                files=files,
                skipped=skipped,
                named_paths=start.named if kind == "tool" else [],
                prompt=prompt,
                reason=reason,
                tool_name=tool_name,
                command=command,
            )
        )

    def _ours(
        self,
        state: State,
        kind: Kind,
        start: Mark,
        capture: Capture,
        owners: dict[str, set[str]],
        path: str,
    ) -> bool:
        """Does a change to ``path`` during this span belong to this span?

        A file some tool's input named belongs to that tool, and so to its
        session's turn, whoever else ran meanwhile. A file no tool named falls
        back to the first span that recorded it: another session's record, or
        (for parallel tools of this session) a sibling's, claims it first.
        """
        if kind == "tool" and path in start.named:
            # Unless a sibling that ran meanwhile already recorded it so: the same
            # tool call seen twice (Copilot runs both its own hooks and Claude
            # Code's when both are wired, #22.5) is one checkpoint.
            return not self._claimed(state, start, capture, path)
        named_by = owners.get(path)
        if named_by:
            return kind == "turn" and self.session_id in named_by
        theirs = any(
            cp.session_id != self.session_id and any(f.path == path for f in cp.files)
            for cp in state.checkpoints[_first_since(state, start) :]
        )
        if theirs:
            return False
        # Parallel tool calls of one session (pre A, pre B, post A, post B):
        # what A already recorded is A's, unless it changed again since.
        return kind != "tool" or not self._claimed(state, start, capture, path)

    def _claimed(self, state: State, start: Mark, capture: Capture, path: str) -> bool:
        """Did a sibling tool of this session, recorded during the span, leave ``path`` so?"""
        for cp in reversed(state.checkpoints):
            if cp.id < start.next_id:
                break
            if (
                cp.session_id == self.session_id
                and cp.kind == "tool"
                and any(f.path == path for f in cp.files)
            ):
                return self.engine.entry(cp.after, path) == self.engine.entry(capture.tree, path)
        return False


def _open(state: State, session_id: str) -> bool:
    """Whether the session has a turn or tool open."""
    sess = state.sessions.get(session_id)
    return sess is not None and (sess.turn is not None or bool(sess.tools))


def _newest_mark(state: State, store: Store) -> Mark | None:
    """The newest known state of the worktree: a session's latest capture or
    operation, else the newest capture by anyone."""
    marks = [s.last for s in state.sessions.values() if s.last is not None]
    newest = max(marks, key=lambda m: m.at, default=None)
    captured = store.last_capture()
    if captured is not None and (newest is None or captured[1] > newest.at):
        # Its skips are not known: ``at`` 0 says so (``made_visible`` then asks the size).
        return Mark(tree=captured[0], next_id=state.next_id)
    return newest


def _plain(rel: str) -> bool:
    try:
        check_path(rel)
    except UnsafePath:
        return False
    return True


def _first_since(state: State, start: Mark) -> int:
    """Index of the first checkpoint recorded during the span that began at ``start``."""
    for i in range(len(state.checkpoints) - 1, -1, -1):
        if state.checkpoints[i].id < start.next_id:
            return i + 1
    return 0


def _named_owners(state: State, start: Mark) -> dict[str, set[str]]:
    """path → sessions of the tools that named it: open now, or recorded during the span."""
    owners: dict[str, set[str]] = {}
    for session_id, sess in state.sessions.items():
        for mark in sess.tools:
            if mark is not start:
                for path in mark.named:
                    owners.setdefault(path, set()).add(session_id)
    for cp in state.checkpoints[_first_since(state, start) :]:
        for path in cp.named_paths:
            owners.setdefault(path, set()).add(cp.session_id)
    return owners


def _pop_tool(tools: list[Mark], tool_use_id: str | None, tool_name: str) -> Mark | None:
    """The pre_tool_use mark this post pairs with: same id, else oldest same name."""
    for i, mark in enumerate(tools):
        if tool_use_id and mark.tool_use_id == tool_use_id:
            return tools.pop(i)
    for i, mark in enumerate(tools):
        if mark.tool_name == tool_name and (not tool_use_id or not mark.tool_use_id):
            return tools.pop(i)
    return None


LEFT_CAPTURE = "no longer captured: an ignore rule or the size limit leaves it out now"


def settle(
    store: Store, start: Mark, capture: Capture, files: list[Change], limit: int
) -> tuple[list[Change], Mark, Capture]:
    """The span's real changes: a file that was only re-classified is no change.

    - ``deleted`` but still on disk: it left the capture because a rule changed
      (#12.1). Reported as a skip, and the span's start is taken without it, so
      undo never removes it.
    - ``added`` where the rules in force when the span began would not have
      captured it (``made_visible``): it may have been there all along, until
      an ignore rule or ``git add`` made it visible (#13.6). The start gets it
      too, so undo never deletes it. Any other added file was not there: the
      span added it, even with older times (#21.2: a renamed directory keeps
      its files' times).
    Returns the files left, the start (its tree edited) and the capture (its
    skips extended).
    """
    root = store.worktree.root
    edits: dict[str, tuple[int, bytes] | None] = {}
    skipped = dict(capture.skipped)
    rules = TreeRules(store, start.tree)
    for f in files:
        if f.status == "added":
            if made_visible(rules, start, f.path, limit):
                edits[f.path] = store.entry(capture.tree, f.path)
        elif f.status == "deleted":
            st = _lstat_within(root, f.path)
            if st is not None and not stat.S_ISDIR(st.st_mode):
                edits[f.path] = None
                skipped.setdefault(f.path, Skip(f.path, LEFT_CAPTURE, st.st_size, st.st_mtime_ns))
    if not edits:
        return files, start, capture
    tree = store.edit_tree(start.tree, edits)
    return (
        [f for f in files if f.path not in edits],
        replace(start, tree=tree),
        Capture(capture.tree, skipped, capture.started),
    )


def made_visible(rules: TreeRules, start: Mark, rel: str, limit: int) -> bool:
    """Would the capture that began the span have left ``rel`` out, were it there?

    ``rel`` is not in the start tree. Left out: ignored by the start tree's
    ``.gitignore`` files and the excludes, or skipped then (too large,
    unreadable; itself or a directory above it), or over the size limit when
    the start's skips are unknown (a start that was no capture: ``at`` 0).
    """
    if any(p in start.skips for p in _self_and_parents(rel)):
        return True
    if rules.ignores(rel):
        return True
    if start.at:
        return False  # not ignored, not skipped: the start capture would hold it
    st = _lstat_within(rules.store.worktree.root, rel)
    return st is not None and stat.S_ISREG(st.st_mode) and st.st_size > limit


def _self_and_parents(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:n]) for n in range(len(parts), 0, -1)]


def _lstat_within(root: Path, rel: str) -> os.stat_result | None:
    """``lstat`` of ``rel`` reached through real directories only; None if not there."""
    current = root
    try:
        for part in rel.split("/")[:-1]:
            current = current / part
            if not stat.S_ISDIR(os.lstat(current).st_mode):
                return None
        return os.lstat(root / rel)
    except OSError:
        return None
