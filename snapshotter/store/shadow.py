"""The shadow store: a bare repository of blobs and trees, per worktree.

``Store`` is the store's directory, its lock, recovery from what a killed
process left, access to its objects, and ``hold`` (SPEC §5's never-destroy
rule). Capturing into it is capture.py's; reading files into blobs, blobs.py's.

The store decides what to write; git/objects, git/packs and git/trees write
it (compaction, below, only repacks what is stored). It never opens the
source repository for writing and never creates a ``.git`` in the worktree:
the shadow is bare and the worktree path is handed to the walk instead of
being configured as the shadow's workdir (see MEASURED.md's pitfalls).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from snapshotter import durable
from snapshotter.config import stores_dir
from snapshotter.errors import StoreError
from snapshotter.fileio import real_parents, remove_leftovers
from snapshotter.git import packs as packwriter
from snapshotter.git import trees as treebuild
from snapshotter.git.kinds import BLOB, MODE_FILE, MODE_LINK, TREE, Entry, ObjectId, git_mode
from snapshotter.git.objects import ObjectDB, ObjectError, init_bare
from snapshotter.git.worktree import Worktree
from snapshotter.store import blobs, stat_cache
from snapshotter.store.layout import file_lock, store_key

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from snapshotter.store.resident import Resident

    Lock = AbstractContextManager[object]

# A hook waits this long for the store lock (inside docker-agent's 60 s hook
# timeout), polling often (layout.LOCK_POLL_S).
LOCK_TIMEOUT_S = 50.0
EDITS_KEPT = 16  # edit_tree results a Store remembers (an operation makes a few)


def _make_private(data_dir: Path, root: Path) -> None:
    """The data directory, the stores directory and this store: 0700 (SPEC §2).

    A store made by an older version (0755 directories, 0644 or 0444 files)
    is closed on open, contents included; from then on its directories alone
    keep other users out, whatever mode libgit2 gives the files within.
    """
    from snapshotter.config import make_private_tree, private_dir, stores_dir

    levels = (data_dir, stores_dir(data_dir), root)
    fixed = [d for d in levels if private_dir(d)]
    if fixed:
        make_private_tree(fixed[0])  # the outermost that was open, all below it


class Store:
    """One worktree's store directory: ``git/`` objects, index, manifest, state, lock."""

    def __init__(
        self,
        root: Path,
        worktree: Worktree,
        lock: Lock | None = None,
        resident: Resident | None = None,
    ) -> None:
        self.root = root
        self.worktree = worktree
        self.objects = ObjectDB(root / "git")
        # Trees ``edit_tree`` made: (base, changes) -> the tree (a pure function of them).
        self._edited: dict[tuple[str, frozenset[tuple[str, object]]], str] = {}
        self._lock = lock  # shared between views of one store, so it stays re-entrant
        # The long-lived process's warm state its captures use (resident.py), if any.
        self.resident = resident

    @classmethod
    def open(
        cls,
        data_dir: Path,
        worktree: Worktree,
        *,
        create: bool = True,
        recover: Callable[[Store], None] | None = None,
        resident: Resident | None = None,
    ) -> Store | None:
        """The store of ``worktree``; None when it does not exist and ``create`` is off.

        ``recover`` runs under the store lock once leftovers are cleared: the
        journal (history) finishes a restore a killed process left half done.
        ``resident``: the long-lived process's state its captures use.
        """
        root = stores_dir(data_dir) / store_key(worktree.root)
        if not create and not (root / "git" / "HEAD").exists():
            return None
        try:
            _make_private(data_dir, root)
        except OSError as exc:
            raise StoreError(f"cannot create the store in {root}: {exc.strerror}") from exc
        store = cls(root, worktree, resident=resident)
        try:
            with store.locked():
                store._init_repo()
                if recover is not None:
                    recover(store)
        except OSError as exc:  # read-only data dir, lock timeout (an OSError too)
            why = exc.strerror or str(exc)
            raise StoreError(f"cannot lock the store {root}: {why}") from exc
        return store

    def reopen(self) -> None:
        """Forget the open repository (after gc replaced its packs)."""
        self.objects.reopen()

    def locked(self) -> Lock:
        """The store's lock. flock-based, so a killed holder never leaves it stuck."""
        if self._lock is None:
            self._lock = file_lock(self.root / "lock", timeout=LOCK_TIMEOUT_S)
        return self._lock

    def _init_repo(self) -> None:
        git_dir = self.root / "git"
        try:
            if not (git_dir / "HEAD").exists():
                # The record first, byte-exact: no store without it (issue 13 §18).
                (self.root / "worktree").write_bytes(os.fsencode(self.worktree.root) + b"\n")
                init_bare(git_dir)
                # Synced with the first objects, before the first record names one.
                durable.wrote(self.root / "worktree")
                durable.made_dirs(git_dir / "objects" / "pack", self.root)
        except (ObjectError, OSError) as exc:
            raise StoreError(f"cannot create the store in {self.root}: {exc}") from exc
        self._recover()

    def _recover(self) -> None:
        """Clear what a killed process may have left; we hold the lock, so it is stale."""
        for leftover in ("index.lock", "index"):  # the shadow index of older versions
            with contextlib.suppress(OSError):
                os.unlink(self.root / leftover)
        remove_leftovers(self.root)
        packwriter.clean_pack_dir(self.root / "git" / "objects" / "pack")

    # -- reading ---------------------------------------------------------

    def entry(self, tree: str, rel: str) -> Entry | None:
        """(mode, raw blob id) at ``rel`` in ``tree``; None when absent or a directory."""
        return self.objects.entry(tree, rel)

    def last_tree(self) -> str | None:
        """The tree of the newest capture of this worktree, by anyone; None before the first."""
        kept = self.resident.manifests if self.resident is not None else None
        tree = stat_cache.load(self.root / "manifest", kept).tree
        return tree if tree is not None and self.has(tree) else None

    def last_capture(self) -> tuple[str, int] | None:
        """(tree, when it was recorded in ns) of the newest capture, by anyone; None before."""
        tree = self.last_tree()
        if tree is None:
            return None
        try:
            return tree, os.stat(self.root / "manifest").st_mtime_ns
        except OSError:
            return tree, 0

    def newest_capture(self) -> tuple[str, int] | None:
        """``last_capture`` without reading the stat cache's entries (stat_cache.newest_tree):
        (tree, when the stat cache was last written, in ns); None when it cannot tell so."""
        path = self.root / "manifest"
        tree = stat_cache.newest_tree(path)
        if tree is None or not self.has(tree):
            return None
        when = 0
        for written in (path, stat_cache.log_path(path)):  # a capture appends to the log
            with contextlib.suppress(OSError):
                when = max(when, os.stat(written).st_mtime_ns)
        return tree, when

    def files_under(self, tree: str, directory: str) -> list[str]:
        """Every file path below ``directory`` in ``tree`` (none if it is not a directory there)."""
        return self.objects.files_under(tree, directory)

    def edit_tree(self, base: str, changes: Mapping[str, tuple[int, bytes] | None]) -> str:
        """``base`` with each path set to (mode, blob id), or removed for None.

        Only the trees on the way from the changed paths to the root are read
        and written (trees.edit): an undo on a 50k-file worktree need not
        rebuild them all.
        """
        key = (base, frozenset(changes.items()))
        done = self._edited.get(key)
        if done is not None and self.has(done):
            return done  # an undo edits one base with the same entries twice
        try:
            done = treebuild.edit(
                base, changes, self.tree_items, self.put_tree, self.objects.keep_tree
            )
        except (ObjectError, OSError) as exc:
            raise StoreError(f"cannot write to the store {self.root}: {_why(exc)}") from exc
        if len(self._edited) >= EDITS_KEPT:
            self._edited.clear()
        self._edited[key] = done
        return done

    def tree_items(self, tree: bytes) -> Mapping[bytes, tuple[int, bytes]]:
        """Name -> (mode, raw id) of the entries of tree ``tree`` (raw id), read-only."""
        return self.objects.tree_items(tree)

    def put_tree(self, data: bytes) -> ObjectId:
        """Write a tree object's bytes unless the store has it; its raw id."""
        return self.put(TREE, data)

    def has(self, oid: str) -> bool:
        """Whether the object ``oid`` (hex) is stored."""
        return self.objects.has(oid)

    # -- writing objects -------------------------------------------------

    def put(self, kind: int, data: bytes) -> ObjectId:
        """Write one object unless the store has it (blobs.put: never freshened); its raw id."""
        return blobs.put(self.objects, kind, data)

    def hold(self, tree: str, paths: Collection[str]) -> str:
        """``tree`` plus the current bytes of each of ``paths`` on disk that it lacks.

        The one place SPEC §5's rule is kept: before a restore writes or removes
        a path, the safety tree holds what is there now, whatever ignore rules
        or the size limit made the capture leave out (#12.1). A file that
        cannot be read is refused, never overwritten.
        """
        found: dict[str, tuple[int, bytes] | None] = {}
        for rel in paths:
            if self.entry(tree, rel) is None:
                now = self.held(rel)
                if now is not None:
                    found[rel] = now
        return self.edit_tree(tree, found) if found else tree

    def as_now(self, base: str, paths: Collection[str]) -> str:
        """``base`` with each of ``paths`` as it is on disk now, its bytes held (``held``).

        A restore's safety tree without a walk (issue 24.2): every path it
        touches read now, whatever ``base`` or ignore rules say; nothing there
        (or a directory, a FIFO, a path below a symlink) is absent. The rest
        of the worktree is as ``base`` has it: the restore does not touch it.
        """
        return self.edit_tree(base, {rel: self.held(rel) for rel in paths})

    def held(self, rel: str) -> Entry | None:
        """Worktree file or symlink ``rel`` stored as it is now: its (mode, blob id).

        None when there is nothing a restore could destroy: no file, a
        directory (restores leave it alone), a FIFO or device, or a path
        reached only through a symlink (restores never go there). A file that
        cannot be read raises StoreError: it is not to be touched.
        """
        path = self._reachable(rel)
        if path is None:
            return None
        try:
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                return Entry(MODE_LINK, self.put(BLOB, os.fsencode(os.readlink(path))))
            if stat.S_ISREG(st.st_mode):
                return Entry(git_mode(st.st_mode) or MODE_FILE, blobs.put_file(self.objects, path))
        except FileNotFoundError:
            pass
        except (OSError, ObjectError) as exc:
            raise StoreError(
                f"cannot keep a copy of {rel} ({_why(exc)}), so it is not touched"
            ) from exc
        return None

    def _reachable(self, rel: str) -> str | None:
        """``rel``'s absolute path when every parent is a real directory, else None."""
        root = str(self.worktree.root)
        try:
            return os.path.join(root, rel) if real_parents(root, rel) else None
        except OSError:
            return None

    def blob(self, raw: bytes) -> bytes:
        return self.objects.blob(raw)


def _why(exc: BaseException) -> str:
    return str(getattr(exc, "strerror", None) or exc)
