"""CLI commands run by the hook server on its warm state (issue 16.2).

When a hook server runs for the data directory, ``capture``, ``undo``,
``redo``, ``reset``, ``list`` and ``diff`` are forked from it and capture
through its watcher. They must behave exactly as the same command run in its
own process: same output, exit code, files, modes and errors; and with no
server the command runs where it was typed.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from builders import argv, event, hook_ok, interruptible, make_repo, run_cli, turn, wait_for, write

from snapshotter.hooks import client

# The console script's body, plus where the command ran: the served path never
# loads the click CLI into the client process.
CLIENT = """
import os, sys
from snapshotter.cli.launcher import main
try:
    main(sys.argv[1:])
finally:
    with open(os.environ["WHERE_FILE"], "w") as f:
        f.write("local" if "snapshotter.cli.main" in sys.modules else "served")
"""
CLIENT_COMMAND = (sys.executable, "-c", CLIENT)


def start_server(root: Path, data_dir: Path, sock: Path, session: str = "s") -> None:
    """The first hook of a session starts the server, as in an agent; returns once the
    server took that session's baseline (after the hook returned: issue 24.3)."""
    from snapshotter.engine import Engine

    hook_ok(event("session_start", root, session), data_dir)
    wait_for(sock)  # the first hook started a hook server
    deadline = time.monotonic() + 60
    # Bound is not yet warm: wait until it takes a request (an empty event, ignored).
    while True:
        try:
            client.send(sock, data_dir, [], b"{}")
            break
        except OSError:
            assert time.monotonic() < deadline, "the hook server never answered"
            time.sleep(0.05)
    while True:  # a fresh store's baseline loads libgit2 first: not part of the warm-up
        engine = Engine.open(root, data_dir_path=data_dir, create=False)
        if engine is not None and engine.has_snapshot():
            return
        assert time.monotonic() < deadline, "the session's baseline was never taken"
        time.sleep(0.05)


def cli(
    tmp_path: Path,
    data_dir: Path,
    *args: str,
    cwd: Path,
    served: bool,
    env: Mapping[str, str] | None = None,
) -> tuple[int, str, str, str]:
    """(exit code, stdout, stderr, where it ran) of ``snapshotter ARGS``."""
    where = tmp_path / "where"
    environ = {"WHERE_FILE": str(where), **(env or {})}
    if not served:
        environ["SNAPSHOTTER_HOOK_SERVER"] = "0"
    done = run_cli(*args, data_dir=data_dir, cwd=cwd, env=environ, command=CLIENT_COMMAND)
    return done.returncode, done.stdout, done.stderr, where.read_text()


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``root`` outside .git: its bytes and permission bits."""
    found = {}
    for path in sorted(root.rglob("*")):
        if ".git" in path.relative_to(root).parts or not path.is_file():
            continue
        found[str(path.relative_to(root))] = (path.read_bytes(), stat.S_IMODE(path.stat().st_mode))
    return found


def test_capture_through_the_server_sees_every_edit_since_its_last_capture(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "src/b.py": "b\n"})
    start_server(root, data_dir, server_socket)
    code, out, err, where = cli(tmp_path, data_dir, "capture", cwd=root, served=True)
    assert (code, where) == (0, "served"), err
    first = out.strip()
    write(root, "a.txt", "edited after the server's capture\n")
    write(root, "src/new.txt", "new\n")
    (root / "src" / "b.py").unlink()
    code, out, err, where = cli(tmp_path, data_dir, "capture", cwd=root, served=True)
    assert (code, where) == (0, "served"), err
    served_tree = out.strip()
    code, out, err, where = cli(tmp_path, data_dir, "capture", cwd=root, served=False)
    assert (code, where) == (0, "local"), err
    assert served_tree == out.strip() != first, "the served capture is the walk's tree"


def test_undo_and_redo_through_the_server_match_a_process_of_their_own(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    trees = {}
    outputs = {}
    for served in (True, False):
        root = make_repo(tmp_path / f"r{served}", {"a.txt": "a\n", "gone.txt": "g\n"})
        (root / "gone.txt").chmod(0o755)
        session = f"s-{served}"  # a session works in one worktree
        start_server(root, data_dir, server_socket, session)
        turn(
            root,
            session,
            {"a.txt": "agent\n", "gone.txt": None, "added.txt": "x\n"},
            data_dir,
            process=True,
        )
        after_turn = snapshot(root)
        runs = []
        for command in ("undo", "redo", "undo"):
            code, out, err, where = cli(
                tmp_path, data_dir, command, "--json", cwd=root, served=served
            )
            assert code == 0, f"{command} (served={served}, ran {where}): {err}"
            assert where == ("served" if served else "local")
            report = json.loads(out)
            runs.append((command, sorted(report["restored"]), sorted(report["removed"])))
        trees[served] = snapshot(root)
        outputs[served] = runs
        assert trees[served] != after_turn
    assert outputs[True] == outputs[False], "same files restored and removed, served or not"
    assert trees[True] == trees[False], "same bytes and modes, served or not"
    assert trees[True]["gone.txt"] == (b"g\n", 0o755)


def test_errors_and_exit_codes_are_the_commands_own(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    start_server(root, data_dir, server_socket)
    results = []
    for served in (True, False):
        for args in (("undo",), ("reset", "99"), ("list", "--session", "nope"), ("frobnicate",)):
            code, out, err, where = cli(tmp_path, data_dir, *args, cwd=root, served=served)
            results.append((served, args, code, out, err))
            expected = "served" if served and args[0] != "frobnicate" else "local"
            assert where == expected, (args, where)
    served_part = [r[2:] for r in results if r[0]]
    local_part = [r[2:] for r in results if not r[0]]
    assert served_part == local_part
    assert any(code not in (0, 1) for code, _out, _err in served_part), "distinct exit codes"
    assert all("Traceback" not in err for _c, _o, err in served_part)


def test_directory_umask_and_environment_are_the_clients(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"sub/a.txt": "a\n", "b.txt": "b\n"})
    start_server(root, data_dir, server_socket)
    turn(root, "s", {"sub/a.txt": None, "b.txt": "agent\n"}, data_dir, process=True)
    mask = os.umask(0o027)
    try:
        code, _out, err, where = cli(
            tmp_path, data_dir, "undo", cwd=root / "sub", served=True, env={"NO_COLOR": "1"}
        )
    finally:
        os.umask(mask)
    assert (code, where) == (0, "served"), err
    restored = root / "sub" / "a.txt"
    assert restored.read_text() == "a\n"
    assert stat.S_IMODE(restored.stat().st_mode) == 0o640, "the client's umask, not the server's"
    other = make_repo(tmp_path / "other", {"c.txt": "c\n"})
    listed = [cli(tmp_path, data_dir, "list", cwd=d, served=True) for d in (root / "sub", other)]
    assert [(code, where) for code, _out, _err, where in listed] == [(0, "served")] * 2, [
        e for _c, _o, e, _w in listed
    ]
    assert "no checkpoints" not in listed[0][1] and "turn_end" in listed[0][1]
    assert listed[1][1:3] == cli(tmp_path, data_dir, "list", cwd=other, served=False)[1:3]
    assert "turn_end" not in listed[1][1], "the other worktree's own (empty) list"


def test_without_a_server_the_command_runs_here_and_starts_none(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    code, _out, err, where = cli(tmp_path, data_dir, "capture", cwd=root, served=True)
    assert (code, where) == (0, "local"), err
    assert not server_socket.exists(), "the CLI never starts a hook server"


def test_a_paged_command_on_a_terminal_runs_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pager needs the controlling terminal, which the server's children lack."""
    import pty

    monkeypatch.setenv("SNAPSHOTTER_HOOK_SERVER", "1")
    from snapshotter.cli import served

    leader, follower = pty.openpty()
    saved = os.dup(1)
    try:
        os.dup2(follower, 1)
        assert not served._served(["diff"])[0]
        assert served._served(["diff", "--no-pager"])[0]
        assert served._served(["-v", "--data-dir", "d", "-C", "x", "undo"]) == (True, "d")
    finally:
        os.dup2(saved, 1)
        for fd in (saved, leader, follower):
            os.close(fd)
    assert served._served(["diff"])[0], "not on a terminal: no pager, so served"
    assert not served._served(["gc"])[0] and not served._served(["-C", "undo", "gc"])[0]
    assert served._served(["--data-dir=e", "list"]) == (True, "e")


def test_a_busy_server_leaves_the_command_to_the_client(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    """The fork waits for a quiet moment; an event stuck on a lock means: run it here."""
    import filelock

    from snapshotter.engine import Engine

    busy = make_repo(tmp_path / "busy", {"a.txt": "a\n"})
    other = make_repo(tmp_path / "other", {"b.txt": "b\n"})
    start_server(busy, data_dir, server_socket, "s-busy")
    hook_ok(event("session_start", other, "s-other"), data_dir)
    engine = Engine.open(busy, data_dir_path=data_dir, create=False)
    assert engine is not None
    with filelock.FileLock(str(engine.store.root / "lock")):
        stuck = subprocess.Popen(
            argv(data_dir, "hook"),
            stdin=subprocess.PIPE,
        )
        assert stuck.stdin is not None
        stuck.stdin.write(json.dumps(event("turn_start", busy, "s-busy")).encode())
        stuck.stdin.close()
        deadline = time.monotonic() + 60
        ran = []
        while time.monotonic() < deadline and "local" not in ran:
            code, _out, err, where = cli(tmp_path, data_dir, "list", cwd=other, served=True)
            assert code == 0, err
            ran.append(where)
        assert ran[-1] == "local", "while an event waits on a lock, commands run in the client"
    assert stuck.wait(timeout=120) == 0
    deadline = time.monotonic() + 60  # once the freed event is done, the server is quiet
    while time.monotonic() < deadline and ran[-1] != "served":
        code, _out, err, where = cli(tmp_path, data_dir, "list", cwd=other, served=True)
        assert code == 0, err
        ran.append(where)
    assert ran[-1] == "served", "a quiet server runs the commands again"


@pytest.mark.parametrize("served", [True, False])
def test_ctrl_c_reaches_the_command(
    tmp_path: Path, data_dir: Path, server_socket: Path, served: bool
) -> None:
    """SIGINT to the client interrupts the forked command as it would the process itself."""
    import signal

    big = "".join(f"line {i}\n" for i in range(200_000))
    root = make_repo(tmp_path / "r", {"big.txt": big})
    start_server(root, data_dir, server_socket)
    turn(root, "s", {"big.txt": big.replace("line", "LINE")}, data_dir, process=True)
    where = tmp_path / "where"
    environ = {**os.environ, "WHERE_FILE": str(where)}
    if not served:
        environ["SNAPSHOTTER_HOOK_SERVER"] = "0"
    proc = subprocess.Popen(
        argv(data_dir, "diff", "--no-pager", command=CLIENT_COMMAND),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=root,
        env=environ,
        preexec_fn=interruptible,  # Ctrl-C comes to it
    )
    assert proc.stdout is not None
    assert proc.stdout.read(1), "the diff started"  # then blocks on the full pipe
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (proc.returncode, err[-500:])
    assert b"interrupted" in err and b"Traceback" not in err, err[-500:]
    assert len(out) < 2 * len(big), "stopped before the whole diff was written"
    assert where.read_text() == ("served" if served else "local")


def test_a_server_that_cannot_fork_hands_the_command_back(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Out of processes: nothing ran, so the client runs the command itself."""
    import errno
    import socket
    import struct
    import threading

    from snapshotter.cli import served
    from snapshotter.hooks import server as server_mod
    from snapshotter.store.resident import Resident

    ran: list[list[bytes]] = []

    def runner(frames: list[bytes], fds: list[int]) -> int:
        ran.append(frames)
        return 0

    def no_fork() -> int:
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv = server_mod._Server(listener, tmp_path / "s.sock", Resident(), runner)
    monkeypatch.setattr(os, "fork", no_fork)
    ours, theirs = socket.socketpair()
    thread = threading.Thread(target=srv._command, args=(theirs, client.frame(b"undo")))
    thread.start()
    try:
        assert client.read_line(ours) == client.READY
        relay = served._Relay()
        relay.start()
        ours.sendmsg(
            [client.GO], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))]
        )
        assert served._wait(ours, relay) is None, "the client runs the command itself"
    finally:
        thread.join(timeout=30)
        listener.close()
        theirs.close()
    assert not ran, "nothing ran in the server"
    assert srv.gate.close(0), "the gate is open again for the next command"


def test_a_cli_client_that_goes_silent_after_ready_frees_the_server(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Events wait while a command may fork: a client that never says "go" cannot
    keep them waiting; nothing runs, the gate opens for the next request, and the
    client, should it say "go" too late, is told "cold" (it runs the command itself:
    a lost connection would make it report a server that stopped, exit 1)."""
    import socket
    import threading

    from snapshotter.hooks import server as server_mod
    from snapshotter.store.resident import Resident

    ran: list[list[bytes]] = []

    def runner(frames: list[bytes], fds: list[int]) -> int:
        ran.append(frames)
        return 0

    monkeypatch.setattr(server_mod, "CLI_GO_TIMEOUT_S", 0.2)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv = server_mod._Server(listener, tmp_path / "s.sock", Resident(), runner)
    ours, theirs = socket.socketpair()
    thread = threading.Thread(target=srv._handle, args=(theirs,))
    with ours, theirs, listener:
        ours.sendall(client.frame(b"cli") + client.frame(client.frame(b"undo")))
        thread.start()
        assert client.read_line(ours) == client.READY
        with srv.gate.work():  # an event waits until the silent client is given up on
            pass
        thread.join(timeout=60)
        ours.settimeout(10)
        assert client.read_line(ours) == client.COLD, "nothing ran: the client runs it"
    assert not thread.is_alive() and not ran
    assert srv.gate.close(0), "the gate is open again"


def closed_pipe_run(
    tmp_path: Path, data_dir: Path, *args: str, cwd: Path, served: bool
) -> tuple[int, bytes, str]:
    """(exit code, stderr, where it ran) of ``snapshotter ARGS`` whose stdout's reader
    is gone before it writes (``snapshotter list | true``)."""
    where = tmp_path / "where"
    env = {**os.environ, "WHERE_FILE": str(where)}
    if not served:
        env["SNAPSHOTTER_HOOK_SERVER"] = "0"
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            argv(data_dir, *args, command=CLIENT_COMMAND),
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            check=False,
            timeout=120,
        )
    finally:
        os.close(write_end)
    return done.returncode, done.stderr, where.read_text()


def test_a_closed_pipe_and_the_time_zone_are_the_same_served_or_not(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    """#26.6: git's quiet 141 when the reader went away (`| head`), and the user's TZ,
    whether the hook server forked the command or not."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    start_server(root, data_dir, server_socket)
    turn(root, "s", {"a.txt": "agent\n"}, data_dir, process=True)
    for served in (True, False):
        for args in (("list",), ("show", "1"), ("diff", "1", "--no-pager")):
            code, said, where = closed_pipe_run(tmp_path, data_dir, *args, cwd=root, served=served)
            assert where == ("served" if served else "local"), (args, where)
            assert (code, said) == (141, b""), f"{args} served={served}: {code} {said!r}"
    times = set()
    for served in (True, False):
        code, out, err, where = cli(
            tmp_path, data_dir, "show", "1", cwd=root, served=served, env={"TZ": "Asia/Tokyo"}
        )
        assert (code, where) == (0, "served" if served else "local"), err
        times.add(next(line for line in out.splitlines() if line.startswith("when")))
    assert len(times) == 1 and "+0900" in times.pop(), "the client's TZ, not the server's"
