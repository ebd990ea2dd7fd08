"""Turning an agent's lifecycle into checkpoints (SPEC §4).

Each method is one lifecycle moment: capture, then compare with the span's
start and record a checkpoint only when files in scope changed. Everything
happens under the store lock inside one state transaction, so concurrent hook
processes never lose or duplicate a checkpoint.
"""

from __future__ import annotations

from snapshotter.changes import changes
from snapshotter.engine import Engine
from snapshotter.models import Checkpoint, Kind, now_iso
from snapshotter.state import MAX_PENDING_TOOLS, Mark, State, editing
from snapshotter.store import Capture


class Recorder:
    """The checkpointing side of one session on one worktree."""

    def __init__(self, engine: Engine, session_id: str) -> None:
        self.engine = engine
        self.session_id = session_id

    def session_start(self) -> None:
        with editing(self.engine.store) as state:
            self._capture(state)

    def turn_start(self) -> None:
        with editing(self.engine.store) as state:
            sess = state.session(self.session_id)
            sess.turn = self._capture(state)
            sess.turn_tools = []

    def turn_end(self, reason: str) -> Checkpoint | None:
        with editing(self.engine.store) as state:
            return self._end_turn(state, reason or "turn_end")

    def tool_start(self, tool_use_id: str | None, tool_name: str) -> None:
        with editing(self.engine.store) as state:
            sess = state.session(self.session_id)
            mark = self._capture(state).model_copy(
                update={"tool_use_id": tool_use_id or None, "tool_name": tool_name}
            )
            sess.tools = [*sess.tools, mark][-MAX_PENDING_TOOLS:]

    def tool_end(self, tool_use_id: str | None, tool_name: str) -> Checkpoint | None:
        with editing(self.engine.store) as state:
            sess = state.session(self.session_id)
            start = _pop_tool(sess.tools, tool_use_id, tool_name) or sess.last
            capture, mark = self._capture_pair(state)
            if start is None:
                return None
            cp = self._record(state, "tool", tool_name or "tool", start, capture)
            if cp is not None and sess.turn is not None:
                sess.turn_tools.append(cp.id)
            sess.last = mark
            return cp

    def session_end(self) -> Checkpoint | None:
        """Close a turn the runtime never ended, so its changes are not lost."""
        with editing(self.engine.store) as state:
            sess = state.session(self.session_id)
            cp = self._end_turn(state, "session_end") if sess.turn is not None else None
            sess.tools = []
            return cp

    # -- helpers -----------------------------------------------------------

    def _end_turn(self, state: State, label: str) -> Checkpoint | None:
        sess = state.session(self.session_id)
        start = sess.turn or sess.last
        capture, mark = self._capture_pair(state)
        cp = None
        if start is not None:
            cp = self._record(state, "turn", label, start, capture)
        if cp is not None:
            for child_id in sess.turn_tools:
                child = state.by_id(child_id)
                if child is not None:
                    child.parent = cp.id
        sess.turn, sess.turn_tools, sess.tools = None, [], []
        sess.last = mark
        return cp

    def _capture(self, state: State) -> Mark:
        mark = self._capture_pair(state)[1]
        state.session(self.session_id).last = mark
        return mark

    def _capture_pair(self, state: State) -> tuple[Capture, Mark]:
        capture = self.engine.capture()
        state.session(self.session_id).touched = now_iso()
        return capture, Mark.of(capture, state.next_id)

    def _record(
        self, state: State, kind: Kind, label: str, start: Mark, capture: Capture
    ) -> Checkpoint | None:
        files = changes(self.engine.store, start.tree, capture.tree, self.engine.in_scope)
        # Files that another session recorded during this span are that
        # session's change, not ours: undo here must never revert them.
        theirs = {
            f.path
            for cp in state.checkpoints
            if cp.id >= start.next_id and cp.session_id != self.session_id
            for f in cp.files
        }
        files = [f for f in files if f.path not in theirs]
        if kind == "tool":
            # Parallel tool calls of one session (pre A, pre B, post A, post B):
            # what A already recorded is A's, unless it changed again since.
            files = [f for f in files if not self._claimed(state, start, capture, f.path)]
        skipped = [s for s in start.new_skips(capture) if self.engine.in_scope(s.path)]
        if not files and not skipped:
            return None
        return state.add(
            Checkpoint(
                id=state.next_id,
                session_id=self.session_id,
                kind=kind,
                label=label,
                before=start.tree,
                after=capture.tree,
                files=files,
                skipped=skipped,
            )
        )

    def _claimed(self, state: State, start: Mark, capture: Capture, path: str) -> bool:
        """Did a sibling tool of this session, recorded during the span, leave ``path`` so?"""
        for cp in reversed(state.checkpoints):
            if cp.id < start.next_id:
                break
            if (cp.session_id == self.session_id and cp.kind == "tool"
                    and any(f.path == path for f in cp.files)):
                return self.engine.entry(cp.after, path) == self.engine.entry(capture.tree, path)
        return False


def _pop_tool(tools: list[Mark], tool_use_id: str | None, tool_name: str) -> Mark | None:
    """The pre_tool_use mark this post pairs with: same id, else oldest same name."""
    for i, mark in enumerate(tools):
        if tool_use_id and mark.tool_use_id == tool_use_id:
            return tools.pop(i)
    for i, mark in enumerate(tools):
        if mark.tool_name == tool_name and (not tool_use_id or not mark.tool_use_id):
            return tools.pop(i)
    return None
