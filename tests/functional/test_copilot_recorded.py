"""What the real GitHub Copilot CLI sent to its hooks, replayed through `snapshotter hook`.

``fixtures/sessions/copilot/session.json`` holds the hook payloads of one real
session, recorded by ``test_realclient_copilot.py`` (``pytest -m realclient``):
Copilot CLI 1.0.102 against a fake chat-completions API, two prompts in one
session (``-p`` then ``-p --resume``; each run sends its own sessionStart …
sessionEnd). Turn 1 removes b.txt, writes f.txt, edits a.txt, creates c.txt;
turn 2 checks f.txt out again. Both flavours Copilot runs were recorded from
the same session: ``steps`` from ``.github/hooks/*.json`` (camelCase payloads
that do not name their event, so each goes to ``snapshotter hook --arg
dialect=copilot --arg event=NAME``, as ``snapshotter init copilot`` writes it)
and ``claude_settings_steps`` from ``.claude/settings.json`` (Claude-shaped,
as ``snapshotter init claude-code`` wires it: plain ``snapshotter hook``).
Each payload goes to a fresh ``snapshotter hook`` process in the event's
``cwd`` with the project variables Copilot sets; undo, redo and reset must give
back the exact bytes.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from builders import cli_ok, files_of, hook_ok, listed, make_repo, worktree_bytes
from test_claude_code_recorded import substitute

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")

FIXTURE = Path(__file__).parents[2] / "fixtures" / "sessions" / "copilot" / "session.json"
REPO = {"a.txt": "a as committed\n", "b.txt": "b as committed\n", "f.txt": "f as committed\n"}
# The tree after turn 1 and after turn 2 (which checks f.txt out again).
AFTER_TURN_1 = {"a.txt": "a by the agent\n", "c.txt": "c is new\n", "f.txt": "x\n"}
AFTER_TURN_2 = {**AFTER_TURN_1, "f.txt": REPO["f.txt"]}
TURN_1_FILES = {"a.txt": "modified", "b.txt": "deleted", "c.txt": "added", "f.txt": "modified"}
TURN_2_FILES = {"f.txt": "modified"}
# Each tool of each turn: (its shell command, or None for an edit/create), its files.
TURN_1_TOOLS = [
    ("rm b.txt", {"b.txt": "deleted"}),
    ("echo x > f.txt", {"f.txt": "modified"}),
    (None, {"a.txt": "modified"}),
    (None, {"c.txt": "added"}),
]
TURN_2_TOOLS = [("git checkout -- f.txt", {"f.txt": "modified"})]
# The .github/hooks event -> the .claude/settings.json event Copilot sends with it.
PASCAL = {
    "sessionStart": "SessionStart",
    "userPromptSubmitted": "UserPromptSubmit",
    "preToolUse": "PreToolUse",
    "postToolUse": "PostToolUse",
    "agentStop": "Stop",
    "sessionEnd": "SessionEnd",
}


def encoded(files: Mapping[str, str], extra: Mapping[str, bytes]) -> dict[str, bytes]:
    return {**{k: v.encode() for k, v in files.items()}, **extra}


def listing(cps: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """A compact ``list --json``: (id, kind, parent, reason, command, files) each."""
    return [
        (cp["id"], cp["kind"], cp["parent"], cp["reason"], cp["command"], files_of(cp))
        for cp in cps
    ]


def assert_turns_and_undo(root: Path, extra: Mapping[str, bytes] | None = None) -> None:
    """After the two prompts: one turn per prompt, its tools (and nothing else) under it,
    none at the top level; undo, undo, redo, redo, reset --original give the exact bytes.
    ``extra``: files (the hook configs) that were there before the session and stay."""
    extra = dict(extra or {})
    assert worktree_bytes(root) == encoded(AFTER_TURN_2, extra), "the session's tree"
    cps = listed(root)
    turns = [cp for cp in cps if cp["kind"] == "turn"]
    seen = listing(cps)
    assert [(t["reason"], files_of(t)) for t in turns] == [
        ("turn_end", TURN_1_FILES),
        ("turn_end", TURN_2_FILES),
    ], f"one turn per prompt: {seen}"
    assert all(cp["parent"] in {t["id"] for t in turns} for cp in cps if cp["kind"] != "turn"), (
        f"no checkpoint outside a turn: {seen}"
    )
    for turn, tools in ((turns[0], TURN_1_TOOLS), (turns[1], TURN_2_TOOLS)):
        nested = [(cp["command"], files_of(cp)) for cp in cps if cp["parent"] == turn["id"]]
        assert nested == tools, f"the tools of turn {turn['id']}, once each: {seen}"

    out = cli_ok(root, "undo")
    assert f"undid checkpoint {turns[1]['id']}" in out, out
    assert worktree_bytes(root) == encoded(AFTER_TURN_1, extra), "undo gives back turn 1's bytes"
    out = cli_ok(root, "undo")
    assert f"undid checkpoint {turns[0]['id']}" in out, out
    assert worktree_bytes(root) == encoded(REPO, extra), (
        "a second undo gives back the committed bytes"
    )
    cli_ok(root, "redo")
    assert worktree_bytes(root) == encoded(AFTER_TURN_1, extra), "redo puts turn 1 back"
    cli_ok(root, "redo")
    assert worktree_bytes(root) == encoded(AFTER_TURN_2, extra), "and turn 2"
    cli_ok(root, "reset", "--original")
    assert worktree_bytes(root) == encoded(REPO, extra), "reset --original: the committed bytes"


def replay(root: Path, home: Path, steps: list[dict[str, Any]]) -> None:
    """Each step: a shell command, a tool's writes, or an event to a ``snapshotter hook``
    (``--arg dialect=copilot --arg event=NAME`` where the step names its hook)."""
    env = {"CLAUDE_PROJECT_DIR": str(root), "COPILOT_PROJECT_DIR": str(root), "COPILOT_CLI": "1"}
    for step in substitute(steps, root, home):
        if "shell" in step:
            subprocess.run(["sh", "-c", step["shell"]], cwd=root, check=True, capture_output=True)
        elif "edits" in step:
            for edit in step["edits"]:
                assert edit["op"] == "write", edit
                (root / edit["path"]).write_text(edit["content"])
        else:
            hook = step.get("hook")
            args = ["--arg", "dialect=copilot", "--arg", f"event={hook}"] if hook else []
            event = step["event"]
            hook_ok(event, None, *args, cwd=event["cwd"], env=env)


def test_the_recorded_fixture_is_what_the_replay_expects() -> None:
    recorded = json.loads(FIXTURE.read_text())
    assert recorded["repo"] == REPO, "the fixture was recorded in the repository built here"
    hooks = [s["hook"] for s in recorded["steps"] if "event" in s]
    turn = ["userPromptSubmitted", *["preToolUse", "postToolUse"] * 4, "agentStop", "sessionEnd"]
    turn2 = ["userPromptSubmitted", "preToolUse", "postToolUse", "agentStop", "sessionEnd"]
    assert hooks == ["sessionStart", *turn, "sessionStart", *turn2], hooks
    assert all("hook_event_name" not in s["event"] for s in recorded["steps"] if "event" in s)
    names = [
        s["event"]["hook_event_name"] for s in recorded["claude_settings_steps"] if "event" in s
    ]
    assert names == [PASCAL[h] for h in hooks], names


@pytest.mark.parametrize("flavour", ["steps", "claude_settings_steps"])
def test_a_recorded_copilot_session_undoes_to_the_exact_bytes(
    tmp_path: Path, hermetic: Path, flavour: str
) -> None:
    """``steps``: .github/hooks (init copilot); ``claude_settings_steps``: .claude/settings.json
    (init claude-code), where turn 1's sessionStart ("new") comes before its prompt."""
    root = make_repo(tmp_path / "repo", REPO)
    replay(root, hermetic, json.loads(FIXTURE.read_text())[flavour])
    assert_turns_and_undo(root)


def test_both_wirings_at_once_record_each_tool_once(tmp_path: Path, hermetic: Path) -> None:
    """``init copilot`` and ``init claude-code`` in one repository (#22.5): Copilot
    runs both sets, so each event arrives twice, in two shapes. Still one turn per
    prompt, each tool once, undo byte-exact (as the real client showed)."""
    recorded = json.loads(FIXTURE.read_text())
    both: list[dict[str, Any]] = []
    for ours, claudes in zip(recorded["steps"], recorded["claude_settings_steps"], strict=True):
        both += [ours, claudes] if "event" in ours else [ours]
    root = make_repo(tmp_path / "repo", REPO)
    replay(root, hermetic, both)
    assert_turns_and_undo(root)
