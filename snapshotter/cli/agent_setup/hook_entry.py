"""Our hook as an agent's configuration names it: its command, its timeout, and
how to recognize it however it is spelled."""

from __future__ import annotations

import os
import shlex

from snapshotter.hooks.dialects import Dialect

HOOK_COMMAND = "snapshotter hook"
TIMEOUT_S = 60  # docker-agent's default; a hook waits at most 50 s for the store lock


def is_ours(command: object) -> bool:
    """``snapshotter hook`` however it is spelled (a path, extra ``--arg`` options)."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return len(words) >= 2 and os.path.basename(words[0]) == "snapshotter" and words[1] == "hook"


def hook_command() -> str:
    """``snapshotter hook``, or this script's full path when ``snapshotter`` is not on PATH.

    An agent runs the hook through its own PATH: a command it cannot find
    fails every event, and in docker-agent a failing pre_tool_use blocks the tool.
    """
    import shutil
    import sys

    if shutil.which("snapshotter"):
        return HOOK_COMMAND
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    if os.path.basename(script) == "snapshotter" and os.access(script, os.X_OK):
        return f"{shlex.quote(script)} hook"
    return HOOK_COMMAND


def timeout_s(dialect: Dialect, event: str) -> int:
    """Seconds the runtime may give the hook: within its budget for session ends."""
    short = dialect.events.get(event) == "session_end" or event in dialect.budgeted
    return dialect.session_end_timeout_s if short else TIMEOUT_S
