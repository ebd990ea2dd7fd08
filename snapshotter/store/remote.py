"""Captures a command forked by the hook server asks that server for (issue 16.2).

The server's watcher knows which directories changed since its last capture
of a worktree; a forked command has only a copy of that knowledge, which
goes stale the moment it runs (and reading the shared inotify queue would
steal the server's events). So the command's captures go to the server as
one JSON request, through its ``Resident.forward`` (hooks/remote_capture.py
carries the bytes over the socket). The command holds the store lock for the
whole request; the server captures without taking it again
(``layout.HeldElsewhere``). If the server cannot answer, the command
captures by itself, as any process does: a capture depends only on the
worktree, so taking it twice is harmless. Both ends run the same code (the
server's socket name covers it: hooks/client.py), so the format has one version.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from snapshotter import errors
from snapshotter.git.worktree import Worktree
from snapshotter.store.capture import Capture, CaptureOptions, take
from snapshotter.store.layout import HeldElsewhere
from snapshotter.store.resident import Resident
from snapshotter.store.shadow import Store
from snapshotter.store.skips import Skip, Why


def ask(store: Store, options: CaptureOptions) -> Capture | None:
    """The server's capture of ``store``'s worktree, when its resident forwards
    captures there (the caller holds the store lock); None: capture here."""
    resident = store.resident
    if resident is None or resident.forward is None:
        return None
    tree = store.worktree
    request = {
        "store": os.fsdecode(store.root),
        "worktree": {
            "root": os.fsdecode(tree.root),
            "git_dir": os.fsdecode(tree.git_dir),
            "common_dir": os.fsdecode(tree.common_dir),
            "scope": tree.scope,
            "object_format": tree.object_format,
        },
        "options": {
            "max_new_file_size": options.max_new_file_size,
            "excluded": sorted(options.excluded),
            "max_files": options.max_files,
            "guard": options.guard,
        },
    }
    reply = resident.forward(json.dumps(request).encode())
    return None if reply is None else _answer(json.loads(reply))


def _answer(data: dict[str, object]) -> Capture:
    if "error" in data:
        kind = getattr(errors, str(data["error"]), None)
        if not (isinstance(kind, type) and issubclass(kind, errors.SnapshotterError)):
            kind = errors.CaptureFailed
        raise kind(str(data.get("message", "")))
    skipped = {
        str(rel): Skip(str(path), Why(why), str(detail), int(size), int(mtime))
        for rel, path, why, detail, size, mtime in data["skipped"]  # type: ignore[attr-defined]
    }
    ignored = data.get("ignored")
    seen = [str(p) for p in ignored] if isinstance(ignored, list) else None
    return Capture(str(data["tree"]), skipped, int(data["started"]), seen)  # type: ignore[call-overload]


def _options(data: dict[str, object]) -> CaptureOptions:
    """The options ``ask`` sent, as they were."""
    size, excluded, max_files, guard = (
        data[k] for k in ("max_new_file_size", "excluded", "max_files", "guard")
    )
    if not (
        isinstance(size, int)
        and isinstance(excluded, list)
        and (max_files is None or isinstance(max_files, int))
        and isinstance(guard, bool)
    ):
        raise ValueError(f"not capture options: {data!r}")
    return CaptureOptions(size, frozenset(map(str, excluded)), max_files, guard)


def serve(body: bytes, resident: Resident) -> bytes:
    """In the server: take the capture ``ask`` sent, with ``resident``'s watchers;
    the reply's bytes."""
    data = json.loads(body)
    tree = data["worktree"]
    worktree = Worktree(
        Path(tree["root"]),
        Path(tree["git_dir"]),
        Path(tree["common_dir"]),
        tree["scope"],
        tree["object_format"],
    )
    store = Store(Path(data["store"]), worktree, lock=HeldElsewhere(), resident=resident)
    try:
        found = take(store, _options(data["options"]))
        reply: dict[str, object] = {
            "tree": found.tree,
            "skipped": [
                [rel, s.path, s.why.value, s.detail, s.size, s.mtime_ns]
                for rel, s in found.skipped.items()
            ],
            "started": found.started,
            "ignored": found.ignored,
        }
    except errors.SnapshotterError as exc:
        reply = {"error": type(exc).__name__, "message": str(exc)}
    return json.dumps(reply).encode()
