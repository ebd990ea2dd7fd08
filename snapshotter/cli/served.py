"""CLI commands run by the hook server, on its warm state (issue 16.2).

A CLI process pays ~250 ms of imports, then walks the whole worktree to see
what changed. When a hook server runs for the data directory (an agent
session is under way), ``run`` hands the command to it instead: the server
forks a child that already has every module loaded, and the child's captures
go back to the server, whose watcher knows what changed (remote_capture.py).
The child runs on this process's own stdin, stdout and stderr (sent over the
socket), in its directory, environment and umask, and its exit code becomes
ours; a signal we get (Ctrl-C) is passed on to it.

Nothing is lost when no server can take the command: ``run`` returns None
before the server has agreed to run it, and the command runs here as usual.
This module is imported on every CLI start, so the client side imports only
what the hook's client does.
"""

from __future__ import annotations

import _socket
import os
import sys

from snapshotter.cli.argv import data_dir_option
from snapshotter.hooks import client

# Commands that read the worktree or the store; the rest (init, gc, demo, hook)
# gain nothing from the server or must not run in it.
WARM_COMMANDS = frozenset({"capture", "undo", "redo", "reset", "list", "diff", "show", "restore"})
PAGED_COMMANDS = frozenset({"diff"})  # through a pager on a terminal: see ``_served``
_GLOBAL_WITH_VALUE = frozenset({"--data-dir", "-C"})
_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")


def run(args: list[str]) -> int | None:
    """The command's exit code, run by the hook server; None to run it here."""
    served, data_dir = _served(args)
    if not served or not client.enabled():
        return None
    path = client.socket_file(data_dir)
    if path is None or not os.path.exists(path):
        return None  # no agent session under way: the CLI never starts a server
    try:
        meta = _request(args)
    except (OSError, ValueError):
        return None  # no usable directory or standard streams: run here
    conn = client.connect(path, client.READY_TIMEOUT_S)
    if conn is None:
        return None
    relay = _Relay()
    try:
        conn.sendall(client.frame(b"cli") + client.frame(meta))
        if client.read_line(conn) != client.READY:
            conn.close()
            return None  # busy: it will not run it
        relay.start()  # from "go" on, Ctrl-C is the child's, even before its pid is known
        fds = b"".join(fd.to_bytes(4, sys.byteorder, signed=True) for fd in (0, 1, 2))
        conn.sendmsg([client.GO], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    except OSError:
        conn.close()
        return relay.stop()  # before "go" arrived the server runs nothing
    return _wait(conn, relay)


class _Relay:
    """Signals for the child: held until its pid is known, then passed on."""

    def __init__(self) -> None:
        self.pid = 0
        self.pending: list[int] = []
        self.saved: dict[int, object] = {}

    def start(self) -> None:
        import signal

        for name in _SIGNALS:
            number = getattr(signal, name)
            self.saved[number] = signal.signal(number, self._got)

    def _got(self, signum: int, _frame: object) -> None:
        if self.pid:
            self._send(signum)
        else:
            self.pending.append(signum)

    def _send(self, signum: int) -> None:
        import contextlib

        with contextlib.suppress(OSError):  # it has just exited
            os.kill(self.pid, signum)

    def child(self, pid: int) -> None:
        self.pid = pid
        for signum in self.pending:
            self._send(signum)

    def stop(self) -> int | None:
        """Back to the defaults, as the command runs here after all: None, or 130 if
        Ctrl-C came meanwhile (then it runs nowhere, as the user asked)."""
        import signal

        for number, handler in self.saved.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
        if signal.SIGINT in self.pending:
            print("snapshotter: interrupted", file=sys.stderr)
            return 130
        return None


def _served(args: list[str]) -> tuple[bool, str | None]:
    """Whether the command is one to hand over (its name is the first non-option),
    and the ``--data-dir`` among the global options before it."""
    if os.environ.get("SNAPSHOTTER_HOOK_SERVER", "1") == "0":
        return False, None
    at, data_dir = 0, None
    while at < len(args) and args[at].startswith("-"):
        if args[at] == "--data-dir" and at + 1 < len(args):
            data_dir = args[at + 1]
        elif args[at].startswith("--data-dir="):
            data_dir = data_dir_option(args[at:])[0]
        at += 1 + (args[at] in _GLOBAL_WITH_VALUE)
    if at >= len(args) or args[at] not in WARM_COMMANDS:
        return False, data_dir
    # A pager needs the controlling terminal, which a child of the server lacks.
    paged = args[at] in PAGED_COMMANDS and os.isatty(1) and "--no-pager" not in args
    return not paged, data_dir


def _request(args: list[str]) -> bytes:
    """What the child needs to be this process: directory, umask, streams' encoding, argv, env."""
    for fd in (0, 1, 2):
        os.fstat(fd)  # a closed standard stream: not ours to pass on
    mask = os.umask(0)
    os.umask(mask)
    streams = [getattr(s, "encoding", None) or "" for s in (sys.stdin, sys.stdout, sys.stderr)]
    env = [f"{k}={v}" for k, v in os.environ.items()]
    fields = [os.getcwd(), str(mask), *streams, str(len(args)), *args, *env]
    return b"".join(client.frame(os.fsencode(f)) for f in fields)


def _wait(conn: _socket.socket, relay: _Relay) -> int | None:
    """Relay signals to the child until it exits; its exit code (None: run it here)."""
    try:
        conn.settimeout(60.0)
        line = client.read_line(conn)
        if line == client.COLD:
            conn.close()
            return relay.stop()  # it could not fork: nothing ran, so it runs here
        if not line.startswith(b"pid "):
            return _lost()
        relay.child(int(line[4:]))
        conn.settimeout(None)
        line = client.read_line(conn)
    except (OSError, ValueError):
        return _lost()
    finally:
        conn.close()
    if not line.startswith(b"exit "):
        return _lost()
    return int(line[5:])


def _lost() -> int:
    print(
        "snapshotter: the hook server stopped while running this command; "
        "what it printed above is all it did (see `snapshotter list`)",
        file=sys.stderr,
    )
    return 1


# -- in the server's forked child ---------------------------------------------


def run_child(server: str, frames: list[bytes], fds: list[int]) -> int:
    """Become the client's process, then run its command; the exit code.

    ``server`` is the socket of the server this child was forked from.
    """
    import io
    import signal

    from snapshotter.hooks import remote_capture

    cwd, mask, *encodings = (os.fsdecode(f) for f in frames[:5])
    count = int(frames[5])
    args = [os.fsdecode(f) for f in frames[6 : 6 + count]]
    env = dict(os.fsdecode(f).partition("=")[::2] for f in frames[6 + count :])
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.umask(int(mask))
    os.environ.clear()
    os.environ.update(env)
    import time

    time.tzset()  # local times in the user's TZ, not the server's (#26.6)
    os.chdir(cwd)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.argv = ["snapshotter", *args]
    sys.stdin = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=encodings[0] or None
    )
    sys.stdout, sys.stderr = (
        io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(fd, "w", closefd=False)),
            encoding=encoding or None,
            errors="backslashreplace" if fd == 2 else "strict",
            line_buffering=fd == 2 or os.isatty(fd),
        )
        for fd, encoding in ((1, encodings[1]), (2, encodings[2]))
    )
    from snapshotter.cli.main import main

    code: int = 0
    try:
        main(args, resident=remote_capture.forwarding(server))
    except SystemExit as exc:
        code = _exit_code(exc.code)
    import contextlib

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to keep
            stream.flush()
    return code


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    print(value, file=sys.stderr)
    return 1


def serve(path: str, fds: list[str] | None = None) -> None:
    """The server process: hook events, and these commands (``client.start`` runs it,
    with the descriptors of the socket and lock it took in ``fds``)."""
    from functools import partial
    from pathlib import Path

    from snapshotter.hooks.server import owned_fds
    from snapshotter.hooks.server import serve as serve_hooks

    owned = owned_fds(fds or [])
    serve_hooks(Path(path), partial(run_child, path), warm_up=_warm_up, owned=owned)


def _warm_up() -> None:
    """What the served commands import, loaded once here instead of in every child."""
    import snapshotter.cli.diff_render
    import snapshotter.cli.output
    import snapshotter.cli.terminal
    import snapshotter.hooks.remote_capture  # noqa: F401
    from snapshotter.cli.main import load_all
    from snapshotter.engine import load_commands

    load_all()
    load_commands()


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
