"""Finding the source worktree and reading (never writing) its git metadata."""

from __future__ import annotations

import bisect
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from snapshotter.errors import NotAWorktree, SnapshotterError
from snapshotter.git.ignore import (
    MAX_RULE_FILE_BYTES,
    IgnoreRules,
    global_excludes_file,
    parse_lines,
    read_lines,
    read_rule_file,
)
from snapshotter.names import display

if TYPE_CHECKING:
    import pygit2


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
    common_dir = _common_dir(git_dir)
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
    across = _truthy(os.environ.get("GIT_DISCOVERY_ACROSS_FILESYSTEM"))
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
    common = _common_dir(path)
    return (common / "objects").is_dir() and (common / "refs").is_dir()


def _common_dir(git_dir: Path) -> Path:
    """Where a linked worktree's repository keeps objects, refs, config and info/."""
    text = _read_regular(git_dir / "commondir")
    return git_dir if text is None else (git_dir / text).resolve()


def _read_regular(path: Path) -> str | None:
    """A small regular file's text, stripped; None for anything else (a FIFO must not hang us)."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.fsdecode(os.read(fd, 64 * 1024)).strip()
    except OSError:
        return None
    finally:
        os.close(fd)


def repository_config(git_dir: Path, common_dir: Path) -> dict[str, str]:
    """The repository's own config (lower-cased keys), as git reads it to set itself up.

    Only the repository's files, never the global ones: git takes ``core.bare``,
    ``core.worktree`` and ``extensions.*`` from there alone. Read by libgit2's
    config parser, which, unlike its repository code, reads any object format.
    """
    values = _config_file(common_dir / "config")
    if _truthy(values.get("extensions.worktreeconfig")):
        values.update(_config_file(git_dir / "config.worktree"))
    return values


def _config_file(path: Path) -> dict[str, str]:
    import pygit2

    values: dict[str, str] = {}
    if not path.is_file():
        return values
    try:
        for entry in pygit2.Config(str(path)):
            name = os.fsdecode(entry.raw_name).lower()
            raw = entry.raw_value
            values[name] = "true" if raw is None else os.fsdecode(raw)
    except (pygit2.GitError, OSError, ValueError) as exc:
        raise SnapshotterError(f"cannot read {display(str(path))}: {exc}") from exc
    return values


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
    common_dir = _common_dir(git_dir)
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
        configured = _config_file(git_dir / "config.worktree").get("core.worktree")
    if configured:
        target = (git_dir / configured).resolve()
        if not target.is_dir():
            raise SnapshotterError(
                f"core.worktree of {display(str(git_dir))} is {display(configured)}, "
                "which is not a directory"
            )
        return target
    if _truthy(config.get("core.bare")) or top is None:
        return None
    return top.resolve()


def _truthy(value: str | None) -> bool:
    return value is not None and _git_bool(value) is True


def config_value(common_dir: Path | None, key: str) -> str | None:
    """One value of the config git reads in this repository (None: unset)."""
    override = _env_config(key)
    if override is not None:
        return override
    config = _config_chain(common_dir)
    try:
        return None if config is None else str(config[key])
    except (KeyError, ValueError, TypeError, LookupError):
        return None


def config_bool(common_dir: Path | None, key: str) -> bool | None:
    """A boolean config value as git parses it (None: unset or not a boolean)."""
    value = config_value(common_dir, key)
    if value is None:
        return None
    return _git_bool(value)


def config_files(common_dir: Path | None) -> list[tuple[int, Path]]:
    """(libgit2 level, path) of each config file git reads, lowest priority first.

    Found as git finds them, not as libgit2 does (issue 12 §3): libgit2 ignores
    ``GIT_CONFIG_GLOBAL``, ``GIT_CONFIG_SYSTEM`` and ``GIT_CONFIG_NOSYSTEM`` and
    takes ``$HOME`` once per process. ``GIT_CONFIG_GLOBAL`` replaces both
    ``~/.gitconfig`` and ``$XDG_CONFIG_HOME/git/config``, as in git.
    """
    system, xdg, global_, local = 2, 3, 4, 5  # pygit2.enums.ConfigLevel, without importing it
    found: list[tuple[int, Path]] = []
    if not _git_bool(os.environ.get("GIT_CONFIG_NOSYSTEM") or "false"):
        found.append((system, Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig")))
    configured = os.environ.get("GIT_CONFIG_GLOBAL")
    home = os.environ.get("HOME")
    if configured is not None:
        found.append((global_, Path(os.path.expanduser(configured))))
    else:
        xdg_home = os.environ.get("XDG_CONFIG_HOME") or (home and os.path.join(home, ".config"))
        if xdg_home:
            found.append((xdg, Path(xdg_home) / "git" / "config"))
        if home:
            found.append((global_, Path(home) / ".gitconfig"))
    if common_dir is not None:
        found.append((local, common_dir / "config"))
    return found


def _config_chain(common_dir: Path | None) -> pygit2.Config | None:
    """The files of ``config_files`` as one libgit2 config (parser and includes).

    Only regular files are handed to libgit2, so a FIFO cannot block it.
    """
    import pygit2

    config = pygit2.Config()
    try:
        for level, path in config_files(common_dir):
            if _is_regular(path):
                config.add_file(str(path), level, force=True)
    except (pygit2.GitError, OSError, ValueError):
        return None
    return config


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _env_config(key: str) -> str | None:
    """``GIT_CONFIG_COUNT``/``KEY_n``/``VALUE_n``: git's command-line config, on top."""
    try:
        count = int(os.environ.get("GIT_CONFIG_COUNT") or 0)
    except ValueError:
        return None
    wanted = key.lower()
    found = None
    for n in range(count):
        if (os.environ.get(f"GIT_CONFIG_KEY_{n}") or "").lower() == wanted:
            found = os.environ.get(f"GIT_CONFIG_VALUE_{n}")
    return found


def _git_bool(value: str) -> bool | None:
    """git's ``git_parse_maybe_bool``: yes/on/true/1 (any non-zero number), no/off/false/0/""."""
    text = value.strip().lower()
    if text in ("true", "yes", "on"):
        return True
    if text in ("false", "no", "off", ""):
        return False
    try:
        return int(text) != 0
    except ValueError:
        return None


@dataclass
class TrackedIndex:
    """The paths a repository's index tracks, sorted for prefix searches."""

    modes: dict[str, int] = field(default_factory=dict)
    _sorted: list[str] = field(default_factory=list)

    @classmethod
    def read(cls, index_file: Path, cache_file: Path | None = None) -> TrackedIndex:
        from snapshotter.git.index import tracked_modes

        oid_size = OBJECT_FORMATS[object_format(index_file.parent)]
        modes = tracked_modes(index_file, cache_file, oid_size)
        if modes is None and oid_size == OBJECT_FORMATS["sha1"]:
            # A format we do not parse: let libgit2 try (it reads no SHA-256 index).
            modes = cls._read_with_pygit2(index_file)
        return cls(modes or {}, sorted(modes or {}))

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
        return None if oid is None else _read_blob(_common_dir(self.git_dir), oid)


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
    configured = config_value(common_dir, "core.excludesFile")
    # A relative path is relative to the worktree's top, as git reads it.
    excludes = read_lines(root / global_excludes_file(configured))
    return excludes, bool(config_bool(common_dir, "core.ignorecase"))


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
    common_dir = None if git_dir is None else _common_dir(git_dir)
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
