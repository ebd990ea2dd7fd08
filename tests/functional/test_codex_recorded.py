"""What the real Codex CLI sent to its hooks, replayed through `snapshotter hook`.

``fixtures/sessions/codex/`` holds the hook payloads of real ``codex exec`` runs
(Codex CLI 0.169.0, recorded by ``test_realclient_codex.py`` with ``pytest -m
realclient``; its README says how): ``session.json``, two turns of one session
(three shell commands, then one ``apply_patch`` that updates, adds, deletes and
moves), and ``interrupted.json``, a ``rm b.txt; sleep 30`` stopped by SIGINT,
after which Codex sent ``Interrupt`` and ``SessionEnd`` and no PostToolUse or
Stop. Each payload goes to a fresh ``snapshotter hook`` process started in the
event's ``cwd``, as Codex starts it; between a tool's PreToolUse and PostToolUse
the tree is changed as the tool changed it (``replay.apply_edits``). Undo and
redo must give back the bytes, ``reset --original`` the committed ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import cli_ok, files_of, hook_ok, listed, load_state, make_repo, worktree_bytes
from test_claude_code_recorded import substitute

from snapshotter.cli.replay import apply_edits

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")

FIXTURES = Path(__file__).parents[2] / "fixtures" / "sessions" / "codex"
PATCHED = ["d.txt", "g.txt", "m.txt", "moved.txt", "new.txt"]


def recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def events(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s["event"] for s in steps if "event" in s]


def replay(steps: list[dict[str, Any]], root: Path, home: Path) -> None:
    for step in substitute(steps, root, home):
        apply_edits(root, step.get("edits", []))
        if "event" in step:
            hook_ok(step["event"], cwd=step["event"]["cwd"])


def committed(repo: dict[str, str]) -> dict[str, bytes]:
    return {path: text.encode() for path, text in repo.items()}


def test_the_recorded_fixtures_are_what_the_replay_expects() -> None:
    session = events(recorded("session.json")["steps"])
    tool = ["PreToolUse", "PostToolUse"]
    turn1 = ["SessionStart", "UserPromptSubmit", *tool * 3, "Stop", "SessionEnd"]
    turn2 = ["SessionStart", "UserPromptSubmit", *tool, "Stop", "SessionEnd"]
    assert [e["hook_event_name"] for e in session] == turn1 + turn2
    assert len({e["session_id"] for e in session}) == 1, "resume keeps the session id"
    patch = [e for e in session if e.get("tool_name") == "apply_patch"]
    assert patch and all(e["tool_input"]["command"].startswith("*** Begin Patch") for e in patch)

    stopped = events(recorded("interrupted.json")["steps"])
    assert [e["hook_event_name"] for e in stopped] == [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "Interrupt",
        "SessionEnd",
    ]
    assert "reason" not in stopped[3] and stopped[3]["turn_id"], "Interrupt: a turn, no reason"


def test_a_recorded_codex_session_nests_its_tools_and_names_the_patched_files(
    tmp_path: Path, hermetic: Path
) -> None:
    fixture = recorded("session.json")
    repo = fixture["repo"]
    root = make_repo(tmp_path / "repo", repo)
    replay(fixture["steps"], root, hermetic)
    after = worktree_bytes(root)
    assert sorted(after) == ["e.txt", "f.txt", "g.txt", "moved.txt", "new.txt"]
    assert after["moved.txt"] == b"m moved\n" and after["f.txt"] == b"f by sed\n"

    prompts = [e["prompt"] for e in events(fixture["steps"]) if "prompt" in e]
    cps = listed(root)
    turns = [cp for cp in cps if cp["kind"] == "turn"]
    assert [(t["label"], t["reason"], t["prompt"]) for t in turns] == [
        (prompt, "turn_end", prompt) for prompt in prompts
    ], cps
    assert files_of(turns[0]) == {"b.txt": "deleted", "f.txt": "modified", "e.txt": "added"}
    assert files_of(turns[1]) == {
        "g.txt": "modified",
        "new.txt": "added",
        "d.txt": "deleted",
        "m.txt": "deleted",
        "moved.txt": "added",
    }
    tools = [[cp for cp in cps if cp["parent"] == t["id"]] for t in turns]
    assert [(c["tool_name"], c["command"], files_of(c)) for c in tools[0]] == [
        ("Bash", "rm b.txt", {"b.txt": "deleted"}),
        ("Bash", "sed -i 's/as committed/by sed/' f.txt", {"f.txt": "modified"}),
        ("Bash", "echo x > e.txt", {"e.txt": "added"}),
    ]
    (patch,) = tools[1]
    assert patch["tool_name"] == "apply_patch" and files_of(patch) == files_of(turns[1])
    assert sorted(patch["named_paths"]) == PATCHED, "both sides of the move"
    assert patch["label"] == f"apply_patch {patch['named_paths'][0]} (+4)", patch

    cli_ok(root, "undo")
    cli_ok(root, "undo")
    assert worktree_bytes(root) == committed(repo), "two undos: the committed bytes"
    cli_ok(root, "redo")
    cli_ok(root, "redo")
    assert worktree_bytes(root) == after, "two redos: the bytes the session left"
    cli_ok(root, "reset", "--original")
    assert worktree_bytes(root) == committed(repo)


@pytest.mark.parametrize("session_end", [True, False], ids=["session-end", "no-session-end"])
def test_a_recorded_codex_interrupt_ends_the_turn_as_interrupted(
    tmp_path: Path, hermetic: Path, session_end: bool
) -> None:
    """Interrupt closes the turn: without SessionEnd (Codex cuts its hook off after 3 s)
    the record is there before any command could close the turn."""
    fixture = recorded("interrupted.json")
    repo = fixture["repo"]
    steps = fixture["steps"] if session_end else fixture["steps"][:-1]
    root = make_repo(tmp_path / "repo", repo)
    replay(steps, root, hermetic)
    assert not (root / "b.txt").exists()

    (prompt,) = [e["prompt"] for e in events(steps) if "prompt" in e]
    state = load_state(hermetic / "data")
    (turn,) = [cp for cp in state["checkpoints"] if cp["kind"] == "turn"]
    assert turn["reason"] == "interrupted" and turn["label"] == f"interrupted: {prompt}", turn
    assert all(s["turn"] is None for s in state["sessions"].values()), "no turn left open"

    (listed_turn,) = [cp for cp in listed(root) if cp["kind"] == "turn"]
    assert files_of(listed_turn) == {"b.txt": "deleted"}, listed_turn
    cli_ok(root, "undo")
    assert worktree_bytes(root) == committed(repo), "undo brings b.txt back, byte for byte"
    cli_ok(root, "redo")
    assert not (root / "b.txt").exists(), "redo removes it again"
    cli_ok(root, "reset", "--original")
    assert worktree_bytes(root) == committed(repo)
