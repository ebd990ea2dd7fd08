"""The order of posted events in the hook server (issue 24.3).

A hook posts an event no tool waits on (``session_start``, ``client.post``):
it returns once the server has it, and the server takes the baseline while
the user types. The session's next event must still find that baseline
taken, as if the hook had waited: ``Order`` holds it back until then.
"""

from __future__ import annotations

import threading


class Order:
    """A posted event (its hook did not wait: ``client.post``) comes before every later
    request of its session.

    Each connection gets a number as it is accepted, in the order the hooks
    connected. Until its event is read it might be a post of any session, so
    an event waits for every earlier connection still unread, and for every
    earlier post of its own session still under way; other sessions' events
    never wait for it (a stuck worktree holds up only itself, issue 13.12).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._next = 0
        self._pending: dict[int, str | None] = {}  # number → a post's session; None: unread

    def admit(self) -> int:
        with self._cond:
            number = self._next
            self._next += 1
            self._pending[number] = None
            return number

    def read(self, number: int, posted_session: str | None) -> None:
        """The request is read: a post of that session (held until ``done``), or not one."""
        with self._cond:
            if posted_session is None:
                self._pending.pop(number, None)
            else:
                self._pending[number] = posted_session
            self._cond.notify_all()

    def done(self, number: int) -> None:
        with self._cond:
            self._pending.pop(number, None)
            self._cond.notify_all()

    def wait_before(self, number: int, session: str) -> None:
        def clear() -> bool:
            return not any(k < number and v in (None, session) for k, v in self._pending.items())

        with self._cond:
            self._cond.wait_for(clear)
