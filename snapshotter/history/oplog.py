"""The operation log: who undid, redid, reset, restored or checkpointed what (issue 25.4).

The agent can undo through ``snapshotter mcp``; the user must see that it did,
and be able to take it back. Every such operation appends one line to
``oplog.jsonl`` in the worktree's store: when, which operation, by whom
(``shell``, ``agent``, ``hook``), the session, the checkpoints and how many
paths it wrote or removed, and what the session's next ``redo`` would bring
back once it was done. Checkpoints the hooks record are not logged here: they
are the checkpoint list itself.

Append-only (one ``write`` of one line with ``O_APPEND``, so concurrent writers
never interleave within a line); a line that does not parse is skipped when
reading. Past ``MAX_BYTES`` the older half is dropped, so it never grows
without bound.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from snapshotter.config import Actor, now_iso
from snapshotter.history.state_file import load

TYPE_CHECKING = False
if TYPE_CHECKING:
    from snapshotter.checkpoints import Restoration
    from snapshotter.store.shadow import Store

LOG_FILE = "oplog.jsonl"
MAX_BYTES = 512 * 1024


@dataclass(frozen=True, kw_only=True)
class Operation:
    """One logged operation. ``redo``: what the session's next ``redo`` would reverse
    once this was done (``{"op", "checkpoints"}``), or None when nothing is left to redo."""

    at: str = field(default_factory=now_iso)
    op: str  # undo | redo | reset | restore | checkpoint
    by: Actor
    session_id: str
    checkpoints: list[int]
    paths: int  # files it wrote or removed (for a checkpoint: files it recorded)
    redo: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def log_restore(store: Store, op: str, by: Actor, session_id: str, rep: Restoration) -> None:
    """Log an undo, redo, reset or restore that was done (a dry run is not logged)."""
    if rep.dry_run:
        return
    paths = len(rep.restored) + len(rep.removed)
    append(
        store,
        Operation(
            op=op,
            by=by,
            session_id=session_id,
            checkpoints=rep.checkpoint,
            paths=paths,
            redo=next_redo(store, session_id),
        ),
    )


def log_checkpoint(
    store: Store, by: Actor, session_id: str, checkpoint_id: int, files: int
) -> None:
    """Log a checkpoint recorded by hand (``snapshotter checkpoint``, the agent's tool)."""
    op = Operation(
        op="checkpoint",
        by=by,
        session_id=session_id,
        checkpoints=[checkpoint_id],
        paths=files,
        redo=next_redo(store, session_id),
    )
    append(store, op)


def next_redo(store: Store, session_id: str) -> dict[str, Any] | None:
    """What the session's next ``redo`` would reverse, as the state says now."""
    sess = load(store).sessions.get(session_id)
    if sess is None or not sess.redo:
        return None
    top = sess.redo[-1]
    return {"op": top.op, "checkpoints": list(top.checkpoints)}


def append(store: Store, op: Operation) -> None:
    """Append ``op`` as one line; past ``MAX_BYTES``, keep only the newer half first."""
    path = store.root / LOG_FILE
    line = (json.dumps(op.to_json(), ensure_ascii=False) + "\n").encode("utf-8")
    with contextlib.suppress(FileNotFoundError):
        if path.stat().st_size > MAX_BYTES:
            _keep_newer_half(store)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read(store: Store, session_id: str | None = None) -> list[Operation]:
    """The logged operations, oldest first: one session's, or everyone's when None."""
    try:
        raw = (store.root / LOG_FILE).read_bytes()
    except FileNotFoundError:
        return []
    found = []
    for line in raw.splitlines():
        op = _parse(line)
        if op is not None and (session_id is None or op.session_id == session_id):
            found.append(op)
    return found


def _parse(line: bytes) -> Operation | None:
    """The operation on one line; None for a line cut short or edited into nonsense."""
    try:
        data = json.loads(line)
        return Operation(**data) if isinstance(data, dict) else None
    except (ValueError, TypeError):
        return None


def _keep_newer_half(store: Store) -> None:
    from snapshotter.fileio import write_atomic

    path = store.root / LOG_FILE
    lines = path.read_bytes().splitlines(keepends=True)
    write_atomic(path, b"".join(lines[len(lines) // 2 :]))
