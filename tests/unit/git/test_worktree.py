"""snapshotter/git/worktree.py: finding the worktree, its git dir and scope, as git does."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from snapshotter.errors import NotAWorktree, SnapshotterError
from snapshotter.git.worktree import Worktree, find_worktree, object_format


def make(root: Path) -> Path:
    pygit2.init_repository(str(root))
    return root.resolve()


def test_the_worktree_holding_a_directory_and_the_scope_below_its_top(tmp_path: Path) -> None:
    root = make(tmp_path / "r")
    (root / "src" / "pkg").mkdir(parents=True)
    top = find_worktree(root)
    assert (top.root, top.git_dir, top.common_dir, top.scope) == (
        root,
        root / ".git",
        root / ".git",
        "",
    )
    assert top.object_format == "sha1"
    assert find_worktree(root / "src" / "pkg").scope == "src/pkg"


def test_in_scope_is_the_scope_and_below_it() -> None:
    worktree = Worktree(Path("/r"), Path("/r/.git"), Path("/r/.git"), "src")
    assert worktree.in_scope("src") and worktree.in_scope("src/a.py")
    assert not worktree.in_scope("srcs/a.py") and not worktree.in_scope("a.py")
    assert Worktree(Path("/r"), Path("/r/.git"), Path("/r/.git"), "").in_scope("anything")


def test_outside_any_repository_or_inside_its_git_dir_is_no_worktree(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(NotAWorktree):
        find_worktree(tmp_path / "plain")
    root = make(tmp_path / "r")
    with pytest.raises(NotAWorktree):
        find_worktree(root / ".git" / "refs")
    with pytest.raises(SnapshotterError, match="not a directory"):
        find_worktree(tmp_path / "absent")


def test_a_gitdir_file_points_to_the_repository(tmp_path: Path) -> None:
    make(tmp_path / "w")
    (tmp_path / "w" / ".git").rename(tmp_path / "store.git")  # as --separate-git-dir leaves it
    (tmp_path / "w" / ".git").write_text("gitdir: ../store.git\n")
    found = find_worktree(tmp_path / "w")
    assert (found.root, found.git_dir) == ((tmp_path / "w").resolve(), tmp_path / "store.git")
    (tmp_path / "w" / ".git").write_text("not a pointer\n")
    with pytest.raises(NotAWorktree):
        find_worktree(tmp_path / "w")


def test_a_bare_repository_has_no_worktree(tmp_path: Path) -> None:
    pygit2.init_repository(str(tmp_path / "b.git"), bare=True)
    with pytest.raises(NotAWorktree):
        find_worktree(tmp_path / "b.git")


def test_core_worktree_moves_the_top_and_a_missing_one_is_named(tmp_path: Path) -> None:
    root = make(tmp_path / "r")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = pygit2.Config(str(root / ".git" / "config"))
    config["core.worktree"] = "../../elsewhere"
    assert find_worktree(root).root == elsewhere.resolve()
    config["core.worktree"] = "../../nowhere"
    with pytest.raises(SnapshotterError, match=r"core\.worktree .* not a directory"):
        find_worktree(root)


def test_an_unknown_object_format_is_refused_by_name(tmp_path: Path) -> None:
    root = make(tmp_path / "r")
    config = pygit2.Config(str(root / ".git" / "config"))
    config["extensions.objectFormat"] = "sha512"
    with pytest.raises(SnapshotterError, match="unsupported object format 'sha512'"):
        find_worktree(root)
    assert object_format(root / ".git") == "sha1", "(said once, by find_worktree)"
    config["extensions.objectFormat"] = "SHA256"
    assert find_worktree(root).object_format == "sha256"
