"""Qwen Code: Claude Code's events and payloads in ``.qwen/settings.json``, timeouts in ms."""

from __future__ import annotations

from snapshotter.hooks.dialects import Dialect, claude_code

DIALECT = Dialect(
    name="qwen",
    title="Qwen Code",
    events=dict(claude_code.DIALECT.events),
    matchers=claude_code.DIALECT.matchers,
    ignored=claude_code.DIALECT.ignored,
    config=".qwen/settings.json",
    global_config=".qwen/settings.json",
    timeout_unit=1000,
)
