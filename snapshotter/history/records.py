"""Persisted per-store state: checkpoints, pending starts and redo stacks.

One JSON document per store, replaced atomically under the store lock, so an
event handled in a fresh process sees exactly what an in-memory one would and
a crash leaves either the old or the new state. Objects are always written
before the state that names them, so no record ever points at nothing.
Session ids are only keys in this document, never parts of a path.

The document's definition is pydantic (``schema.State``, and the API's
``models.Checkpoint``); in memory the state is plain objects, read and
written here with the json module, so that a hook process, which loads and
saves the state on every event, never imports pydantic (issue 16.4). A
document that is not exactly as ``save`` writes it is read through the
pydantic models instead, which convert what they can and name what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from snapshotter import names
from snapshotter.config import Kind, Status, now_iso
from snapshotter.errors import StoreError
from snapshotter.fileio import write_atomic
from snapshotter.store.capture import Capture
from snapshotter.store.shadow import Store

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.models import Checkpoint

STATE_FILE = "state.json"
MAX_PENDING_TOOLS = 64

RedoOp = Literal["undo", "reset", "restore"]
JournalOp = Literal["undo", "redo", "reset", "restore"]


@dataclass(frozen=True)
class Change:
    """One file a checkpoint changed (``models.FileChange``'s values)."""

    path: str
    status: Status


@dataclass(frozen=True)
class Skipped:
    """A file a snapshot left out (``models.SkippedFile``'s values)."""

    path: str
    reason: str


@dataclass(kw_only=True)
class Record:
    """A checkpoint as the state keeps it; ``to_model`` gives the API's ``Checkpoint``."""

    id: int
    session_id: str
    kind: Kind
    label: str
    created_at: str = field(default_factory=now_iso)
    before: str
    after: str
    files: list[Change]
    skipped: list[Skipped] = field(default_factory=list)
    undone: bool = False
    parent: int | None = None
    named_paths: list[str] = field(default_factory=list)
    prompt: str | None = None
    reason: str | None = None
    tool_name: str | None = None
    command: str | None = None

    def to_model(self) -> Checkpoint:
        from snapshotter.models import Checkpoint

        return Checkpoint.model_validate(_record_json(self, _as_is))


@dataclass(kw_only=True)
class Mark:
    """A capture remembered as the start of a span (turn, tool, session)."""

    tree: str
    skips: dict[str, tuple[str, int, int]] = field(default_factory=dict)  # reason, size, mtime
    next_id: int  # the store's next checkpoint id when the span started
    tool_use_id: str | None = None
    tool_name: str = ""
    named: list[str] = field(default_factory=list)  # paths the tool's input names
    command: str | None = None  # a shell tool's command, for the label
    at: int = 0  # time.time_ns() when its capture began (0: unknown)

    @classmethod
    def of(cls, capture: Capture, next_id: int) -> Mark:
        skips = {p: (s.reason, s.size, s.mtime_ns) for p, s in capture.skipped.items()}
        return cls(tree=capture.tree, skips=skips, next_id=next_id, at=capture.started)

    def new_skips(self, later: Capture) -> list[Skipped]:
        """Skips of ``later`` that appeared or changed since this mark."""
        return [
            Skipped(p, s.reason)
            for p, s in sorted(later.skipped.items())
            if self.skips.get(p) != (s.reason, s.size, s.mtime_ns)
        ]


@dataclass(kw_only=True)
class RedoEntry:
    op: RedoOp
    checkpoints: list[int]
    paths: list[str]
    tree: str  # the state just before the undo: what redo puts back
    after: str  # the state the undo left: a redo refuses if the user changed it since


@dataclass(kw_only=True)
class Restoring:
    """The journal of a restore under way (see journal.py).

    Saved with the operation's redo entry before the first worktree write, so
    the next command can finish a killed undo, redo or reset (#13.1).
    """

    safety: str  # every path below as it was before: a path still so may be written
    steps: list[tuple[str, list[str]]]  # (tree, paths) to make match it, in order
    temps: dict[str, str]  # path → the temp file name its write may create (#13.4)
    op: JournalOp | None = None  # what it is part of, for the line recovery prints (#21.4)
    checkpoints: list[int] = field(default_factory=list)
    # Rolling it back (#21.4: it failed or was cancelled): each step's paths go
    # back to ``safety`` while they are as the step's tree has them.
    rollback: bool = False


@dataclass(kw_only=True)
class SessionState:
    touched: str = field(default_factory=now_iso)  # last event (for retention)
    last: Mark | None = None  # the session's latest capture, a fallback start
    turn: Mark | None = None
    turn_tools: list[int] = field(default_factory=list)
    tools: list[Mark] = field(default_factory=list)
    redo: list[RedoEntry] = field(default_factory=list)
    prompt: str | None = None  # what the user asked last: the next turn's label


@dataclass(kw_only=True)
class State:
    version: Literal[1] = 1
    next_id: int = 1
    checkpoints: list[Record] = field(default_factory=list)
    sessions: dict[str, SessionState] = field(default_factory=dict)
    restoring: Restoring | None = None  # a restore's journal, until it is done

    def session(self, session_id: str) -> SessionState:
        return self.sessions.setdefault(session_id, SessionState())

    def by_id(self, checkpoint_id: int) -> Record | None:
        for cp in self.checkpoints:
            if cp.id == checkpoint_id:
                return cp
        return None

    def children(self, parent: int) -> list[Record]:
        return [cp for cp in self.checkpoints if cp.parent == parent]

    def add(self, checkpoint: Record) -> Record:
        self.checkpoints.append(checkpoint)
        self.next_id = checkpoint.id + 1
        self.session(checkpoint.session_id).redo.clear()  # a new change ends redo
        return checkpoint

    def live_trees(self) -> set[str]:
        """Every tree a checkpoint, a pending span or a redo entry still needs."""
        trees: set[str] = set()
        for cp in self.checkpoints:
            trees.update((cp.before, cp.after))
        for sess in self.sessions.values():
            marks = [sess.last, sess.turn, *sess.tools]
            trees.update(m.tree for m in marks if m is not None)
            for entry in sess.redo:
                trees.update((entry.tree, entry.after))
        if self.restoring is not None:
            trees.add(self.restoring.safety)
            trees.update(tree for tree, _paths in self.restoring.steps)
        return trees


def load(store: Store) -> State:
    path = store.root / STATE_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return State()
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc
    return parse(raw, path)


def parse(raw: bytes, path: Path) -> State:
    """The state ``raw`` holds; StoreError when the schema rejects it."""
    try:
        # Strict UTF-8, and no escaped surrogate: what pydantic's parser refuses too.
        text = raw.decode()
        if "\\ud" not in text and "\\uD" not in text:
            return _state(json.loads(text))
    except (_Odd, ValueError, RecursionError):
        pass  # not as save writes it: the schema decides
    from pydantic import ValidationError

    from snapshotter.history.schema import State as Schema

    try:
        document = Schema.model_validate_json(raw).model_dump(mode="json")
    except ValidationError as exc:
        raise StoreError(f"{path} is damaged ({exc.error_count()} errors); move it away") from exc
    return _state(document)  # as save would write it: read plainly


def save(store: Store, state: State, *, durable: bool = False) -> None:
    write_atomic(store.root / STATE_FILE, dump(state), durable=durable)


def dump(state: State) -> bytes:
    """The document as the schema's ``model_dump_json`` writes it."""
    document = _state_json(state)
    try:
        return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:  # a lone surrogate in a label: the schema's own rule applies
        from snapshotter.history.schema import State as Schema

        return Schema.model_validate(document).model_dump_json().encode()


@contextmanager
def editing(store: Store) -> Iterator[State]:
    """Load, let the caller change, save — all under the store lock."""
    with store.locked():
        state = load(store)
        yield state
        save(store, state)


def restore_pending(root: Path) -> bool:
    """Whether state.json names a restore under way (read raw: no parsing on every open).

    ``"restoring": {`` can only be that key: quotes inside paths are escaped.
    """
    import re

    try:
        return re.search(rb'"restoring"\s*:\s*\{', (root / "state.json").read_bytes()) is not None
    except OSError:
        return False


# -- the document, read and written plainly ---------------------------------------------------
# Each reader takes exactly the JSON ``save`` writes (keys may be left out where
# the schema has a default) and raises _Odd at anything else.


class _Odd(Exception):
    """Not exactly as ``save`` writes it: the pydantic schema reads it instead."""


def _obj(value: object, keys: frozenset[str]) -> dict[str, Any]:
    if type(value) is not dict or not keys.issuperset(value):
        raise _Odd
    return value


def _str(value: object) -> str:
    if type(value) is not str:
        raise _Odd
    return value


def _opt_str(value: object) -> str | None:
    return None if value is None else _str(value)


def _int(value: object) -> int:
    if type(value) is not int:
        raise _Odd
    return value


def _bool(value: object) -> bool:
    if type(value) is not bool:
        raise _Odd
    return value


def _dict(value: object) -> dict[str, Any]:
    if type(value) is not dict:
        raise _Odd
    return value


def _list(value: object) -> list[Any]:
    if type(value) is not list:
        raise _Odd
    return value


def _one_of(value: object, allowed: tuple[str, ...]) -> Any:
    if type(value) is not str or value not in allowed:
        raise _Odd
    return value


def _path(value: object) -> str:
    return names.decode(_str(value))


def _paths(value: object) -> list[str]:
    return [_path(v) for v in _list(value)]


def _ints(value: object) -> list[int]:
    return [_int(v) for v in _list(value)]


_STATE = frozenset(("version", "next_id", "checkpoints", "sessions", "restoring"))
_RECORD = frozenset(Record.__dataclass_fields__)
_CHANGE = frozenset(("path", "status"))
_SKIPPED = frozenset(("path", "reason"))
_SESSION = frozenset(SessionState.__dataclass_fields__)
_MARK = frozenset(Mark.__dataclass_fields__)
_REDO = frozenset(RedoEntry.__dataclass_fields__)
_RESTORING = frozenset(Restoring.__dataclass_fields__)
_STATUSES = ("added", "modified", "deleted")
_KINDS = ("turn", "tool")
_OPS = ("undo", "reset", "restore")
_JOURNAL_OPS = ("undo", "redo", "reset", "restore")


def _state(value: object) -> State:
    d = _obj(value, _STATE)
    if _int(d.get("version", 1)) != 1:
        raise _Odd
    sessions = _dict(d.get("sessions", {}))
    restoring = d.get("restoring")
    return State(
        next_id=_int(d.get("next_id", 1)),
        checkpoints=[_record(cp) for cp in _list(d.get("checkpoints", []))],
        sessions={sid: _session(s) for sid, s in sessions.items()},
        restoring=None if restoring is None else _restoring(restoring),
    )


def _record(value: object) -> Record:
    d = _obj(value, _RECORD)
    parent = d.get("parent")
    extra: dict[str, Any] = {}
    if "created_at" in d:
        extra["created_at"] = _str(d["created_at"])
    return Record(
        id=_int(d.get("id")),
        session_id=_str(d.get("session_id")),
        kind=_one_of(d.get("kind"), _KINDS),
        label=_str(d.get("label")),
        before=_str(d.get("before")),
        after=_str(d.get("after")),
        files=[_change(f) for f in _list(d.get("files"))],
        skipped=[_skipped(s) for s in _list(d.get("skipped", []))],
        undone=_bool(d.get("undone", False)),
        parent=None if parent is None else _int(parent),
        named_paths=_paths(d.get("named_paths", [])),
        prompt=_opt_str(d.get("prompt")),
        reason=_opt_str(d.get("reason")),
        tool_name=_opt_str(d.get("tool_name")),
        command=_opt_str(d.get("command")),
        **extra,
    )


def _change(value: object) -> Change:
    d = _obj(value, _CHANGE)
    return Change(_path(d.get("path")), _one_of(d.get("status"), _STATUSES))


def _skipped(value: object) -> Skipped:
    d = _obj(value, _SKIPPED)
    return Skipped(_path(d.get("path")), _str(d.get("reason")))


def _session(value: object) -> SessionState:
    d = _obj(value, _SESSION)
    last, turn = d.get("last"), d.get("turn")
    extra: dict[str, Any] = {}
    if "touched" in d:
        extra["touched"] = _str(d["touched"])
    return SessionState(
        last=None if last is None else _mark(last),
        turn=None if turn is None else _mark(turn),
        turn_tools=_ints(d.get("turn_tools", [])),
        tools=[_mark(m) for m in _list(d.get("tools", []))],
        redo=[_redo(r) for r in _list(d.get("redo", []))],
        prompt=_opt_str(d.get("prompt")),
        **extra,
    )


def _mark(value: object) -> Mark:
    d = _obj(value, _MARK)
    skips = d.get("skips", {})
    return Mark(
        tree=_str(d.get("tree")),
        skips={_path(p): _skip(s) for p, s in _dict(skips).items()},
        next_id=_int(d.get("next_id")),
        tool_use_id=_opt_str(d.get("tool_use_id")),
        tool_name=_str(d.get("tool_name", "")),
        named=_paths(d.get("named", [])),
        command=_opt_str(d.get("command")),
        at=_int(d.get("at", 0)),
    )


def _skip(value: object) -> tuple[str, int, int]:
    triple = _list(value)
    if len(triple) != 3:
        raise _Odd
    return _str(triple[0]), _int(triple[1]), _int(triple[2])


def _redo(value: object) -> RedoEntry:
    d = _obj(value, _REDO)
    return RedoEntry(
        op=_one_of(d.get("op"), _OPS),
        checkpoints=_ints(d.get("checkpoints")),
        paths=_paths(d.get("paths")),
        tree=_str(d.get("tree")),
        after=_str(d.get("after")),
    )


def _restoring(value: object) -> Restoring:
    d = _obj(value, _RESTORING)
    steps = []
    for step in _list(d.get("steps")):
        if len(_list(step)) != 2:
            raise _Odd
        steps.append((_str(step[0]), _paths(step[1])))
    return Restoring(
        safety=_str(d.get("safety")),
        steps=steps,
        temps={_path(k): _path(v) for k, v in _dict(d.get("temps")).items()},
        op=None if d.get("op") is None else _one_of(d.get("op"), _JOURNAL_OPS),
        checkpoints=_ints(d.get("checkpoints", [])),
        rollback=_bool(d.get("rollback", False)),
    )


def _state_json(state: State) -> dict[str, Any]:
    return {
        "version": state.version,
        "next_id": state.next_id,
        "checkpoints": [_record_json(cp) for cp in state.checkpoints],
        "sessions": {sid: _session_json(s) for sid, s in state.sessions.items()},
        "restoring": None if state.restoring is None else _restoring_json(state.restoring),
    }


def _as_is(name: str) -> str:
    return name


def _record_json(cp: Record, enc: Callable[[str], str] = names.encode) -> dict[str, Any]:
    """``enc``: how paths are written (``_as_is`` for a python-mode model)."""
    return {
        "id": cp.id,
        "session_id": cp.session_id,
        "kind": cp.kind,
        "label": cp.label,
        "created_at": cp.created_at,
        "before": cp.before,
        "after": cp.after,
        "files": [{"path": enc(f.path), "status": f.status} for f in cp.files],
        "skipped": [{"path": enc(s.path), "reason": s.reason} for s in cp.skipped],
        "undone": cp.undone,
        "parent": cp.parent,
        "named_paths": [enc(p) for p in cp.named_paths],
        "prompt": cp.prompt,
        "reason": cp.reason,
        "tool_name": cp.tool_name,
        "command": cp.command,
    }


def _session_json(s: SessionState) -> dict[str, Any]:
    return {
        "touched": s.touched,
        "last": None if s.last is None else _mark_json(s.last),
        "turn": None if s.turn is None else _mark_json(s.turn),
        "turn_tools": list(s.turn_tools),
        "tools": [_mark_json(m) for m in s.tools],
        "redo": [_redo_json(r) for r in s.redo],
        "prompt": s.prompt,
    }


def _mark_json(m: Mark) -> dict[str, Any]:
    enc = names.encode
    return {
        "tree": m.tree,
        "skips": {enc(p): list(s) for p, s in m.skips.items()},
        "next_id": m.next_id,
        "tool_use_id": m.tool_use_id,
        "tool_name": m.tool_name,
        "named": [enc(p) for p in m.named],
        "command": m.command,
        "at": m.at,
    }


def _redo_json(r: RedoEntry) -> dict[str, Any]:
    return {
        "op": r.op,
        "checkpoints": list(r.checkpoints),
        "paths": [names.encode(p) for p in r.paths],
        "tree": r.tree,
        "after": r.after,
    }


def _restoring_json(r: Restoring) -> dict[str, Any]:
    enc = names.encode
    return {
        "safety": r.safety,
        "steps": [[tree, [enc(p) for p in paths]] for tree, paths in r.steps],
        "temps": {enc(k): enc(v) for k, v in r.temps.items()},
        "op": r.op,
        "checkpoints": list(r.checkpoints),
        "rollback": r.rollback,
    }
