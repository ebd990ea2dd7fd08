"""Git's ignore rules, evaluated the way git's ``dir.c`` and ``wildmatch.c`` do.

Git decides an untracked path by the most specific source that has a matching
pattern: the deepest ``.gitignore`` first, then ``$GIT_DIR/info/exclude``, then
``core.excludesFile``; inside one source the last matching pattern wins. A
directory that is excluded is never entered, so nothing below it can be
re-included; the walker in ``scan.py`` gets that by pruning.

Patterns are translated to byte regular expressions here rather than with
pathspec's ``GitIgnoreSpec``, which disagrees with git where the conformance
test (``tests/test_ignore_conformance.py``) shows: it lets a pattern that
names a directory decide for every file below it (``*.o`` + ``!build/`` kept
``build/x.o``), makes ``abc/**`` exclude ``abc`` itself, matches characters
instead of bytes (``?`` vs ``é``), lacks ``[[:alpha:]]`` classes and escapes in
brackets, strips tabs and a second ``\\r``, keeps the UTF-8 BOM, and raises on
lines such as ``foo\\`` or ``!``.
"""

from __future__ import annotations

import functools
import os
import re
import string
from dataclasses import dataclass
from pathlib import Path

_BOM = b"\xef\xbb\xbf"
_GLOB_SPECIAL = b"*?[\\"
_SLASH, _BACKSLASH, _STAR = ord("/"), ord("\\"), ord("*")
# A directory is matched as "path\0": no file name holds a NUL byte, so this
# marks "is a directory" without colliding with a real trailing slash.
_DIR_MARK = b"\x00"
_ANY = b"[^\\x00]*"  # "**": anything, slashes included
_SEGMENT = b"[^/\\x00]*"  # "*": anything within one path component


def read_lines(path: str | os.PathLike[str], *, nofollow: bool = False) -> list[bytes] | None:
    """The pattern lines of an ignore file, or None when it cannot be read.

    ``nofollow`` is for ``.gitignore`` files inside the worktree, which git
    refuses to read through a symbolic link (git >= 2.32).
    """
    flags = os.O_RDONLY | (os.O_NOFOLLOW if nofollow else 0)
    try:
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return parse_lines(data)


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


@dataclass(frozen=True)
class Pattern:
    """One compiled pattern line; ``regex`` is None when it can never match.

    ``regex`` is matched in full against the last path component when
    ``basename`` is set (a pattern without a slash), else against the path
    relative to the ignore file's directory; directories get ``_DIR_MARK``
    appended, which only directory-only patterns (``build/``) require.
    """

    line: bytes
    negative: bool
    basename: bool
    regex: bytes | None


def compile_pattern(line: bytes) -> Pattern:
    """A pattern line as git's ``parse_path_pattern`` and matchers read it."""
    text, negative = (line[1:], True) if line.startswith(b"!") else (line, False)
    must_be_dir = text.endswith(b"/")
    if must_be_dir:
        text = text[:-1]
    basename = b"/" not in text
    if not text.strip(b"/"):
        return Pattern(line, negative, basename, None)  # "", "!", "/", "//": match nothing
    body = _wildmatch_regex(text, pathname=False) if basename else _pathname_regex(text)
    if body is None:
        return Pattern(line, negative, basename, None)
    mark = _DIR_MARK if must_be_dir else _DIR_MARK + b"?"
    return Pattern(line, negative, basename, body + mark)


def _pathname_regex(text: bytes) -> bytes | None:
    """git's ``match_pathname``: the part before the first wildcard is compared
    literally and wildmatch sees only the rest, so ``foo**/bar`` behaves like
    ``foo/**/bar`` (its ``**`` starts the pattern wildmatch is given)."""
    prefix = _simple_length(text)
    if text.startswith(b"/"):
        text, prefix = text[1:], prefix - 1
    rest = _wildmatch_regex(text[prefix:], pathname=True)
    return None if rest is None else re.escape(text[:prefix]) + rest


def _simple_length(text: bytes) -> int:
    for i, ch in enumerate(text):
        if ch in _GLOB_SPECIAL:
            return i
    return len(text)


def _wildmatch_regex(p: bytes, *, pathname: bool) -> bytes | None:
    """git's ``wildmatch()`` as a regex, or None when the pattern cannot match
    anything (a trailing backslash, an unterminated or empty bracket)."""
    out: list[bytes] = []
    i = 0
    while i < len(p):
        ch = p[i]
        if ch == _BACKSLASH:
            if i + 1 == len(p):
                return None
            out.append(re.escape(p[i + 1 : i + 2]))
            i += 2
        elif ch == ord("?"):
            out.append(b"[^/\\x00]")
            i += 1
        elif ch == _STAR:
            i = _star(p, i, pathname, out)
        elif ch == ord("["):
            bracket = _bracket(p, i + 1)
            if bracket is None:
                return None
            regex, i = bracket
            out.append(regex)
        else:
            out.append(re.escape(p[i : i + 1]))
            i += 1
    return b"".join(out)


def _star(p: bytes, i: int, pathname: bool, out: list[bytes]) -> int:
    """Translate the run of ``*`` at ``i``; returns the index after it."""
    j = i
    while j < len(p) and p[j] == _STAR:
        j += 1
    after = p[j:]
    starts_segment = i == 0 or p[i - 1] == _SLASH
    ends_segment = not after or after.startswith((b"/", b"\\/"))
    if not (pathname and j - i >= 2 and starts_segment and ends_segment):
        out.append(_SEGMENT)
    elif after.startswith(b"/"):
        out.append(b"(?:" + _ANY + b"/)?")  # "**/": zero or more directories
        j += 1
    else:
        out.append(_ANY)
    return j


_GRAPH = string.ascii_letters + string.digits + string.punctuation
# ASCII only, as git's own ctype ("sane_ctype") and wildmatch define them.
_CLASSES: dict[bytes, frozenset[int]] = {
    name.encode(): frozenset(chars.encode("ascii"))
    for name, chars in {
        "alnum": string.ascii_letters + string.digits,
        "alpha": string.ascii_letters,
        "blank": " \t",
        "cntrl": "".join(map(chr, [*range(0x20), 0x7F])),
        "digit": string.digits,
        "graph": _GRAPH,
        "lower": string.ascii_lowercase,
        "print": _GRAPH + " ",
        "punct": string.punctuation,
        "space": " \t\n\r",  # git's isspace: no \v or \f
        "upper": string.ascii_uppercase,
        "xdigit": string.hexdigits,
    }.items()
}


def _bracket(p: bytes, i: int) -> tuple[bytes, int] | None:
    """The bracket expression starting after ``[`` at ``i``, as wildmatch reads
    it: ``!`` or ``^`` negates, a leading ``]`` is literal, ``\\`` escapes,
    ``a-z`` ranges, ``[:class:]``. Returns (regex, index after ``]``)."""
    negated = i < len(p) and p[i] in b"!^"
    i += negated
    members: set[int] = set()
    prev = 0
    first = True
    while True:
        if i >= len(p):
            return None
        ch = p[i]
        if ch == ord("]") and not first:
            break
        first = False
        if ch == _BACKSLASH:
            i += 1
            if i >= len(p):
                return None
            ch = p[i]
            members.add(ch)
        elif ch == ord("-") and prev and i + 1 < len(p) and p[i + 1] != ord("]"):
            i += 1
            if p[i] == _BACKSLASH:
                i += 1
                if i >= len(p):
                    return None
            members.update(range(prev, p[i] + 1))
            ch = 0
        elif ch == ord("[") and p[i + 1 : i + 2] == b":":
            end = p.find(b"]", i + 2)
            if end < 0:
                return None
            if end - (i + 2) >= 1 and p[end - 1] == ord(":"):
                cls = _CLASSES.get(p[i + 2 : end - 1])
                if cls is None:
                    return None
                members.update(cls)
                ch, i = 0, end
            else:
                members.add(ch)  # no ":]": a literal "[", then go on from ":"
        else:
            members.add(ch)
        prev = ch
        i += 1
    chosen = set(range(256)) - members if negated else members
    chosen -= {_SLASH, 0}
    if not chosen:
        return None
    return b"[" + b"".join(b"\\x%02x" % ch for ch in sorted(chosen)) + b"]", i + 1


# One alternation per kind of pattern, the last line first: the first
# alternative that matches is the line git would pick; its group number maps
# back to (line number, negated).
_Alternation = tuple[re.Pattern[bytes], tuple[tuple[int, bool], ...]]


def _alternation(patterns: list[tuple[int, Pattern]]) -> _Alternation | None:
    if not patterns:
        return None
    ordered = sorted(patterns, key=lambda item: -item[0])
    regex = b"|".join(b"(" + (p.regex or b"") + b")" for _, p in ordered)
    return re.compile(regex), tuple((n, p.negative) for n, p in ordered)


@dataclass(frozen=True)
class _Source:
    """One ignore file, compiled."""

    base: str  # directory the patterns are relative to, "" or "a/b/"
    base_len: int  # length of ``base`` in bytes
    by_name: _Alternation | None  # patterns without a slash: match the last component
    by_path: _Alternation | None  # the others: match the path below ``base``

    def decide(self, path: bytes, name: bytes) -> bool | None:
        """True: ignored, False: re-included, None: no pattern matches."""
        best = (-1, False)
        for alternation, subject in ((self.by_name, name), (self.by_path, path)):
            if alternation is None:
                continue
            match = alternation[0].fullmatch(subject)
            if match is not None and match.lastindex is not None:
                best = max(best, alternation[1][match.lastindex - 1])
        return None if best[0] < 0 else not best[1]


def compile_lines(base: str, lines: list[bytes] | None) -> _Source | None:
    """The ``_Source`` for an ignore file's lines, or None if nothing can match."""
    return _compile(base, tuple(lines or ()))


@functools.lru_cache(maxsize=512)  # the same files are compiled again at every scan
def _compile(base: str, lines: tuple[bytes, ...]) -> _Source | None:
    compiled = [(n, p) for n, p in enumerate(map(compile_pattern, lines)) if p.regex]
    if not compiled:
        return None
    by_name = _alternation([(n, p) for n, p in compiled if p.basename])
    by_path = _alternation([(n, p) for n, p in compiled if not p.basename])
    return _Source(base, len(base.encode("utf-8", "surrogateescape")), by_name, by_path)


@dataclass(frozen=True)
class IgnoreRules:
    """The rules in force in one directory of one repository (immutable chain)."""

    sources: tuple[_Source, ...] = ()  # most specific first

    @classmethod
    def for_repository(
        cls, exclude: list[bytes] | None, global_: list[bytes] | None
    ) -> IgnoreRules:
        found = [compile_lines("", exclude), compile_lines("", global_)]
        return cls(tuple(source for source in found if source is not None))

    def with_gitignore(self, dir_rel: str, lines: list[bytes] | None) -> IgnoreRules:
        """Rules for ``dir_rel`` once its own ``.gitignore`` is added on top."""
        source = compile_lines(f"{dir_rel}/" if dir_rel else "", lines)
        return self if source is None else IgnoreRules((source, *self.sources))

    def is_ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether git ignores ``rel`` (worktree-relative, ``/``-separated)."""
        path = rel.encode("utf-8", "surrogateescape") + (_DIR_MARK if is_dir else b"")
        name = path[path.rfind(b"/") + 1 :]
        for source in self.sources:
            if not rel.startswith(source.base):
                continue
            decided = source.decide(path[source.base_len :], name)
            if decided is not None:
                return decided
        return False


def global_excludes_file(configured: str | None) -> Path:
    """``core.excludesFile``, or git's default ``$XDG_CONFIG_HOME/git/ignore``."""
    if configured:
        return Path(os.path.expanduser(configured))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(xdg) / "git" / "ignore"
