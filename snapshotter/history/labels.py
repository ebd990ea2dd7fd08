"""Checkpoint labels people can tell apart: what the user asked, what a tool touched.

A label is for ``list``; the raw values it is made from are kept on the
checkpoint (``prompt``, ``reason``, ``tool_name``, ``command``, ``named_paths``).
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_LABEL = 60
MAX_RAW = 2000  # a prompt or command kept in the state that every event loads and saves
NORMAL_ENDS = ("", "turn_end", "normal", "stop")


def first_line(text: str, limit: int = MAX_LABEL) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def bounded(text: str) -> str:
    return text if len(text) <= MAX_RAW else text[: MAX_RAW - 1] + "…"


def for_turn(prompt: str | None, reason: str) -> str:
    """The prompt's first line; a turn that did not end normally says so first."""
    reason = reason or "turn_end"
    if not prompt or not first_line(prompt):
        return reason
    asked = first_line(prompt)
    return asked if reason in NORMAL_ENDS else f"{reason}: {asked}"


def for_tool(tool_name: str, named: Sequence[str], command: str | None) -> str:
    """``Edit src/app.py``, ``shell: rm -rf build``, else the tool's name."""
    if named:
        more = f" (+{len(named) - 1})" if len(named) > 1 else ""
        return first_line(f"{tool_name} {named[0]}{more}")
    if command and first_line(command):
        return first_line(f"{tool_name}: {first_line(command, MAX_RAW)}")
    return tool_name
