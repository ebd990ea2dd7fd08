"""Who a change belongs to, when agents run side by side in one worktree.

Sub-agents, parallel tool calls and background agents share one worktree, so
a span's capture can hold another span's work. A file some tool's input
named belongs to that tool, and so to its session's turn, whoever else ran
meanwhile. A file no tool named falls back to the first span that recorded
it: another session's record, or (for parallel tools of one session) a
sibling's, claims it first.
"""

from __future__ import annotations

from snapshotter.checkpoints import Change
from snapshotter.config import Kind
from snapshotter.history.records import Mark, State
from snapshotter.store.capture import Capture
from snapshotter.store.workspace import Workspace


def owned(
    workspace: Workspace,
    state: State,
    session_id: str,
    kind: Kind,
    start: Mark,
    capture: Capture,
    files: list[Change],
) -> list[Change]:
    """The changes of ``files`` that belong to the span from ``start`` to ``capture``."""
    owners = _named_owners(state, start)
    span = _Span(workspace, state, session_id, start, capture)
    return [f for f in files if span.ours(kind, owners, f.path)]


class _Span:
    """One session's span being recorded, asked about one path at a time."""

    def __init__(
        self, workspace: Workspace, state: State, session_id: str, start: Mark, capture: Capture
    ) -> None:
        self.workspace = workspace
        self.state = state
        self.session_id = session_id
        self.start = start
        self.capture = capture

    def ours(self, kind: Kind, owners: dict[str, set[str]], path: str) -> bool:
        """Does a change to ``path`` during this span belong to this span?"""
        state, start = self.state, self.start
        if kind == "tool" and path in start.named:
            # Unless a sibling that ran meanwhile already recorded it so: the same
            # tool call seen twice (Copilot runs both its own hooks and Claude
            # Code's when both are wired, #22.5) is one checkpoint.
            return not self._claimed(path)
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
        return kind != "tool" or not self._claimed(path)

    def _claimed(self, path: str) -> bool:
        """Did a sibling tool of this session, recorded during the span, leave ``path`` so?"""
        for cp in reversed(self.state.checkpoints):
            if cp.id < self.start.next_id:
                break
            if (
                cp.session_id == self.session_id
                and cp.kind == "tool"
                and any(f.path == path for f in cp.files)
            ):
                entry = self.workspace.entry
                return entry(cp.after, path) == entry(self.capture.tree, path)
        return False


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
