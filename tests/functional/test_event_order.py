"""Events out of order (issue 22.4b): a session start that arrives after its turn began.

Copilot CLI starts a prompt's hooks without waiting for ``sessionStart``'s, so
``SessionStart`` may reach snapshotter after the prompt's ``UserPromptSubmit``
or its first ``PreToolUse``. Such a session start joins the turn; it does not
close it. Every order of the three is played through real hook processes, in
Claude Code's shape without ``tool_use_id`` (as Copilot sends it).
"""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import claude_event, hook_ok, listed, make_repo, run_cli

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")

S = "sess-order"
BASH: dict[str, Any] = {"tool_name": "Bash"}


def tool(root: Path, name: str, command: str) -> dict[str, Any]:
    return claude_event(name, S, root, tool_input={"command": command}, **BASH)


FIRST = {
    "SessionStart": lambda root: claude_event("SessionStart", S, root, source="startup"),
    "UserPromptSubmit": lambda root: claude_event("UserPromptSubmit", S, root, prompt="edit both"),
    "PreToolUse": lambda root: tool(root, "PreToolUse", "echo one > a.txt"),
}


@pytest.mark.parametrize(
    "order", list(itertools.permutations(FIRST)), ids=lambda o: ">".join(n[:5] for n in o)
)
def test_every_order_of_session_start_prompt_and_first_tool_makes_one_turn(
    tmp_path: Path, order: tuple[str, ...]
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n"})
    for name in order:
        hook_ok(FIRST[name](root))
    subprocess.run("echo one > a.txt", shell=True, cwd=root, check=True)
    hook_ok(tool(root, "PostToolUse", "echo one > a.txt"))
    hook_ok(tool(root, "PreToolUse", "echo two > b.txt"))
    subprocess.run("echo two > b.txt", shell=True, cwd=root, check=True)
    hook_ok(tool(root, "PostToolUse", "echo two > b.txt"))
    hook_ok(claude_event("Stop", S, root))

    cps = listed(root)
    turns = [cp for cp in cps if cp["kind"] == "turn"]
    assert len(turns) == 1 and turns[0]["label"] == "edit both", cps
    tools = [cp for cp in cps if cp["kind"] == "tool"]
    assert len(tools) == 2 and all(t["parent"] == turns[0]["id"] for t in tools), cps
    done = run_cli("-C", root, "undo")
    assert done.returncode == 0, done.stderr
    assert (root / "a.txt").read_text() == "a\n" and (root / "b.txt").read_text() == "b\n"


def test_a_session_start_after_changes_still_closes_the_turn_left_open(tmp_path: Path) -> None:
    """A resumed session: the earlier run's turn changed files and never ended."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    hook_ok(claude_event("SessionStart", S, root, source="startup"))
    hook_ok(claude_event("UserPromptSubmit", S, root, prompt="first run"))
    (root / "a.txt").write_text("changed\n")
    hook_ok(claude_event("SessionStart", S, root, source="resume"))
    (turn,) = listed(root)
    assert turn["label"] == "interrupted: first run" and turn["files"] == [
        {"path": "a.txt", "status": "modified"}
    ], turn
