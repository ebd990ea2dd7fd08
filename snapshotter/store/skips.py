"""A file a capture left out, and why: the kind is an enum, the sentence is drawn from it.

The kind (``Why``) is what code compares and what a mark keeps in state.json,
so rewording a sentence never makes an old skip look new (issue 23); the
sentence (``Skip.reason``) is only for people and the checkpoint's record.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Why(StrEnum):
    """Why a file is not in a capture (the value is what state.json keeps)."""

    TOO_LARGE = "too_large"  # a new untracked file over the size limit
    SPECIAL = "special"  # not a regular file or symlink (a FIFO, a socket, a device)
    UNREADABLE = "unreadable"
    UNREADABLE_DIR = "unreadable_dir"
    CHANGED = "changed"  # kept changing while it was read
    LEFT = "left"  # captured before, left out now: an ignore rule or the size limit

    @classmethod
    def of(cls, kept: str) -> Why | None:
        """The kind a mark kept: a value, or the sentence versions before 0.x kept."""
        try:
            return cls(kept)
        except ValueError:
            return next((why for prefix, why in _SENTENCES if kept.startswith(prefix)), None)


# What older versions kept in a mark instead of the kind (their sentences' starts),
# so a store they wrote does not report every skip as new once.
_SENTENCES = (
    ("new file larger than", Why.TOO_LARGE),
    ("not a regular file", Why.SPECIAL),
    ("unreadable directory", Why.UNREADABLE_DIR),
    ("unreadable", Why.UNREADABLE),
    ("changed while capturing", Why.CHANGED),
    ("no longer captured", Why.LEFT),
)


@dataclass(frozen=True)
class Skip:
    """``path`` left out of a capture: ``why``, with ``detail`` (an OS error, the limit)."""

    path: str
    why: Why
    detail: str = ""
    size: int = 0
    mtime_ns: int = 0

    @property
    def reason(self) -> str:
        """The sentence people read: ``unreadable: Permission denied``."""
        return _SAY[self.why].format(self.detail)


_SAY = {
    Why.TOO_LARGE: "new file larger than {} bytes",
    Why.SPECIAL: "not a regular file or symlink",
    Why.UNREADABLE: "unreadable: {}",
    Why.UNREADABLE_DIR: "unreadable directory: {}",
    Why.CHANGED: "changed while capturing",
    Why.LEFT: "no longer captured: an ignore rule or the size limit leaves it out now",
}
