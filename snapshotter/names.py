"""File names: bytes on disk and in git, ``str`` inside the process, quoted at the edges.

Git's names are bytes and need not be UTF-8 (issue 13 §8). Inside the
process a name is the ``str`` that ``os.fsdecode`` gives (undecodable bytes
become lone surrogates, "surrogateescape"), which round-trips every byte on
POSIX: ``os`` functions, ``pathlib`` and pygit2's tree and diff paths all use
that same decoding. Two edges need more than that:

- JSON cannot hold a lone surrogate, so a persisted or printed name that is
  not valid UTF-8 is written in git's quoted form, ``"caf\\351.txt"``, and read
  back to the same bytes (``encode`` / ``decode``). Every other name is written
  as it is, so records of ordinary names look as they always did.
- People see names the way ``git status`` shows them: quoted and escaped when
  they hold undecodable bytes or control characters (``display``).

The one trap: a name that itself starts with a double quote is always stored
quoted, so that ``decode`` can tell the two apart.

``Name`` marks a record's field as such a name, for what reads and writes the
record as JSON (``codec``, ``models``).
"""

from __future__ import annotations

import os
from typing import Annotated


class _NameMark:
    """``Annotated`` metadata: this ``str`` is a worktree path (see ``Name``)."""

    def __repr__(self) -> str:
        return "NAME"


NAME = _NameMark()
# A worktree path: the os.fsdecode'd name in memory, ``encode``'s form in JSON.
Name = Annotated[str, NAME]

_LETTERS = {
    "\a": "a",
    "\b": "b",
    "\t": "t",
    "\n": "n",
    "\v": "v",
    "\f": "f",
    "\r": "r",
    '"': '"',
    "\\": "\\",
}
_UNLETTERS = {v: k for k, v in _LETTERS.items()}


def _needs_escape(ch: str) -> bool:
    code = ord(ch)
    return code < 0x20 or code == 0x7F or 0xDC80 <= code <= 0xDCFF or ch in _LETTERS


def _is_undecodable(name: str) -> bool:
    return not name.isascii() and any(0xD800 <= ord(ch) <= 0xDFFF for ch in name)


def quote(name: str) -> str:
    """git's C-style quoted form of ``name`` (core.quotePath off: UTF-8 shown as is)."""
    out = ['"']
    for ch in name:
        if not _needs_escape(ch):
            out.append(ch)
        elif ch in _LETTERS:
            out.append("\\" + _LETTERS[ch])
        else:
            code = ord(ch)
            byte = code - 0xDC00 if code >= 0xDC80 else code
            out.append(f"\\{byte:03o}")
    out.append('"')
    return "".join(out)


def display(name: str) -> str:
    """``name`` for a person: quoted when git would quote it, else as it is."""
    if name.isprintable() and '"' not in name and "\\" not in name:
        return name
    return quote(name) if any(_needs_escape(ch) for ch in name) else name


def encode(name: str) -> str:
    """``name`` as a JSON-safe string that ``decode`` turns back into the same bytes."""
    if _is_undecodable(name) or name.startswith('"'):
        return quote(name)
    return name


def decode(text: str) -> str:
    """The name ``encode`` wrote as ``text``; an unquoted string is the name itself."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text
    raw = _unquote(text[1:-1])
    return text if raw is None else os.fsdecode(raw)


def _unquote(body: str) -> bytes | None:
    """The bytes of a quoted name's body; None when it is not one ``quote`` wrote."""
    out = bytearray()
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == '"':
            return None  # an unescaped quote inside: not our quoting
        if ch != "\\":
            out += os.fsencode(ch)
            i += 1
            continue
        nxt = body[i + 1 : i + 2]
        if nxt in _UNLETTERS:
            out += _UNLETTERS[nxt].encode()
            i += 2
        elif len(body) >= i + 4 and all(c in "01234567" for c in body[i + 1 : i + 4]):
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            return None
    return bytes(out)
