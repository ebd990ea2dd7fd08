"""A forked command's captures go to the hook server (store/remote.py), in-process.

The command's ``Resident`` forwards each capture request; here the "socket"
is a function handing the bytes straight to ``remote.serve`` with the
server's own ``Resident``, so both ends run in this process.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import make_repo, open_engine, write

from snapshotter.config import DEFAULT_MAX_NEW_FILE_SIZE
from snapshotter.engine import Engine
from snapshotter.errors import TooManyFiles
from snapshotter.store import remote, watch
from snapshotter.store.resident import Resident

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or watch.filesystem_type(Path.cwd()) is None,
    reason="the server's watcher is Linux-only",
)


class Server:
    """The server's end: its Resident, and the requests it was sent."""

    def __init__(self, resident: Resident) -> None:
        self.resident = resident
        self.requests: list[bytes] = []
        self.answering = True

    def forward(self, body: bytes) -> bytes | None:
        self.requests.append(body)
        return remote.serve(body, self.resident) if self.answering else None


@pytest.fixture
def server() -> Iterator[Server]:
    with Resident() as resident:
        yield Server(resident)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    found = make_repo(tmp_path / "r", {"a.txt": "a\n", "src/b.py": "b\n", "big.bin": "x" * 64})
    if watch.filesystem_type(found) not in watch.LOCAL_FILESYSTEMS:
        pytest.skip(f"{found} is not on a local filesystem")
    return found


def command(
    root: Path,
    data_dir: Path,
    server: Server,
    max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE,
    max_files: int | None = None,
) -> Engine:
    """An engine as a command the server forked opens it."""
    resident = Resident(forward=server.forward)
    assert resident.watchers is None and resident.manifests is None, "the server's to keep"
    return open_engine(
        root, data_dir, max_new_file_size=max_new_file_size, max_files=max_files, resident=resident
    )


def test_the_server_takes_the_capture_with_its_own_watcher(
    root: Path, data_dir: Path, server: Server
) -> None:
    engine = command(root, data_dir, server, max_new_file_size=16)
    write(root, "new.bin", "y" * 64)  # untracked and over the limit: skipped
    got = engine.capture()
    assert len(server.requests) == 1, "the capture was sent to the server"
    plain = Engine.open(root, data_dir_path=data_dir / "plain", max_new_file_size=16).capture()
    assert got.tree == plain.tree
    assert sorted(got.skipped) == sorted(plain.skipped) == ["new.bin"], "the options travelled"
    assert got.skipped["new.bin"] == plain.skipped["new.bin"]
    assert server.resident.watchers is not None
    assert server.resident.watchers.for_worktree(engine.root) is not None, "the server watches"
    write(root, "a.txt", "edited\n")
    again = engine.capture()
    assert again.tree != got.tree and len(server.requests) == 2


def test_a_server_that_cannot_answer_leaves_the_capture_to_the_command(
    root: Path, data_dir: Path, server: Server
) -> None:
    server.answering = False
    engine = command(root, data_dir, server)
    got = engine.capture()
    assert server.requests, "it was asked first"
    assert got.tree == Engine.open(root, data_dir_path=data_dir / "plain").capture().tree


def test_the_servers_refusal_is_the_commands(root: Path, data_dir: Path, server: Server) -> None:
    engine = command(root, data_dir, server, max_files=1)
    with pytest.raises(TooManyFiles):
        engine.capture()
    assert len(server.requests) == 1
