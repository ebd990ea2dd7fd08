"""Walking the worktree: which paths a snapshot holds, with their stat data.

The walk mirrors git: tracked paths always count, untracked ones unless an
ignore rule drops them, ignored directories are not entered (unless they hold
tracked files), nested repositories start their own rules, and every ``.git``
is left out. No file content is read here; ``capture.py`` hashes what changed.

Over 400 lines on purpose: ``scan`` and ``rescan`` share one ``_Walker``,
whose per-path loop is written out inline for speed (#16.4).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable, Collection, Container, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from snapshotter import progress
from snapshotter.errors import NotAProject, TooManyFiles
from snapshotter.git.ignore import IgnoreRules
from snapshotter.git.kinds import MODE_EXEC, MODE_FILE, MODE_GITLINK, MODE_LINK
from snapshotter.git.repo_context import (
    RepoContext,
    global_rules,
    keep_ignored,
    nested_context,
    top_context,
)
from snapshotter.git.worktree import Worktree
from snapshotter.names import display
from snapshotter.store import records
from snapshotter.store.skips import Skip, Why

# Without an explicit file cap, a walk that finds this many untracked files,
# and UNTRACKED_RATIO times more than the index tracks, is a home directory or
# a dump, not a project (issue 16: a cap of 200,000 refused Chromium instead).
UNTRACKED_GUARD = 100_000
UNTRACKED_RATIO = 10

# The mode, then signature.Signature's fields (size, mtime_ns, ctime_ns, inode):
# what decides "unchanged" without reading. A walk keeps them packed into one
# bytes object a path (records.Stat, in ``ScanResult.entries``); a file to hash
# is handed on with them unpacked (records.fields), as this tuple.
Stat = tuple[int, int, int, int, int]
_S_IFMT = 0o170000  # stat.S_IFMT as a mask: one & instead of a call per path
_S_IFDIR, _S_IFREG, _S_IFLNK, _S_IXUSR = stat.S_IFDIR, stat.S_IFREG, stat.S_IFLNK, stat.S_IXUSR
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


@dataclass
class ScanResult:
    # A watching process's kept walk may hold the stat cache's own entry instead of
    # an unchanged file's Stat (capture.py's ``_reuse_unchanged``: one record a path,
    # not two): the same Stat, then the blob id. Read them through records.py.
    entries: dict[str, records.Stat] = field(default_factory=dict)
    skipped: dict[str, Skip] = field(default_factory=dict)
    nested: list[str] = field(default_factory=list)  # nested repositories entered
    # Kept by watched walks (``on_dir``), so ``rescan`` can redo single directories:
    dirs: dict[str, _Dir] = field(default_factory=dict)  # each walked dir, as it was entered
    linked: set[str] = field(default_factory=set)  # files with other hard links
    # Kept by ``rescan`` (built by ``index``): each directory's files and subdirectories.
    index: DirIndex | None = None
    # Set by ``rescan``: the paths it took out or put in (its directories' files, whole).
    touched: set[str] | None = None
    # Ignored paths the walk saw and passed by (a directory ends in ``/``): an agent
    # that deletes one is told that undo cannot bring it back (#26.3).
    ignored: set[str] = field(default_factory=set)
    # The entries ``on_file`` took (scan's): watched before their stat was taken.
    announced: list[str] | None = None


@dataclass
class DirIndex:
    """A watched walk by directory, so ``rescan`` redoes one without looking at all."""

    # directory -> its entries' paths (lists: a set per directory cost ~100 bytes a path)
    files: dict[str, list[str]] = field(default_factory=dict)
    subdirs: dict[str, set[str]] = field(default_factory=dict)  # directory -> walked children


def index(result: ScanResult) -> DirIndex:
    """``result``'s directory index, built once (a pass over every path) and kept."""
    if result.index is None:
        built = DirIndex()
        files = built.files
        for rel in result.entries:
            parent = rel.rpartition("/")[0]
            found = files.get(parent)
            if found is None:
                files[parent] = [rel]
            else:
                found.append(rel)
        for rel in result.dirs:
            if rel:
                built.subdirs.setdefault(rel.rpartition("/")[0], set()).add(rel)
        result.index = built
    return result.index


class _Named:
    """One directory entry looked at alone, shaped as ``os.DirEntry`` for ``_entries``."""

    __slots__ = ("_st", "name", "path")

    def __init__(self, name: str, path: str, st: os.stat_result) -> None:
        self.name, self.path, self._st = name, path, st

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self._st


@dataclass(frozen=True)
class _Dir:
    rel: str
    ctx: RepoContext
    rules: IgnoreRules
    ignored: bool  # inside an ignored directory: only tracked paths count
    kept: bool = False  # an ignored directory kept anyway (snapshotter.keepIgnored, #26.3)


def scan(
    tree: Worktree,
    *,
    previous: Container[str],
    max_new_file_size: int,
    excluded: frozenset[str] = frozenset(),
    index_cache: Path | None = None,
    max_files: int | None = None,
    on_dir: Callable[[str], None] | None = None,
    guard: bool = True,
    reuse: Mapping[str, Any] | None = None,
    on_file: Callable[[bytes, str], bool] | None = None,
) -> ScanResult:
    """Every path of ``tree.scope`` a snapshot holds.

    ``previous`` is what the last capture held (such files are kept whatever
    their size); ``excluded`` holds absolute paths never to enter (the store);
    ``index_cache`` is where the source index's path list may be cached.
    Past ``max_files`` paths the walk stops with TooManyFiles: a home
    directory must not hold the agent up for minutes. ``on_dir`` hears of
    every directory whose listing or ``.gitignore`` the result depends on,
    before it is read (the watcher starts watching there). ``reuse``: the stat
    cache's entries; a file whose stat data is its entry's Stat gets that entry
    itself (see ``ScanResult``): no record of its own (issue 24.5).

    ``on_file`` hears of each regular file of a listed directory (its path as
    bytes, then its relative path) before
    its stat data is taken (the watcher watches it there, so no second stat
    is needed to know the watch saw what the walk recorded); False: it takes no
    more. Those it took are ``announced``.
    """
    guard = guard and max_files is None  # an explicit cap says the user means this tree
    if guard and tree.root == Path.home().resolve():
        raise NotAProject(f"{display(str(tree.root))} is your home directory")
    walker = _Walker(tree, previous, max_new_file_size, excluded)
    walker.reuse = reuse
    if reuse and on_dir is not None:
        # A watched walk is kept (the hook server's): its paths are the stat cache's
        # own strings from the start, not copies that go once it is kept beside the
        # cache (resident.py's ``share``) and leave holes in the heap (issue 24.5).
        walker.keys = {rel: rel for rel in reuse}.get
    walker.index_cache = index_cache
    walker.max_files = max_files
    walker.guard = guard
    walker.on_dir = on_dir
    walker.on_file = on_file
    if on_file is not None:
        walker.result.announced = []
    start = walker.start_dir()
    if start is not None:
        walker.run(start)
    return walker.result


def rescan(
    tree: Worktree,
    last: ScanResult,
    changed_dirs: Collection[str],
    *,
    previous: Container[str],
    max_new_file_size: int,
    excluded: frozenset[str] = frozenset(),
    max_files: int | None = None,
    on_dir: Callable[[str], None] | None = None,
    changed_files: Collection[str] = (),
    reuse: Mapping[str, Any] | None = None,
) -> ScanResult | None:
    """``last`` (a watched walk) with only ``changed_dirs`` (relative) listed again,
    and ``changed_files`` (relative paths of entries written, created, deleted or
    renamed: not directories) each looked at again alone (``_named``).

    Correct only when nothing else changed: no ignore-rule file, no index, no
    directory moved (the watcher's job to know). A new subdirectory is walked
    whole; one that went takes its subtree along. None when a changed
    directory has become a repository of its own: walk everything then.

    ``last`` is updated in place and returned, at a cost in proportion to the
    directories redone (its ``index`` says which paths each holds): the
    caller must drop ``last`` if this raises. ``touched`` names every path
    taken out of or put into the result.
    """
    scope = tree.scope
    if scope and any(
        d not in last.dirs and (not d or scope.startswith(d + "/")) for d in changed_dirs
    ):
        return None  # above the scope: the scope directory itself may have come or gone
    redo = {d for d in changed_dirs if d in last.dirs}
    walker = _Walker(tree, previous, max_new_file_size, excluded)
    walker.max_files = max_files
    walker.on_dir = on_dir
    walker.reuse = reuse
    found = index(last)
    touched = _named(walker, last, found, changed_files, redo)
    for d in redo:
        if d and os.path.lexists(os.path.join(walker.root, d, ".git")):
            return None
    for d in redo:
        for rel in found.files.pop(d, ()):
            last.entries.pop(rel, None)
            touched.add(rel)
    if last.skipped:
        last.skipped = {
            rel: sk for rel, sk in last.skipped.items() if rel.rpartition("/")[0] not in redo
        }
    last.linked = {rel for rel in last.linked if rel.rpartition("/")[0] not in redo}
    last.ignored = {rel for rel in last.ignored if _parent(rel) not in redo}
    fresh = walker.result  # what the directories hold now
    for d in sorted(redo):
        if d not in last.dirs:
            continue  # went with a parent directory redone before it
        last.skipped.pop(d, None)  # "unreadable directory", if it was
        listed = walker._visit(last.dirs[d])
        kept = {child.rel for child in listed}
        for child in listed:
            if child.rel not in last.dirs and child.rel not in fresh.dirs:
                walker.run(child)  # new (or newly entered): walked whole
        for sub in list(found.subdirs.get(d, ())):
            if sub not in kept and sub in last.dirs:
                _drop_subtree(last, found, sub, touched)
    for rel, st in fresh.entries.items():
        last.entries[rel] = st
        parent = rel.rpartition("/")[0]
        found.files.setdefault(parent, []).append(rel)
        touched.add(rel)
    for rel, entered in fresh.dirs.items():
        if rel and rel not in last.dirs:
            found.subdirs.setdefault(rel.rpartition("/")[0], set()).add(rel)
        last.dirs[rel] = entered
    last.skipped.update(fresh.skipped)
    last.linked |= fresh.linked
    last.ignored |= fresh.ignored
    last.nested = fresh.nested  # as before: only those entered by this walk
    last.touched = touched
    if max_files is not None and len(last.entries) > max_files:
        raise TooManyFiles(max_files)
    return last


def _named(
    walker: _Walker, last: ScanResult, found: DirIndex, rels: Collection[str], redo: set[str]
) -> set[str]:
    """Each of ``rels`` looked at again alone, as its directory's listing would see it.

    The watcher names the entries that changed (written, created, deleted,
    renamed) in directories that are not listed again: each is looked at
    through the walk's own loop (``_Walker._entries``: the same ignore rules,
    size limit and kinds) and set, or taken out of ``last``. A directory where
    a name is now a directory (or a repository) goes into ``redo`` instead: its
    listing decides. The paths set or taken out are returned; names new to
    ``last`` are left in ``walker.result``, for the caller to put in.
    """
    by_dir: dict[str, list[str]] = {}
    for rel in rels:
        parent, _, name = rel.rpartition("/")
        if parent not in redo and parent in last.dirs:  # else listed anyway, or not walked
            by_dir.setdefault(parent, []).append(name)
    touched: set[str] = set()
    for d, names in by_dir.items():
        found_now = walker.look(last.dirs[d], names)
        if found_now is None:
            redo.add(d)
            continue
        prefix = d + "/" if d else ""
        fresh, gone = found_now.entries, set()
        for name in names:
            rel = prefix + name
            last.skipped.pop(rel, None)
            last.linked.discard(rel)
            last.ignored.discard(rel)
            if rel in last.entries:
                touched.add(rel)
                st = fresh.pop(rel, None)
                if st is None:
                    del last.entries[rel]
                    gone.add(rel)
                else:  # set in place: the key stays the string the stat cache shares
                    last.entries[rel] = st
        if gone:
            found.files[d] = [rel for rel in found.files.get(d, ()) if rel not in gone]
        walker.add(found_now)  # the names new here, and every skip, link and ignored path
    return touched


def _drop_subtree(result: ScanResult, found: DirIndex, rel: str, touched: set[str]) -> None:
    """Forget directory ``rel`` and all below it (a file now named ``rel`` stays)."""
    found.subdirs.get(rel.rpartition("/")[0], set()).discard(rel)
    stack = [rel]
    while stack:
        d = stack.pop()
        result.dirs.pop(d, None)
        for path in found.files.pop(d, ()):
            result.entries.pop(path, None)
            touched.add(path)
        stack.extend(found.subdirs.pop(d, ()))
    prefix = rel + "/"
    if any(k.startswith(prefix) for k in result.skipped):
        result.skipped = {k: v for k, v in result.skipped.items() if not k.startswith(prefix)}
    result.linked = {k for k in result.linked if not k.startswith(prefix)}
    result.ignored = {k for k in result.ignored if not k.startswith(prefix)}


def _parent(rel: str) -> str:
    """The directory holding ``rel`` (a file, or a directory written ``name/``)."""
    return rel.rstrip("/").rpartition("/")[0]


class _Walker:
    def __init__(
        self, tree: Worktree, previous: Container[str], limit: int, excluded: frozenset[str]
    ) -> None:
        self.tree = tree
        self.root = str(tree.root)
        self.previous = previous
        self.limit = limit
        self.excluded = excluded
        self.result = ScanResult()
        self.index_cache: Path | None = None
        self.max_files: int | None = None
        self.on_dir: Callable[[str], None] | None = None
        self.on_file: Callable[[bytes, str], bool] | None = None  # see scan
        self.reuse: Mapping[str, Any] | None = None  # see scan
        self.keys: Callable[[str, str], str] | None = None  # a path's string to keep (scan)
        self.guard = False  # refuse what looks like a home directory (see scan)
        self.untracked = 0  # untracked files kept so far (the guard's count)
        self.tracked_total = 0  # what the top repository's index tracks
        # Ignored paths captured anyway, up to a size (git config; off by default, #26.3).
        self.keep, self.keep_max = keep_ignored(tree)

    def start_dir(self) -> _Dir | None:
        """The scope's directory, with the rules of every directory above it."""
        ctx = top_context(self.tree, global_rules(self.tree), self.index_cache)
        self.tracked_total = len(ctx.tracked.modes)
        current = _Dir("", ctx, ctx.rules, False)
        if not self.tree.scope:
            return current
        for part in self.tree.scope.split("/"):
            parent_abs = os.path.join(self.root, current.rel)
            if self.on_dir is not None:
                self.on_dir(parent_abs)
            ctx_rel = current.ctx.rel(current.rel)
            gitignore = current.ctx.gitignore_lines(parent_abs, ctx_rel)
            rules = current.rules.with_gitignore(ctx_rel, gitignore)
            current = _Dir(current.rel, current.ctx, rules, current.ignored, current.kept)
            child = self._enter(current, part, os.path.join(parent_abs, part))
            if child is None:
                return None
            current = child
        return current

    def run(self, start: _Dir) -> None:
        stack = [start]
        while stack:
            stack.extend(self._visit(stack.pop()))

    def _visit(self, d: _Dir) -> list[_Dir]:
        dir_abs = os.path.join(self.root, d.rel) if d.rel else self.root
        if self.on_dir is not None:
            self.on_dir(dir_abs)
            self.result.dirs[d.rel] = d
        try:
            # Listed through a descriptor: each entry's stat resolves one name, not
            # the whole path again (~13% of a bare walk of glibc).
            fd = os.open(dir_abs, _OPEN_DIR)
            try:
                with os.scandir(fd) as it:
                    entries = list(it)  # order does not matter: trees are sorted later
            except OSError:
                os.close(fd)
                raise
        except FileNotFoundError:
            return []
        except OSError as exc:
            if d.rel != d.ctx.prefix and os.path.lexists(os.path.join(dir_abs, ".git")):
                self._nested(d)  # still a repository of its own, if an unreadable one
            self._skip(d.rel, Why.UNREADABLE_DIR, exc.strerror)
            return []
        try:
            return self._listed(d, dir_abs, fd, entries)
        finally:
            os.close(fd)

    def _listed(
        self, d: _Dir, dir_abs: str, fd: int, entries: list[os.DirEntry[str]]
    ) -> list[_Dir]:
        """``_visit``'s listing of ``d`` (its entries' stat calls go through ``fd``)."""
        progress.tick(len(entries))
        present = has_git = False
        for e in entries:  # a plain loop: any() over a generator costs twice as much
            name = e.name
            if name == ".gitignore":
                present = True
            elif name == ".git":
                has_git = True
        if has_git and d.rel != d.ctx.prefix:  # a repository below: its own rules (_enter)
            d = self._nested(d)
            if self.on_dir is not None:
                self.result.dirs[d.rel] = d
        fresh = self.on_file is not None
        if fresh:
            self._announce(dir_abs, d.rel, entries)
        return self._entries(self._here(d, dir_abs, present), entries, dir_abs, fd, fresh)

    def _announce(self, dir_abs: str, rel: str, entries: list[os.DirEntry[str]]) -> None:
        """Hand ``on_file`` each regular file (by the listing's file type: no stat),
        before ``_entries`` stats it."""
        on_file, taken = self.on_file, self.result.announced
        assert on_file is not None and taken is not None
        encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
        prefix, parent = os.fsencode(dir_abs) + b"/", rel + "/" if rel else ""
        for entry in entries:
            name = entry.name
            try:
                if name == ".git" or not entry.is_file(follow_symlinks=False):
                    continue  # (a directory, symlink or special file: no bytes to watch)
            except OSError:
                continue  # (a file type only a stat can tell, and it failed: _entries says)
            if not on_file(prefix + name.encode(encoding, errors), parent + name):
                self.on_file = None
                return
            taken.append(parent + name)

    def _here(self, d: _Dir, dir_abs: str, present: bool) -> _Dir:
        """``d`` (as entered) with its own ``.gitignore`` applied (``present``: listed)."""
        rules = d.rules
        if not d.ignored:
            ctx_rel = d.ctx.rel(d.rel)
            # A tracked .gitignore missing here may be skip-worktree: read from the index.
            if present or (f"{ctx_rel}/.gitignore" if ctx_rel else ".gitignore") in (
                d.ctx.tracked.modes
            ):
                gitignore = d.ctx.gitignore_lines(dir_abs, ctx_rel, present)
                rules = rules.with_gitignore(ctx_rel, gitignore)
        return _Dir(d.rel, d.ctx, rules, d.ignored, d.kept)

    def look(self, d: _Dir, names: list[str]) -> ScanResult | None:
        """Entries ``names`` of directory ``d`` (as entered), as its listing would record
        them, in a result of their own; None when one is a directory now, or ``d`` a
        repository of its own (list it again)."""
        dir_abs = os.path.join(self.root, d.rel) if d.rel else self.root
        if d.rel != d.ctx.prefix and os.path.lexists(os.path.join(dir_abs, ".git")):
            return None
        found: list[_Named] = []
        for name in names:
            path = os.path.join(dir_abs, name)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                continue  # gone: taken out, nothing to put back
            except OSError:
                return None
            if name == ".git" or st.st_mode & _S_IFMT == _S_IFDIR:
                return None
            found.append(_Named(name, path, st))
        outer, self.result = self.result, ScanResult()
        try:
            present = os.path.lexists(os.path.join(dir_abs, ".gitignore"))
            if self._entries(self._here(d, dir_abs, present), found, dir_abs):  # type: ignore[arg-type]
                return None
            return self.result
        finally:
            self.result = outer

    def add(self, other: ScanResult) -> None:
        """Take ``other``'s files (from ``look``) into this walk's result."""
        result = self.result
        result.entries.update(other.entries)
        result.skipped.update(other.skipped)
        result.linked |= other.linked
        result.ignored |= other.ignored

    def _entries(
        self,
        d: _Dir,
        entries: list[os.DirEntry[str]],
        dir_abs: str,
        fd: int | None = None,
        fresh: bool = False,
    ) -> list[_Dir]:
        """Record the files of one listing of ``dir_abs``; its subdirectories to walk.
        ``fd``: the directory the entries were listed through (their names are
        relative to it). ``fresh``: take each entry's stat data now, through ``fd``
        (not one the listing's file type check may have taken before ``_announce``
        watched it).

        The hot loop of every capture, one pass per path: what would be a call
        per entry (its kind, its path in the repository, the ignore test, the
        size limit) is done inline with everything looked up once per directory
        (#16.4: calls and attribute lookups were half the walk's own time).
        """
        prefix = d.rel + "/" if d.rel else ""
        ctx = d.ctx
        cut = len(ctx.prefix) + 1 if ctx.prefix else 0  # ctx.rel(rel), inline
        tracked_modes = ctx.tracked.modes
        in_ignored = d.ignored
        is_ignored = d.rules.is_ignored
        # The names here never to enter (usually none: one check a directory, not a path).
        excluded = {
            path.rpartition("/")[2] for path in self.excluded if path.rpartition("/")[0] == dir_abs
        }
        previous = self.previous
        limit = self.limit
        found = self.result.entries
        seen_ignored = self.result.ignored
        keep, keep_all = self.keep, d.kept
        linked = self.result.linked if self.on_dir is not None else None
        max_files = self.max_files
        reuse = self.reuse.get if self.reuse is not None else None
        pack = records.stat
        keys = self.keys
        lstat = os.lstat
        subdirs: list[_Dir] = []
        for entry in entries:
            name = entry.name
            if name == ".git":
                continue
            if excluded and name in excluded:
                continue
            rel = prefix + name
            # A name that is not UTF-8 is os.fsdecode'd like any other and kept
            # byte-exact from here on (names.py); git tracks such names too.
            try:
                st = lstat(name, dir_fd=fd) if fresh else entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as exc:
                self._skip(rel, Why.UNREADABLE, exc.strerror)
                continue
            st_mode = st.st_mode
            kind = st_mode & _S_IFMT
            if kind == _S_IFDIR:
                child = self._enter(d, name, f"{dir_abs}/{name}", known_dir=True)
                if child is not None:
                    subdirs.append(child)
                continue
            ctx_rel = rel[cut:] if cut else rel
            tracked = ctx_rel in tracked_modes
            kept = False
            if not tracked and (in_ignored or is_ignored(ctx_rel, False)):
                kept = keep is not None and (keep_all or keep.is_ignored(rel, False))
                if not kept or st.st_size > self.keep_max:
                    if not in_ignored or keep_all:  # (in a kept directory: one too large)
                        seen_ignored.add(rel)
                    continue
            if kind == _S_IFREG:
                mode = MODE_EXEC if st_mode & _S_IXUSR else MODE_FILE
            elif kind == _S_IFLNK:
                mode = MODE_LINK
            else:
                self._skip(rel, Why.SPECIAL)
                continue
            size = st.st_size
            if (
                not kept
                and not tracked
                and mode != MODE_LINK
                and size > limit
                and rel not in previous
            ):
                self.result.skipped[rel] = Skip(
                    rel, Why.TOO_LARGE, str(limit), size, st.st_mtime_ns
                )
                continue
            record = pack(mode, size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
            prior = reuse(rel) if reuse is not None else None
            # Every field equal (an UNTRUSTED mtime, 0, never is): the stat cache's own
            # entry (see ScanResult).
            if keys is not None:
                rel = keys(rel, rel)
            found[rel] = prior if prior is not None and prior.startswith(record) else record
            if linked is not None and st.st_nlink > 1:
                linked.add(rel)
            if max_files is not None and len(found) > max_files:
                raise TooManyFiles(max_files)
            if not tracked:
                self.untracked += 1
                if self.guard and self.untracked % 1000 == 0:
                    self._guard()
        return subdirs

    def _enter(self, d: _Dir, name: str, path_abs: str, known_dir: bool = False) -> _Dir | None:
        """The child directory to walk, or None when git would not look inside.

        ``known_dir``: an lstat already showed a real directory (not a link).
        """
        rel = f"{d.rel}/{name}" if d.rel else name
        if name == ".git" or path_abs in self.excluded:
            return None
        if not known_dir and (not os.path.isdir(path_abs) or os.path.islink(path_abs)):
            return None
        ctx_rel = d.ctx.rel(rel)
        tracked = d.ctx.tracked
        is_gitlink = tracked.modes.get(ctx_rel) == MODE_GITLINK
        ignored = d.ignored or d.rules.is_ignored(ctx_rel, True)
        kept = d.kept
        if ignored and not is_gitlink and not tracked.has_under(ctx_rel):
            kept = kept or (self.keep is not None and self.keep.is_ignored(rel, True))
            if not kept:
                if not d.ignored:
                    self.result.ignored.add(rel + "/")
                return None
        child = _Dir(rel, d.ctx, d.rules, ignored and not is_gitlink, kept)
        # A directory found by a listing is told a repository by its own listing
        # (``.git`` in it, _visit): no lstat per directory here.
        if not known_dir and os.path.lexists(os.path.join(path_abs, ".git")):
            return self._nested(child)
        return child

    def _nested(self, d: _Dir) -> _Dir:
        """``d``, a repository of its own: its own config, index and rules."""
        self.result.nested.append(d.rel)
        nested = nested_context(Path(self.root, d.rel), d.rel)
        return _Dir(d.rel, nested, nested.rules, False)

    def _guard(self) -> None:
        if (
            self.untracked >= UNTRACKED_GUARD
            and self.untracked > UNTRACKED_RATIO * self.tracked_total
        ):
            raise NotAProject(
                f"{display(self.root)} holds over {self.untracked:,} untracked "
                f"files against {self.tracked_total:,} tracked ones"
            )

    def _skip(self, rel: str, why: Why, detail: str | None = "") -> None:
        self.result.skipped[rel] = Skip(rel, why, detail or "")
