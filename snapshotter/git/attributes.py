"""Git attributes (``.gitattributes``), read the way git's ``attr.c`` reads them.

Only what seeding needs: which attributes apply to a path. Sources, most
specific first: ``$GIT_DIR/info/attributes``, the ``.gitattributes`` of the
path's directory, of each parent up to the top, ``core.attributesFile``
(default ``$XDG_CONFIG_HOME/git/attributes``), the system file, and the
builtin macro ``binary`` (``-diff -merge -text``). For each attribute the
most specific source with a matching line decides, and inside one source
the last matching line; inside one line, the last mention.

A line is a pattern (matched as in ``.gitignore``, by ``wildmatch.py``: without
a slash against the name, else against the path below the file's
directory; ``!`` patterns are not allowed; ``dir/`` matches only
directories) or ``[attr]name`` defining a macro (top-level files only),
followed by states: ``a`` (set), ``-a`` (unset), ``!a`` (back to
unspecified), ``a=value``. A macro set on a path sets its attributes too,
each only where nothing more specific decided it already.

Rules are pruned to the attributes asked about (and the macros that lead to
them) before any matching, so a repository whose attribute files say
nothing about those costs no per-path work at all.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from snapshotter.git.wildmatch import Pattern, compile_pattern

State = bool | str | None  # True: set, False: unset (-a), None: unspecified (!a), or a value
_BLANK = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"
_MACRO = b"[attr]"
_NAME_BYTES = frozenset(b"-._0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
BUILTIN = b"[attr]binary -diff -merge -text\n"


@dataclass(frozen=True)
class Line:
    """One line of an attributes file: a pattern or a macro name, then its states."""

    pattern: Pattern | None  # None for a macro definition
    macro: str | None
    states: tuple[tuple[str, State], ...]


@dataclass(frozen=True)
class _Source:
    base: str  # directory the patterns are relative to: "" or "a/b/"
    lines: tuple[Line, ...]  # last line first: the first match found wins


def parse(data: bytes, *, macros: bool, icase: bool = False) -> list[Line]:
    """The lines of an attributes file that git would use, in file order.

    ``macros``: whether ``[attr]`` definitions count (git honours them only
    in top-level files). Lines git rejects (a bad attribute name, a
    negative pattern, a macro where none is allowed) are left out.
    """
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    found = []
    for raw in data.split(b"\n"):
        line = _parse_line(raw.lstrip(_BLANK), macros, icase)
        if line is not None:
            found.append(line)
    return found


def _parse_line(text: bytes, macros: bool, icase: bool) -> Line | None:
    if not text or text.startswith(b"#"):
        return None
    name, rest = _pattern_text(text)
    states = _states(rest)
    if states is None:
        return None
    if name.startswith(_MACRO) and len(name) > len(_MACRO):
        macro = name[len(_MACRO) :]
        if not macros or not _valid_name(macro):
            return None
        return Line(None, macro.decode("ascii"), states)
    pattern = compile_pattern(name, icase)
    if pattern.negative:
        return None  # "Negative patterns are ignored in git attributes"
    return Line(pattern, None, states)


def _pattern_text(text: bytes) -> tuple[bytes, bytes]:
    """The pattern (C-unquoted if quoted) and the text after it."""
    if text.startswith(b'"'):
        unquoted = _unquote(text)
        if unquoted is not None:
            return unquoted
    end = _blank_at(text, 0)
    return text[:end], text[end:]


def _unquote(text: bytes) -> tuple[bytes, bytes] | None:
    """git's ``unquote_c_style`` of a leading ``"...."``; None if it is not well formed."""
    out = bytearray()
    escapes = {
        ord("a"): 7,
        ord("b"): 8,
        ord("f"): 12,
        ord("n"): 10,
        ord("r"): 13,
        ord("t"): 9,
        ord("v"): 11,
        ord("\\"): 92,
        ord('"'): 34,
    }
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == ord('"'):
            return bytes(out), text[i + 1 :]
        if ch != ord("\\"):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1 : i + 2]
        if not nxt:
            return None
        if nxt[0] in escapes:
            out.append(escapes[nxt[0]])
            i += 2
        elif (
            b"0" <= nxt <= b"3"
            and len(text) >= i + 4
            and all(0x30 <= c <= 0x37 for c in text[i + 2 : i + 4])
        ):
            out.append(int(text[i + 1 : i + 4], 8))
            i += 4
        else:
            return None
    return None


def _blank_at(text: bytes, start: int) -> int:
    end = start
    while end < len(text) and text[end] not in _BLANK:
        end += 1
    return end


def _states(text: bytes) -> tuple[tuple[str, State], ...] | None:
    """``a``, ``-a``, ``!a``, ``a=v`` separated by blanks; None if a name is invalid."""
    found: list[tuple[str, State]] = []
    for token in text.split():
        key, equals, value = token.partition(b"=")
        state: State
        if key[:1] in (b"-", b"!"):
            state = False if key[:1] == b"-" else None
            key = key[1:]
        elif equals:
            state = value.decode("utf-8", "surrogateescape")
        else:
            state = True
        if not _valid_name(key):
            return None  # git drops the whole line
        found.append((key.decode("ascii"), state))
    return tuple(found)


def _valid_name(name: bytes) -> bool:
    return bool(name) and not name.startswith(b"-") and all(c in _NAME_BYTES for c in name)


class AttributeRules:
    """The attribute files of one worktree, for looking up a few attributes per path.

    ``info``, ``global_`` and ``system`` are those files' bytes (None when
    absent); ``per_dir`` maps a directory (``""`` for the top, else
    ``"a/b"``) to its ``.gitattributes``. ``wanted`` limits lookups to these
    attributes: lines that cannot affect them are dropped up front.
    """

    def __init__(
        self,
        *,
        wanted: Collection[str],
        per_dir: Mapping[str, bytes] | None = None,
        info: bytes | None = None,
        global_: bytes | None = None,
        system: bytes | None = None,
        icase: bool = False,
    ) -> None:
        self.icase = icase
        self._wanted = frozenset(wanted)
        # Most specific first: info/attributes, then (per directory) .gitattributes, then the rest.
        info_lines = [] if info is None else parse(info, macros=True, icase=icase)
        dirs = {d: parse(data, macros=not d, icase=icase) for d, data in (per_dir or {}).items()}
        tail = [
            parse(data, macros=True, icase=icase)
            for data in (global_, system, BUILTIN)
            if data is not None
        ]
        self.macros = _macros([info_lines, dirs.get("", []), *tail])
        relevant = _closure(set(wanted), self.macros)
        self._info = _keep("", info_lines, relevant)
        self._tail = tuple(src for lines in tail for src in _keep("", lines, relevant))
        self._dirs = {
            d: src
            for d, lines in dirs.items()
            if (src := _keep(f"{d}/" if d else "", lines, relevant))
        }

    def says_anything(self) -> bool:
        """Whether any line can affect a wanted attribute (else every lookup is empty)."""
        return bool(self._info or self._tail or self._dirs)

    def lookup(self, path: str) -> dict[str, State]:
        """The wanted attributes that apply to file ``path`` (absent: unspecified)."""
        if not self.says_anything():
            return {}
        found: dict[str, State] = {}
        encoded = path.encode("utf-8", "surrogateescape")
        name = encoded[encoded.rfind(b"/") + 1 :]
        for source in self._sources_for(path):
            self._fill(source, encoded, name, found)
        return {k: v for k, v in found.items() if k in self._wanted and v is not None}

    def _sources_for(self, path: str) -> Iterable[_Source]:
        yield from self._info
        parts = path.split("/")[:-1]
        for depth in range(len(parts), -1, -1):
            yield from self._dirs.get("/".join(parts[:depth]), ())
        yield from self._tail

    def _fill(self, source: _Source, path: bytes, name: bytes, found: dict[str, State]) -> None:
        base = source.base.encode("utf-8", "surrogateescape")
        below = path[len(base) :]
        if self.icase:
            below, name = below.lower(), name.lower()
        for line in source.lines:
            pattern = line.pattern
            if pattern is None or pattern.must_be_dir:
                continue  # a macro definition; a "dir/" pattern never names a file
            if pattern.matches(name if pattern.basename else below):
                self._assign(line.states, found)

    def _assign(self, states: Iterable[tuple[str, State]], found: dict[str, State]) -> None:
        """git's ``fill_one``: the last mention in a line first; a macro newly set expands."""
        for key, state in reversed(tuple(states)):
            if key in found:
                continue
            found[key] = state
            if state is True and key in self.macros:
                self._assign(self.macros[key], found)


def _macros(sources: list[list[Line]]) -> dict[str, tuple[tuple[str, State], ...]]:
    """Macro definitions; the most specific source, and there the last line, wins."""
    found: dict[str, tuple[tuple[str, State], ...]] = {}
    for lines in sources:
        for line in reversed(lines):
            if line.macro is not None and line.macro not in found:
                found[line.macro] = line.states
    return found


def _closure(names: set[str], macros: Mapping[str, tuple[tuple[str, State], ...]]) -> set[str]:
    """``names`` and every macro whose expansion (directly or not) mentions one."""
    grown = True
    while grown:
        grown = False
        for macro, states in macros.items():
            if macro not in names and any(key in names for key, _state in states):
                names.add(macro)
                grown = True
    return names


def _keep(base: str, lines: list[Line], relevant: set[str]) -> tuple[_Source, ...]:
    """A source cut to the pattern lines that mention a relevant name (last line first);
    empty when none does."""
    useful = tuple(
        line
        for line in reversed(lines)
        if line.pattern is not None and any(key in relevant for key, _state in line.states)
    )
    return (_Source(base, useful),) if useful else ()
