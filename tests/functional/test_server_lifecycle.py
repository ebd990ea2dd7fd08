"""The hook server: worktrees served independently, exactly-once hand-over, nothing left behind.

Issue 13: one stuck event held every other worktree's hooks for 55 s (12);
a hook with stdin closed crashed (14); the server left its socket and lock
file in the runtime directory (16).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import argv, event, files_of, listed, make_repo, run_hook, wait_for, write

from snapshotter.config import stores_dir
from snapshotter.engine import Engine
from snapshotter.hooks import client


def start_server(path: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "snapshotter.hooks.server", str(path)])
    wait_for(path)
    return proc


def checkpoints(root: Path, data_dir: Path, session: str) -> list[list[str]]:
    return [list(files_of(cp)) for cp in listed(root, data_dir, "--session", session)]


def test_server_hook_with_stdin_closed_exits_0(tmp_path: Path, data_dir: Path) -> None:
    done = subprocess.run(
        ["sh", "-c", 'exec "$@" <&-', "sh", *argv(data_dir, "hook")],
        capture_output=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr!r}"
    assert b"Traceback" not in done.stderr, done.stderr
    assert done.stdout in (b"", b"{}"), done.stdout


@pytest.mark.parametrize("how", ["sigterm", "stop"])
def test_server_leaves_no_socket_or_lock_behind(server_socket: Path, how: str) -> None:
    proc = start_server(server_socket)
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)
    else:
        client.stop(server_socket)
    proc.wait(timeout=60)
    left = sorted(
        p.name for p in server_socket.parent.iterdir() if p.name.startswith(server_socket.stem)
    )
    assert left == [], f"after {how} the runtime directory still holds {left}"


def test_server_a_stuck_worktree_does_not_hold_up_another(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    stuck = make_repo(tmp_path / "stuck", {"a.txt": "a\n"})
    free = make_repo(tmp_path / "free", {"b.txt": "b\n"})
    assert run_hook(event("turn_start", free), data_dir).returncode == 0
    wait_for(server_socket)  # the first hook started the server
    engine = Engine.open(stuck, data_dir_path=data_dir)
    assert engine is not None
    held = contextlib.ExitStack()
    held.enter_context(engine.store.locked())  # the stuck worktree's event waits for it
    try:
        blocked = subprocess.Popen(
            argv(data_dir, "hook"),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert blocked.stdin is not None
        blocked.stdin.write(json.dumps(event("turn_start", stuck)).encode())
        blocked.stdin.close()
        time.sleep(1.0)  # let it reach the server first
        write(free, "b.txt", "changed\n")
        done = run_hook(event("turn_end", free), data_dir, timeout=25)
        assert done.returncode == 0 and not done.stderr, done.stderr
        assert checkpoints(free, data_dir, "s") == [["b.txt"]], (
            "the other worktree's turn was recorded while the stuck one still waited"
        )
    finally:
        held.close()
    assert blocked.wait(timeout=120) == 0, "the stuck worktree's hook finished once freed"


def test_server_too_busy_to_answer_means_the_hook_handles_its_event(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    server_socket.parent.mkdir(parents=True, exist_ok=True)
    wedged = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    wedged.bind(str(server_socket))
    wedged.listen(64)  # connects succeed, but nobody ever answers
    try:
        assert run_hook(event("turn_start", root), data_dir, timeout=20).returncode == 0
        write(root, "a.txt", "changed\n")
        done = run_hook(event("turn_end", root), data_dir, timeout=20)
        assert done.returncode == 0 and not done.stderr, done.stderr
    finally:
        wedged.close()
        os.unlink(server_socket)
    assert checkpoints(root, data_dir, "s") == [["a.txt"]], "both events handled in-process"


def test_server_never_handles_an_event_its_client_gave_up_on(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    proc = start_server(server_socket)
    raw = json.dumps(event("turn_start", root)).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(server_socket))
    header = client.data_dir_arg(data_dir).encode()
    conn.sendall(client.frame(header) + client.frame(raw))
    conn.close()  # gave up before "go": this client handles the event itself
    client.stop(server_socket)  # waits for events under way
    proc.wait(timeout=60)
    store_roots = list(stores_dir(data_dir).glob("*/state.json"))
    assert store_roots == [], "the server handled an event whose client had given up on it"
