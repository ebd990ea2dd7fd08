"""state.json on disk: load, save, and edit under the store lock.

One JSON document per store, replaced atomically under the store lock, so an
event handled in a fresh process sees exactly what an in-memory one would and
a crash leaves either the old or the new state. Objects are always written
before the state that names them, so no record ever points at nothing.

The document is the ``records`` dataclasses as ``codec`` writes them. A
document that is not exactly so (an older or hand-edited file, a damaged one)
is read by pydantic over the same dataclasses instead, which converts what it
can and names what is wrong; a hook process, which loads and saves the state
on every event, never imports it (issue 16.4).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from snapshotter import codec
from snapshotter.durable import settle
from snapshotter.errors import StoreError
from snapshotter.fileio import write_atomic
from snapshotter.history.records import State

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.store.shadow import Store

STATE_FILE = "state.json"


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
    """The state ``raw`` holds; StoreError when it is damaged."""
    try:
        # Strict UTF-8, and no escaped surrogate: what pydantic's parser refuses too.
        text = raw.decode()
        if "\\ud" not in text and "\\uD" not in text:
            return codec.read(State, json.loads(text))
    except (codec.Odd, ValueError, RecursionError):
        pass  # not as save writes it: the lenient reading decides
    return _lenient(raw, path)


def _lenient(raw: bytes, path: Path) -> State:
    """``raw`` as pydantic reads it into the same dataclasses (converting ``"3"`` to 3, ...)."""
    from pydantic import TypeAdapter, ValidationError

    adapter = TypeAdapter(State)
    try:
        state = adapter.validate_json(raw)
    except ValidationError as exc:
        raise StoreError(f"{path} is damaged ({exc.error_count()} errors); move it away") from exc
    # Its names are still as JSON has them: written out as they are, read back decoded.
    return codec.read(State, adapter.dump_python(state, mode="json"))


def save(store: Store, state: State, *, durable: bool = False) -> None:
    """Replace state.json; what it names is made durable first (durable.py).

    ``durable``: the document itself too, before returning (a restore's
    journal: the way back is on disk before the first worktree write).
    """
    _write(store, dump(state), durable=durable)


def _write(store: Store, document: bytes, *, durable: bool = False) -> None:
    settle()
    write_atomic(store.root / STATE_FILE, document, durable=durable)


def dump(state: State) -> bytes:
    """The document: compact JSON, UTF-8 as it is (no ``\\u`` escapes)."""
    document = codec.write(state)
    try:
        return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:  # a lone surrogate in a label: pydantic's error, as ever
        from pydantic_core import to_json

        return to_json(document)


@contextmanager
def editing(store: Store) -> Iterator[State]:
    """Load, let the caller change, save — all under the store lock."""
    with store.locked():
        state = load(store)
        yield state
        document = dump(state)
        if not _holds(store, document):  # (a restore's journal closed with this state)
            _write(store, document)


def _holds(store: Store, document: bytes) -> bool:
    """Whether state.json is ``document`` already (read under the store lock: nobody
    else writes it meanwhile), so saving it again would only write the same bytes."""
    path = store.root / STATE_FILE
    try:
        return path.stat().st_size == len(document) and path.read_bytes() == document
    except OSError:
        return False


def restore_pending(root: Path) -> bool:
    """Whether state.json names a restore under way (read raw: no parsing on every open).

    ``"restoring": {`` can only be that key: quotes inside paths are escaped.
    """
    import re

    try:
        return re.search(rb'"restoring"\s*:\s*\{', (root / STATE_FILE).read_bytes()) is not None
    except OSError:
        return False
