"""Captures taken by the hook server for a CLI command it forked (issue 16.2).

The server's watcher knows which directories changed since its last capture
of a worktree; a forked command's copy of that knowledge goes stale the
moment it runs. So the command's captures go to the server: its ``Resident``
forwards each capture request (store/remote.py makes and reads them) over
the socket, as a ``capture`` request; the server takes the capture with its
own ``Resident``. This module only carries the bytes.
"""

from __future__ import annotations

from functools import partial

from snapshotter.engine.serving import Resident, serve_capture
from snapshotter.hooks import client

TIMEOUT_S = 3600.0  # a first capture of a huge tree takes minutes; the server never gives up


def forwarding(sock_path: str) -> Resident:
    """The ``Resident`` of a command forked by the server at ``sock_path``: its
    captures go to that server (the inherited watchers' queues are the server's)."""
    return Resident(forward=partial(_send, sock_path))


def _send(sock_path: str, body: bytes) -> bytes | None:
    """The server's reply to one capture request; None when it cannot take it."""
    conn = client.connect(sock_path, TIMEOUT_S)
    if conn is None:
        return None
    try:
        conn.sendall(client.frame(b"capture") + client.frame(body))
        return client.read_frame(conn)
    except OSError:
        return None  # the server went: capture here
    finally:
        conn.close()


def serve(body: bytes, resident: Resident) -> bytes:
    """In the server: take the capture a forked command asked for; the reply frame."""
    return client.frame(serve_capture(body, resident))
