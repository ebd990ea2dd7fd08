"""What the real Claude Code CLI sent to its hooks, replayed through `snapshotter hook`.

``fixtures/claude-code/session.json`` holds the hook payloads of one real
session, recorded by ``test_realclient_claude.py`` (``pytest -m realclient``):
``claude -p`` 2.1 against a fake Messages API, three prompts in one session
(an edit of g.txt; a change to f.txt taken back with ``git checkout``; a
``rm b.txt`` stopped by SIGINT, after which the client sent SessionEnd and no
PostToolUse or Stop; it exits without SessionEnd as often, a race in the
client, so the replay runs both endings). Paths are placeholders; each PreToolUse is followed by
the shell command that tool ran. Here every payload goes to a fresh
``snapshotter hook`` process started in the event's ``cwd`` with
``CLAUDE_PROJECT_DIR`` set, as Claude Code starts it, and undo must give
back the committed bytes.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from builders import cli_ok, files_of, hook_ok, listed, make_repo

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")

FIXTURE = Path(__file__).parents[2] / "fixtures" / "claude-code" / "session.json"
REPO = {"f.txt": "f as committed\n", "g.txt": "g as committed\n", "b.txt": "b as committed\n"}

# placeholder -> its value for (repository root, HOME); replaced in this order.
PLACEHOLDERS: dict[str, Callable[[Path, Path], str]] = {
    "{home}": lambda root, home: str(home),
    "{root}": lambda root, home: str(root),
    # Claude Code names the transcript's folder after the project path.
    "{root_slug}": lambda root, home: re.sub(r"[^A-Za-z0-9]", "-", str(root)),
}


def substitute(steps: list[dict[str, Any]], root: Path, home: Path) -> list[dict[str, Any]]:
    text = json.dumps(steps)
    for placeholder, real in PLACEHOLDERS.items():
        text = text.replace(placeholder, json.dumps(real(root, home))[1:-1])
    result: list[dict[str, Any]] = json.loads(text)
    return result


def replay(root: Path, home: Path, session_end: bool) -> None:
    """Every step, to the SessionEnd after the interrupt or (``session_end`` False) without it."""
    steps = json.loads(FIXTURE.read_text())["steps"]
    if not session_end:
        steps = steps[:-1]
    for step in substitute(steps, root, home):
        if "shell" in step:
            subprocess.run(["sh", "-c", step["shell"]], cwd=root, check=True, capture_output=True)
            continue
        event = step["event"]
        hook_ok(event, cwd=event["cwd"], env={"CLAUDE_PROJECT_DIR": str(root)})


def test_the_recorded_fixture_is_what_the_replay_expects() -> None:
    recorded = json.loads(FIXTURE.read_text())
    assert recorded["repo"] == REPO, "the fixture was recorded in the repository built here"
    names = [s["event"]["hook_event_name"] for s in recorded["steps"] if "event" in s]
    assert names.count("SessionStart") == 3 and names.count("Stop") == 2, names
    assert names[-2:] == ["PreToolUse", "SessionEnd"], "the interrupted turn ends with SessionEnd"


@pytest.mark.parametrize("session_end", [True, False], ids=["session-end", "no-session-end"])
def test_a_recorded_claude_code_session_undoes_to_the_committed_bytes(
    tmp_path: Path, hermetic: Path, session_end: bool
) -> None:
    """Without SessionEnd, `list` (as any command from the shell) closes the turn first."""
    root = make_repo(tmp_path / "repo", REPO)
    replay(root, hermetic, session_end)
    assert (root / "g.txt").read_text() == "g by the agent\n"
    assert not (root / "b.txt").exists()

    cps = listed(root)
    turns = [cp for cp in cps if cp["kind"] == "turn"]
    assert [(t["reason"], files_of(t)) for t in turns] == [
        ("turn_end", {"g.txt": "modified"}),
        ("turn_end", {}),
        ("interrupted", {"b.txt": "deleted"}),
    ], f"the g.txt turn, the turn with no net change, the stopped turn: {cps}"
    nested = [cp["command"] for cp in cps if cp["parent"] == turns[1]["id"]]
    assert nested == ["echo x > f.txt", "git checkout -- f.txt"], (
        f"tools under the empty turn: {cps}"
    )

    cli_ok(root, "undo")
    assert (root / "b.txt").read_text() == REPO["b.txt"], "the first undo brings b.txt back"
    out = cli_ok(root, "undo")
    assert f"undid checkpoint {turns[0]['id']}" in out, f"the second passes the empty turn: {out}"
    assert {p: (root / p).read_text() for p in REPO} == REPO, "every file is as committed"

    cli_ok(root, "redo")
    cli_ok(root, "redo")
    assert (root / "g.txt").read_text() == "g by the agent\n", "redo puts g.txt back"
    assert not (root / "b.txt").exists(), "and removes b.txt again"
    assert (root / "f.txt").read_text() == REPO["f.txt"]
