"""Processes the benchmarks start: wall time and peak RSS of each, and the hook server's.

Every snapshotter figure comes from a real process of the installed CLI
(``snapshotter ...``, else ``python -m snapshotter``): the benchmarks never
import snapshotter's internal modules, only its public API, so they keep
working whatever the package's layout.

A process's peak RSS is what ``os.wait4`` reports for it alone
(``ru_maxrss``): no descendant it left running (the hook server a first hook
starts) is counted in it. Linux counts the pages a child shares with its
parent between fork and exec too, so a child of this (large) process would
never read below this process's own RSS. Every measured process is therefore
started by a small resident spawner (``python -S -I``, about 10 MB), which
also times it from fork to reap; readings at the spawner's own RSS
(``floor_kb``) mean "this much or less".

The hook server is found through ``/proc``: each run gives its processes a
private ``XDG_RUNTIME_DIR``, where the servers keep their sockets, so a
process whose command line names that directory is one of this run's servers.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

KB = 1024
SERVER_STOP_S = 30.0


@dataclass(frozen=True)
class Done:
    """One finished process."""

    ms: float  # wall time from fork to reaped
    rss_kb: int  # its peak resident set (ru_maxrss, kB on Linux)
    code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False  # killed at its time limit


_MEASURED: list[str] = []  # the measured install's python (install.py), once made


def use_install(python: Path) -> None:
    """Measure the install whose interpreter is ``python`` (install.py) from now on."""
    _MEASURED[:] = [str(python)]


def python() -> str:
    """The interpreter every measured process runs: the measured install's, else this one."""
    return _MEASURED[0] if _MEASURED else sys.executable


def snapshotter_cmd() -> list[str]:
    """The console script beside the measured interpreter, else ``python -m snapshotter``."""
    script = Path(python()).parent / "snapshotter"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [python(), "-m", "snapshotter"]


_SPAWNER = r"""
import json, os, signal, sys, time
out = sys.stdout
child = 0
expired = False


def expire(signum, frame):
    global expired
    if child:
        expired = True
        os.kill(child, signal.SIGKILL)


signal.signal(signal.SIGALRM, expire)
for line in sys.stdin:
    req = json.loads(line)
    fds = [os.open(req["stdin"] or os.devnull, os.O_RDONLY),
           os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
           os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)]
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            if req["cwd"]:
                os.chdir(req["cwd"])
            for i, fd in enumerate(fds):
                os.dup2(fd, i)
            os.closerange(3, 65536)
            os.execvpe(req["cmd"][0], req["cmd"], req["env"])
        finally:
            os._exit(127)
    child, expired = pid, False
    if req["timeout"]:
        signal.setitimer(signal.ITIMER_REAL, req["timeout"])
    _pid, status, usage = os.wait4(pid, 0)
    ms = (time.perf_counter() - start) * 1000.0
    signal.setitimer(signal.ITIMER_REAL, 0)
    child = 0
    for fd in fds:
        os.close(fd)
    out.write(json.dumps({"ms": ms, "rss_kb": usage.ru_maxrss, "timed_out": expired,
                          "code": os.waitstatus_to_exitcode(status)}) + "\n")
    out.flush()
"""


class _Spawner:
    """The resident process that starts, times and reaps every measured process."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-S", "-I", "-c", _SPAWNER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            close_fds=True,
            start_new_session=True,  # its own group: ``close`` can end it with its child
        )
        self.dir = Path(tempfile.mkdtemp(prefix="snb-io-"))

    def run(
        self,
        cmd: Sequence[str],
        env: Mapping[str, str],
        cwd: Path | None,
        stdin: bytes | None,
        timeout_s: float | None,
    ) -> Done:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        paths = {k: self.dir / k for k in ("in", "out", "err")}
        if stdin is not None:
            paths["in"].write_bytes(stdin)
        request = {
            "cmd": list(cmd),
            "env": dict(env),
            "cwd": str(cwd) if cwd else "",
            "stdin": str(paths["in"]) if stdin is not None else "",
            "stdout": str(paths["out"]),
            "stderr": str(paths["err"]),
            "timeout": timeout_s or 0,
        }
        self.proc.stdin.write(json.dumps(request) + "\n")
        reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"the process spawner died running {cmd!r}")
        got = json.loads(reply)
        return Done(
            float(got["ms"]),
            int(got["rss_kb"]),
            int(got["code"]),
            paths["out"].read_bytes(),
            paths["err"].read_bytes(),
            bool(got["timed_out"]),
        )

    def floor_kb(self) -> int:
        """The spawner's own RSS: what any child reads at least."""
        found = memory_kb(self.proc.pid)
        return found[0] if found else 0

    def close(self) -> None:
        """Let the spawner finish; if a child still runs (an interrupted run), end both."""
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # its own group: it and its child
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


_spawner: _Spawner | None = None


def run(
    cmd: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path | None = None,
    stdin: bytes | None = None,
    timeout_s: float | None = None,
) -> Done:
    """Run ``cmd`` to its end: its wall time (fork to reap) and its own peak RSS.

    Past ``timeout_s`` it is killed (SIGKILL) and ``timed_out`` is set.
    """
    global _spawner
    if _spawner is None:
        _spawner = _Spawner()
        atexit.register(close)
    try:
        return _spawner.run(cmd, env, cwd, stdin, timeout_s)
    except BaseException:  # a request cut short leaves the spawner out of step
        close()
        raise


def floor_kb() -> int:
    """The least RSS any reading can show (the spawner's own); 0 before the first run."""
    return _spawner.floor_kb() if _spawner is not None else 0


def close() -> None:
    """Stop the spawner (it is started again on demand)."""
    global _spawner
    if _spawner is not None:
        _spawner.close()
        _spawner = None


# -- the hook server ---------------------------------------------------------------


def servers(runtime_dir: Path) -> list[int]:
    """Live hook servers whose socket lies under ``runtime_dir``: their pids."""
    marker = os.fsencode(str(runtime_dir)) + b"/"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            any(b"snapshotter" in a for a in argv)
            and any(a.startswith(marker) for a in argv)
            and _running(int(entry.name))
        ):
            found.append(int(entry.name))
    return sorted(found)


def memory_kb(pid: int) -> tuple[int, int] | None:
    """(VmRSS, VmHWM) of a live process in kB: resident now, and its peak."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    if len(values) != 2:
        return None
    return values["VmRSS"], values["VmHWM"]


def wait_for_server(runtime_dir: Path, timeout_s: float = SERVER_STOP_S) -> int | None:
    """The pid of this run's hook server, once its socket exists; None if none came up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = servers(runtime_dir)
        if pids and any(runtime_dir.rglob("*.sock")):
            return pids[0]
        time.sleep(0.05)
    return None


def stop_servers(runtime_dir: Path, timeout_s: float = SERVER_STOP_S) -> list[int]:
    """SIGTERM this run's hook servers (they exit cleanly on it) and wait until they are gone.

    Returns the pids that did not go (then killed).
    """
    pids = servers(runtime_dir)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(_running(pid) for pid in pids):
        time.sleep(0.02)
    stuck = [pid for pid in pids if _running(pid)]
    for pid in stuck:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return stuck


def _running(pid: int) -> bool:
    """Alive and not a zombie (a server's parent is gone; init may reap it late)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(") ")[2][:1] not in ("Z", "X")


def kb_to_mb(kb: float) -> float:
    return kb / KB
