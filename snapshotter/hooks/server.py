"""A resident hook server, so an agent event does not pay Python's imports.

``snapshotter hook`` costs about half a second in a fresh process, almost all
of it importing pydantic and pygit2. The first hook that finds no server
binds its socket and starts this server in the background (``client.own``,
``client.start``); later hooks hand their stdin to it over the socket. Each
connection gets its own thread, with exactly the code path of the in-process
hook: events of one worktree are serialised by that store's lock, as between
processes, and a stuck event holds up only its own worktree (issue 13.12).
The accept loop runs before the imports (``warm_up``): a hook that connects
meanwhile is told "ready" at once and waits for its answer, not for a timeout.
When it leaves is lifetime.py's: while a session is open (bounded), else
after ``IDLE_S`` without work. The socket lives in a private (0700) directory and its
name covers the code version, interpreter, data directory and the environment
that git config depends on, so a client never talks to a server that would
behave differently from itself.

The exchange, built so that an event is handled exactly once:

    client → header frame, body frame
    server → "ready\\n"          (a thread has the request; sent at once)
    client → "go\\n"             (only if it has not given up waiting for "ready")
    server → "ok\\n" | "err …\\n" (after handling it)

A client that gets no "ready" in time closes the connection and handles the
event itself; the server handles nothing it was not told "go" for, so the
two never both handle one event. Once the client said "go" the event is the
server's (see ``client.send``).

A posted event (``session_start``: no tool waits on it) starts with a "post"
frame and gets no answer: its client leaves after "go" (or sends "go" at once,
on a socket it bound itself before the server existed), so the hook returns
while the server takes the baseline. The session's later events wait for it
(posted.py): what a tool's checkpoint starts from is always taken first.

(Over 400 lines: the exchanges above, the threads that serve them and the
gate a fork waits at are one protocol, read together.)

The server's warm state — its inotify watchers and the stat caches it keeps
in memory — is one ``Resident`` (store/resident.py), made here and handed
to every capture it runs. Two more requests use it (issue 16.2). ``capture``
(remote_capture.py) captures a worktree with it, for a process that holds
the store lock. ``cli`` runs a CLI command in a child
forked from this warm process, on the client's own stdin, stdout and stderr
(sent over the socket), in its directory, environment and umask: the
command skips Python's start-up and captures through ``capture``. The fork
waits until no request is under way (a thread inside libgit2 or holding a
lock at fork time would leave the child deadlocked) and holds new ones back
until it is done; a client that gets no "ready" in time runs the command
itself, exactly as without a server:

    client → "cli" frame, its frames     server → "ready\n" (once it may fork)
    client → "go\n" with the three descriptors
    server → "pid N\n", then "exit CODE\n" when the child is done
             (or "cold\n" when it could not fork: nothing ran)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from snapshotter.hooks.lifetime import Sessions, idle
from snapshotter.hooks.posted import Order

if TYPE_CHECKING:
    from snapshotter.engine.serving import Resident

# A forked child's work: (the client's frames, its three descriptors) -> exit code.
CommandRunner = Callable[[list[bytes], list[int]], int]

MAX_THREADS = 32  # beyond this a client gets no "ready" and handles its event itself
GO_TIMEOUT_S = 10.0  # a client that said nothing after "ready" has gone
DRAIN_S = 60.0  # on stop, how long events under way may take to finish
_TICK_S = 1.0  # how often the accept loop looks at the stop flag and the idle clock
# How long a CLI request waits for requests under way to finish before it may
# fork; past it the client gets no "ready" (inside client.READY_TIMEOUT_S) and
# runs the command itself.
QUIET_S = 1.5
# While a CLI client is told "ready", events wait (the fork must find none under
# way): its "go" follows at once, so one that stalls is given up on quickly.
CLI_GO_TIMEOUT_S = 2.0
MAX_FDS = 3  # stdin, stdout, stderr
QUIET_WARM_S = 60.0  # how long the CLI's imports wait for a quiet moment, at most
QUIET_WARM_AFTER_S = 1.0  # a quiet moment: this long since the last request


class _Gate:
    """Requests under way, and the fork that must find none (see the module doc)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self._forking = False

    @contextlib.contextmanager
    def work(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._forking)
            self._running += 1
        try:
            yield
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()

    def close(self, timeout: float) -> bool:
        """Wait for a quiet moment and keep new work out; False if none came in time."""
        with self._cond:
            quiet = self._cond.wait_for(lambda: self._running == 0 and not self._forking, timeout)
            if quiet:
                self._forking = True
            return quiet

    def open(self) -> None:
        with self._cond:
            self._forking = False
            self._cond.notify_all()


class _Server:
    """The listening socket's state shared with the connection threads."""

    def __init__(
        self,
        listener: socket.socket,
        path: Path,
        resident: Resident | None = None,
        run_command: CommandRunner | None = None,
        keep_out: tuple[int, ...] = (),
    ) -> None:
        """``resident``: the warm state, if made already (else ``warm_up`` makes it)."""
        self.listener = listener
        self.path = path
        self._resident = resident  # the warm state every capture here uses
        self.warm = threading.Event()  # set once made (or failed to be)
        if resident is not None:
            self.warm.set()
        self.run_command = run_command
        self.keep_out = keep_out  # descriptors a forked child must not hold (the lock file)
        self.gate = _Gate()
        self.order = Order()
        self._more: Callable[[], None] | None = None  # imports still to do (``warm_up``)
        self._more_lock = threading.Lock()
        self.sessions = Sessions()
        self.stopping = threading.Event()
        self._wake = os.pipe()  # ``stop`` wakes ``loop`` through it
        os.set_blocking(self._wake[1], False)
        self.busy = 0
        self.last_done = time.monotonic()
        self.mutex = threading.Lock()
        self.threads: set[threading.Thread] = set()

    def warm_up(self, more: Callable[[], None] | None) -> None:
        """Imports and the warm state, beside the accept loop: a hook that connects
        meanwhile is told "ready" at once and its event waits here, not in its client.

        ``more`` (the CLI commands' imports, ~0.5 s) waits for a quiet moment (no
        request for QUIET_WARM_AFTER_S): the first event's baseline, and the events
        of a turn under way, must not share the interpreter with it.
        """
        self._more = more  # from now on a CLI request does these itself if need be
        try:
            with self.gate.work():  # no fork while a thread imports or preloads
                from snapshotter.engine.serving import Resident

                self._resident = Resident()
                _warm_up()
        finally:
            self.warm.set()
        if more is None:
            return
        deadline = time.monotonic() + QUIET_WARM_S
        while time.monotonic() < deadline and not self.stopping.is_set():
            with self.mutex:
                if self.busy == 0 and time.monotonic() - self.last_done > QUIET_WARM_AFTER_S:
                    break
            time.sleep(_TICK_S / 20)
        self._warm_more()

    def _warm_more(self) -> None:
        """The CLI's imports, once; a CLI request calls this before it forks, so no fork
        happens while this thread imports (the child would find a module lock held)."""
        with self._more_lock:
            more, self._more = self._more, None
            if more is not None:
                more()

    @property
    def resident(self) -> Resident:
        self.warm.wait()
        if self._resident is None:
            raise OSError("the hook server could not warm up")
        return self._resident

    def close(self) -> None:
        if self._resident is not None:
            self._resident.close()
        for fd in self._wake:
            os.close(fd)

    def loop(self) -> None:
        """Accept until stopped, or idle (see ``idle``).

        The listener is polled beside a pipe that ``stop`` writes to, and
        accepted from without blocking: a listener shut down under a blocking
        accept with a timeout makes Python retry EAGAIN in a busy loop until the
        timeout, so every stop burnt a core for up to a tick before it happened.
        """
        self.listener.setblocking(False)
        waiting = select.poll()
        waiting.register(self.listener, select.POLLIN)
        waiting.register(self._wake[0], select.POLLIN)
        while not self.stopping.is_set():
            if not waiting.poll(_TICK_S * 1000):
                now = time.monotonic()
                with self.mutex:
                    busy, since = self.busy, now - self.last_done
                if idle(busy, since, self.sessions.open(now)):
                    return
                continue
            if self.stopping.is_set():
                return
            try:
                conn, _ = self.listener.accept()
            except BlockingIOError:
                continue  # the client gave up before we took it
            except OSError:
                if self.stopping.is_set():
                    return  # ``stop`` shut the listener down under us
                raise
            conn.setblocking(True)
            self._dispatch(conn)

    def stop(self) -> None:
        """No new connection from now on: the name goes, and a waiting accept wakes."""
        self.stopping.set()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            os.write(self._wake[1], b"x")

    def _dispatch(self, conn: socket.socket) -> None:
        with self.mutex:
            full = self.busy >= MAX_THREADS
            if not full:
                self.busy += 1
        if full:
            conn.close()  # no "ready": the client handles the event itself
            return
        number = self.order.admit()
        thread = threading.Thread(target=self._serve, args=(conn, number), daemon=True)
        self.threads.add(thread)
        thread.start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        try:
            with conn:
                if not self._handle(conn, number):
                    self.stop()
        finally:
            self.order.done(number)
            with self.mutex:
                self.busy -= 1
                self.last_done = time.monotonic()
            self.threads.discard(threading.current_thread())

    def _handle(self, conn: socket.socket, number: int | None = None) -> bool:
        """Serve one request (``number``: its place in ``order``); False when asked to stop."""
        from snapshotter.hooks.client import POST, read_frame

        if number is None:
            number = self.order.admit()
        conn.settimeout(30.0)
        try:
            header = read_frame(conn)
            if header == b"stop":
                conn.sendall(b"ok\n")
                return False
            posted = header == POST
            if posted:
                header = read_frame(conn)
            body = read_frame(conn)
            if header == b"cli":
                self.order.read(number, None)
                self._command(conn, body)
            elif header == b"capture":
                from snapshotter.hooks import remote_capture

                self.order.read(number, None)
                with self.gate.work():
                    conn.sendall(remote_capture.serve(body, self.resident))
            else:
                self._event(conn, header, body, number, posted)
        except (OSError, struct.error, ValueError):
            pass  # before "go" the client handles its request itself; after it, it was ours
        return True

    def _event(
        self, conn: socket.socket, header: bytes, body: bytes, number: int, posted: bool
    ) -> None:
        """One event; a posted one's client is gone once it said "go" (no answer)."""
        from snapshotter.config import data_dir as resolve
        from snapshotter.hooks.client import GO, READY, read_line
        from snapshotter.hooks.command import peek
        from snapshotter.hooks.command import run_request as handle

        data_dir, _, args = header.decode("utf-8", "surrogateescape").partition("\0")
        arguments = [a for a in args.split("\0") if a]
        event, session = peek(body, arguments)
        self.order.read(number, session if posted else None)
        try:
            conn.sendall(READY)
        except OSError:
            if not posted:
                raise  # a posted event's "go" came with it: its client may have left
        conn.settimeout(GO_TIMEOUT_S)
        if read_line(conn) != GO:
            return  # the client gave up and handles the event itself
        self.order.wait_before(number, session)
        self.sessions.note(event, session)
        resident = self.resident
        with self.gate.work():
            error = handle(body, resolve(data_dir or None), arguments, resident)
        self.order.done(number)  # (before the answer: the next event may go on)
        if not posted:
            conn.settimeout(30.0)
            conn.sendall(
                b"ok\n" if error is None else b"err " + error.encode(errors="replace") + b"\n"
            )

    def _command(self, conn: socket.socket, body: bytes) -> None:
        """Run a CLI command in a forked child (see the module doc)."""
        from snapshotter.hooks.client import COLD, GO, READY, split_frames

        if self.run_command is None:
            return
        self._warm_more()
        if not self.gate.close(QUIET_S):
            return  # no "ready": the client runs the command itself
        fds: list[int] = []
        pid = 0
        try:
            conn.sendall(READY)
            conn.settimeout(CLI_GO_TIMEOUT_S)
            try:
                go, fds = _receive_fds(conn)
            except TimeoutError:  # too late: "cold" below, and the client runs it itself
                go = b""
            if go == GO and len(fds) == MAX_FDS:
                pid = self._fork(conn, split_frames(body), fds)
        finally:
            self.gate.open()
            for fd in fds:
                os.close(fd)
        if not pid:
            conn.sendall(COLD)  # nothing ran: the client runs the command itself
            return
        try:
            conn.settimeout(30.0)
            conn.sendall(b"pid %d\n" % pid)
        finally:
            _, status = os.waitpid(pid, 0)  # the child is always reaped, client or not
        code = os.waitstatus_to_exitcode(status)
        conn.sendall(b"exit %d\n" % (128 - code if code < 0 else code))

    def _fork(self, conn: socket.socket, frames: list[bytes], fds: list[int]) -> int:
        """The child's pid (0 when none could be made); the child never returns."""
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # we made sure no thread works
            try:
                pid = os.fork()
            except OSError:
                return 0  # out of processes or memory, for now
        if pid:
            return pid
        code = 70  # EX_SOFTWARE, should the runner itself fail
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGHUP, signal.SIG_DFL)
            self.listener.close()
            conn.close()
            for fd in self.keep_out:
                os.close(fd)
            assert self.run_command is not None
            code = self.run_command(frames, fds)
        finally:
            os._exit(code)

    def drain(self) -> None:
        """Let events under way finish (their clients said "go": they are ours)."""
        deadline = time.monotonic() + DRAIN_S
        for thread in list(self.threads):
            thread.join(max(0.0, deadline - time.monotonic()))


def serve(
    sock_path: Path,
    run_command: CommandRunner | None = None,
    warm_up: Callable[[], None] | None = None,
    owned: tuple[int, int] | None = None,
) -> None:
    """Serve hook events (and, given ``run_command``, CLI commands) until idle.

    ``warm_up`` imports what the commands need; it runs once this process owns
    the socket, so the servers a burst of first hooks starts at once do not all
    pay for imports only one of them will use. ``owned``: the listening socket
    and the lock a hook took for this server (``client.own``), as descriptors;
    without them the server takes the lock and binds the socket itself.
    """
    lock_path = f"{sock_path}.lock"
    if owned is None:
        lock = os.open(lock_path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(lock)
            return  # another server already owns this socket (and its lock file)
        listener = None
    else:
        listener = socket.socket(fileno=owned[0])
        lock = owned[1]
        os.set_inheritable(lock, False)
    _exit_on_signals()
    os.umask(0o077)  # as in the hook process: store files private (it never restores)
    try:
        _run(sock_path, listener, run_command, (lock,), warm_up)
    finally:
        # Every way out (idle, stop, SIGTERM, an exception) leaves nothing behind
        # in the runtime directory (issue 13.16). The socket goes first, while we
        # still hold the lock, so a successor never loses a socket it just bound.
        with contextlib.suppress(OSError):
            os.unlink(sock_path)
        with contextlib.suppress(OSError):
            os.unlink(lock_path)
        os.close(lock)


def _run(
    sock_path: Path,
    listener: socket.socket | None,
    run_command: CommandRunner | None,
    keep_out: tuple[int, ...],
    warm_up: Callable[[], None] | None,
) -> None:
    if listener is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(sock_path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(sock_path))
        listener.listen(64)
    os.set_inheritable(listener.fileno(), False)
    # This process captures the same worktrees again and again: it watches them.
    server = _Server(listener, sock_path, None, run_command, keep_out)
    with listener:
        threading.Thread(target=server.warm_up, args=(warm_up,), daemon=True).start()
        try:
            server.loop()
        finally:
            with contextlib.suppress(OSError):
                os.unlink(sock_path)  # no new client connects while we drain
            server.drain()
            server.close()


def _receive_fds(conn: socket.socket) -> tuple[bytes, list[int]]:
    """One short message and the descriptors sent along with it."""
    size = MAX_FDS * struct.calcsize("i")
    data, ancillary, _flags, _addr = conn.recvmsg(16, socket.CMSG_SPACE(size))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            usable = len(payload) - len(payload) % struct.calcsize("i")
            fds += struct.unpack(f"{usable // struct.calcsize('i')}i", payload[:usable])
    return data, fds


def _exit_on_signals() -> None:
    """SIGTERM and SIGHUP unwind through ``finally`` like any exit, not around it."""

    def leave(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, leave)


def _warm_up() -> None:
    """Import everything an event needs before the first one arrives."""
    import snapshotter.hooks.builtin  # noqa: F401
    from snapshotter.engine.serving import warm_up

    warm_up()


def owned_fds(argv: list[str]) -> tuple[int, int] | None:
    """The listener and lock descriptors ``client.start`` passes after the socket path."""
    return (int(argv[0]), int(argv[1])) if len(argv) >= 2 else None


if __name__ == "__main__":
    serve(Path(sys.argv[1]), owned=owned_fds(sys.argv[2:]))
