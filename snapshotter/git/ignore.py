"""Git's ignore rules, evaluated the way git's ``dir.c`` does.

Git decides an untracked path by the most specific source that has a matching
pattern: the deepest ``.gitignore`` first, then ``$GIT_DIR/info/exclude``, then
``core.excludesFile``; inside one source the last matching pattern wins. A
directory that is excluded is never entered, so nothing below it can be
re-included; the walker in ``walk.py`` gets that by pruning.

The semantics followed are git 2.52's: since git commit 1940a02dc1
("match_pathname(): give fnmatch one char of prefix context"), a pattern with
a slash is matched as a whole, so ``foo**/bar`` reads like ``foo*/bar`` and no
longer ignores ``foobar``. With ``core.ignorecase`` both the pattern and the
path are folded (ASCII only), except where git's wildmatch does not fold: an
escaped letter (``\\A``) and a single letter inside brackets (``[A]``) keep
their case and so never match an upper-case letter.

Three properties keep a hook fast and bounded whatever the rules say:

- patterns are compiled once, and matched in time linear in the path
  (wildmatch.py);
- each source indexes its patterns by literal text a matching path must
  hold (the whole name, a prefix or a suffix such as ``.log``), as git's
  ``nowildcardlen`` and ``PATTERN_FLAG_ENDSWITH`` let it compare literals
  first, so a 3,000-line ``.gitignore`` costs per path only the patterns that
  could match; "last matching line wins" is kept by trying them newest first;
- an ignore file is only read when it is a regular file (rule_files.py), so
  a FIFO named ``.gitignore`` cannot hang us.

pathspec's ``GitIgnoreSpec`` is not used: the conformance test
(``tests/functional/test_ignore_conformance.py``) showed it lets a pattern that names a
directory decide for every file below it, makes ``abc/**`` exclude ``abc``,
matches characters instead of bytes, lacks ``[[:alpha:]]`` classes, strips
tabs and a second ``\\r``, keeps the UTF-8 BOM, and raises on ``foo\\``.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

from snapshotter.git.wildmatch import Pattern, compile_pattern

GIT_SEMANTICS_VERSION = "2.52"  # the git release whose ignore semantics git/ignore.py follows


# -- one ignore file ----------------------------------------------------------------------


_Table = dict[int, dict[bytes, list[int]]]  # literal length -> literal -> line numbers


@dataclass
class _Index:
    """Patterns of one kind, by literal text a path they match must hold.

    A pattern goes under its whole text when it has no wildcard, else under
    the longer of its literal prefix and suffix, else among the ``general``
    ones. A path looks up its own prefix and suffix of each length in use: a
    few dictionary probes instead of a test per pattern. Lists are newest first.
    """

    exact: dict[bytes, list[int]] = field(default_factory=dict)
    by_prefix: _Table = field(default_factory=dict)
    by_suffix: _Table = field(default_factory=dict)
    general: list[int] = field(default_factory=list)

    def add(self, n: int, p: Pattern) -> None:
        """File pattern ``n``; patterns are added last line first."""
        if p.literal is not None:
            self.exact.setdefault(p.literal, []).append(n)
        elif p.suffix and len(p.suffix) >= len(p.prefix):
            self.by_suffix.setdefault(len(p.suffix), {}).setdefault(p.suffix, []).append(n)
        elif p.prefix:
            self.by_prefix.setdefault(len(p.prefix), {}).setdefault(p.prefix, []).append(n)
        else:
            self.general.append(n)

    def candidates(self, subject: bytes) -> list[int]:
        """Line numbers of the patterns that may match ``subject``, newest first."""
        groups = [group for group in (self.exact.get(subject), self.general) if group]
        size = len(subject)
        for length, table in self.by_suffix.items():
            if length <= size and (group := table.get(subject[size - length :])):
                groups.append(group)
        for length, table in self.by_prefix.items():
            if length <= size and (group := table.get(subject[:length])):
                groups.append(group)
        if len(groups) == 1:
            return groups[0]
        return sorted((n for group in groups for n in group), reverse=True)


@dataclass(eq=False)  # compared and hashed by identity: built once, cached
class _Source:
    """One ignore file, compiled."""

    base: str  # directory the patterns are relative to, "" or "a/b/"
    base_len: int  # length of ``base`` in bytes
    icase: bool
    patterns: list[Pattern]
    by_name: _Index  # patterns without a slash: match the last component
    by_path: _Index  # the others: match the path below ``base``

    def decide(self, path: bytes, name: bytes, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no pattern matches."""
        if self.icase:
            path, name = path.lower(), name.lower()
        best = max(
            self._last_match(self.by_name, name, is_dir),
            self._last_match(self.by_path, path, is_dir),
        )
        return None if best < 0 else not self.patterns[best].negative

    def _last_match(self, index: _Index, subject: bytes, is_dir: bool) -> int:
        for n in index.candidates(subject):
            pattern = self.patterns[n]
            if (is_dir or not pattern.must_be_dir) and pattern.matches(subject):
                return n
        return -1


def compile_lines(base: str, lines: list[bytes] | None, icase: bool = False) -> _Source | None:
    """The ``_Source`` for an ignore file's lines, or None if nothing can match."""
    return _compile(base, tuple(lines or ()), icase)


@functools.lru_cache(maxsize=512)  # the same files are compiled again at every scan
def _compile(base: str, lines: tuple[bytes, ...], icase: bool) -> _Source | None:
    patterns = [compile_pattern(line, icase) for line in lines]
    if not any(p.tokens for p in patterns):
        return None
    by_name, by_path = _Index(), _Index()
    for n, p in reversed(list(enumerate(patterns))):  # newest first in every list
        if p.tokens:
            (by_name if p.basename else by_path).add(n, p)
    base_len = len(base.encode("utf-8", "surrogateescape"))
    return _Source(base, base_len, icase, patterns, by_name, by_path)


@dataclass(frozen=True)
class IgnoreRules:
    """The rules in force in one directory of one repository (immutable chain).

    ``icase`` is the repository's ``core.ignorecase``: every source of the
    chain, ``.gitignore`` files added later included, matches case-blind.
    """

    sources: tuple[_Source, ...] = ()  # most specific first
    icase: bool = False

    @classmethod
    def for_repository(
        cls, exclude: list[bytes] | None, global_: list[bytes] | None, icase: bool = False
    ) -> IgnoreRules:
        found = [compile_lines("", exclude, icase), compile_lines("", global_, icase)]
        return cls(tuple(source for source in found if source is not None), icase)

    def with_gitignore(self, dir_rel: str, lines: list[bytes] | None) -> IgnoreRules:
        """Rules for ``dir_rel`` once its own ``.gitignore`` is added on top."""
        source = compile_lines(f"{dir_rel}/" if dir_rel else "", lines, self.icase)
        return self if source is None else IgnoreRules((source, *self.sources), self.icase)

    def is_ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether git ignores ``rel`` (worktree-relative, ``/``-separated)."""
        path = rel.encode("utf-8", "surrogateescape")
        name = path[path.rfind(b"/") + 1 :]
        for source in self.sources:
            if not rel.startswith(source.base):
                continue
            decided = source.decide(path[source.base_len :], name, is_dir)
            if decided is not None:
                return decided
        return False


def global_excludes_file(configured: str | None) -> Path:
    """``core.excludesFile``, or git's default ``$XDG_CONFIG_HOME/git/ignore``."""
    if configured:
        return Path(os.path.expanduser(configured))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(xdg) / "git" / "ignore"
