"""snapshotter/hooks/posted.py: a posted event comes before its session's later requests."""

from __future__ import annotations

import threading

from snapshotter.hooks.posted import Order


def waits(order: Order, number: int, session: str) -> bool:
    """Whether ``wait_before`` blocks (it returns within a short join if not)."""
    thread = threading.Thread(target=order.wait_before, args=(number, session), daemon=True)
    thread.start()
    thread.join(0.2)
    return thread.is_alive()


def test_a_later_event_of_the_session_waits_for_the_post_to_be_done() -> None:
    order = Order()
    post, event = order.admit(), order.admit()
    order.read(post, "s")
    order.read(event, None)
    thread = threading.Thread(target=order.wait_before, args=(event, "s"), daemon=True)
    thread.start()
    thread.join(0.2)
    assert thread.is_alive(), "the event went on before its session's session_start"
    order.done(post)
    thread.join(5)
    assert not thread.is_alive(), "the post is done: the event goes on"


def test_other_sessions_and_earlier_requests_do_not_wait() -> None:
    order = Order()
    earlier = order.admit()
    post = order.admit()
    order.read(earlier, None)
    order.read(post, "s")
    assert not waits(order, earlier, "s"), "a request before the post never waits for it"
    other = order.admit()
    order.read(other, None)
    assert not waits(order, other, "t"), "another session's event is not held up"


def test_an_unread_earlier_connection_holds_the_event_until_read() -> None:
    """It might be a post of this session: known only once its frames are read."""
    order = Order()
    unread, event = order.admit(), order.admit()
    order.read(event, None)
    assert waits(order, event, "s")
    order.read(unread, None)  # not a post
    assert not waits(order, event, "s")
