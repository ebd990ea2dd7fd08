"""snapshotter/hooks/lifetime.py: the server stays while a session is open, bounded."""

from __future__ import annotations

import time

from snapshotter.hooks.lifetime import IDLE_S, SESSION_KEEP_S, Sessions, idle


def test_an_open_session_keeps_the_server_past_the_idle_time() -> None:
    sessions = Sessions()
    sessions.note("session_start", "s")
    now = time.monotonic() + IDLE_S + 1  # the user is away, typing or thinking
    assert sessions.open(now)
    assert not idle(0, IDLE_S + 1, sessions.open(now))


def test_a_session_that_never_ends_keeps_it_at_most_session_keep_s() -> None:
    sessions = Sessions()
    sessions.note("session_start", "s")
    sessions.note("pre_tool_use", "s")
    later = time.monotonic() + SESSION_KEEP_S + 1  # its runtime was killed: no session_end
    assert not sessions.open(later)
    assert idle(0, SESSION_KEEP_S + 1, sessions.open(later))


def test_session_end_lets_it_leave_after_the_idle_time() -> None:
    sessions = Sessions()
    sessions.note("session_start", "s")
    sessions.note("session_end", "s")
    assert not sessions.open(time.monotonic())
    assert not idle(0, IDLE_S - 1, False), "not before IDLE_S without requests"
    assert idle(0, IDLE_S + 1, False)
    assert not idle(1, IDLE_S + 1, False), "never with a request under way"
