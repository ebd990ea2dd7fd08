"""The resident hook server: same results as in-process, and never required."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from builders import event, make_repo, run_hook, wait_for, write

from snapshotter.engine import Engine
from snapshotter.hooks import client


def test_first_hook_starts_a_server_that_later_hooks_use(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    base = {"session_id": "s", "cwd": str(root)}
    first = run_hook({**base, "hook_event_name": "turn_start"}, data_dir)
    assert first.returncode == 0 and not first.stderr, first.stderr
    wait_for(server_socket, limit=30)  # the first hook started a server in the background
    write(root, "a.txt", "changed\n")
    # This event goes through the server (a direct client call proves it answers) ...
    event = json.dumps({**base, "hook_event_name": "turn_end", "reason": "normal"}).encode()
    assert client.send(server_socket, data_dir, [], event) is None, "the server handled turn_end"
    # ... and a real hook process on a served socket still works end to end.
    assert run_hook({**base, "hook_event_name": "turn_start"}, data_dir).returncode == 0
    write(root, "b.txt", "new\n")
    assert run_hook({**base, "hook_event_name": "turn_end"}, data_dir).returncode == 0
    engine = Engine.open(root, data_dir_path=data_dir, create=False)
    assert engine is not None
    files = [[f.path for f in cp.files] for cp in engine.checkpoints("s")]
    assert files == [["a.txt"], ["b.txt"]], f"both turns recorded once each: {files}"
    bad = client.send(server_socket, data_dir, [], b"not json")
    assert bad is not None and "not JSON" in bad, "errors come back to the client to print"


def test_stale_socket_falls_back_to_in_process(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    server_socket.parent.mkdir(parents=True, exist_ok=True)
    server_socket.write_text("")  # a dead socket file: connecting is refused
    base = {"session_id": "s", "cwd": str(root)}
    assert run_hook({**base, "hook_event_name": "turn_start"}, data_dir).returncode == 0
    write(root, "a.txt", "changed\n")
    done = run_hook({**base, "hook_event_name": "turn_end"}, data_dir)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    engine = Engine.open(root, data_dir_path=data_dir, create=False)
    assert engine is not None and len(engine.checkpoints("s")) == 1, (
        "events were recorded even though no server answered"
    )


def test_relative_and_default_data_dirs_reach_the_same_store_through_the_server(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client sends --data-dir made absolute, or nothing: the server resolves the default."""
    monkeypatch.setenv("SNAPSHOTTER_HOOK_SERVER", "1")
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    work = tmp_path / "elsewhere"
    work.mkdir()
    sockets = []
    try:
        for option in (["--data-dir", "rel-data"], []):
            target = work / "rel-data" if option else data_dir  # $SNAPSHOTTER_DATA_DIR
            path = client.socket_path(str(work / "rel-data") if option else None)
            assert path is not None
            sockets.append(path)
            relative = Path(option[1]) if option else None  # as given: relative to cwd
            for i in range(3):  # the first starts the server; wait for it; then served
                done = run_hook(event("turn_start", root), relative, cwd=work, timeout=60)
                assert done.returncode == 0, done.stderr
                write(root, "a.txt", f"{option} {i}\n")
                done = run_hook(event("turn_end", root), relative, cwd=work, timeout=60)
                assert done.returncode == 0, done.stderr
                if not path.exists():
                    wait_for(path)  # a server came up for this data dir
            engine = Engine.open(root, data_dir_path=target, create=False)
            assert engine is not None, f"the store is in {target}"
            assert len(engine.checkpoints("s")) == 3
    finally:
        for path in sockets:
            with contextlib.suppress(OSError):
                client.stop(path)


def test_the_server_never_imports_a_snapshotter_the_worktree_holds(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    """A worktree with a ``snapshotter/`` package of its own (this project's source, or
    a hostile clone): the server started from there runs the installed one."""
    marker = tmp_path / "imported"
    root = make_repo(
        tmp_path / "r",
        {
            "snapshotter/__init__.py": f"open({str(marker)!r}, 'w').close()\n",
            "snapshotter/cli/__init__.py": "",
            "snapshotter/cli/served.py": "",
        },
    )
    script = Path(sys.executable).parent / "snapshotter"  # as agents run it (no cwd on the path)
    done = run_hook(event("session_start", root), data_dir, cwd=root, command=(str(script),))
    assert done.returncode == 0, done.stderr
    wait_for(server_socket)
    assert client.send(server_socket, data_dir, [], b"{}") is None, "the server answers"
    assert not marker.exists(), "the worktree's snapshotter/ was imported by the hook server"


# A second server for the same socket, as a burst of first hooks starts: what it loaded.
SECOND_SERVER = """
import json, sys
from snapshotter.cli import served
served.serve(sys.argv[1])  # the socket's lock is held: returns at once
print(json.dumps(sorted(m for m in sys.modules if m.startswith(("snapshotter.cli", "pydantic")))))
"""


def test_a_second_server_for_a_served_socket_exits_before_loading_the_commands(
    tmp_path: Path, data_dir: Path, server_socket: Path
) -> None:
    """Parallel first hooks each start a server; all but one find the socket taken.
    Those leave before importing what commands need (~0.3 s of CPU each)."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    assert (
        run_hook(
            {"session_id": "s", "cwd": str(root), "hook_event_name": "turn_start"}, data_dir
        ).returncode
        == 0
    )
    wait_for(server_socket, limit=30)
    done = subprocess.run(
        [sys.executable, "-c", SECOND_SERVER, str(server_socket)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    heavy = [m for m in loaded if m.startswith("pydantic") or m == "snapshotter.cli.main"]
    assert not heavy and "snapshotter.cli.served" in loaded, loaded
    assert client.send(server_socket, data_dir, [], b"{}") is None, "the first server still serves"
