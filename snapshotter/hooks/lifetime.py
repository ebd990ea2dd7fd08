"""When the hook server leaves (issue 24.3).

It stays while an agent session is open — from its first event to its
``session_end`` — so the user's next prompt, however long they take to type
it, finds the worktree watched and its baseline taken. A session whose runtime
died without ``session_end`` keeps it at most ``SESSION_KEEP_S`` after its
last event; with no session open it leaves after ``IDLE_S`` without requests.
"""

from __future__ import annotations

import threading
import time

IDLE_S = 300.0
SESSION_KEEP_S = 3600.0


class Sessions:
    """The open sessions and when each last sent an event (the server's lifetime)."""

    def __init__(self) -> None:
        self._seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def note(self, event: str, session: str) -> None:
        if not session:
            return
        with self._lock:
            if event == "session_end":
                self._seen.pop(session, None)
            else:
                self._seen[session] = time.monotonic()

    def open(self, now: float) -> bool:
        """Whether a session sent an event within SESSION_KEEP_S and has not ended."""
        with self._lock:
            self._seen = {k: t for k, t in self._seen.items() if now - t <= SESSION_KEEP_S}
            return bool(self._seen)


def idle(busy: int, since_done: float, sessions_open: bool) -> bool:
    """Whether the server leaves: nothing under way, no session open (bounded by
    SESSION_KEEP_S), and no request for IDLE_S."""
    return busy == 0 and not sessions_open and since_done > IDLE_S
