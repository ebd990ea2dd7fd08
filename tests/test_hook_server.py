"""The resident hook server: same results as in-process, and never required."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from builders import make_repo, write

from snapshotter.engine import Engine
from snapshotter.hooks import client


def hook(data_dir: Path, event: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "snapshotter", "--data-dir", str(data_dir), "hook"],
        input=json.dumps(event).encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def server_on(server_socket: Path) -> Path:
    return server_socket


def test_first_hook_starts_a_server_that_later_hooks_use(
    tmp_path: Path, data_dir: Path, server_on: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    base = {"session_id": "s", "cwd": str(root)}
    first = hook(data_dir, {**base, "hook_event_name": "turn_start"})
    assert first.returncode == 0 and not first.stderr, first.stderr
    deadline = time.monotonic() + 30
    while not server_on.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server_on.exists(), "the first hook started a server in the background"
    write(root, "a.txt", "changed\n")
    # This event goes through the server (a direct client call proves it answers) ...
    event = json.dumps({**base, "hook_event_name": "turn_end", "reason": "normal"}).encode()
    assert client.send(server_on, data_dir, [], event) is None, "the server handled turn_end"
    # ... and a real hook process on a served socket still works end to end.
    assert hook(data_dir, {**base, "hook_event_name": "turn_start"}).returncode == 0
    write(root, "b.txt", "new\n")
    assert hook(data_dir, {**base, "hook_event_name": "turn_end"}).returncode == 0
    engine = Engine.open(root, data_dir_path=data_dir, create=False)
    assert engine is not None
    files = [[f.path for f in cp.files] for cp in engine.checkpoints("s")]
    assert files == [["a.txt"], ["b.txt"]], f"both turns recorded once each: {files}"
    bad = client.send(server_on, data_dir, [], b"not json")
    assert bad is not None and "not JSON" in bad, "errors come back to the client to print"


def test_stale_socket_falls_back_to_in_process(
    tmp_path: Path, data_dir: Path, server_on: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    server_on.parent.mkdir(parents=True, exist_ok=True)
    server_on.write_text("")  # a dead socket file: connecting is refused
    base = {"session_id": "s", "cwd": str(root)}
    assert hook(data_dir, {**base, "hook_event_name": "turn_start"}).returncode == 0
    write(root, "a.txt", "changed\n")
    done = hook(data_dir, {**base, "hook_event_name": "turn_end"})
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
            cmd = [sys.executable, "-m", "snapshotter", *option, "hook"]
            for i in range(3):  # the first starts the server; wait for it; then served
                event = {"session_id": "s", "cwd": str(root), "hook_event_name": "turn_start"}
                subprocess.run(
                    cmd,
                    input=json.dumps(event).encode(),
                    cwd=work,
                    timeout=60,
                    check=True,
                    capture_output=True,
                )
                write(root, "a.txt", f"{option} {i}\n")
                event["hook_event_name"] = "turn_end"
                subprocess.run(
                    cmd,
                    input=json.dumps(event).encode(),
                    cwd=work,
                    timeout=60,
                    check=True,
                    capture_output=True,
                )
                deadline = time.monotonic() + 30
                while not path.exists() and time.monotonic() < deadline:
                    time.sleep(0.1)
            assert path.exists(), "a server came up for this data dir"
            engine = Engine.open(root, data_dir_path=target, create=False)
            assert engine is not None, f"the store is in {target}"
            assert len(engine.checkpoints("s")) == 3
    finally:
        for path in sockets:
            with contextlib.suppress(OSError):
                client.stop(path)
