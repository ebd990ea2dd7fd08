"""History of a worktree that was renamed or lost its ``.git`` (issue 21.5).

A store is found by its worktree's path, so such history is not found by
opening the worktree. Here a command finds it, and says how to get it back
(``open_or_locate``), attaches it to the new path (``adopt``) or writes its
files back (``recover``, history/moved.py's own); history/moved.py does the work.
"""

from __future__ import annotations

from pathlib import Path

from snapshotter.engine import Engine, open_existing
from snapshotter.errors import NotAWorktree, NothingToDo, WorktreeGone, WorktreeMoved
from snapshotter.git.worktree import find_worktree
from snapshotter.history import moved
from snapshotter.history.moved import Found, Recovered, recover

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.store.resident import Resident

__all__ = ["Found", "Recovered", "adopt", "open_or_locate", "recover"]


def open_or_locate(
    directory: str, *, data_dir: Path, max_new_file_size: int, resident: Resident | None = None
) -> Engine:
    """``open_existing``; where it finds nothing, the history of this directory that is
    still on disk, in an error naming the command that gets it back.

    WorktreeGone: ``directory`` lost its ``.git`` (``recover``). WorktreeMoved: this
    worktree has no store, but one whose worktree no longer exists looks like it
    (``adopt``). Otherwise what ``open_existing`` raises.
    """
    try:
        return open_existing(
            directory,
            data_dir_path=data_dir,
            max_new_file_size=max_new_file_size,
            resident=resident,
        )
    except NotAWorktree:
        found = moved.store_of_path(data_dir, directory)
        if found is None:
            raise
        raise WorktreeGone(str(found.worktree), found.checkpoints) from None
    except NothingToDo:
        here = find_worktree(directory).root
        gone = moved.stores_of_missing_worktrees(data_dir, here)
        if not gone:
            raise
        old = [(str(f.worktree), f.checkpoints) for f in gone]
        raise WorktreeMoved(str(here), old) from None


def adopt(data_dir: Path, directory: str, old_path: str | None) -> tuple[Path, Found]:
    """Attach the store of a worktree that moved to the worktree containing ``directory``:
    the one recording ``old_path``, else the one store whose worktree is gone and which
    looks like this one. Returns the old path and the store (history/moved.py ``adopt``).
    """
    return moved.adopt(data_dir, find_worktree(directory), old_path)
