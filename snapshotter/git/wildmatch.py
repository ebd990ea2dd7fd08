"""git's ``wildmatch()``: one pattern compiled, matched against a path's bytes.

Shared by ignore rules (ignore.py) and attributes (attributes.py). With
``icase`` both the pattern and the path are folded (ASCII only), except where
git's wildmatch does not fold: an escaped letter (``\\A``) and a single
letter inside brackets (``[A]``) keep their case and so never match an
upper-case letter.

Patterns are parsed into tokens once; those with at most one unbounded ``*``
that can fail become a regular expression (backtracking is linear there), the
others run on a token automaton that is O(path * pattern) (issue 13:
``*a*a*a…b`` against a long name hung a regex). ``prefix`` and ``suffix`` are
literal text every match starts and ends with (git's ``nowildcardlen`` and
``PATTERN_FLAG_ENDSWITH``), compared before any glob.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable
from dataclasses import dataclass, field

_SLASH, _BACKSLASH, _STAR = ord("/"), ord("\\"), ord("*")


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
        if self.tokens is None:
            return False  # a pattern git can never match, e.g. ``[ab``: no error, no match
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
