"""Each repository a walk meets, as git sees it there: its ignore rules and the
paths its index tracks.

The top worktree is one context; each nested repository or submodule the walk
enters starts a new one, because git applies that repository's own
``info/exclude``, ``core.excludesFile``, ``core.ignorecase`` and index there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from snapshotter.git.config import config_values, git_bool
from snapshotter.git.ignore import IgnoreRules, global_excludes_file
from snapshotter.git.rule_files import MAX_RULE_FILE_BYTES, parse_lines, read_lines, read_rule_file
from snapshotter.git.tracked import TrackedIndex
from snapshotter.git.worktree import OBJECT_FORMATS, Worktree, common_dir_of, object_format


@dataclass(frozen=True)
class RepoContext:
    """One repository's view while walking: its root, rules and tracked paths.

    The top worktree is one context; each nested repository or submodule the
    walk enters starts a new one, because git applies its own rules there.
    """

    prefix: str  # worktree-relative path of this repository's root ("" at top)
    rules: IgnoreRules
    tracked: TrackedIndex
    git_dir: Path | None = None
    _hidden: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)

    def rel(self, path: str) -> str:
        return path[len(self.prefix) + 1 :] if self.prefix else path

    def gitignore_lines(
        self, dir_abs: str, dir_rel: str, present: bool = True
    ) -> list[bytes] | None:
        """The ``.gitignore`` of ``dir_abs`` (``dir_rel`` below this repository) as git reads it.

        The file itself (never through a symbolic link, only if regular); when
        git could not open it (absent from a sparse checkout, say) and the
        index marks it skip-worktree, the index's blob, as git's ``dir.c``
        does (``read_skip_worktree_file_from_index``). ``present``: the
        directory listing holds a ``.gitignore``.
        """
        data, opened = (
            read_rule_file(os.path.join(dir_abs, ".gitignore"), nofollow=True)
            if present
            else (None, False)
        )
        if not opened:
            rel = f"{dir_rel}/.gitignore" if dir_rel else ".gitignore"
            if rel in self.tracked.modes:
                data = self._skip_worktree_blob(rel)
        return None if data is None else parse_lines(data)

    def _skip_worktree_blob(self, rel: str) -> bytes | None:
        if self.git_dir is None:
            return None
        if "\0" not in self._hidden:  # read once per walk, and only if needed
            self._hidden.update(_skip_worktree_gitignores(self.git_dir))
            self._hidden["\0"] = b""
        oid = self._hidden.get(rel)
        return None if oid is None else _read_blob(common_dir_of(self.git_dir), oid)


def _skip_worktree_gitignores(git_dir: Path) -> dict[str, bytes]:
    """``.gitignore`` paths the index marks skip-worktree, with their blob ids."""
    from snapshotter.git.index import read_entries

    try:
        data = (git_dir / "index").read_bytes()
    except OSError:
        return {}
    if data[4:8] == b"\0\0\0\2":
        return {}  # version 2 has no extended flags, so no skip-worktree entries
    entries = read_entries(data, OBJECT_FORMATS[object_format(git_dir)]) or []
    return {
        e.path: e.oid
        for e in entries
        if e.skip_worktree and e.stage == 0 and e.path.rpartition("/")[2] == ".gitignore"
    }


def _read_blob(common_dir: Path, oid: bytes) -> bytes | None:
    import pygit2

    try:
        blob = pygit2.Repository(str(common_dir)).get(oid.hex())
    except (pygit2.GitError, ValueError, KeyError):
        return None
    if not isinstance(blob, pygit2.Blob) or blob.size > MAX_RULE_FILE_BYTES:
        return None
    return blob.data


def _ignore_settings(common_dir: Path | None, root: Path) -> tuple[list[bytes] | None, bool]:
    """(``core.excludesFile``'s lines, ``core.ignorecase``) as this repository reads them."""
    found = config_values(common_dir, "core.excludesFile", "core.ignorecase")
    # A relative path is relative to the worktree's top, as git reads it.
    excludes = read_lines(root / global_excludes_file(found["core.excludesFile"]))
    icase = found["core.ignorecase"]
    return excludes, icase is not None and git_bool(icase) is True


# The opt-in setting that keeps chosen ignored files in the store (#26.3): git config,
# so the hook and every command read the same value for the worktree.
KEEP_IGNORED = "snapshotter.keepIgnored"  # gitignore patterns, separated by commas or spaces
KEEP_IGNORED_MAX_SIZE = "snapshotter.keepIgnoredMaxSize"
DEFAULT_KEEP_MAX = 1024 * 1024


def keep_ignored(tree: Worktree) -> tuple[IgnoreRules | None, int]:
    """The ignored paths captured anyway (None: the setting is off, the default), and
    the largest file kept so."""
    from snapshotter.config import parse_size
    from snapshotter.errors import BadInput

    found = config_values(tree.common_dir, KEEP_IGNORED, KEEP_IGNORED_MAX_SIZE)
    patterns, limit = found[KEEP_IGNORED], found[KEEP_IGNORED_MAX_SIZE]
    if not patterns or not patterns.strip():
        return None, 0
    lines = [p.encode("utf-8", "surrogateescape") for p in patterns.replace(",", " ").split()]
    try:
        most = parse_size(limit) if limit else DEFAULT_KEEP_MAX
    except BadInput:  # a size git config cannot mean: the default, not a failed capture
        most = DEFAULT_KEEP_MAX
    return IgnoreRules.for_repository(lines, None), most


def global_rules(tree: Worktree) -> IgnoreRules:
    """``core.excludesFile`` (and the repository's ``core.ignorecase``)."""
    excludes, icase = _ignore_settings(tree.common_dir, tree.root)
    return IgnoreRules.for_repository(None, excludes, icase)


def top_context(
    tree: Worktree, global_: IgnoreRules, index_cache: Path | None = None
) -> RepoContext:
    tracked = TrackedIndex.read(tree.git_dir / "index", index_cache)
    return RepoContext("", _with_exclude(tree.common_dir, global_), tracked, tree.git_dir)


def repository_rules(tree: Worktree) -> IgnoreRules:
    """The top repository's rules above any ``.gitignore``: info/exclude, core.excludesFile."""
    return _with_exclude(tree.common_dir, global_rules(tree))


def _with_exclude(common_dir: Path, global_: IgnoreRules) -> IgnoreRules:
    """``$GIT_DIR/info/exclude`` in front of ``global_`` (it is more specific)."""
    excludes = read_lines(common_dir / "info" / "exclude")
    own = IgnoreRules.for_repository(excludes, None, global_.icase)
    return IgnoreRules(own.sources + global_.sources, global_.icase)


def nested_context(dir_abs: Path, prefix: str) -> RepoContext:
    """Context for a nested repository whose ``.git`` sits in ``dir_abs``.

    Its own config decides its ``core.excludesFile`` and ``core.ignorecase``.
    """
    git_dir = _nested_git_dir(dir_abs / ".git")
    rules = _nested_rules(dir_abs, git_dir)
    if git_dir is None:
        return RepoContext(prefix, rules, TrackedIndex())
    return RepoContext(prefix, rules, TrackedIndex.read(git_dir / "index"), git_dir)


def nested_rules(dir_abs: Path) -> IgnoreRules:
    """A nested repository's rules above any ``.gitignore`` (its ``.git`` is in ``dir_abs``)."""
    return _nested_rules(dir_abs, _nested_git_dir(dir_abs / ".git"))


def _nested_rules(dir_abs: Path, git_dir: Path | None) -> IgnoreRules:
    common_dir = None if git_dir is None else common_dir_of(git_dir)
    global_excludes, icase = _ignore_settings(common_dir, dir_abs)
    if common_dir is None:
        return IgnoreRules.for_repository(None, global_excludes, icase)
    excludes = read_lines(common_dir / "info" / "exclude")
    return IgnoreRules.for_repository(excludes, global_excludes, icase)


def _nested_git_dir(dot_git: Path) -> Path | None:
    """The git dir a nested ``.git`` names; a ``gitdir:`` file is read only if regular
    (a FIFO named ``.git`` must not block the walk; issue 13)."""
    if dot_git.is_dir() and not dot_git.is_symlink():
        return dot_git
    data, _opened = read_rule_file(dot_git)
    if data is None:
        return None
    text = data.decode("utf-8", "replace").strip()
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:") :].strip())
    return (dot_git.parent / target).resolve() if not target.is_absolute() else target
