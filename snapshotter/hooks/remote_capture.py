"""Captures taken by the hook server for a CLI command it forked (issue 16.2).

The server's watcher knows which directories changed since its last capture
of a worktree; a forked command has only a copy of that knowledge, which
goes stale the moment it runs (and reading the shared inotify queue would
steal the server's events). So the command asks the server, over its socket,
to capture for it. The command holds the store lock for the whole request;
the server captures without taking it again (``layout.HeldElsewhere``). If
the server cannot answer, the command captures by itself, as any process
does: a capture depends only on the worktree, so taking it twice is harmless.
"""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path

from snapshotter import errors
from snapshotter.git.worktree import Worktree
from snapshotter.hooks import client
from snapshotter.store import shadow, watch
from snapshotter.store.layout import HeldElsewhere
from snapshotter.store.shadow import Capture, Store
from snapshotter.store.walk import Skip

TIMEOUT_S = 3600.0  # a first capture of a huge tree takes minutes; the server never gives up


def install(sock_path: str) -> None:
    """Send this process's captures to the server at ``sock_path`` (a forked command)."""
    watch.enable(False)  # the inherited watchers' queues are the server's to read
    shadow.capture_elsewhere = partial(request, sock_path)


def request(
    sock_path: str,
    store: Store,
    max_new_file_size: int,
    excluded: frozenset[str],
    max_files: int | None,
    guard: bool,
) -> Capture | None:
    """The server's capture of ``store``'s worktree; None when it cannot take it."""
    tree = store.worktree
    body = json.dumps(
        {
            "store": os.fsdecode(store.root),
            "root": os.fsdecode(tree.root),
            "git_dir": os.fsdecode(tree.git_dir),
            "common_dir": os.fsdecode(tree.common_dir),
            "scope": tree.scope,
            "object_format": tree.object_format,
            "max_new_file_size": max_new_file_size,
            "excluded": sorted(excluded),
            "max_files": max_files,
            "guard": guard,
        }
    ).encode()
    conn = client.connect(sock_path, TIMEOUT_S)
    if conn is None:
        return None
    try:
        conn.sendall(client.frame(b"capture") + client.frame(body))
        reply = client.read_frame(conn)
    except OSError:
        return None  # the server went: capture here
    finally:
        conn.close()
    return _answer(json.loads(reply))


def _answer(data: dict[str, object]) -> Capture:
    if "error" in data:
        kind = getattr(errors, str(data["error"]), None)
        if not (isinstance(kind, type) and issubclass(kind, errors.SnapshotterError)):
            kind = errors.CaptureFailed
        raise kind(str(data.get("message", "")))
    skipped = {
        str(rel): Skip(str(path), str(reason), int(size), int(mtime))
        for rel, path, reason, size, mtime in data["skipped"]  # type: ignore[attr-defined]
    }
    return Capture(str(data["tree"]), skipped, int(data["started"]))  # type: ignore[call-overload]


def serve(body: bytes) -> bytes:
    """In the server: take the capture ``request`` asked for; the reply frame."""
    data = json.loads(body)
    worktree = Worktree(
        Path(data["root"]),
        Path(data["git_dir"]),
        Path(data["common_dir"]),
        data["scope"],
        data["object_format"],
    )
    store = Store(Path(data["store"]), worktree, lock=HeldElsewhere())
    try:
        found = store.capture(
            data["max_new_file_size"],
            frozenset(data["excluded"]),
            data["max_files"],
            data["guard"],
        )
        reply: dict[str, object] = {
            "tree": found.tree,
            "skipped": [
                [rel, s.path, s.reason, s.size, s.mtime_ns] for rel, s in found.skipped.items()
            ],
            "started": found.started,
        }
    except errors.SnapshotterError as exc:
        reply = {"error": type(exc).__name__, "message": str(exc)}
    return client.frame(json.dumps(reply).encode())
