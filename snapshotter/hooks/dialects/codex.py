"""Codex CLI: Claude-shaped hooks in ``.codex/hooks.json``, timeouts in seconds.

Its file edits are ``apply_patch`` calls whose input is the patch text: the
paths it writes are on its ``*** Add File:``, ``*** Update File:``,
``*** Delete File:`` and ``*** Move to:`` lines (``patch_paths``). On Ctrl-C it
sends ``Interrupt`` (then ``SessionEnd``), no PostToolUse and no Stop: the turn
ends there, as interrupted. Codex cuts SessionEnd and Interrupt hooks off at
3 s. (Recorded from Codex CLI 0.169.0: fixtures/sessions/codex.)
"""

from __future__ import annotations

from snapshotter.hooks.dialects import Dialect

PATCH_BEGIN = "*** Begin Patch"
_PATH_LINES = ("*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:")

DIALECT = Dialect(
    name="codex",
    title="Codex CLI",
    events={
        "SessionStart": "session_start",
        "UserPromptSubmit": "turn_start",
        "PreToolUse": "pre_tool_use",
        "PostToolUse": "post_tool_use",
        "Stop": "turn_end",
        "Interrupt": "turn_end",
        "SessionEnd": "session_end",
    },
    matchers=frozenset(("PreToolUse", "PostToolUse")),
    ignored=frozenset(
        ("PermissionRequest", "PreCompact", "PostCompact", "SubagentStart", "SubagentStop")
    ),
    reasons={"Interrupt": "interrupted"},
    budgeted=frozenset(("SessionEnd", "Interrupt")),
    config=".codex/hooks.json",
    global_config=".codex/hooks.json",
    session_end_timeout_s=3,  # Codex gives SessionEnd and Interrupt hooks 3 s at most
)


def patch_paths(text: str) -> list[str]:
    """Every path an ``apply_patch`` text adds, updates, deletes or moves to."""
    found = []
    for line in text.splitlines():
        for prefix in _PATH_LINES:
            if line.startswith(prefix):
                path = line[len(prefix) :].strip()
                if path:
                    found.append(path)
    return found
