"""The data directory and its stores are private to their user (SPEC §2, issue 13.15).

A second local user read a 0600 secret out of a shadow store through
``git cat-file --batch-all-objects``: the directories were 0755.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest
from builders import make_repo, turn

from snapshotter.config import stores_dir
from snapshotter.engine import Engine

# What each agent turn writes: a file no other user may read from a store.
SECRET = {"secret.txt": "hunter2\n"}


def open_to_others(top: Path) -> list[str]:
    """Every path at or below ``top`` that grants group or other users any access."""
    found = []
    for path in [top, *top.rglob("*")]:
        mode = os.lstat(path).st_mode
        if not stat.S_ISLNK(mode) and mode & 0o077:
            found.append(f"{path.relative_to(top.parent)} {stat.filemode(mode)}")
    return found


def test_perms_hooks_create_a_private_data_dir(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    turn(root, "s", SECRET, data_dir, process=True)  # through real hook processes
    assert list(stores_dir(data_dir).glob("*/git/objects")), "a store was made"
    assert open_to_others(data_dir) == [], "nothing in the data directory is open to others"


def test_perms_an_existing_open_store_is_closed_on_open(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    turn(root, "s", SECRET, data_dir, process=True)  # through real hook processes
    for path in [data_dir, *data_dir.rglob("*")]:  # as older versions left it
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    engine = Engine.open(root, data_dir_path=data_dir)
    assert engine is not None
    assert open_to_others(data_dir) == [], "opening the store made it private again"


def test_perms_a_second_user_cannot_read_the_store() -> None:
    if os.geteuid() != 0:
        print("skipped: creating a second user needs root")
        pytest.skip("needs root to create a second local user")
    if shutil.which("useradd") is None or shutil.which("runuser") is None:
        print("skipped: no useradd/runuser on this machine")
        pytest.skip("no useradd/runuser")
    # Not under pytest's tmp_path: that is private already and would hide the bug.
    top = Path(tempfile.mkdtemp(prefix="snapshotter-perm-", dir="/tmp"))
    user = f"snapt{uuid.uuid4().hex[:8]}"
    try:
        os.chmod(top, 0o755)
        root = make_repo(top / "r", {"a.txt": "a\n"})
        os.chmod(root, 0o700)  # the user's worktree is private, the secret 0600
        data_dir = top / "data"
        turn(root, "s", SECRET, data_dir, process=True)  # through real hook processes
        os.chmod(root / "secret.txt", 0o600)
        subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", user], check=True)
        store = next(stores_dir(data_dir).glob("*/git"))
        spy = subprocess.run(
            [
                "runuser",
                "-u",
                user,
                "--",
                "sh",
                "-c",
                f"ls -R {data_dir}; cat {store.parent}/state.json; "
                f"git --git-dir {store} cat-file --batch-all-objects --batch",
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert b"hunter2" not in spy.stdout, "another user read the secret from the store"
        assert b"objects" not in spy.stdout and b"session" not in spy.stdout, (
            f"another user listed or read the store: {spy.stdout[:500]!r}"
        )
    finally:
        subprocess.run(["userdel", user], check=False, capture_output=True)
        shutil.rmtree(top, ignore_errors=True)
