"""#13.2: a full data directory during undo: one clear line, the worktree unchanged.

The data directory is a small tmpfs filled to the last byte (needs root to
mount it). Nothing may be written to the worktree before the way back (the
redo entry, the safety tree, the journal) is on disk; with space back, undo
and redo work as if nothing had happened.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import event, make_repo, run_cli, run_hook, small_tmpfs, write


def hook(data: Path, root: Path, name: str) -> None:
    """The data dir from the environment, as a runtime's hook command line has no option."""
    done = run_hook(event(name, root, reason="end"), env={"SNAPSHOTTER_DATA_DIR": str(data)})
    assert done.returncode == 0, f"{name}: {done.stderr!r}"


def files(root: Path) -> dict[str, bytes]:
    found = {}
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(dirpath) / name
            found[str(path.relative_to(root))] = path.read_bytes()
    return found


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "small", "size=4m,mode=0700") as mount:
        yield mount


def fill(disk: Path) -> Path:
    """Fill ``disk`` to the last byte; returns the filler to delete."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 1 << 12, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    for i in range(10_000):  # and the inodes' worth of small files, until none fit
        try:
            (disk / f"filler-{i}").write_bytes(b"x")
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
            break
    return filler


def test_undo_on_a_full_disk_is_one_line_and_leaves_the_worktree_alone(
    tmp_path: Path, small_disk: Path
) -> None:
    root = make_repo(tmp_path / "repo", {f"src/m{i}.py": f"v = {i}\n" for i in range(20)})
    data = small_disk / "data"
    hook(data, root, "session_start")
    hook(data, root, "turn_start")
    for i in range(0, 20, 2):
        write(root, f"src/m{i}.py", f"v = {i}  # the agent's\n" * 50)
    write(root, "src/new.py", "new = 1\n")
    hook(data, root, "turn_end")
    agents = files(root)
    filler = fill(small_disk)

    done = run_cli("undo", "-C", root, data_dir=data)
    err = done.stderr.strip()
    assert done.returncode == 1, f"a full disk is exit 1; got {done.returncode}: {err}"
    assert len(err.splitlines()) == 1 and "internal error" not in err, (
        f"a full disk is one clear line, not an internal error: {err!r}"
    )
    assert "space" in err.lower(), f"the line should say the disk is full: {err!r}"
    print(f"\n[enospc] undo on a full data dir: exit {done.returncode}: {err}")
    assert files(root) == agents, "nothing may be written to the worktree on a full disk"

    for extra in small_disk.glob("filler*"):
        extra.unlink()
    assert not filler.exists()
    done = run_cli("undo", "-C", root, data_dir=data)
    assert done.returncode == 0, f"with space back undo works: {done.stderr}"
    assert (root / "src/m0.py").read_text() == "v = 0\n" and not (root / "src/new.py").exists()
    done = run_cli("redo", "-C", root, data_dir=data)
    assert done.returncode == 0, f"redo works: {done.stderr}"
    assert files(root) == agents, "redo brings back every one of the agent's files"
