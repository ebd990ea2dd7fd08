"""Finding the source worktree and reading (never writing) its git metadata."""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from pathlib import Path

from snapshotter.errors import NotAWorktree, SnapshotterError
from snapshotter.ignore import IgnoreRules, global_excludes_file, read_lines


@dataclass(frozen=True)
class Worktree:
    root: Path  # resolved real path of the worktree's top directory
    git_dir: Path  # the source repository's git dir (per-worktree for linked worktrees)
    common_dir: Path  # where info/exclude and config live
    scope: str  # "" or a "/"-separated subdirectory the caller is limited to

    def in_scope(self, rel: str) -> bool:
        return not self.scope or rel == self.scope or rel.startswith(self.scope + "/")


def find_worktree(start: str | os.PathLike[str]) -> Worktree:
    """The git worktree that contains ``start``; raises NotAWorktree otherwise."""
    import pygit2

    here = Path(start).resolve()
    if not here.is_dir():
        raise SnapshotterError(f"not a directory: {start}")
    try:
        git_path = pygit2.discover_repository(str(here))
        repo = pygit2.Repository(git_path) if git_path else None
    except (pygit2.GitError, KeyError, ValueError) as exc:
        raise NotAWorktree(str(here)) from exc
    if repo is None or repo.is_bare or not repo.workdir:
        raise NotAWorktree(str(here))
    root = Path(repo.workdir).resolve()
    git_dir = Path(repo.path).resolve()
    rel = here.relative_to(root).as_posix() if here != root else ""
    if rel == ".git" or rel.startswith(".git/"):
        raise NotAWorktree(str(here))
    return Worktree(root, git_dir, _common_dir(git_dir), "" if rel == "." else rel)


def _common_dir(git_dir: Path) -> Path:
    pointer = git_dir / "commondir"
    try:
        text = pointer.read_text().strip()
    except OSError:
        return git_dir
    return (git_dir / text).resolve()


def config_value(common_dir: Path, key: str) -> str | None:
    """One value from the repository's config chain (local, global, system)."""
    import pygit2

    try:
        config = pygit2.Repository(str(common_dir)).config
        value = config[key]
    except (KeyError, pygit2.GitError, ValueError):
        return None
    return str(value)


@dataclass
class TrackedIndex:
    """The paths a repository's index tracks, sorted for prefix searches."""

    modes: dict[str, int] = field(default_factory=dict)
    _sorted: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, index_file: Path, cache_file: Path | None = None) -> TrackedIndex:
        from snapshotter.gitindex import tracked_modes

        modes = tracked_modes(index_file, cache_file)
        if modes is None:  # a format we do not parse: let libgit2 read it
            modes = cls._read_with_pygit2(index_file)
        return cls(modes, sorted(modes))

    @staticmethod
    def _read_with_pygit2(index_file: Path) -> dict[str, int]:
        import pygit2

        try:
            return {entry.path: entry.mode for entry in pygit2.Index(str(index_file))}
        except (pygit2.GitError, OSError, ValueError):
            return {}

    def has_under(self, dir_rel: str) -> bool:
        """Whether any tracked path lies below directory ``dir_rel``."""
        prefix = dir_rel + "/"
        i = bisect.bisect_left(self._sorted, prefix)
        return i < len(self._sorted) and self._sorted[i].startswith(prefix)


@dataclass(frozen=True)
class RepoContext:
    """One repository's view while walking: its root, rules and tracked paths.

    The top worktree is one context; each nested repository or submodule the
    walk enters starts a new one, because git applies its own rules there.
    """

    prefix: str  # worktree-relative path of this repository's root ("" at top)
    rules: IgnoreRules
    tracked: TrackedIndex

    def rel(self, path: str) -> str:
        return path[len(self.prefix) + 1 :] if self.prefix else path


def global_rules(tree: Worktree) -> IgnoreRules:
    """``core.excludesFile``: it applies in every repository, nested ones too."""
    configured = config_value(tree.common_dir, "core.excludesFile")
    # A relative path is relative to the worktree's top, as git reads it.
    excludes = read_lines(tree.root / global_excludes_file(configured))
    return IgnoreRules.for_repository(None, excludes)


def top_context(
    tree: Worktree, global_: IgnoreRules, index_cache: Path | None = None
) -> RepoContext:
    excludes = read_lines(tree.common_dir / "info" / "exclude")
    rules = IgnoreRules(IgnoreRules.for_repository(excludes, None).sources + global_.sources)
    return RepoContext("", rules, TrackedIndex.read(tree.git_dir / "index", index_cache))


def nested_context(dir_abs: Path, prefix: str, global_rules: IgnoreRules) -> RepoContext:
    """Context for a nested repository whose ``.git`` sits in ``dir_abs``."""
    git_dir = _nested_git_dir(dir_abs / ".git")
    if git_dir is None:
        return RepoContext(prefix, global_rules, TrackedIndex())
    excludes = read_lines(_common_dir(git_dir) / "info" / "exclude")
    rules = IgnoreRules(
        IgnoreRules.for_repository(excludes, None).sources + global_rules.sources
    )
    return RepoContext(prefix, rules, TrackedIndex.read(git_dir / "index"))


def _nested_git_dir(dot_git: Path) -> Path | None:
    if dot_git.is_dir() and not dot_git.is_symlink():
        return dot_git
    try:
        text = dot_git.read_text(errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:") :].strip())
    return (dot_git.parent / target).resolve() if not target.is_absolute() else target
