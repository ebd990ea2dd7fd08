"""What the real Gemini CLI sent to its hooks, replayed through `snapshotter hook`.

``fixtures/sessions/gemini/`` holds the hook payloads of real sessions, recorded
by ``test_realclient_gemini.py`` (``pytest -m realclient``) from ``gemini -p``
0.61 against a fake Gemini API: ``session.json``, two prompts in one session
(``rm b.txt`` and a ``write_file`` of g.txt; then ``echo x > f.txt`` and a
``replace`` in f.txt), and ``interrupted.json``, a ``rm b.txt; sleep 30`` stopped
by SIGINT, after which the client sent SessionEnd and no AfterTool or
AfterAgent. They were recorded with every one of Gemini's eleven events wired;
``snapshotter init gemini`` wires six, so each is replayed both ways: the
events init wires, and every event (the others must be let through quietly).
Paths are placeholders; after each BeforeTool a step holds the files that tool
changed. Here every payload goes to a fresh ``snapshotter hook`` process started
in the event's ``cwd`` with the variables Gemini CLI sets, and undo / redo /
reset must give back the bytes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import cli_ok, edit_files, files_of, hook_ok, listed, make_repo
from test_claude_code_recorded import REPO, substitute

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")

FIXTURES = Path(__file__).parents[2] / "fixtures" / "sessions" / "gemini"
# The events ``snapshotter init gemini`` wires.
WIRED = {"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionEnd"}
PROMPTS = {
    "turn-1": "[turn-1] Remove b.txt and write g.txt",
    "turn-2": "[turn-2] Rewrite f.txt",
    "turn-b": "[turn-b] Remove b.txt",
}
COMMITTED: dict[str, bytes | None] = {rel: content.encode() for rel, content in REPO.items()}
AFTER_TURNS = {"f.txt": b"f by the agent\n", "g.txt": b"g by the agent\n", "b.txt": None}


def tree(root: Path) -> dict[str, bytes | None]:
    """The fixture's files as they are now, their bytes (None: gone)."""
    return {rel: (root / rel).read_bytes() if (root / rel).exists() else None for rel in REPO}


def replay(name: str, root: Path, home: Path, every_event: bool) -> None:
    """Every step of ``name``: an event to ``snapshotter hook`` (only those init wires,
    unless ``every_event``), or the files its tool changed, written in ``root``."""
    steps = json.loads((FIXTURES / name).read_text())["steps"]
    for step in substitute(steps, root, home):
        if "files" in step:
            edit_files(root, step["files"])
            continue
        event = step["event"]
        if not every_event and event["hook_event_name"] not in WIRED:
            continue
        env = {
            "GEMINI_PROJECT_DIR": str(root),
            "GEMINI_CWD": str(root),
            "CLAUDE_PROJECT_DIR": str(root),
            "GEMINI_SESSION_ID": event["session_id"],
        }
        hook_ok(event, cwd=event["cwd"], env=env)


def names(name: str) -> list[str]:
    steps: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text())["steps"]
    return [s["event"]["hook_event_name"] for s in steps if "event" in s]


def test_the_recorded_fixtures_are_what_the_replay_expects() -> None:
    for name in ("session.json", "interrupted.json"):
        recorded = json.loads((FIXTURES / name).read_text())
        assert recorded["repo"] == REPO, f"{name} was recorded in the repository built here"
        assert recorded["client"].startswith("gemini-cli "), recorded["client"]
    wired = [n for n in names("session.json") if n in WIRED]
    run = ["SessionStart", "BeforeAgent", *["BeforeTool", "AfterTool"] * 2, "AfterAgent"]
    assert wired == [*run, "SessionEnd"] * 2, wired
    assert set(names("session.json")) - WIRED, "recorded with the other events wired too"
    wired = [n for n in names("interrupted.json") if n in WIRED]
    assert wired == ["SessionStart", "BeforeAgent", "BeforeTool", "SessionEnd"], wired


every = pytest.mark.parametrize("every_event", [False, True], ids=["init-events", "every-event"])


@every
def test_a_recorded_gemini_session_undoes_to_the_committed_bytes(
    tmp_path: Path, hermetic: Path, every_event: bool
) -> None:
    """One turn per prompt, its tools nested under it; undo, redo and reset give back
    the bytes."""
    root = make_repo(tmp_path / "repo", REPO)
    replay("session.json", root, hermetic, every_event)
    assert tree(root) == AFTER_TURNS, "the steps replay to what the tools did"

    cps = listed(root)
    turns = [cp for cp in cps if cp["kind"] == "turn"]
    assert [(t["reason"], t["prompt"], files_of(t)) for t in turns] == [
        ("turn_end", PROMPTS["turn-1"], {"b.txt": "deleted", "g.txt": "modified"}),
        ("turn_end", PROMPTS["turn-2"], {"f.txt": "modified"}),
    ], cps
    for turn, tools in zip(
        turns, (["run_shell_command", "write_file"], ["run_shell_command", "replace"]), strict=True
    ):
        nested = [cp["tool_name"] for cp in cps if cp["parent"] == turn["id"]]
        assert nested == tools, f"tools under {turn['prompt']}: {cps}"

    cli_ok(root, "undo")
    assert tree(root) == {**AFTER_TURNS, "f.txt": COMMITTED["f.txt"]}, "undo takes back turn 2"
    cli_ok(root, "undo")
    assert tree(root) == COMMITTED, "undo again takes back turn 1"
    cli_ok(root, "redo")
    assert tree(root) == {**AFTER_TURNS, "f.txt": COMMITTED["f.txt"]}, "redo puts turn 1 back"
    cli_ok(root, "redo")
    assert tree(root) == AFTER_TURNS, "redo again puts turn 2 back"
    cli_ok(root, "reset", "--original")
    assert tree(root) == COMMITTED, "reset --original: the committed bytes"


@every
def test_a_recorded_gemini_interrupt_undoes_to_the_committed_bytes(
    tmp_path: Path, hermetic: Path, every_event: bool
) -> None:
    """SessionEnd after a BeforeTool with no AfterTool / AfterAgent: the turn is closed
    as interrupted, and undo brings b.txt back."""
    root = make_repo(tmp_path / "repo", REPO)
    replay("interrupted.json", root, hermetic, every_event)
    assert tree(root) == {**COMMITTED, "b.txt": None}

    turns = [cp for cp in listed(root) if cp["kind"] == "turn"]
    assert [(t["reason"], t["prompt"], files_of(t)) for t in turns] == [
        ("interrupted", PROMPTS["turn-b"], {"b.txt": "deleted"})
    ], turns
    shown = cli_ok(root, "list")
    assert f"interrupted: {PROMPTS['turn-b']}" in shown, shown

    cli_ok(root, "undo")
    assert tree(root) == COMMITTED, "undo brings b.txt back, byte for byte"
    cli_ok(root, "redo")
    assert tree(root) == {**COMMITTED, "b.txt": None}, "redo removes it again"
