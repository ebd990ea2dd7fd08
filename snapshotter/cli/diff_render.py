"""How ``snapshotter diff`` prints a diff: coloured as git colours it, and ``--stat``.

The store computes what changed (store/changes.py ``FileDiff``: paths, line
counts, sizes, patches); laying it out for a person is the CLI's job. Both
follow git byte for byte, so the output reads like ``git diff``'s.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

from snapshotter.names import display, encode

if TYPE_CHECKING:
    from snapshotter.engine import FileDiff


def file_json(d: FileDiff) -> dict[str, object]:
    """One file of ``diff --json``; line counts are null for a binary file (its sizes
    say how it changed), sizes null where the file does not exist on that side."""
    return {
        "path": encode(d.path),
        "status": d.status,
        "binary": d.binary,
        "added": None if d.binary else d.added,
        "removed": None if d.binary else d.removed,
        "old_size": d.old_size,
        "new_size": d.new_size,
    }


# git's default colours (color.diff.*): meta bold, frag cyan, old red, new green.
META, FRAG, OLD, NEW, RESET = b"\x1b[1m", b"\x1b[36m", b"\x1b[31m", b"\x1b[32m", b"\x1b[m"


def patch_text(diffs: list[FileDiff], color: bool = False) -> bytes:
    """The unified diff, byte for byte as git prints it (coloured as git does, if asked)."""
    patches = [p for d in diffs for p in d.patches]
    if not color:
        return b"".join(patches)
    return b"".join(_colored(p) for p in patches)


def _colored(patch: bytes) -> bytes:
    """One file's patch with git's colours: headers, hunk headers, removed, added lines."""
    out = []
    in_hunks = False
    lines = patch.split(b"\n")
    for i, line in enumerate(lines):
        nl = b"\n" if i < len(lines) - 1 else b""
        if not line:
            out.append(nl)
        elif line.startswith(b"@@") and line.find(b"@@", 2) != -1:
            in_hunks = True
            end = line.index(b"@@", 2) + 2
            out.append(FRAG + line[:end] + RESET + line[end:] + nl)
        elif not in_hunks:  # git leaves "Binary files ... differ" plain
            out.append(line + nl if line.startswith(b"Binary files ") else META + line + RESET + nl)
        elif line[:1] in (b"+", b"-"):
            out.append((NEW if line[:1] == b"+" else OLD) + line + RESET + nl)
        else:
            out.append(line + nl)
    return b"".join(out)


def stat_text(diffs: list[FileDiff], width: int = 80, color: bool = False) -> bytes:
    """``git diff --stat``: names padded to one column, counts right-aligned, the +/-
    graph scaled to fit ``width`` columns, binary files as ``Bin OLD -> NEW bytes``.

    The layout follows git's ``show_stats`` (diff.c), so the output matches
    ``git diff --stat`` for the same change and the same width.
    """
    if not diffs:
        return b""
    names = [display(d.path) for d in diffs]
    layout = _StatLayout.fit(diffs, names, width)
    lines = [layout.line(d, name, color) for d, name in zip(diffs, names, strict=True)]
    adds = sum(d.added for d in diffs if not d.binary)
    dels = sum(d.removed for d in diffs if not d.binary)
    lines.append(_summary(len(diffs), adds, dels))
    return "".join(line + "\n" for line in lines).encode("utf-8", "surrogateescape")


@dataclass
class _StatLayout:
    name_width: int
    number_width: int
    graph_width: int
    max_change: int

    @classmethod
    def fit(cls, diffs: list[FileDiff], names: list[str], width: int) -> _StatLayout:
        max_len = max(_columns(n) for n in names)
        max_change = max((d.added + d.removed for d in diffs if not d.binary), default=0)
        bins = [14 + _digits(d.new_size or 0) + _digits(d.old_size or 0) for d in diffs if d.binary]
        bin_width = max(bins, default=0)
        number_width = max(_digits(max_change), 3 if bins else 0)
        width = max(width, 16 + 6 + number_width)  # git: room for a 6-column graph at least
        graph = max_change if max_change + 4 > bin_width else bin_width - 4
        name = max_len
        if name + number_width + 6 + graph > width:
            if graph > width * 3 // 8 - number_width - 6:
                graph = max(width * 3 // 8 - number_width - 6, 6)
            if name > width - number_width - 6 - graph:
                name = width - number_width - 6 - graph
            else:
                graph = width - number_width - 6 - name
        return cls(name, number_width, graph, max_change)

    def line(self, d: FileDiff, name: str, color: bool) -> str:
        old_c, new_c, reset = ("\x1b[31m", "\x1b[32m", "\x1b[m") if color else ("", "", "")
        head = f" {self._name(name)} | "
        if d.binary:
            sizes = (d.old_size or 0, d.new_size or 0)
            if sizes == (0, 0):
                return f"{head}{'Bin':>{self.number_width}}"
            return (
                f"{head}{'Bin':>{self.number_width}} {old_c}{sizes[0]}{reset} -> "
                f"{new_c}{sizes[1]}{reset} bytes"
            )
        add, dels = self._graph(d.added, d.removed)
        total = d.added + d.removed
        return (
            f"{head}{total:>{self.number_width}}{' ' if total else ''}"
            f"{new_c + '+' * add + reset if add else ''}"
            f"{old_c + '-' * dels + reset if dels else ''}"
        )

    def _name(self, name: str) -> str:
        """``name`` padded to the column; too long, cut at a ``/`` after ``...``."""
        room, prefix = self.name_width, ""
        if _columns(name) > room:
            prefix, room = "...", max(room - 3, 0)
            while _columns(name) > room:
                name = name[1:]
            slash = name.find("/")
            name = name[slash:] if slash != -1 else name
        return prefix + name + " " * max(room - _columns(name), 0)

    def _graph(self, add: int, dels: int) -> tuple[int, int]:
        """The counts scaled linearly, each non-zero one at least one column (git)."""
        if self.graph_width > self.max_change:
            return add, dels
        total = self._scale(add + dels)
        if total < 2 and add and dels:
            total = 2
        if add < dels:
            add = self._scale(add)
            return add, total - add
        dels = self._scale(dels)
        return total - dels, dels

    def _scale(self, n: int) -> int:
        return 0 if not n else 1 + n * (self.graph_width - 1) // self.max_change


def _summary(files: int, adds: int, dels: int) -> str:
    """git's summary line: a zero count is left out unless both are zero."""
    parts = [f" {_count(files, 'file')} changed"]
    if adds or not dels:
        parts.append(f"{_count(adds, 'insertion')}(+)")
    if dels or not adds:
        parts.append(f"{_count(dels, 'deletion')}(-)")
    return ", ".join(parts)


def _digits(n: int) -> int:
    return len(str(n))


def _columns(text: str) -> int:
    """Terminal columns ``text`` takes: wide East Asian characters two, combining none."""
    return sum(
        0
        if unicodedata.combining(ch)
        else 2
        if unicodedata.east_asian_width(ch) in ("W", "F")
        else 1
        for ch in text
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
