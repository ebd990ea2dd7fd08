"""Turning an agent's lifecycle into checkpoints (SPEC §4).

Each method is one lifecycle moment: capture, then compare with the span's
start and record a checkpoint only when files in scope changed. Everything
happens under the store lock inside one state transaction, so concurrent hook
processes never lose or duplicate a checkpoint. Checkpoints are returned as the
state keeps them (``Record``; ``to_model()`` gives the API's ``Checkpoint``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from snapshotter.checkpoints import Change, Record
from snapshotter.config import Kind, now_iso
from snapshotter.errors import StoreError, UnsafePath
from snapshotter.history import labels
from snapshotter.history.lost import missing
from snapshotter.history.not_held import ignored_deleted
from snapshotter.history.ownership import owned
from snapshotter.history.records import MAX_PENDING_TOOLS, Mark, State
from snapshotter.history.settle import settle
from snapshotter.history.state_file import editing, load
from snapshotter.store.capture import Capture
from snapshotter.store.changes import statuses
from snapshotter.store.restore import check_path
from snapshotter.store.shadow import Store
from snapshotter.store.workspace import Workspace


class Recorder:
    """The checkpointing side of one session on one worktree."""

    def __init__(self, workspace: Workspace, session_id: str) -> None:
        self.workspace = workspace
        self.session_id = session_id

    def session_start(self) -> Record | None:
        """A baseline; a turn left open by an earlier run of the session is closed.

        A turn opened moments ago, in which nothing changed yet, is joined
        instead: some runtimes (Copilot CLI) start a prompt's hooks without
        waiting for ``sessionStart``'s, so it may arrive after the prompt.
        """
        with editing(self.workspace.store) as state:
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
        with editing(self.workspace.store) as state:
            closed = self._close_interrupted(state)
            sess = state.session(self.session_id)
            if prompt:
                sess.prompt = labels.bounded(prompt)
            sess.turn = self._capture(state)
            sess.turn_tools = []
            return closed

    def turn_end(self, reason: str) -> Record | None:
        with editing(self.workspace.store) as state:
            return self._end_turn(state, reason or "turn_end")

    def checkpoint(self, label: str) -> Record | None:
        """A checkpoint by hand: what changed since the last snapshot of this worktree.

        The last snapshot is the newest of: any session's latest capture, the
        worktree as the last undo, redo, reset or restore left it (#21.6), and
        the newest capture by anyone. With a ``label`` it is recorded even when
        nothing changed (or there was no snapshot before): a save point, this
        state under that name, to go back to (#26.1). Without one, None then
        (this capture is the baseline the next checkpoint starts from).
        """
        with editing(self.workspace.store) as state:
            sess = state.session(self.session_id)
            start = _newest_mark(state, self.workspace.store)
            capture, mark = self._capture_pair(state)
            cp = None
            if start is not None or label:
                cp = self._record(
                    state,
                    "turn",
                    labels.first_line(label) or "checkpoint",
                    start or mark,
                    capture,
                    prompt=label or None,
                    reason="checkpoint",
                    keep_empty=bool(label),
                )
            sess.last = mark
            return cp

    def remember_prompt(self, prompt: str) -> None:
        """What the user asked (docker-agent's user_prompt_submit): the next turn's label."""
        if prompt:
            with editing(self.workspace.store) as state:
                state.session(self.session_id).prompt = labels.bounded(prompt)

    def tool_start(
        self,
        tool_use_id: str | None,
        tool_name: str,
        named: Sequence[str] = (),
        command: str | None = None,
    ) -> None:
        """``named``: worktree paths the tool's input says it writes."""
        with editing(self.workspace.store) as state:
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
        *,
        failed: bool = False,
    ) -> Record | None:
        """``failed``: the runtime said the tool failed (its checkpoint says so, #26.4)."""
        with editing(self.workspace.store) as state:
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
            capture = replace(capture, tree=self._fresh(capture.tree, start.named))
            mark = replace(mark, tree=capture.tree)
            name = tool_name or "tool"
            cp = self._record(
                state,
                "tool",
                labels.for_tool(name, start.named, start.command),
                start,
                capture,
                reason="failed" if failed else None,
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
        with editing(self.workspace.store) as state:
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
        if not _open(load(self.workspace.store), self.session_id):
            return None  # (read only: a command on a full disk still reads)
        with editing(self.workspace.store) as state:
            sess = state.sessions.get(self.session_id)
            if sess is None or not _open(state, self.session_id):
                return None
            if sess.turn is not None:
                return self._end_turn(state, "interrupted")
            start, sess.tools = sess.tools[0], []
            capture, mark = self._capture_pair(state)
            capture = replace(capture, tree=self._fresh(capture.tree, start.named))
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
        outside = [p for p in named if not self.workspace.in_scope(p) and _plain(p)]
        if not outside:
            return tree
        store = self.workspace.store
        try:
            return store.hold(store.edit_tree(tree, dict.fromkeys(outside)), outside)
        except StoreError:  # unreadable: the span keeps what the capture had
            return tree

    def _named_outside(
        self, start: Mark, capture: Capture, tools: list[Record]
    ) -> tuple[Mark, Capture]:
        """The turn's span with the files its tools named outside its directory:
        each as the first tool to touch it found it, and as it is now."""
        store = self.workspace.store
        first: dict[str, tuple[int, bytes] | None] = {}
        for tool in sorted(tools, key=lambda c: c.id):
            for f in tool.files:
                if f.path in tool.named_paths and not self.workspace.in_scope(f.path):
                    first.setdefault(f.path, store.entry(tool.before, f.path))
        if not first:
            return start, capture
        before = store.edit_tree(start.tree, first)
        after = self._fresh(capture.tree, sorted(first))
        return replace(start, tree=before), replace(capture, tree=after)

    def _capture(self, state: State) -> Mark:
        mark = self._capture_pair(state)[1]
        state.session(self.session_id).last = mark
        return mark

    def _capture_pair(self, state: State) -> tuple[Capture, Mark]:
        capture = self.workspace.capture()
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
        if missing(self.workspace.store, start.tree):
            return None  # lost in a crash (lost.py): this capture is the new baseline
        in_scope = self.workspace.in_scope
        found = statuses(
            self.workspace.store, start.tree, capture.tree, lambda p: in_scope(p) or p in outside
        )
        files = [Change(path, status) for path, status in found]
        files, start, capture = settle(
            self.workspace.store, start, capture, files, self.workspace.options.max_new_file_size
        )  # #12.1, #13.6, #21.2
        files = owned(self.workspace, state, self.session_id, kind, start, capture, files)
        skipped = [s for s in start.new_skips(capture) if self.workspace.in_scope(s.path)]
        skipped += ignored_deleted(self.workspace, start, capture)
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


def _pop_tool(tools: list[Mark], tool_use_id: str | None, tool_name: str) -> Mark | None:
    """The pre_tool_use mark this post pairs with: same id, else oldest same name."""
    for i, mark in enumerate(tools):
        if tool_use_id and mark.tool_use_id == tool_use_id:
            return tools.pop(i)
    for i, mark in enumerate(tools):
        if mark.tool_name == tool_name and (not tool_use_id or not mark.tool_use_id):
            return tools.pop(i)
    return None
