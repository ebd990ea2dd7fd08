"""Cursor's and Qwen Code's hook payloads as their documentation shows them, replayed.

``fixtures/sessions/cursor`` and ``fixtures/sessions/qwen`` hold a short
session each (a prompt, a shell tool removing ``b.txt`` and writing ``f.txt``,
a file edit of ``a.txt``, stop, session end), built from the runtimes' hooks
documentation (their READMEs cite the pages): neither was run here. Each
payload goes to a fresh ``snapshotter hook`` process; what the session did
must be undoable to the committed bytes.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import hook_ok, listed, make_repo, run_cli
from test_claude_code_recorded import substitute

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")

FIXTURES = Path(__file__).parents[2] / "fixtures" / "sessions"


def replay(runtime: str, tmp_path: Path, home: Path) -> tuple[Path, dict[str, Any]]:
    session = json.loads((FIXTURES / runtime / "session.json").read_text())
    root = make_repo(tmp_path / "repo", session["repo"])
    for step in substitute(session["steps"], root, home):
        if "shell" in step:
            subprocess.run(["sh", "-c", step["shell"]], cwd=root, check=True, capture_output=True)
        elif "edits" in step:
            for edit in step["edits"]:
                assert edit["op"] == "write", edit
                (root / edit["path"]).write_text(edit["content"])
        else:
            hook_ok(step["event"])
    return root, session


def committed(root: Path, session: dict[str, Any]) -> None:
    for rel, content in session["repo"].items():
        assert (root / rel).read_text() == content, rel


def test_a_documented_cursor_session_is_one_undoable_turn(tmp_path: Path, hermetic: Path) -> None:
    root, session = replay("cursor", tmp_path, hermetic)
    cps = listed(root)
    (turn,) = [cp for cp in cps if cp["kind"] == "turn"]
    assert {f["path"]: f["status"] for f in turn["files"]} == {
        "a.txt": "modified",
        "b.txt": "deleted",
        "f.txt": "modified",
    }, cps
    tools = [cp for cp in cps if cp["kind"] == "tool"]
    assert len(tools) == 2 and all(t["parent"] == turn["id"] for t in tools), cps
    assert run_cli("-C", root, "undo").returncode == 0
    committed(root, session)


def test_a_documented_qwen_session_is_undone_to_the_committed_bytes(
    tmp_path: Path, hermetic: Path
) -> None:
    """Qwen Code also sends UserPromptSubmit mid-turn, after a tool result (its docs):
    the turn is then recorded in two parts; ``reset --original`` takes back both."""
    root, session = replay("qwen", tmp_path, hermetic)
    turns = [cp for cp in listed(root) if cp["kind"] == "turn"]
    changed = {f["path"] for t in turns for f in t["files"]}
    assert changed == {"a.txt", "b.txt", "f.txt"}, turns
    done = run_cli("-C", root, "reset", "--original")
    assert done.returncode == 0, done.stderr
    committed(root, session)
