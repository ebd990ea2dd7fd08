"""``snapshotter hook``: one event as JSON on stdin, always exit 0 (SPEC §6).

In docker-agent a failing pre_tool_use hook blocks the tool call, so every
failure here — bad JSON, wrong types, a broken store — is logged (stderr and
the data directory's hook.log) and swallowed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import BinaryIO

MAX_INPUT_BYTES = 64 * 1024 * 1024


def run(stdin: BinaryIO, data_dir: Path, args: list[str]) -> int:
    from snapshotter.logfile import append

    try:
        _handle(stdin.read(MAX_INPUT_BYTES + 1), data_dir, args)
    except Exception as exc:  # the agent must never be blocked by us
        message = f"snapshotter hook: {type(exc).__name__}: {exc}"
        append(data_dir, message)
        print(message, file=sys.stderr)
    return 0


def _handle(raw: bytes, data_dir: Path, args: list[str]) -> None:
    from snapshotter.errors import BadInput

    if len(raw) > MAX_INPUT_BYTES:
        raise BadInput(f"hook input larger than {MAX_INPUT_BYTES} bytes; ignored")
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise BadInput(f"hook input is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise BadInput("hook input must be a JSON object")
    from pydantic import ValidationError

    from snapshotter.hooks.builtin import SnapshotBuiltin
    from snapshotter.hooks.events import SNAPSHOT_EVENTS, HookInput

    try:
        hook_input = HookInput.model_validate(data)
    except ValidationError as exc:
        raise BadInput(f"hook input has wrong types: {exc.error_count()} errors") from exc
    if hook_input.event not in SNAPSHOT_EVENTS:
        return
    SnapshotBuiltin(data_dir_path=data_dir).handle(hook_input, args)
