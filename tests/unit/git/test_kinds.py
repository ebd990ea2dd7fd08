"""snapshotter/git/kinds.py: the modes git gives files, and its constant ids."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pygit2
import pytest

from snapshotter.git import kinds
from snapshotter.git.packs import object_id


@pytest.mark.parametrize(
    ("st_mode", "mode"),
    [
        (stat.S_IFREG | 0o644, kinds.MODE_FILE),
        (stat.S_IFREG | 0o600, kinds.MODE_FILE),
        (stat.S_IFREG | 0o755, kinds.MODE_EXEC),
        (stat.S_IFREG | 0o744, kinds.MODE_EXEC),  # the owner's x bit decides, as in git
        (stat.S_IFREG | 0o655, kinds.MODE_FILE),
        (stat.S_IFLNK | 0o777, kinds.MODE_LINK),
        (stat.S_IFDIR | 0o755, None),
        (stat.S_IFIFO | 0o644, None),
        (stat.S_IFSOCK | 0o755, None),
    ],
)
def test_git_mode_of_each_kind_of_file(st_mode: int, mode: int | None) -> None:
    assert kinds.git_mode(st_mode) == mode


def test_git_mode_of_real_files(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    (tmp_path / "link").symlink_to("run.sh")
    assert kinds.git_mode(os.lstat(script).st_mode) == kinds.MODE_EXEC
    assert kinds.git_mode(os.lstat(tmp_path / "link").st_mode) == kinds.MODE_LINK


def test_the_constants_are_libgit2s(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    assert str(repo.TreeBuilder().write()) == kinds.EMPTY_TREE
    assert object_id(kinds.TREE, b"").hex() == kinds.EMPTY_TREE
    assert (kinds.COMMIT, kinds.TREE, kinds.BLOB, kinds.TAG) == (
        pygit2.enums.ObjectType.COMMIT,
        pygit2.enums.ObjectType.TREE,
        pygit2.enums.ObjectType.BLOB,
        pygit2.enums.ObjectType.TAG,
    )
    modes = pygit2.enums.FileMode
    assert (kinds.MODE_TREE, kinds.MODE_FILE, kinds.MODE_EXEC) == (
        modes.TREE,
        modes.BLOB,
        modes.BLOB_EXECUTABLE,
    )
    assert (kinds.MODE_LINK, kinds.MODE_GITLINK) == (modes.LINK, modes.COMMIT)
