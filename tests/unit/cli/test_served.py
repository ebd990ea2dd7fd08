"""snapshotter/cli/served.py: a command run by the hook server, as its client sees it."""

from __future__ import annotations

import os
import socket

import pytest

from snapshotter.cli import served


def test_a_served_command_that_ends_at_once_gives_its_exit_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The client of a forked command reads its pid, then its exit; both may arrive
    in one piece. It was taken for a server that stopped mid-command."""

    ours, server = socket.socketpair()
    with server:
        server.sendall(b"pid %d\nexit 3\n" % os.getpid())
        assert served._wait(ours, served._Relay()) == 3
    assert capsys.readouterr().err == ""
