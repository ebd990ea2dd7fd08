"""snapshotter/hooks/server.py: when the resident server runs its commands' warm-up."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest

from snapshotter.hooks import server


def wait_until(condition: Any, limit: float = 3.0) -> bool:
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_the_commands_warm_up_waits_for_a_quiet_tick_and_runs_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commands' imports (~0.12 s of CPU) never compete with an event under way:
    they start once the server has been quiet for WARM_UP_AFTER_S, in a thread,
    and only once."""
    monkeypatch.setattr(server, "_TICK_S", 0.02)
    monkeypatch.setattr(server, "WARM_UP_AFTER_S", 0.1)
    path = tmp_path / "s"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    warmed: list[tuple[str, float]] = []

    def warm_up() -> None:
        warmed.append((threading.current_thread().name, time.monotonic()))

    served = server._Server(listener, path, cast(Any, None), warm_up=warm_up)
    loop = threading.Thread(target=served.loop, daemon=True)
    with listener:
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.connect(str(path))  # a request under way: it has sent nothing yet
        loop.start()
        assert wait_until(lambda: served.busy == 1), "the request is being served"
        time.sleep(3 * server.WARM_UP_AFTER_S)
        assert warmed == [], "warmed up while a request was under way"
        slow.close()  # the request ends (its client went away)
        closed = time.monotonic()
        assert wait_until(lambda: len(warmed) == 1), "no warm-up once the server was quiet"
        assert warmed[0][1] - closed >= server.WARM_UP_AFTER_S * 0.9, "warmed up too early"
        time.sleep(3 * server.WARM_UP_AFTER_S)
        assert len(warmed) == 1, "warmed up more than once"
        assert warmed[0][0] != loop.name, "the warm-up ran in the accept loop"
        served.stop()
        loop.join(3)
        assert not loop.is_alive()
