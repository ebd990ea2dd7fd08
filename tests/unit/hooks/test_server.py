"""snapshotter/hooks/server.py: the accept loop."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from snapshotter.hooks import server as server_mod


def _asleep(thread: threading.Thread) -> bool:
    """The thread waits in the kernel (not running Python, not spinning)."""
    stat = Path(f"/proc/self/task/{thread.native_id}/stat").read_text()
    return stat.rsplit(") ", 1)[1][:1] == "S"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")
def test_stop_wakes_the_accept_loop_at_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``stop`` ends ``loop`` now, not at its next tick: a listener shut down under
    an accept with a timeout had Python retry EAGAIN in a busy loop until the tick
    ended (every server stopped by its client burnt a core for up to a second)."""
    monkeypatch.setattr(server_mod, "_TICK_S", 3600.0)  # no tick within the test
    path = tmp_path / "s.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)
    srv = server_mod._Server(listener, path)
    loop = threading.Thread(target=srv.loop, daemon=True)
    loop.start()
    deadline = time.monotonic() + 3
    while not _asleep(loop) and time.monotonic() < deadline:
        time.sleep(0.001)  # until the loop waits for a connection
    srv.stop()
    loop.join(timeout=3)
    try:
        assert not loop.is_alive(), "the loop still runs after stop"
    finally:
        listener.close()
    srv.close()
    assert not path.exists(), "the socket's name went with stop"
