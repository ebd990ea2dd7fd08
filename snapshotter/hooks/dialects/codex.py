"""Codex CLI: Claude-shaped hooks in ``.codex/hooks.json``, timeouts in seconds.

Its file edits are ``apply_patch`` calls whose input is the patch text: the
paths it writes are on its ``*** Add File:``, ``*** Update File:``,
``*** Delete File:`` and ``*** Move to:`` lines (``patch_paths``). On Ctrl-C it
sends ``Interrupt`` (then ``SessionEnd``), no PostToolUse and no Stop: the turn
ends there, as interrupted. Codex cuts SessionEnd and Interrupt hooks off at
3 s. (Recorded from Codex CLI 0.169.0: fixtures/sessions/codex.)
"""

from __future__ import annotations

from snapshotter.hooks.dialects import Dialect, claude_code

PATCH_BEGIN = "*** Begin Patch"
_PATH_LINES = ("*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:")


def _claude_shaped() -> dict[str, str]:
    """Claude Code's events as Codex sends them: no PostToolUseFailure, and an Interrupt
    that ends the turn, before SessionEnd (the order ``init`` writes them in)."""
    events = dict(claude_code.DIALECT.events)
    del events["PostToolUseFailure"]
    session_end = events.pop("SessionEnd")
    return {**events, "Interrupt": "turn_end", "SessionEnd": session_end}


DIALECT = Dialect(
    name="codex",
    title="Codex CLI",
    events=_claude_shaped(),
    matchers=claude_code.DIALECT.matchers - {"PostToolUseFailure"},
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


# -- trust: Codex runs a hook only once its hash is in $CODEX_HOME/config.toml ------------------

# Its events as its hook-state keys name them.
LABELS = {
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "SessionStart": "session_start",
    "SessionEnd": "session_end",
    "UserPromptSubmit": "user_prompt_submit",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "Stop": "stop",
    "Interrupt": "interrupt",
}


def trusted_hash(event: str, matcher: str | None, handler: dict[str, object]) -> str:
    """Codex's trust identity of one command hook (0.169: codex-rs/hooks ``command_hook_hash``).

    The hook as ``{"event_name", "matcher"?, "hooks": [{"type", "command", "timeout",
    "async", "statusMessage"?}]}`` with its timeout filled in as Codex does (1 s by
    default and 3 s at most for SessionEnd and Interrupt, else 600 by default), as
    JSON with sorted keys and no whitespace; ``sha256:`` and its hex digest. Checked
    against Codex itself (its app-server's ``hooks/list``) by the real-client tests.
    """
    import hashlib
    import json

    timeout = handler.get("timeout")
    seconds = timeout if isinstance(timeout, int) and timeout > 0 else None
    if event in DIALECT.budgeted:
        seconds = min(seconds or 1, 3)
    hook: dict[str, object] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": seconds or 600,
        "async": bool(handler.get("async", False)),
    }
    if handler.get("statusMessage") is not None:
        hook["statusMessage"] = handler["statusMessage"]
    identity: dict[str, object] = {"event_name": LABELS[event], "hooks": [hook]}
    if matcher is not None:
        identity["matcher"] = matcher
    raw = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(raw.encode()).hexdigest()
