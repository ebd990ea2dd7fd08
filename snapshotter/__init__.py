"""snapshotter: snapshot-and-undo for git worktrees that AI agents edit.

Names are loaded on first use, so ``snapshotter hook`` (run once per agent
event) does not pay for imports it does not need.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing costs every hook process ~6 ms

__version__ = "0.1.0"

_EXPORTS = {
    "Engine": "snapshotter.engine",
    "Capture": "snapshotter.store.capture",
    "Checkpoint": "snapshotter.models",
    "FileChange": "snapshotter.models",
    "SkippedFile": "snapshotter.models",
    "RestoreReport": "snapshotter.models",
    "Restoration": "snapshotter.checkpoints",
    "HookInput": "snapshotter.hooks.wire",
    "HookOutput": "snapshotter.hooks.wire",
    "SNAPSHOT_EVENTS": "snapshotter.hooks.events",
    "SESSION_START": "snapshotter.hooks.events",
    "TURN_START": "snapshotter.hooks.events",
    "TURN_END": "snapshotter.hooks.events",
    "PRE_TOOL_USE": "snapshotter.hooks.events",
    "POST_TOOL_USE": "snapshotter.hooks.events",
    "SESSION_END": "snapshotter.hooks.events",
    "Registry": "snapshotter.hooks.registry",
    "Executor": "snapshotter.hooks.registry",
    "HooksConfig": "snapshotter.hooks.registry",
    "Result": "snapshotter.hooks.registry",
    "register_snapshot": "snapshotter.hooks.builtin",
    "SnapshotController": "snapshotter.hooks.builtin",
    "SnapshotBuiltin": "snapshotter.hooks.builtin",
    "SnapshotterError": "snapshotter.errors",
    "NotAWorktree": "snapshotter.errors",
    "Conflict": "snapshotter.errors",
    "NothingToDo": "snapshotter.errors",
    "CaptureFailed": "snapshotter.errors",
    "UnsafePath": "snapshotter.errors",
}

# Spelled out (not computed from _EXPORTS) so type checkers see what is exported.
__all__ = [
    "POST_TOOL_USE",
    "PRE_TOOL_USE",
    "SESSION_END",
    "SESSION_START",
    "SNAPSHOT_EVENTS",
    "TURN_END",
    "TURN_START",
    "Capture",
    "CaptureFailed",
    "Checkpoint",
    "Conflict",
    "Engine",
    "Executor",
    "FileChange",
    "HookInput",
    "HookOutput",
    "HooksConfig",
    "NotAWorktree",
    "NothingToDo",
    "Registry",
    "Restoration",
    "RestoreReport",
    "Result",
    "SkippedFile",
    "SnapshotBuiltin",
    "SnapshotController",
    "SnapshotterError",
    "UnsafePath",
    "register_snapshot",
]

if TYPE_CHECKING:
    from typing import Any

    from snapshotter.checkpoints import Restoration
    from snapshotter.engine import Engine
    from snapshotter.errors import (
        CaptureFailed,
        Conflict,
        NotAWorktree,
        NothingToDo,
        SnapshotterError,
        UnsafePath,
    )
    from snapshotter.hooks.builtin import SnapshotBuiltin, SnapshotController, register_snapshot
    from snapshotter.hooks.events import (
        POST_TOOL_USE,
        PRE_TOOL_USE,
        SESSION_END,
        SESSION_START,
        SNAPSHOT_EVENTS,
        TURN_END,
        TURN_START,
    )
    from snapshotter.hooks.registry import Executor, HooksConfig, Registry, Result
    from snapshotter.hooks.wire import HookInput, HookOutput
    from snapshotter.models import Checkpoint, FileChange, RestoreReport, SkippedFile
    from snapshotter.store.capture import Capture


def __dir__() -> list[str]:
    """What the package offers (#26.6): its API, not its import machinery."""
    return sorted([*__all__, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'snapshotter' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
