"""Finding the source worktree, its git dir and its object format, as git finds them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from snapshotter.errors import NotAWorktree, SnapshotterError
from snapshotter.fileio import read_regular
from snapshotter.git.config import config_file, repository_config, truthy
from snapshotter.names import display

# A ``.git`` file or ``commondir`` larger than this is no git metadata.
_POINTER_MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class Worktree:
    root: Path  # resolved real path of the worktree's top directory
    git_dir: Path  # the source repository's git dir (per-worktree for linked worktrees)
    common_dir: Path  # where info/exclude and config live
    scope: str  # "" or a "/"-separated subdirectory the caller is limited to
    # The source's object format: "sha256" repositories are read (index, config,
    # ignore rules) but never seeded from; the shadow store is SHA-1 either way.
    object_format: str = "sha1"

    def in_scope(self, rel: str) -> bool:
        return not self.scope or rel == self.scope or rel.startswith(self.scope + "/")


OBJECT_FORMATS = {"sha1": 20, "sha256": 32}  # object format -> raw id size


def find_worktree(start: str | os.PathLike[str]) -> Worktree:
    """The git worktree that contains ``start``, found the way git finds it.

    Our own discovery rather than libgit2's: libgit2 cannot open a SHA-256
    repository (issue 12 §2), and git's ``core.worktree`` may put the worktree
    somewhere else than the ``.git``'s parent (issue 13 §18). Raises
    NotAWorktree outside any worktree, and a SnapshotterError with one clear
    line for a repository git itself would refuse.
    """
    here = Path(start).resolve()
    if not here.is_dir():
        raise SnapshotterError(f"not a directory: {display(os.fspath(start))}")
    found = _discover(here)
    if found is None:
        raise NotAWorktree(display(str(here)))
    git_dir, top = found[0].resolve(), found[1]
    common_dir = common_dir_of(git_dir)
    config = repository_config(git_dir, common_dir)
    object_format = _object_format(config, common_dir)
    root = _work_tree(git_dir, common_dir, top, config)
    if root is None:
        raise NotAWorktree(display(str(here)))
    # Started outside a core.worktree (in the directory holding the git dir,
    # say): git then works on the whole worktree, and so do we.
    rel = here.relative_to(root).as_posix() if here.is_relative_to(root) else ""
    if rel == ".git" or rel.startswith(".git/"):
        raise NotAWorktree(display(str(here)))
    return Worktree(root, git_dir, common_dir, "" if rel == "." else rel, object_format)


def _discover(here: Path) -> tuple[Path, Path | None] | None:
    """(git dir, the directory whose ``.git`` it is) for the nearest repository above ``here``.

    The directory is None when ``here`` lies inside a git dir (or a bare
    repository). Like git (and libgit2), the walk stops at a filesystem
    boundary unless GIT_DISCOVERY_ACROSS_FILESYSTEM is set.
    """
    across = truthy(os.environ.get("GIT_DISCOVERY_ACROSS_FILESYSTEM"))
    try:
        device = here.stat().st_dev
        for directory in (here, *here.parents):
            if not across and directory.stat().st_dev != device:
                return None
            git_dir = _dot_git(directory / ".git")
            if git_dir is not None:
                return git_dir, directory
            if _is_git_dir(directory):
                return directory, None
    except OSError:
        return None
    return None


def _dot_git(dot_git: Path) -> Path | None:
    """The git dir a ``.git`` directory or ``gitdir:`` file names, if it is one."""
    if dot_git.is_dir():
        return dot_git if _is_git_dir(dot_git) else None
    text = _read_regular(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    target = (dot_git.parent / text[len("gitdir:") :].strip()).resolve()
    return target if _is_git_dir(target) else None


def _is_git_dir(path: Path) -> bool:
    """git's test: a HEAD here, and objects and refs in the common dir."""
    if not os.path.lexists(path / "HEAD"):
        return False
    common = common_dir_of(path)
    return (common / "objects").is_dir() and (common / "refs").is_dir()


def common_dir_of(git_dir: Path) -> Path:
    """Where a linked worktree's repository keeps objects, refs, config and info/."""
    text = _read_regular(git_dir / "commondir")
    return git_dir if text is None else (git_dir / text).resolve()


def _read_regular(path: Path) -> str | None:
    """A small regular file's text, stripped; None for anything else (a FIFO must not
    hang us). Read through a symbolic link, as git reads these files."""
    try:
        data = read_regular(path, follow_symlinks=True, max_size=_POINTER_MAX_BYTES)
    except OSError:
        return None
    return None if data is None else os.fsdecode(data).strip()


def _object_format(config: dict[str, str], common_dir: Path) -> str:
    name = config.get("extensions.objectformat", "sha1").strip().lower()
    if name not in OBJECT_FORMATS:
        raise SnapshotterError(
            f"{display(str(common_dir))}: unsupported object format {name!r} "
            "(extensions.objectFormat); not snapshotting this repository"
        )
    return name


def object_format(git_dir: Path) -> str:
    """The object format of the repository whose git dir is ``git_dir`` ("sha1" if unsure)."""
    common_dir = common_dir_of(git_dir)
    try:
        return _object_format(repository_config(git_dir, common_dir), common_dir)
    except SnapshotterError:
        return "sha1"  # find_worktree has said why, for the top repository


def _work_tree(
    git_dir: Path, common_dir: Path, top: Path | None, config: dict[str, str]
) -> Path | None:
    """The worktree's top directory; None for a bare repository or from inside a git dir.

    ``core.worktree`` is relative to the git dir, as git reads it. A linked
    worktree is where its ``.git`` file is (a ``core.worktree`` shared by all
    worktrees is a known misconfiguration; only its per-worktree config counts).
    """
    configured = config.get("core.worktree")
    if git_dir != common_dir and top is not None:
        configured = config_file(git_dir / "config.worktree").get("core.worktree")
    if configured:
        target = (git_dir / configured).resolve()
        if not target.is_dir():
            raise SnapshotterError(
                f"core.worktree of {display(str(git_dir))} is {display(configured)}, "
                "which is not a directory"
            )
        return target
    if truthy(config.get("core.bare")) or top is None:
        return None
    return top.resolve()
