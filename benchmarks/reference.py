"""The reference capture: the git CLI sequence docker-agent and opencode run.

A shadow repository (``--git-dir SHADOW --work-tree WT``) whose index tracks
the worktree. One capture is:

1. ``diff-files --name-only -z -- .``: tracked files that changed;
2. ``ls-files --others --exclude-standard -z --full-name -- .``: new files;
3. ``check-ignore --no-index --stdin -z`` in the *source* repository: drops
   new files the source ignores (its ``info/exclude`` and so on);
4. an ``lstat`` pass: new files over 2 MiB are appended to the shadow's
   ``info/exclude`` and left out;
5. ``add --all --sparse --pathspec-from-file=- --pathspec-file-nul``;
6. ``write-tree``.

Steps 3 and 5 are skipped when they would get no paths (``add`` with an
empty pathspec list would add the whole tree), which is the cheapest honest
reading of the sequence: a no-change capture is three processes.

The reference revert (``revert``) is what those tools run to restore files:
a safety capture of everything first (``add -A .`` and ``write-tree``), then
``checkout TREE -- paths``. Its redo is the same sequence back to the safety
tree. Every git process's peak RSS goes to ``meter``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from benchmarks.worktrees import git

MAX_NEW_FILE_SIZE = 2 * 1024 * 1024


def _split(out: bytes) -> list[str]:
    return [p for p in os.fsdecode(out).split("\0") if p]


def _join(paths: Iterable[str]) -> bytes:
    return b"".join(os.fsencode(p) + b"\0" for p in paths)


class ReferenceShadow:
    """One shadow repository for one worktree, driven only through the git CLI."""

    def __init__(self, shadow: Path, worktree: Path, env: Mapping[str, str]) -> None:
        self.shadow = shadow
        self.worktree = worktree
        self.env = dict(env)
        self._base = ("--git-dir", str(shadow), "--work-tree", str(worktree))
        self.meter: list[int] = []  # peak RSS (kB) of each git process run

    def _git(
        self,
        *args: str,
        stdin: bytes | None = None,
        ok: tuple[int, ...] = (0,),
        timeout_s: float | None = None,
    ) -> bytes:
        return git(
            self.worktree,
            self.env,
            *self._base,
            *args,
            stdin=stdin,
            ok_codes=ok,
            meter=self.meter,
            timeout_s=timeout_s,
        )

    def init(self) -> None:
        self._git("init", "-q")
        for key, value in (
            ("core.autocrlf", "false"),
            ("core.fsmonitor", "false"),
            ("core.quotepath", "false"),
            ("gc.auto", "0"),
        ):
            self._git("config", key, value)

    def capture(self, add_limit_s: float | None = None) -> str:
        """Bring the shadow index up to date with the worktree; returns the tree id.

        ``add_limit_s``: kill ``git add`` past it (TimedOut). Its pathspec
        matching costs paths times pathspecs, so a cold shadow of 500k files would
        take hours; ``finish_cold`` then completes the shadow another way.
        """
        changed = _split(self._git("diff-files", "--name-only", "-z", "--", "."))
        others = _split(
            self._git("ls-files", "--others", "--exclude-standard", "-z", "--full-name", "--", ".")
        )
        if others:
            ignored = set(
                _split(
                    git(
                        self.worktree,
                        self.env,
                        "check-ignore",
                        "--no-index",
                        "--stdin",
                        "-z",
                        stdin=_join(others),
                        ok_codes=(0, 1),
                        meter=self.meter,
                    )
                )
            )
            others = [p for p in others if p not in ignored]
        too_big: list[str] = []
        kept: list[str] = []
        for rel in others:
            try:
                st = os.lstat(self.worktree / rel)
            except FileNotFoundError:
                continue
            (too_big if st.st_size > MAX_NEW_FILE_SIZE else kept).append(rel)
        if too_big:
            exclude = self.shadow / "info" / "exclude"
            exclude.parent.mkdir(parents=True, exist_ok=True)
            with open(exclude, "a", encoding="utf-8") as f:
                f.writelines(f"/{rel}\n" for rel in too_big)
        paths = changed + kept
        if paths:
            self._git(
                "add",
                "--all",
                "--sparse",
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                stdin=_join(paths),
                timeout_s=add_limit_s,
            )
        return self._git("write-tree").decode().strip()

    def finish_cold(self) -> str:
        """After a first capture's ``add`` was killed: the same index by ``add -A .``.

        The 2 MiB rule's exclusions are in ``info/exclude`` already.
        """
        (self.shadow / "index.lock").unlink(missing_ok=True)  # the killed add's
        self._git("add", "-A", ".")
        return self._git("write-tree").decode().strip()

    def changed_paths(self, before: str, after: str) -> list[str]:
        """``git diff-tree``: the reference for "changes since a tree"."""
        return _split(
            self._git("diff-tree", "-r", "-z", "--name-only", "--no-renames", before, after)
        )

    def listing(self, tree: str) -> dict[str, tuple[int, str]]:
        """Every file of ``tree``: path -> (mode, blob id)."""
        found: dict[str, tuple[int, str]] = {}
        for record in _split(self._git("ls-tree", "-r", "-z", "--full-tree", tree)):
            meta, _, path = record.partition("\t")
            mode, _kind, oid = meta.split()
            found[path] = (int(mode, 8), oid)
        return found

    def source_tracked(self) -> list[str]:
        """The paths the source repository's index tracks."""
        return _split(git(self.worktree, self.env, "ls-files", "-z"))

    def restore(self, tree: str, paths: list[str]) -> None:
        """``git checkout TREE -- paths``: the reference restore of a few files."""
        self._git(
            "checkout", tree, "--pathspec-from-file=-", "--pathspec-file-nul", stdin=_join(paths)
        )

    def revert(self, tree: str, paths: list[str]) -> str:
        """The reference undo: a safety capture of the whole worktree, then ``restore``.

        Returns the safety tree, which the reference redo checks out again.
        """
        self._git("add", "-A", ".")
        safety = self._git("write-tree").decode().strip()
        self.restore(tree, paths)
        return safety
