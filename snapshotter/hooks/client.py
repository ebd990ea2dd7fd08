"""The hook's side of the resident server: few imports, never fails the agent."""

from __future__ import annotations

import hashlib
import os
import socket
import struct
import sys
from pathlib import Path

_ENV_KEYS = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
             "GIT_CONFIG_NOSYSTEM", "PATH")
CLIENT_TIMEOUT_S = 55.0  # inside docker-agent's default 60 s hook timeout


def enabled() -> bool:
    return os.environ.get("SNAPSHOTTER_HOOK_SERVER", "1") != "0"


def socket_path(data_dir: Path) -> Path | None:
    """This interpreter's, code's, data dir's and environment's server socket."""
    package = Path(__file__).resolve().parent.parent
    try:
        stamp = max(p.stat().st_mtime_ns for p in package.rglob("*.py"))
    except (OSError, ValueError):
        return None
    key = "\0".join([sys.prefix, os.path.realpath(sys.executable), str(package), str(stamp),
                     str(data_dir),
                     *(os.environ.get(k, "") for k in _ENV_KEYS)])
    name = hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/snapshotter-{os.getuid()}")
    folder = base / "snapshotter" if os.environ.get("XDG_RUNTIME_DIR") else base
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = folder.stat()
    except OSError:
        return None
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        return None  # someone else's or shared: do not trust it
    path = folder / f"{name}.sock"
    if len(os.fsencode(path)) > 100:
        return None  # beyond what a Unix socket address holds (108 bytes on Linux)
    return path


def send(path: Path, data_dir: Path, args: list[str], body: bytes) -> str | None:
    """Hand one event to the server; its error text, or None. Raises OSError if none runs."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(CLIENT_TIMEOUT_S)
        conn.connect(str(path))
        header = "\0".join([str(data_dir), *args]).encode("utf-8", "surrogateescape")
        conn.sendall(frame(header) + frame(body))
        reply = _read_line(conn)
    if not reply.startswith(b"ok"):
        if reply.startswith(b"err "):
            return reply[4:].decode(errors="replace")
        raise ConnectionError("the hook server gave no answer")
    return None


def stop(path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(5.0)
        conn.connect(str(path))
        conn.sendall(frame(b"stop"))
        _read_line(conn)


def start(path: Path) -> None:
    """Start a server in the background; it outlives this process."""
    import subprocess  # only on this rare path: the hook's start-up stays lean
    subprocess.Popen(
        [sys.executable, "-m", "snapshotter.hooks.server", str(path)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True,
    )


def frame(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def read_frame(conn: socket.socket) -> bytes:
    (size,) = struct.unpack(">I", _read_exact(conn, 4))
    return _read_exact(conn, size)


def _read_exact(conn: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = conn.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("connection closed early")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_line(conn: socket.socket) -> bytes:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            break
        data += chunk
    return data
