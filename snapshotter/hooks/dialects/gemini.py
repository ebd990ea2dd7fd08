"""Gemini CLI: its own event names in ``.gemini/settings.json``, timeouts in ms.

``BeforeAgent`` (it carries the prompt) opens a turn and ``AfterAgent`` ends
it; its tool events carry no call id (pre and post pair in order); its file
tools name ``file_path``, its shell tool is ``run_shell_command``.
"""

from __future__ import annotations

from snapshotter.hooks.dialects import Dialect

DIALECT = Dialect(
    name="gemini",
    title="Gemini CLI",
    events={
        "SessionStart": "session_start",
        "BeforeAgent": "turn_start",
        "BeforeTool": "pre_tool_use",
        "AfterTool": "post_tool_use",
        "AfterAgent": "turn_end",
        "SessionEnd": "session_end",
    },
    matchers=frozenset(("BeforeTool", "AfterTool")),
    ignored=frozenset(
        ("BeforeModel", "AfterModel", "BeforeToolSelection", "Notification", "PreCompress")
    ),
    config=".gemini/settings.json",
    global_config=".gemini/settings.json",
    timeout_unit=1000,
)
