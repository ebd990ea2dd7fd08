"""A resident hook server, so an agent event does not pay Python's imports.

``snapshotter hook`` costs about half a second in a fresh process, almost all
of it importing pydantic and pygit2. The first hook starts this server in
the background (and handles its own event in-process); later hooks hand their
stdin to it over a Unix socket. It serves one event at a time, with exactly
the code path of the in-process hook, and exits after ``IDLE_S`` seconds
without work. The socket lives in a private (0700) directory and its name
covers the code version, interpreter, data directory and the environment
that git config depends on, so a client never talks to a server that would
behave differently from itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import struct
import sys
from pathlib import Path

IDLE_S = 300.0


def serve(sock_path: Path) -> None:
    lock = open(f"{sock_path}.lock", "w")  # noqa: SIM115 - held for the process's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another server already owns this socket
    with contextlib.suppress(FileNotFoundError):
        os.unlink(sock_path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(64)
    server.settimeout(IDLE_S)
    _warm_up()
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                return
            with conn:
                if not _handle(conn):
                    return
    finally:
        with contextlib.suppress(OSError):
            os.unlink(sock_path)
        with contextlib.suppress(OSError):
            os.unlink(f"{sock_path}.lock")  # leave nothing behind in the runtime dir


def _warm_up() -> None:
    """Import everything an event needs before the first one arrives."""
    import pygit2  # noqa: F401

    import snapshotter.checkpoints
    import snapshotter.hooks.builtin  # noqa: F401
    from snapshotter import watch

    watch.enable()  # this process captures the same worktrees again and again


def _handle(conn: socket.socket) -> bool:
    """Serve one request; False when asked to stop."""
    from snapshotter.config import data_dir as resolve
    from snapshotter.hooks.client import read_frame
    from snapshotter.hooks.command import run_request as handle

    conn.settimeout(30.0)
    try:
        header = read_frame(conn)
        if header == b"stop":
            conn.sendall(b"ok\n")
            return False
        body = read_frame(conn)
        data_dir, _, args = header.decode("utf-8", "surrogateescape").partition("\0")
        error = handle(body, resolve(data_dir or None), [a for a in args.split("\0") if a])
        conn.sendall(b"ok\n" if error is None else b"err " + error.encode(errors="replace") + b"\n")
    except (OSError, struct.error, ValueError):
        pass  # the client falls back to handling its event itself
    return True


if __name__ == "__main__":
    serve(Path(sys.argv[1]))
