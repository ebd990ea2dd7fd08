"""Git's ignore rules, evaluated the way git's ``dir.c`` and ``wildmatch.c`` do.

Git decides an untracked path by the most specific source that has a matching
pattern: the deepest ``.gitignore`` first, then ``$GIT_DIR/info/exclude``, then
``core.excludesFile``; inside one source the last matching pattern wins. A
directory that is excluded is never entered, so nothing below it can be
re-included; the walker in ``walk.py`` gets that by pruning.

The semantics followed are git 2.52's: since git commit 1940a02dc1
("match_pathname(): give fnmatch one char of prefix context"), a pattern with
a slash is matched as a whole, so ``foo**/bar`` reads like ``foo*/bar`` and no
longer ignores ``foobar``. With ``core.ignorecase`` both the pattern and the
path are folded (ASCII only), except where git's wildmatch does not fold: an
escaped letter (``\\A``) and a single letter inside brackets (``[A]``) keep
their case and so never match an upper-case letter.

Three properties keep a hook fast and bounded whatever the rules say:

- patterns are parsed into tokens once; those with at most one unbounded
  ``*`` that can fail become a regular expression (backtracking is linear
  there), the others run on a token automaton that is O(path * pattern)
  (issue 13: ``*a*a*a…b`` against a long name hung a regex);
- each source indexes its patterns by literal text a matching path must
  hold (the whole name, a prefix or a suffix such as ``.log``), as git's
  ``nowildcardlen`` and ``PATTERN_FLAG_ENDSWITH`` let it compare literals
  first, so a 3,000-line ``.gitignore`` costs per path only the patterns that
  could match; "last matching line wins" is kept by trying them newest first;
- an ignore file is only read when it is a regular file (opened non-blocking
  and checked with ``fstat``), so a FIFO named ``.gitignore`` cannot hang us.

pathspec's ``GitIgnoreSpec`` is not used: the conformance test
(``tests/test_ignore_conformance.py``) showed it lets a pattern that names a
directory decide for every file below it, makes ``abc/**`` exclude ``abc``,
matches characters instead of bytes, lacks ``[[:alpha:]]`` classes, strips
tabs and a second ``\\r``, keeps the UTF-8 BOM, and raises on ``foo\\``.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

_BOM = b"\xef\xbb\xbf"
_SLASH, _BACKSLASH, _STAR = ord("/"), ord("\\"), ord("*")
# git refuses pattern files above this size ("ignoring excessively large pattern file").
MAX_RULE_FILE_BYTES = 100 * 1024 * 1024
GIT_SEMANTICS_VERSION = "2.52"  # the git release whose ignore semantics git/ignore.py follows


def read_rule_file(
    path: str | os.PathLike[str], *, nofollow: bool = False
) -> tuple[bytes | None, bool]:
    """``(content, opened)`` of an ignore file.

    Only a regular file is opened (issue 13: a FIFO named ``.gitignore`` hung
    hooks), and then non-blocking and checked again with ``fstat``, so one
    swapped in meanwhile is not read either.
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
    # Non-blocking and re-checked, in case a FIFO took the file's place since.
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (os.O_NOFOLLOW if nofollow else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None, False
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_RULE_FILE_BYTES:
            return None, True
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks), True
    except OSError:
        return None, True
    finally:
        os.close(fd)


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


# -- tokens ------------------------------------------------------------------------------
# A pattern is a list of tokens. One byte: (_BYTE, allowed bytes, literal or -1).
# Runs: _STAR_T "*" (no "/"), _ANY_T "**" (anything), and "**/" as _DIRS_T
# followed by _DIRS_BODY: zero directories, or anything that ends with "/".
_BYTE, _STAR_T, _ANY_T, _DIRS_T, _DIRS_BODY = range(5)
Token = tuple[int, frozenset[int], int]
_NOTHING: frozenset[int] = frozenset()
_NOT_SLASH = frozenset(range(1, 256)) - {_SLASH}


def _lower(ch: int) -> int:
    return ch + 32 if 0x41 <= ch <= 0x5A else ch


def _tokens(p: bytes, *, pathname: bool, icase: bool) -> list[Token] | None:
    """git's ``wildmatch()`` reading of ``p``, or None when it can never match
    (a trailing backslash, an unterminated or empty bracket, an unknown class)."""
    out: list[Token] = []
    i = 0
    while i < len(p):
        ch = p[i]
        if ch == _BACKSLASH:
            if i + 1 == len(p):
                return None
            escaped = p[i + 1]  # wildmatch does not fold an escaped letter
            out.append((_BYTE, frozenset((escaped,)), escaped))
            i += 2
        elif ch == ord("?"):
            out.append((_BYTE, _NOT_SLASH, -1))
            i += 1
        elif ch == _STAR:
            i = _star(p, i, pathname, out)
        elif ch == ord("["):
            bracket = _bracket(p, i + 1, icase)
            if bracket is None:
                return None
            allowed, i = bracket
            out.append((_BYTE, allowed, -1))
        else:
            lit = _lower(ch) if icase else ch
            out.append((_BYTE, frozenset((lit,)), lit))
            i += 1
    return out


def _star(p: bytes, i: int, pathname: bool, out: list[Token]) -> int:
    """Tokens for the run of ``*`` at ``i``; returns the index after it."""
    j = i
    while j < len(p) and p[j] == _STAR:
        j += 1
    after = p[j:]
    starts_segment = i == 0 or p[i - 1] == _SLASH
    ends_segment = not after or after.startswith((b"/", b"\\/"))
    if not (pathname and j - i >= 2 and starts_segment and ends_segment):
        out.append((_STAR_T, _NOTHING, -1))
    elif after.startswith(b"/"):
        out.append((_DIRS_T, _NOTHING, -1))
        out.append((_DIRS_BODY, _NOTHING, -1))
        j += 1
    else:
        out.append((_ANY_T, _NOTHING, -1))
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
_LOWER = frozenset(string.ascii_lowercase.encode())


def _bracket(p: bytes, i: int, icase: bool) -> tuple[frozenset[int], int] | None:
    """The bytes the bracket expression after ``[`` at ``i`` accepts, as
    wildmatch reads it: ``!`` or ``^`` negates, a leading ``]`` is literal,
    ``\\`` escapes, ``a-z`` ranges, ``[:class:]``. Under ``icase`` the text is
    already folded: ranges and ``[:upper:]`` also take a lower-case letter whose
    upper case they hold. Returns (accepted bytes, index after ``]``)."""
    negated = i < len(p) and p[i] in b"!^"
    i += negated
    members: set[int] = set()
    ranged: set[int] = set()  # from ranges: folded text matches them case-blind
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
            ranged.update(range(prev, p[i] + 1))
            ch = 0
        elif ch == ord("[") and p[i + 1 : i + 2] == b":":
            end = p.find(b"]", i + 2)
            if end < 0:
                return None
            if end - (i + 2) >= 1 and p[end - 1] == ord(":"):
                name = p[i + 2 : end - 1]
                cls = _CLASSES.get(name)
                if cls is None:
                    return None
                members.update(cls)
                if icase and name == b"upper":
                    members.update(_LOWER)
                ch, i = 0, end
            else:
                members.add(ch)  # no ":]": a literal "[", then go on from ":"
        else:
            members.add(ch)
        prev = ch
        i += 1
    members |= ranged
    if icase:
        members |= {c + 32 for c in ranged if 0x41 <= c <= 0x5A}
    chosen = set(range(256)) - members if negated else members
    chosen -= {_SLASH, 0}
    if not chosen:
        return None
    return frozenset(chosen), i + 1


# -- matching one pattern -----------------------------------------------------------------


def _regex(tokens: list[Token]) -> re.Pattern[bytes]:
    out: list[bytes] = []
    for kind, allowed, lit in tokens:
        if kind == _BYTE:
            if lit >= 0:
                out.append(re.escape(bytes((lit,))))
            else:
                out.append(b"[" + b"".join(b"\\x%02x" % ch for ch in sorted(allowed)) + b"]")
        elif kind == _STAR_T:
            out.append(b"[^/]*")
        elif kind == _ANY_T:
            out.append(b"(?s:.*)")
        elif kind == _DIRS_T:
            out.append(b"(?s:.*/)?")
    return re.compile(b"".join(out))


def _unbounded(tokens: list[Token]) -> int:
    """Runs of ``*`` that a backtracking regex might retry (a final ``**`` never fails)."""
    runs = sum(1 for kind, _a, _l in tokens if kind in (_STAR_T, _ANY_T, _DIRS_T))
    return runs - (1 if tokens and tokens[-1][0] == _ANY_T else 0)


def _automaton(tokens: list[Token]) -> Callable[[bytes], bool]:
    """A matcher that steps a set of token positions over the text: time is
    O(len(text) * len(tokens)) whatever the pattern, unlike a backtracking regex."""
    end = len(tokens)
    closure_of: list[frozenset[int]] = []
    for i in range(end + 1):
        found, todo = set(), [i]
        while todo:
            at = todo.pop()
            if at in found:
                continue
            found.add(at)
            kind = tokens[at][0] if at < end else -1
            if kind in (_STAR_T, _ANY_T):
                todo.append(at + 1)
            elif kind == _DIRS_T:
                todo += [at + 1, at + 2]
        closure_of.append(frozenset(found))

    def match(text: bytes) -> bool:
        states = closure_of[0]
        for ch in text:
            step: set[int] = set()
            for at in states:
                if at == end:
                    continue
                kind, allowed, _lit = tokens[at]
                if kind == _BYTE:
                    if ch in allowed:
                        step |= closure_of[at + 1]
                elif kind == _STAR_T:
                    if ch != _SLASH:
                        step |= closure_of[at]
                elif kind == _ANY_T:
                    step |= closure_of[at]
                elif kind == _DIRS_BODY:
                    step.add(at)
                    if ch == _SLASH:
                        step |= closure_of[at + 1]
            if not step:
                return False
            states = frozenset(step)
        return end in states

    return match


def _literal_run(tokens: list[Token]) -> bytes:
    return bytes(lit for _kind, _allowed, lit in tokens)


def _leading_literal(tokens: list[Token]) -> bytes:
    n = 0
    while n < len(tokens) and tokens[n][2] >= 0:
        n += 1
    return _literal_run(tokens[:n])


def _trailing_literal(tokens: list[Token]) -> bytes:
    n = len(tokens)
    while n > 0 and tokens[n - 1][2] >= 0:
        n -= 1
    return _literal_run(tokens[n:])


@dataclass(eq=False)  # compared and hashed by identity: built once, cached
class Pattern:
    """One pattern line, compiled.

    ``basename`` patterns (no slash) are matched against the last path
    component, the others against the path below the ignore file's directory.
    ``literal`` is set when the pattern has no wildcard at all; ``prefix`` and
    ``suffix`` are literal text every match starts and ends with (git's
    ``nowildcardlen`` and ``PATTERN_FLAG_ENDSWITH``), compared before any glob.
    """

    line: bytes
    negative: bool
    basename: bool
    must_be_dir: bool
    tokens: list[Token] | None  # None: can never match
    literal: bytes | None = None
    prefix: bytes = b""
    suffix: bytes = b""
    _glob: Callable[[bytes], bool] | None = field(default=None, repr=False)

    def matches(self, subject: bytes) -> bool:
        """``subject`` (folded when the rules are case-blind) matches the pattern."""
        if self.literal is not None:
            return subject == self.literal
        if not (subject.startswith(self.prefix) and subject.endswith(self.suffix)):
            return False
        if self._glob is None:
            self._glob = self._compile_glob()
        return self._glob(subject)

    def _compile_glob(self) -> Callable[[bytes], bool]:
        tokens = self.tokens or []
        if self.basename and tokens[0][0] == _STAR_T and all(t[2] >= 0 for t in tokens[1:]):
            return lambda subject: True  # "*literal": the suffix test was all (ENDSWITH)
        if _unbounded(tokens) <= 1:
            regex = _regex(tokens)
            return lambda subject: regex.fullmatch(subject) is not None
        return _automaton(tokens)


def compile_pattern(line: bytes, icase: bool = False) -> Pattern:
    """A pattern line as git's ``parse_path_pattern`` and matchers read it."""
    text, negative = (line[1:], True) if line.startswith(b"!") else (line, False)
    must_be_dir = text.endswith(b"/")
    if must_be_dir:
        text = text[:-1]
    basename = b"/" not in text
    if not text.strip(b"/"):
        return Pattern(line, negative, basename, must_be_dir, None)  # "", "!", "/", "//"
    if text.startswith(b"/"):
        text = text[1:]  # anchored: the slash only says so
    elif text.startswith(b"**/") and b"/" not in text[3:]:
        text, basename = text[3:], True  # "**/x" is the name "x" at any depth
    tokens = _tokens(text, pathname=not basename, icase=icase)
    pattern = Pattern(line, negative, basename, must_be_dir, tokens)
    if tokens:
        if all(lit >= 0 for _kind, _allowed, lit in tokens):
            pattern.literal = _literal_run(tokens)
        pattern.prefix = _leading_literal(tokens)
        pattern.suffix = _trailing_literal(tokens)
    return pattern


# -- one ignore file ----------------------------------------------------------------------


_Table = dict[int, dict[bytes, list[int]]]  # literal length -> literal -> line numbers


@dataclass
class _Index:
    """Patterns of one kind, by literal text a path they match must hold.

    A pattern goes under its whole text when it has no wildcard, else under
    the longer of its literal prefix and suffix, else among the ``general``
    ones. A path looks up its own prefix and suffix of each length in use: a
    few dictionary probes instead of a test per pattern. Lists are newest first.
    """

    exact: dict[bytes, list[int]] = field(default_factory=dict)
    by_prefix: _Table = field(default_factory=dict)
    by_suffix: _Table = field(default_factory=dict)
    general: list[int] = field(default_factory=list)

    def add(self, n: int, p: Pattern) -> None:
        """File pattern ``n``; patterns are added last line first."""
        if p.literal is not None:
            self.exact.setdefault(p.literal, []).append(n)
        elif p.suffix and len(p.suffix) >= len(p.prefix):
            self.by_suffix.setdefault(len(p.suffix), {}).setdefault(p.suffix, []).append(n)
        elif p.prefix:
            self.by_prefix.setdefault(len(p.prefix), {}).setdefault(p.prefix, []).append(n)
        else:
            self.general.append(n)

    def candidates(self, subject: bytes) -> list[int]:
        """Line numbers of the patterns that may match ``subject``, newest first."""
        groups = [group for group in (self.exact.get(subject), self.general) if group]
        size = len(subject)
        for length, table in self.by_suffix.items():
            if length <= size and (group := table.get(subject[size - length :])):
                groups.append(group)
        for length, table in self.by_prefix.items():
            if length <= size and (group := table.get(subject[:length])):
                groups.append(group)
        if len(groups) == 1:
            return groups[0]
        return sorted((n for group in groups for n in group), reverse=True)


@dataclass(eq=False)  # compared and hashed by identity: built once, cached
class _Source:
    """One ignore file, compiled."""

    base: str  # directory the patterns are relative to, "" or "a/b/"
    base_len: int  # length of ``base`` in bytes
    icase: bool
    patterns: list[Pattern]
    by_name: _Index  # patterns without a slash: match the last component
    by_path: _Index  # the others: match the path below ``base``

    def decide(self, path: bytes, name: bytes, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included, None: no pattern matches."""
        if self.icase:
            path, name = path.lower(), name.lower()
        best = max(
            self._last_match(self.by_name, name, is_dir),
            self._last_match(self.by_path, path, is_dir),
        )
        return None if best < 0 else not self.patterns[best].negative

    def _last_match(self, index: _Index, subject: bytes, is_dir: bool) -> int:
        for n in index.candidates(subject):
            pattern = self.patterns[n]
            if (is_dir or not pattern.must_be_dir) and pattern.matches(subject):
                return n
        return -1


def compile_lines(base: str, lines: list[bytes] | None, icase: bool = False) -> _Source | None:
    """The ``_Source`` for an ignore file's lines, or None if nothing can match."""
    return _compile(base, tuple(lines or ()), icase)


@functools.lru_cache(maxsize=512)  # the same files are compiled again at every scan
def _compile(base: str, lines: tuple[bytes, ...], icase: bool) -> _Source | None:
    patterns = [compile_pattern(line, icase) for line in lines]
    if not any(p.tokens for p in patterns):
        return None
    by_name, by_path = _Index(), _Index()
    for n, p in reversed(list(enumerate(patterns))):  # newest first in every list
        if p.tokens:
            (by_name if p.basename else by_path).add(n, p)
    base_len = len(base.encode("utf-8", "surrogateescape"))
    return _Source(base, base_len, icase, patterns, by_name, by_path)


@dataclass(frozen=True)
class IgnoreRules:
    """The rules in force in one directory of one repository (immutable chain).

    ``icase`` is the repository's ``core.ignorecase``: every source of the
    chain, ``.gitignore`` files added later included, matches case-blind.
    """

    sources: tuple[_Source, ...] = ()  # most specific first
    icase: bool = False

    @classmethod
    def for_repository(
        cls, exclude: list[bytes] | None, global_: list[bytes] | None, icase: bool = False
    ) -> IgnoreRules:
        found = [compile_lines("", exclude, icase), compile_lines("", global_, icase)]
        return cls(tuple(source for source in found if source is not None), icase)

    def with_gitignore(self, dir_rel: str, lines: list[bytes] | None) -> IgnoreRules:
        """Rules for ``dir_rel`` once its own ``.gitignore`` is added on top."""
        source = compile_lines(f"{dir_rel}/" if dir_rel else "", lines, self.icase)
        return self if source is None else IgnoreRules((source, *self.sources), self.icase)

    def is_ignored(self, rel: str, is_dir: bool) -> bool:
        """Whether git ignores ``rel`` (worktree-relative, ``/``-separated)."""
        path = rel.encode("utf-8", "surrogateescape")
        name = path[path.rfind(b"/") + 1 :]
        for source in self.sources:
            if not rel.startswith(source.base):
                continue
            decided = source.decide(path[source.base_len :], name, is_dir)
            if decided is not None:
                return decided
        return False


def global_excludes_file(configured: str | None) -> Path:
    """``core.excludesFile``, or git's default ``$XDG_CONFIG_HOME/git/ignore``."""
    if configured:
        return Path(os.path.expanduser(configured))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(xdg) / "git" / "ignore"
