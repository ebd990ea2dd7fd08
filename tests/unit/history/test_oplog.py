"""snapshotter/history/oplog.py: the operation log, appended and read back."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest

from snapshotter.checkpoints import Restoration
from snapshotter.history import oplog
from snapshotter.history.records import RedoEntry, State
from snapshotter.history.state_file import save

if TYPE_CHECKING:
    from snapshotter.store.shadow import Store


def store_at(root: Path) -> Store:
    """What the log needs of a store: its directory (state.json is read from there)."""
    return cast("Store", SimpleNamespace(root=root))


def report(dry_run: bool = False) -> Restoration:
    return Restoration(checkpoint=[3], restored=["a", "b"], removed=["c"], dry_run=dry_run)


def test_a_restore_is_logged_with_who_and_what_redo_would_reverse(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    state = State()
    redo = RedoEntry(op="undo", checkpoints=[3], paths=["a"], tree="t", after="u")
    state.session("s").redo.append(redo)
    save(store, state)
    oplog.log_restore(store, "undo", "agent", "s", report())
    oplog.log_restore(store, "undo", "agent", "s", report(dry_run=True))
    (op,) = oplog.read(store)
    assert (op.op, op.by, op.session_id, op.checkpoints, op.paths) == ("undo", "agent", "s", [3], 3)
    assert op.redo == {"op": "undo", "checkpoints": [3]}, "what the next redo reverses"
    assert (tmp_path / oplog.LOG_FILE).stat().st_mode & 0o777 == 0o600, "private as the store"


def test_nothing_to_redo_and_sessions_apart(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    oplog.log_checkpoint(store, "shell", "s", 4, 2)
    oplog.log_restore(store, "redo", "hook", "t", report())
    assert [o.redo for o in oplog.read(store)] == [None, None]
    assert [o.by for o in oplog.read(store, "t")] == ["hook"]
    assert oplog.read(store_at(tmp_path / "none")) == [], "no log yet: no operations"


def test_a_damaged_line_is_skipped(tmp_path: Path) -> None:
    store = store_at(tmp_path)
    oplog.log_checkpoint(store, "agent", "s", 1, 1)
    with open(tmp_path / oplog.LOG_FILE, "ab") as f:
        f.write(b'{"op": "undo", "cut short\n[1, 2]\n{"unknown": 1}\n')
    oplog.log_checkpoint(store, "agent", "s", 2, 1)
    assert [o.checkpoints for o in oplog.read(store)] == [[1], [2]]


def test_the_log_keeps_its_newer_half_past_its_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_at(tmp_path)
    monkeypatch.setattr(oplog, "MAX_BYTES", 2000)
    for i in range(40):
        oplog.log_checkpoint(store, "shell", "s", i, 1)
    ids = [o.checkpoints[0] for o in oplog.read(store)]
    assert ids == sorted(ids) and ids[-1] == 39 and len(ids) < 40, ids
    assert (tmp_path / oplog.LOG_FILE).stat().st_size <= 2000 + 200
