"""Pattern files as git reads them: ``.gitignore``, ``info/exclude``,
``core.excludesFile``, ``.gitattributes``; which files are read, and how
their bytes are cut into pattern lines.

An ignore file is only read when it is a regular file (opened non-blocking
and checked with ``fstat``), so a FIFO named ``.gitignore`` cannot hang us.
"""

from __future__ import annotations

import os
import stat

from snapshotter.fileio import read_regular

_BOM = b"\xef\xbb\xbf"
_BACKSLASH = ord("\\")
# git refuses pattern files above this size ("ignoring excessively large pattern file").
MAX_RULE_FILE_BYTES = 100 * 1024 * 1024


def read_rule_file(
    path: str | os.PathLike[str], *, nofollow: bool = False
) -> tuple[bytes | None, bool]:
    """``(content, opened)`` of an ignore file.

    Only a regular file is opened (issue 13: a FIFO named ``.gitignore`` hung
    hooks), and then by ``fileio.read_regular``, so one swapped in meanwhile
    is not read either; nor is one over git's size limit.
    ``opened`` is False when git's own ``open()`` would fail (missing, a
    symbolic link under ``nofollow``, no permission): then git falls back to
    the index for a skip-worktree ``.gitignore``. ``nofollow`` is for
    ``.gitignore`` files inside the worktree, which git (>= 2.32) refuses to
    read through a symbolic link.
    """
    try:
        found = os.lstat(path) if nofollow else os.stat(path)
    except (OSError, ValueError):
        return None, False
    if stat.S_ISLNK(found.st_mode):
        return None, False  # git's open_nofollow() fails here
    if not stat.S_ISREG(found.st_mode):
        return None, True  # never opened: a FIFO or a device could block or react
    # Re-checked once open, in case a FIFO took the file's place since.
    try:
        data = read_regular(path, follow_symlinks=not nofollow, max_size=MAX_RULE_FILE_BYTES)
    except OSError:
        return None, False  # (a read error after a good open, EIO say, counts the same)
    return data, True


def read_lines(path: str | os.PathLike[str], *, nofollow: bool = False) -> list[bytes] | None:
    """The pattern lines of an ignore file, or None when it cannot be read."""
    data, _opened = read_rule_file(path, nofollow=nofollow)
    return None if data is None else parse_lines(data)


def parse_lines(data: bytes) -> list[bytes]:
    """Pattern lines as git's ``add_patterns_from_buffer`` cuts them.

    A leading UTF-8 BOM is skipped; a line ending ``\\r\\n`` loses one ``\\r``;
    lines starting with ``#`` are comments; unescaped trailing spaces (spaces
    only, not tabs) are dropped; C string semantics stop a line at a NUL byte.
    """
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    found = []
    for line in data.split(b"\n"):
        if not line or line.startswith(b"#"):
            continue
        if line.endswith(b"\r"):
            line = line[:-1]
        found.append(_trim_trailing_spaces(line.split(b"\0", 1)[0]))
    return found


def _trim_trailing_spaces(line: bytes) -> bytes:
    if not line.endswith(b" "):
        return line
    last_space = None
    i = 0
    while i < len(line):
        if line[i] == 0x20:
            last_space = i if last_space is None else last_space
        else:
            if line[i] == _BACKSLASH:
                i += 1
                if i == len(line):
                    return line
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]
