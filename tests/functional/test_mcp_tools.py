"""The agent's tools (`snapshotter mcp`, issue 25) on real repositories, called in process.

The protocol itself is exercised by test_mcp_recorded.py (a real server
process fed what Claude Code sent); here each tool's behaviour: the same data
as the CLI's ``--json``, the agent's own session, no force unless the user
allowed it, a refusal the model can relay, and every change in the
operation log as the agent's and undoable from the shell.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import event, hook_in_process_ok, make_repo, run_cli_in_process, write

from snapshotter.cli.agent_tools import AgentTools, Policy, Refusal
from snapshotter.cli.context import Ctx
from snapshotter.errors import BadInput, NothingToDo

REPO = {"a.txt": "a\n", "b.txt": "b\n", "keep.txt": "keep\n"}


def agent_turn(root: Path, session: str, files: dict[str, str]) -> None:
    """One turn of ``session`` through the hook handler: its start, the edits, its end."""
    hook_in_process_ok(event("turn_start", root, session, prompt="edit"), None)
    for rel, content in files.items():
        write(root, rel, content)
    hook_in_process_ok(event("turn_end", root, session), None)


def tools(root: Path, **policy: bool) -> AgentTools:
    return AgentTools(Ctx(None, False, None), Policy(**policy), str(root))


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("CLAUDE_CODE_SESSION_ID", "CLAUDE_PROJECT_DIR", "SNAPSHOTTER_SESSION"):
        monkeypatch.delenv(name, raising=False)
    repo = make_repo(tmp_path / "repo", REPO)
    agent_turn(repo, "agent-1", {"a.txt": "A\n", "b.txt": "B\n"})
    return repo


def cli_json(root: Path, *args: str) -> Any:
    done = run_cli_in_process(*args, "--json", cwd=root)
    assert done.code == 0, done.err
    return json.loads(done.out)


def test_list_is_list_json_of_the_agents_session(root: Path) -> None:
    agent_turn(root, "other", {"keep.txt": "other\n"})  # newer, another session
    t = tools(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CLAUDE_CODE_SESSION_ID", "agent-1")
        listing = t.list_checkpoints()
    assert listing["session"] == "agent-1", "the runtime names the agent's session"
    assert listing["checkpoints"] == cli_json(root, "list", "--session", "agent-1")
    with pytest.raises(BadInput, match="any-session"):
        t.list_checkpoints(all_sessions=True)
    every = tools(root, any_session=True).list_checkpoints(all_sessions=True)
    assert len(every["checkpoints"]) == 2


def test_an_unknown_runtime_session_falls_back_to_the_newest(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code's id under --continue is one the hooks never saw (MEASURED.md)."""
    monkeypatch.setenv("CLAUDE_CODE_SESSION_ID", "fresh-id-the-hooks-never-saw")
    assert tools(root).list_checkpoints()["session"] == "agent-1"


def test_undo_dry_run_then_undo_then_redo_from_the_shell(root: Path) -> None:
    t = tools(root)
    dry = t.undo(dry_run=True)
    assert dry == {**dry, "dry_run": True, "restored": ["a.txt", "b.txt"]}
    assert (root / "a.txt").read_text() == "A\n", "a dry run changes nothing"
    assert cli_json(root, "log") == [], "a dry run is not logged"

    done = t.undo()
    assert done["restored"] == ["a.txt", "b.txt"] and not done["dry_run"]
    assert (root / "a.txt").read_text() == "a\n" and (root / "b.txt").read_text() == "b\n"
    (op,) = cli_json(root, "log")
    assert (op["op"], op["by"], op["paths"], op["session_id"]) == ("undo", "agent", 2, "agent-1")
    assert op["redo"] == {"op": "undo", "checkpoints": done["checkpoint"]}

    assert run_cli_in_process("redo", cwd=root).code == 0
    assert (root / "a.txt").read_text() == "A\n", "redo from the shell takes the undo back"
    ops = cli_json(root, "log")
    assert [(o["op"], o["by"], o["redo"]) for o in ops][1] == ("redo", "shell", None)


def test_a_refusal_names_the_users_files_and_forces_nothing(root: Path) -> None:
    write(root, "a.txt", "the user's edit\n")
    t = tools(root)
    with pytest.raises(Refusal) as refused:
        t.undo()
    data = refused.value.data
    assert data["refused"] and data["exit_code"] == 4, data
    assert data["files"] == [{"path": "a.txt", "changed_by": "you"}], data
    assert "you changed a.txt" in data["tell_the_user"], data
    assert (root / "a.txt").read_text() == "the user's edit\n", "nothing was written"
    with pytest.raises(BadInput, match="allow-force"):
        t.undo(force=True)
    assert (root / "a.txt").read_text() == "the user's edit\n"

    forced = tools(root, allow_force=True).undo(force=True)
    assert forced["restored"] == ["a.txt", "b.txt"]
    assert run_cli_in_process("redo", cwd=root).code == 0
    assert (root / "a.txt").read_text() == "the user's edit\n", "redo brings the edit back"


def test_another_sessions_checkpoints_are_off_limits_by_default(root: Path) -> None:
    agent_turn(root, "other", {"keep.txt": "other\n"})
    other_id = cli_json(root, "list", "--session", "other")[0]["id"]
    t = tools(root)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SNAPSHOTTER_SESSION", "agent-1")
        with pytest.raises(BadInput, match="not yours"):
            t.undo(session="other")
        with pytest.raises(BadInput, match="not yours"):
            t.show_checkpoint(other_id)
        with pytest.raises(BadInput, match="not yours"):
            t.restore_files(other_id, ["keep.txt"])
        assert (root / "keep.txt").read_text() == "other\n"
        allowed = tools(root, any_session=True).undo(session="other")
    assert allowed["restored"] == ["keep.txt"]


def test_show_and_diff_are_bounded(root: Path) -> None:
    big = "".join(f"line {i}\n" for i in range(500))
    agent_turn(root, "agent-1", {"a.txt": "A2\n", "big.txt": big})
    t = tools(root)
    newest = t.list_checkpoints()["checkpoints"][-1]
    shown = t.show_checkpoint(newest["id"], max_lines=5)
    assert shown["files"] == newest["files"]
    assert shown["diff"]["truncated"] and len(shown["diff"]["patch"].splitlines()) == 5
    assert shown["diff"]["patch_lines"] > 500
    first = t.list_checkpoints()["checkpoints"][0]["id"]
    to_now = t.diff_to_now(first)
    assert to_now["to_now"] and {f["path"] for f in to_now["files"]} >= {"a.txt", "big.txt"}


def test_restore_files_puts_one_file_back(root: Path) -> None:
    t = tools(root)
    cp = t.list_checkpoints()["checkpoints"][0]["id"]
    done = t.restore_files(cp, [str(root / "b.txt")])  # an absolute path inside is fine
    assert done["restored"] == ["b.txt"]
    assert (root / "b.txt").read_text() == "b\n" and (root / "a.txt").read_text() == "A\n"
    with pytest.raises(BadInput, match="not inside the worktree"):
        t.restore_files(cp, ["/etc/passwd"])
    assert [o["op"] for o in cli_json(root, "log")] == ["restore"]


def test_checkpoint_records_a_save_point_the_agent_can_undo(root: Path) -> None:
    t = tools(root)
    save = t.checkpoint("before the refactor")  # nothing changed: a save point all the same
    assert save["label"] == "before the refactor" and save["session_id"] == "agent-1"
    assert save["files"] == []
    write(root, "keep.txt", "risky\n")
    cp = t.checkpoint("the risky edit")
    assert [f["path"] for f in cp["files"]] == ["keep.txt"], cp
    ops = cli_json(root, "log")
    assert [(op["op"], op["by"], op["checkpoints"]) for op in ops] == [
        ("checkpoint", "agent", [save["id"]]),
        ("checkpoint", "agent", [cp["id"]]),
    ]
    t.undo()
    assert (root / "keep.txt").read_text() == "keep\n"


def test_a_worktree_with_no_history_lists_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "fresh", REPO)
    assert tools(repo).list_checkpoints() == {"session": None, "checkpoints": []}
    with pytest.raises(NothingToDo):
        tools(repo).undo()


def test_checkpoint_without_hooks_starts_with_a_save_point_then_records(tmp_path: Path) -> None:
    """A runtime with the server but no hooks: the first call is a save point of the
    worktree as it is, and what follows it is undoable."""
    repo = make_repo(tmp_path / "fresh", REPO)
    t = tools(repo)
    assert t.checkpoint("start")["files"] == [], "the first snapshot is a save point"
    write(repo, "a.txt", "changed\n")
    cp = t.checkpoint("after the change")
    assert cp["session_id"] == "agent" and [f["path"] for f in cp["files"]] == ["a.txt"], cp
    t.undo()
    assert (repo / "a.txt").read_text() == "a\n"
