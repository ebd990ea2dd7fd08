"""Git's ignore rules, evaluated with pathspec.

Git decides an untracked path by the most specific source that has a matching
pattern: the deepest ``.gitignore`` first, then ``$GIT_DIR/info/exclude``, then
``core.excludesFile``; inside one source the last matching pattern wins. A
directory that is excluded is never entered, so nothing below it can be
re-included; the walker in ``scan.py`` gets that by pruning.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pathspec


def read_lines(path: str | os.PathLike[str]) -> list[str] | None:
    """The pattern lines of an ignore file, or None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    text = data.decode("utf-8", errors="surrogateescape")
    return [line.rstrip("\r") for line in text.split("\n")]


def compile_lines(lines: list[str] | None) -> pathspec.GitIgnoreSpec | None:
    if not lines:
        return None
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    return spec if spec.patterns else None


@dataclass(frozen=True)
class _Source:
    base: str  # directory the patterns are relative to, "" or "a/b/"
    spec: pathspec.GitIgnoreSpec


@dataclass(frozen=True)
class IgnoreRules:
    """The rules in force in one directory of one repository (immutable chain)."""

    sources: tuple[_Source, ...] = ()  # most specific first

    @classmethod
    def for_repository(cls, exclude: list[str] | None, global_: list[str] | None) -> IgnoreRules:
        found = [
            _Source("", spec)
            for spec in (compile_lines(exclude), compile_lines(global_))
            if spec is not None
        ]
        return cls(tuple(found))

    def with_gitignore(self, dir_rel: str, lines: list[str] | None) -> IgnoreRules:
        """Rules for ``dir_rel`` once its own ``.gitignore`` is added on top."""
        spec = compile_lines(lines)
        if spec is None:
            return self
        base = f"{dir_rel}/" if dir_rel else ""
        return IgnoreRules((_Source(base, spec), *self.sources))

    def is_ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether git ignores ``rel`` (worktree-relative, ``/``-separated)."""
        for source in self.sources:
            if not rel.startswith(source.base):
                continue
            sub = rel[len(source.base) :]
            result = source.spec.check_file(sub + "/" if is_dir else sub)
            if result.include is not None:
                return bool(result.include)
        return False


def global_excludes_file(configured: str | None) -> Path:
    """``core.excludesFile``, or git's default ``$XDG_CONFIG_HOME/git/ignore``."""
    if configured:
        return Path(os.path.expanduser(configured))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(xdg) / "git" / "ignore"
