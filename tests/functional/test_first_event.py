"""A session's first events with no hook server running (issue 24.3).

``session_start`` starts the server and returns at once: the server takes the
baseline while the user types. The events after it are served, in order, and
exact; a runtime that sends no ``session_start`` has its first event handled in
its own process while the server it started comes up for the next.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Any

from builders import blob_at, event, files_of, listed, make_repo, run_hook, wait_for, write

from snapshotter.engine import Engine
from snapshotter.hooks import client

# ``snapshotter hook`` as the runtime runs it, which then says in a file whether
# it loaded the store (a hook the server handled never does; nor pygit2, which
# a capture in the hook's own process need not load either).
SPY = """
import runpy, sys
said, sys.argv = sys.argv[1], ["snapshotter", *sys.argv[2:]]
try:
    runpy.run_module("snapshotter", run_name="__main__")
finally:
    open(said, "w").write("in-process" if "snapshotter.store.shadow" in sys.modules else "served")
"""


def spied_hook(sent: dict[str, object], data_dir: Path, said: Path, timeout: float = 120) -> str:
    """Run one hook process; "served" or "in-process"."""
    done = run_hook(sent, data_dir, command=(sys.executable, "-c", SPY, str(said)), timeout=timeout)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return said.read_text()


def test_session_start_returns_before_the_baseline_and_the_first_tool_is_served(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "old\n", "b.txt": "b\n"})
    engine = Engine.open(root, data_dir_path=data_dir)  # an earlier session made the store
    assert engine is not None
    engine.capture()
    assert not server_socket.exists()
    with engine.store.locked():  # the baseline cannot be taken while this is held
        said = spied_hook(event("session_start", root), data_dir, tmp_path / "said", timeout=20)
        assert said == "served", "session_start was handled in the hook process"
        assert server_socket.exists(), "session_start started the hook server"
    # Edited right after session_start: the tool's checkpoint starts from before it.
    tool: dict[str, Any] = {"tool_name": "Write", "tool_input": {"file_path": str(root / "a.txt")}}
    said = spied_hook(event("pre_tool_use", root, **tool), data_dir, tmp_path / "said")
    assert said == "served", "the first pre_tool was handled in the hook process"
    write(root, "a.txt", "new\n")
    assert spied_hook(event("post_tool_use", root, **tool), data_dir, tmp_path / "said") == "served"
    (checkpoint,) = engine.checkpoints("s")
    assert [f.path for f in checkpoint.files] == ["a.txt"]
    before = blob_at(engine, checkpoint.before, "a.txt")
    assert (before, blob_at(engine, checkpoint.after, "a.txt")) == (b"old\n", b"new\n")


def test_a_turn_right_after_session_start_is_one_exact_checkpoint(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    """The posted session_start is handled before the session's next events, even
    when its baseline is held up: a late one would close the turn as interrupted."""
    root = make_repo(tmp_path / "r", {"a.txt": "old\n"})
    engine = Engine.open(root, data_dir_path=data_dir)
    assert engine is not None
    engine.capture()
    tool: dict[str, Any] = {"tool_name": "Write", "tool_input": {"file_path": str(root / "a.txt")}}
    held = contextlib.ExitStack()
    held.enter_context(engine.store.locked())
    try:
        assert run_hook(event("session_start", root), data_dir, timeout=20).returncode == 0
        later = subprocess.Popen(  # turn_start: served, waits behind session_start
            [sys.executable, "-m", "snapshotter", "--data-dir", str(data_dir), "hook"],
            stdin=subprocess.PIPE,
        )
        assert later.stdin is not None
        later.stdin.write(
            f'{{"session_id": "s", "cwd": "{root}", "hook_event_name": "turn_start"}}'.encode()
        )
        later.stdin.close()
    finally:
        held.close()
    assert later.wait(timeout=120) == 0
    assert run_hook(event("pre_tool_use", root, **tool), data_dir).returncode == 0
    write(root, "a.txt", "new\n")
    assert run_hook(event("post_tool_use", root, **tool), data_dir).returncode == 0
    assert run_hook(event("turn_end", root, reason="normal"), data_dir).returncode == 0
    turns = [cp for cp in listed(root, data_dir, "--session", "s") if cp["kind"] == "turn"]
    assert [(files_of(cp), cp["reason"]) for cp in turns] == [({"a.txt": "modified"}, "normal")]


def test_a_first_event_without_session_start_starts_the_server_for_the_next(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    """Runtimes that send no session_start: the first event is handled in its own
    process (its tool waits for that capture) while the server starts beside it."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    said = spied_hook(event("turn_start", root), data_dir, tmp_path / "said")
    assert said == "in-process"
    assert server_socket.exists(), "the first event started the hook server"
    write(root, "a.txt", "changed\n")
    assert spied_hook(event("turn_end", root), data_dir, tmp_path / "said") == "served"
    assert [files_of(cp) for cp in listed(root, data_dir, "--session", "s")] == [
        {"a.txt": "modified"}
    ]
    assert client.send(server_socket, data_dir, [], b"{}") is None, "the server still runs"


def test_a_server_that_cannot_start_loses_no_event(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    """The lock held by a process that serves nothing (a server leaving): the hook
    handles its event itself, session_start included."""
    import fcntl
    import os

    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    lock = os.open(f"{server_socket}.lock", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert run_hook(event("session_start", root), data_dir, timeout=60).returncode == 0
        assert run_hook(event("turn_start", root), data_dir, timeout=60).returncode == 0
        write(root, "a.txt", "changed\n")
        assert run_hook(event("turn_end", root), data_dir, timeout=60).returncode == 0
    finally:
        os.close(lock)
    assert not server_socket.exists(), "no server was started while the lock was held"
    assert [files_of(cp) for cp in listed(root, data_dir, "--session", "s")] == [
        {"a.txt": "modified"}
    ]
    wait_for(server_socket, present=False)
