"""The exception hierarchy; every user-facing failure is one of these.

Each class carries the exit code SPEC §7 gives it, so the CLI maps errors to
exit codes in exactly one place (``cli.main``) without a lookup table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class SnapshotterError(Exception):
    """Root of every error the engine raises on purpose."""

    exit_code = 1

    @property
    def cli_message(self) -> str:
        """The message as the CLI says it: options where the API names parameters."""
        return str(self)


class NotAWorktree(SnapshotterError):
    def __init__(self, path: str) -> None:
        super().__init__(f"not inside a git worktree: {path}")
        self.path = path


class WorktreeGone(SnapshotterError):
    """The directory lost its ``.git``, but a store of it still holds its files (issue 21.5)."""

    def __init__(self, path: str, checkpoints: int) -> None:
        super().__init__(
            f"{path} is no longer a git worktree (its .git is gone), but snapshotter's store "
            f"still has its files as last captured ({checkpoints} checkpoint(s) recorded): "
            f"run `snapshotter -C {_quote(path)} recover` to write them back "
            "(--dry-run to see which)"
        )
        self.path = path


class StoreError(SnapshotterError):
    """The shadow store could not be read or written."""


class CaptureFailed(SnapshotterError):
    """A capture could not finish; no tree was produced, nothing was recorded."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"capture failed: {reason}")


class TooManyFiles(CaptureFailed):
    def __init__(self, limit: int) -> None:
        super().__init__(
            f"more than {limit} files to snapshot; is this the right directory? "
            "Add ignore rules, or raise the limit (--max-files N; hooks: --arg max_files=N)"
        )
        self.limit = limit


class NotAProject(CaptureFailed):
    """Refused: a home directory, or far more untracked files than tracked ones.

    Walking and copying such a tree by mistake would take minutes and gigabytes;
    an explicit file cap says the user means it.
    """

    def __init__(self, why: str) -> None:
        super().__init__(
            f"{why}: is this the right directory? Run inside a project, or snapshot it "
            "anyway with a file cap (--max-files N; hooks: --arg max_files=N)"
        )


class Refused(CaptureFailed):
    """A capture refused lately, refused again without a walk: nothing changed since."""

    def __init__(self, message: str) -> None:
        SnapshotterError.__init__(self, f"{message} (refused before; nothing changed since)")


class UnsafePath(SnapshotterError):
    """A restore would have written outside the worktree."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"refusing to restore {path!r}: {why}")
        self.path = path


class WorktreeWriteFailed(SnapshotterError):
    """A restore could not write, re-mode or remove ``path`` in the worktree (#21.4).

    The OSError (full disk, quota, read-only, permission, I/O) is ``__cause__``.
    """

    def __init__(self, path: str, exc: OSError) -> None:
        from snapshotter.names import display

        self.path = path
        self.errno = exc.errno
        self.cause = exc.strerror or str(exc)
        super().__init__(f"cannot write {display(path)}: {self.cause}")


class RestoreFailed(SnapshotterError):
    """An undo, redo, reset or restore stopped part way; ``outcome`` says what the
    worktree and the records are now (rolled back, or left for the next command)."""

    def __init__(self, op: str, path: str | None, cause: str, outcome: str) -> None:
        from snapshotter.names import display

        where = f" writing {display(path)}" if path is not None else ""
        super().__init__(f"{op} failed{where}: {cause}; {outcome}")
        self.path = path
        self.outcome = outcome


class RestoreCancelled(SnapshotterError):
    """Ctrl-C during a restore: what it had written was rolled back (#21.4)."""

    exit_code = 130

    def __init__(self, op: str, outcome: str) -> None:
        super().__init__(f"{op} interrupted (Ctrl-C); {outcome}")
        self.outcome = outcome


class NotFound(SnapshotterError):
    def __init__(self, what: str) -> None:
        super().__init__(what)


class BadInput(SnapshotterError):
    """A value given by the user (size, id, config) does not parse."""

    exit_code = 2


class NothingToDo(SnapshotterError):
    exit_code = 3


class WorktreeMoved(NothingToDo):
    """No store here, but the store of a worktree that no longer exists (a rename?)."""

    def __init__(self, path: str, old: list[tuple[str, int]]) -> None:
        shown = "; ".join(f"{p} ({n} checkpoint(s))" for p, n in old[:3])
        more = f" and {len(old) - 3} more" if len(old) > 3 else ""
        super().__init__(
            f"no snapshots recorded for {path} yet, but the store of a worktree that no longer "
            f"exists holds history: {shown}{more}. If this worktree was moved from there, "
            f"run `snapshotter -C {_quote(path)} adopt {_quote(old[0][0])}` "
            "to attach that history here"
        )
        self.path = path
        self.old = old


class Conflict(SnapshotterError):
    """Files changed after the checkpoint; restoring would clobber them.

    ``by`` names who changed each path: "you" (nothing snapshotter recorded
    left it so), or a checkpoint of another session.
    """

    exit_code = 4

    def __init__(self, paths: Iterable[str], by: Mapping[str, str] | None = None) -> None:
        self.paths = sorted(paths)
        self.by = {p: (by or {}).get(p, "you") for p in self.paths}
        from snapshotter.names import display

        groups: dict[str, list[str]] = {}
        for path in self.paths[:5]:
            groups.setdefault(self.by[path], []).append(display(path))
        shown = "; ".join(f"{', '.join(names)} (by {who})" for who, names in groups.items())
        more = f" and {len(self.paths) - 5} more" if len(self.paths) > 5 else ""
        said = f"changed since the checkpoint: {shown}{more}"
        super().__init__(f"{said} (force=True overwrites them; redo brings them back)")
        self._cli = f"{said} (use --force to overwrite; redo brings them back)"

    @property
    def cli_message(self) -> str:
        return self._cli


def _quote(path: str) -> str:
    """A path as a shell word, for commands an error tells the user to run."""
    import shlex

    return shlex.quote(path)
