"""Qwen Code: Claude Code's events and payloads in ``.qwen/settings.json``, timeouts in ms.

From its documentation (fixtures/sessions/qwen), not a real run: its
``UserPromptSubmit`` may also fire mid-turn after a tool result, which then
closes the turn so far (as ``interrupted``) and opens the next; ``StopFailure``
ends a turn on an API error.
"""

from __future__ import annotations

from snapshotter.hooks.dialects import Dialect, claude_code

DIALECT = Dialect(
    name="qwen",
    title="Qwen Code",
    events={**claude_code.DIALECT.events, "StopFailure": "turn_end"},
    matchers=claude_code.DIALECT.matchers,
    reasons=claude_code.DIALECT.reasons,
    ignored=claude_code.DIALECT.ignored,
    config=".qwen/settings.json",
    global_config=".qwen/settings.json",
    timeout_unit=1000,
)
