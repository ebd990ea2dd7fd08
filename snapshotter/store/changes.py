"""What changed between two recorded trees: statuses, and per-file diffs as data.

How a diff is drawn for a person (git's colours, the ``--stat`` layout) is
the CLI's (cli/diff_render.py); this computes what it draws.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from snapshotter.config import Status
from snapshotter.store.shadow import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.models import FileChange

_STATUS: dict[str, Status] = {"A": "added", "D": "deleted", "M": "modified", "T": "modified"}


def changes(
    store: Store, before: str, after: str, in_scope: Callable[[str], bool] = lambda _: True
) -> list[FileChange]:
    """Files that differ from ``before`` to ``after``, sorted by path.

    A path deleted and re-added with another type (file ↔ symlink) is one
    ``modified`` change, as is an exec-bit flip.
    """
    from snapshotter.models import FileChange

    return [FileChange(path=p, status=s) for p, s in statuses(store, before, after, in_scope)]


def statuses(
    store: Store, before: str, after: str, in_scope: Callable[[str], bool] = lambda _: True
) -> list[tuple[str, Status]]:
    """``changes`` as (path, status) pairs, without the pydantic model (a hook records these)."""
    if before == after:
        return []
    found: dict[str, Status] = {}
    for path, letter in store.objects.changed(before, after):
        if in_scope(path):
            found[path] = _STATUS[letter]
    return sorted(found.items())


@dataclass
class FileDiff:
    """One path's change between two trees: what the text, ``--stat`` and ``--json`` show.

    A path whose type changed (file ↔ symlink) is one entry, ``modified``, with
    two patches (the old one deleted, the new one added), as git shows it.
    """

    path: str
    status: Status
    binary: bool
    added: int  # lines; 0 for a binary file
    removed: int
    old_size: int | None  # bytes; None where the path does not exist on that side
    new_size: int | None
    patches: list[bytes] = field(default_factory=list)


def file_diffs(
    store: Store, before: str, after: str, keep: Callable[[str], bool] = lambda _: True
) -> list[FileDiff]:
    """Every path that differs from ``before`` to ``after`` and that ``keep`` wants."""
    found: dict[str, FileDiff] = {}
    for patch in store.objects.patches(before, after):
        delta = patch.delta
        path = delta.path
        if not keep(path):
            continue
        status = _STATUS.get(delta.status, "modified")
        adds, dels = patch.added, patch.removed
        old = None if status == "added" else patch.old_size
        new = None if status == "deleted" else patch.new_size
        prior = found.get(path)
        if prior is None:
            found[path] = FileDiff(
                path, status, bool(delta.binary), adds, dels, old, new, [patch.data]
            )
            continue
        # The second half of a type change: one modified path, both patches.
        prior.status = "modified"
        prior.binary = prior.binary or bool(delta.binary)
        prior.added += adds
        prior.removed += dels
        prior.old_size = prior.old_size if old is None else old
        prior.new_size = prior.new_size if new is None else new
        prior.patches.append(patch.data)
    return list(found.values())


def _only(paths: Collection[str] | None) -> Callable[[str], bool]:
    return (lambda _: True) if paths is None else paths.__contains__


def diff_text(store: Store, before: str, after: str, paths: Collection[str] | None = None) -> str:
    """Unified diff text, byte for byte as git prints it; binary files are named, not dumped."""
    diffs = file_diffs(store, before, after, _only(paths))
    return b"".join(p for d in diffs for p in d.patches).decode(errors="replace")
