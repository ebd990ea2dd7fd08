"""snapshotter/hooks/client.py: the hook's side of the server's line protocol."""

from __future__ import annotations

import socket

from snapshotter.hooks import client


def test_read_line_leaves_the_next_line_for_the_next_read() -> None:
    """A command that ends at once makes the server write "pid N" and "exit 0"
    before the client reads: each read takes one line, not both."""
    ours, server = socket.socketpair()
    with ours, server:
        server.sendall(b"pid 123\nexit 0\n")
        assert client.read_line(ours) == b"pid 123\n"
        assert client.read_line(ours) == b"exit 0\n"
        server.sendall(b"par")
        server.sendall(b"tial\n")
        assert client.read_line(ours) == b"partial\n"
        server.sendall(b"cut")
        server.close()
        assert client.read_line(ours) == b"cut"  # the peer closed mid-line
        assert client.read_line(ours) == b""
