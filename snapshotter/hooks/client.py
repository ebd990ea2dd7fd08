"""The hook's side of the resident server: few imports, never fails the agent.

This module runs in every hook process, so it imports only C-level modules
(no pathlib, socket, hashlib, json or typing: each costs milliseconds of
the round trip the agent waits for).
"""

from __future__ import annotations

import _socket
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import NoReturn

# The environment a capture depends on (data directory, git config): the
# server's must equal the client's. PATH is left out on purpose: a command run
# from the user's shell must find the server the agent's hooks started, and a
# forked command gets the client's whole environment anyway (cli/served.py).
_ENV_KEYS = (
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "SNAPSHOTTER_DATA_DIR",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
)
# The server process: hooks and forked CLI commands (cli/served.py), so its
# entry is the top layer's. A module name, not an import: this runs in every hook.
SERVER_MODULE = "snapshotter.cli.served"
CLIENT_TIMEOUT_S = 55.0  # inside docker-agent's default 60 s hook timeout
# How long a server may take to take an event on; past it the hook handles
# the event itself, so one stuck event never holds other hooks up (issue 13.12).
READY_TIMEOUT_S = 2.0
READY = b"ready\n"
GO = b"go\n"
COLD = b"cold\n"  # the server took a CLI command but could not fork: it ran nothing
POST = b"post"  # an event whose hook does not wait for it (``post``)


def enabled() -> bool:
    """Whether to use the resident server: asked for, and this platform can run one.

    It needs Unix sockets, user ids and ``flock``; without them (Windows) every
    event is handled in its own process, which works the same, only slower.
    (``flock`` is looked for only when a server is to start, by ``own``: the
    module costs a served hook ~0.2 ms it has no use for.)
    """
    if os.environ.get("SNAPSHOTTER_HOOK_SERVER", "1") == "0":
        return False
    return hasattr(_socket, "AF_UNIX") and hasattr(os, "getuid")


def leave(code: int) -> NoReturn:
    """Exit with ``code``, as ``sys.exit`` does, without most of Python's shutdown.

    For a hook or command the server ran for us: this process only relayed it
    (the server ran it, on our standard streams) and holds nothing the shutdown
    must close (no file, no thread). The shutdown (modules torn down one by one)
    would cost ~4 ms of CPU, a tenth of the reference's undo at 10k files. So
    SystemExit unwinds as ever (``finally`` blocks run), and the first exit
    handler to run ends the process. Only the console script calls it
    (cli/launcher.py): a caller of ``main(argv)`` keeps its whole shutdown.
    """
    import atexit

    atexit.register(_end_now, code)
    sys.exit(code)


def _end_now(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - contextlib would be one more import for every hook
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed, or None: nothing to keep
            pass
    os._exit(code)


def data_dir_arg(data_dir: str | os.PathLike[str] | None) -> str:
    """``--data-dir`` as the server gets it: absolute (the server's cwd differs), or ""."""
    if data_dir is None or not os.fspath(data_dir):
        return ""
    return os.path.abspath(os.path.expanduser(os.fspath(data_dir)))


def socket_path(data_dir: str | os.PathLike[str] | None) -> Path | None:
    from pathlib import Path

    found = socket_file(data_dir)
    return None if found is None else Path(found)


def socket_file(data_dir: str | os.PathLike[str] | None) -> str | None:
    """This interpreter's, code's, data dir's and environment's server socket.

    ``data_dir`` is the ``--data-dir`` option (None without one): the server
    resolves the default itself, in the environment the name covers.
    """
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    stamp = _newest_mtime(package)
    if stamp is None:
        return None
    key = "\0".join(
        [
            sys.prefix,
            os.path.realpath(sys.executable),
            package,
            str(stamp),
            data_dir_arg(data_dir),
            *(os.environ.get(k, "") for k in _ENV_KEYS),
        ]
    ).encode("utf-8", "surrogateescape")
    # Not a security boundary (the directory is private): a stable 64-bit name, the
    # key's bytes as one number modulo the largest 64-bit prime (no module to load:
    # zlib's crc32 cost every hook ~0.25 ms of import).
    name = f"{int.from_bytes(key, 'big') % _NAME_PRIME:016x}"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = os.path.join(runtime, "snapshotter") if runtime else f"/tmp/snapshotter-{os.getuid()}"
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.stat(folder)
    except OSError:
        return None
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None  # someone else's or shared: do not trust it
    path = os.path.join(folder, f"{name}.sock")
    if len(os.fsencode(path)) > 100:
        return None  # beyond what a Unix socket address holds (108 bytes on Linux)
    return path


_NAME_PRIME = 2**64 - 59


def _newest_mtime(package: str) -> int | None:
    """The package's newest source file: an edited package gets a fresh server."""
    newest, stack = 0, [package]
    try:
        while stack:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                        stack.append(entry.path)
                    elif entry.name.endswith(".py"):
                        newest = max(newest, entry.stat().st_mtime_ns)
    except OSError:
        return None
    return newest or None


def send(
    path: str | os.PathLike[str],
    data_dir: str | os.PathLike[str] | None,
    args: list[str],
    body: bytes,
) -> str | None:
    """Hand one event to the server; its error text, or None.

    Raises OSError when this process must handle the event itself: no server
    (ConnectionRefusedError, FileNotFoundError), a server too busy to say
    "ready" within READY_TIMEOUT_S (it never handles an event it was not told
    "go" for, so giving up then is safe), or a server that died after "go"
    (it may have handled part of it; events are idempotent enough that a
    second try is better than a lost turn). A server that said "ready" and is
    slow to finish keeps the event: no fallback, which could record it twice.
    """
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(READY_TIMEOUT_S)
        conn.connect(os.fspath(path))
        header = "\0".join([data_dir_arg(data_dir), *args]).encode("utf-8", "surrogateescape")
        conn.sendall(frame(header) + frame(body))
        if read_line(conn) != READY:
            raise ConnectionError("the hook server is busy")
        conn.sendall(GO)  # from here on the event is the server's
        conn.settimeout(CLIENT_TIMEOUT_S)
        try:
            reply = read_line(conn)
        except TimeoutError:
            return "snapshotter hook: the hook server is still handling this event"
    finally:
        conn.close()
    if not reply.startswith(b"ok"):
        if reply.startswith(b"err "):
            return reply[4:].decode(errors="replace")
        raise ConnectionError("the hook server gave no answer")
    return None


def connect(path: str | os.PathLike[str], timeout: float) -> _socket.socket | None:
    """A connection to the server at ``path``; None when none listens there."""
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        conn.connect(os.fspath(path))
    except OSError:
        conn.close()
        return None
    return conn


def stop(path: str | os.PathLike[str]) -> None:
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(5.0)
        conn.connect(os.fspath(path))
        conn.sendall(frame(b"stop"))
        read_line(conn)
    finally:
        conn.close()


def post(
    path: str | os.PathLike[str],
    data_dir: str | os.PathLike[str] | None,
    args: list[str],
    body: bytes,
) -> None:
    """Hand one event to a running server without waiting for it to be handled.

    For an event no tool waits on (``session_start``: its baseline is taken
    while the user types). The server handles it before any later request of
    the same session (posted.py). Raises OSError as ``send``
    does, while this process must still handle the event itself.
    """
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(READY_TIMEOUT_S)
        conn.connect(os.fspath(path))
        conn.sendall(_post_frames(data_dir, args, body))
        if read_line(conn) != READY:
            raise ConnectionError("the hook server is busy")
        conn.sendall(GO)  # from here on the event is the server's
    finally:
        conn.close()


def _post_frames(data_dir: str | os.PathLike[str] | None, args: list[str], body: bytes) -> bytes:
    header = "\0".join([data_dir_arg(data_dir), *args]).encode("utf-8", "surrogateescape")
    return frame(POST) + frame(header) + frame(body)


def own(path: str) -> tuple[_socket.socket, int] | None:
    """The socket bound and the server's lock taken, for a server this process starts.

    (listener, lock descriptor); None when another process holds the lock (a
    server is running, starting or leaving). Binding here, before the server
    process exists, means a hook that comes next connects at once instead of
    finding no socket (and the events it queues are served in order).
    """
    import contextlib

    try:
        import fcntl
    except ImportError as exc:  # no flock here: no server, each event handled in its process
        raise OSError("the hook server needs flock") from exc
    lock = os.open(f"{path}.lock", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        return None
    listener = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a dead server's: whoever holds the lock owns the name
        listener.bind(path)
        listener.listen(64)
    except OSError:
        listener.close()
        os.close(lock)
        raise
    return listener, lock


def post_first(
    path: str, data_dir: str | os.PathLike[str] | None, args: list[str], body: bytes
) -> None:
    """Queue an event on a socket this process bound (``own``): the server it starts
    takes it first. Never waits for the server (it does not exist yet)."""
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(READY_TIMEOUT_S)  # a body larger than the socket's buffer waits
        conn.connect(path)
        conn.sendall(_post_frames(data_dir, args, body) + GO)
    finally:
        conn.close()


def start(path: str | os.PathLike[str], owned: tuple[_socket.socket, int] | None = None) -> None:
    """Start a server in the background; it outlives this process.

    ``owned`` (from ``own``): the server serves that socket and holds that lock.
    """
    from snapshotter.hooks.detach import detach  # only on this rare path: start-up stays lean

    fds = () if owned is None else (owned[0].fileno(), owned[1])
    detach([sys.executable, "-P", "-m", SERVER_MODULE, os.fspath(path), *map(str, fds)], fds)


def frame(data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + data


def split_frames(data: bytes) -> list[bytes]:
    """The frames ``frame`` joined into ``data``, in order."""
    found, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        found.append(data[at + 4 : at + 4 + size])
        at += 4 + size
    return found


def read_frame(conn: _socket.socket) -> bytes:
    size = int.from_bytes(_read_exact(conn, 4), "big")
    return _read_exact(conn, size)


def _read_exact(conn: _socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed early")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_line(conn: _socket.socket) -> bytes:
    """One line, newline included (what came before the end, if the peer closed first).

    Never reads past the newline: a server may send two lines in one write
    ("pid N", then "exit 0" of a command that ended at once), and the second
    must be there for the next call.
    """
    data = b""
    while True:
        ahead = conn.recv(4096, _socket.MSG_PEEK)
        if not ahead:
            return data
        end = ahead.find(b"\n")
        data += conn.recv(len(ahead) if end < 0 else end + 1)
        if data.endswith(b"\n"):
            return data
