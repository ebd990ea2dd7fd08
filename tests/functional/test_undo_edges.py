"""Undo does what the user meant after what agents really do (issue 21, items 1, 3, 6).

Every test plays a Claude Code session through real ``snapshotter hook``
processes, makes the agent's effects with real ``git`` and shell commands, and
checks the worktree's bytes after real ``snapshotter`` commands.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import claude_event, git, hook_ok, listed, make_repo, run_cli, write

from snapshotter.logfile import log_path

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")

S = "sess-edges"


def sn(root: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``snapshotter -C ROOT ARGS`` in its own process."""
    return run_cli("-C", root, *args)


def start(root: Path, cwd: Path | None = None) -> None:
    hook_ok(claude_event("SessionStart", S, cwd or root, source="startup"))


def prompt(root: Path, text: str) -> None:
    hook_ok(claude_event("UserPromptSubmit", S, root, prompt=text))


def stop(root: Path) -> None:
    hook_ok(claude_event("Stop", S, root, stop_hook_active=False))


def bash(root: Path, command: str, n: int, *, post: bool = True) -> None:
    """A Bash tool call: PreToolUse, the command really run in ``root``, PostToolUse."""
    tool: dict[str, Any] = {"tool_name": "Bash", "tool_input": {"command": command}}
    hook_ok(claude_event("PreToolUse", S, root, tool_use_id=f"toolu_{n}", **tool))
    subprocess.run(command, shell=True, cwd=root, check=True, capture_output=True)
    if post:
        hook_ok(
            claude_event("PostToolUse", S, root, tool_use_id=f"toolu_{n}", tool_response={}, **tool)
        )


def edit(root: Path, cwd: Path, rel: str, text: str, n: int) -> None:
    """An Edit tool call naming ``root/rel`` by its absolute path."""
    tool: dict[str, Any] = {
        "tool_name": "Edit",
        "tool_input": {"file_path": str(root / rel), "old_string": "", "new_string": text},
    }
    hook_ok(claude_event("PreToolUse", S, cwd, tool_use_id=f"toolu_{n}", **tool))
    write(root, rel, text)
    hook_ok(claude_event("PostToolUse", S, cwd, tool_use_id=f"toolu_{n}", tool_response={}, **tool))


# -- 1. a turn that ends where it began ---------------------------------------------------------


def test_a_turn_with_no_net_change_keeps_its_tools_and_undo_passes_it_by(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"f.txt": "f\n", "g.txt": "g\n"})
    start(root)
    prompt(root, "edit g")
    bash(root, "printf 'agent g\\n' > g.txt", 1)
    stop(root)
    prompt(root, "try f, then put it back")
    bash(root, "echo x > f.txt", 2)
    bash(root, "git checkout -- f.txt", 3)
    stop(root)

    cps = listed(root)
    turns = [cp for cp in cps if cp["kind"] == "turn"]
    tools = [cp for cp in cps if cp["kind"] == "tool"]
    assert len(turns) == 2, cps
    empty = turns[1]
    assert empty["files"] == [] and empty["prompt"] == "try f, then put it back", empty
    assert all(t["parent"] is not None for t in tools), "every tool is nested under its turn"
    assert [t["parent"] for t in tools][-2:] == [empty["id"], empty["id"]]
    shown = sn(root, "list").stdout
    assert "no net change" in shown, shown

    done = sn(root, "undo")
    assert done.returncode == 0, done.stderr
    assert (root / "g.txt").read_text() == "g\n", "undo reverts the newest turn that changed"
    assert (root / "f.txt").read_text() == "f\n", "never the last tool of the empty turn"
    undone = [cp["id"] for cp in listed(root) if cp["undone"]]
    assert turns[0]["id"] in undone and empty["id"] not in undone


def test_undo_after_an_aborted_rebase_does_not_bring_the_conflict_back(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"f.txt": "base\n", "a.txt": "a\n"})
    git(root, "checkout", "-q", "-b", "topic")
    write(root, "f.txt", "topic\n")
    git(root, "commit", "-qam", "topic")
    git(root, "checkout", "-q", "main")
    write(root, "f.txt", "main\n")
    write(root, "m.txt", "only on main\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "main")
    git(root, "checkout", "-q", "topic")
    start(root)
    prompt(root, "take notes")
    bash(root, "echo agent > notes.txt", 1)  # (untracked: the rebase goes ahead)
    stop(root)
    before = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    prompt(root, "rebase on main")
    bash(root, "git rebase main || true", 2)
    assert "<<<<<<<" in (root / "f.txt").read_text(), "the rebase stopped on a conflict"
    bash(root, "git rebase --abort", 3)
    stop(root)
    assert {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()} == before

    done = sn(root, "undo")
    assert done.returncode == 0, done.stderr
    assert (root / "f.txt").read_text() == "topic\n", "no conflict markers put back"
    assert not (root / "m.txt").exists(), "no file of the other branch put back"
    assert not (root / "notes.txt").exists(), "the turn that changed something is undone"


# -- 3. undo does not refuse what is already right ---------------------------------------------


def test_undo_accepts_a_file_the_user_already_put_back(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"f.txt": "f\n", "g.txt": "g\n"})
    start(root)
    prompt(root, "edit both")
    bash(root, "echo agent > f.txt && echo agent > g.txt", 1)
    stop(root)
    git(root, "checkout", "--", "f.txt")  # the user puts f.txt back by hand

    done = sn(root, "undo")
    assert done.returncode == 0, done.stderr
    assert (root / "f.txt").read_text() == "f\n"
    assert (root / "g.txt").read_text() == "g\n"
    again = sn(root, "redo")
    assert again.returncode == 0, again.stderr
    assert (root / "f.txt").read_text() == "f\n", "redo puts back the state before the undo"
    assert (root / "g.txt").read_text() == "agent\n"


# -- 6. what the user meant -----------------------------------------------------------------------


def test_undo_while_the_turn_is_still_open_reverts_the_damage_in_flight(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n"})
    start(root)
    prompt(root, "edit a")
    bash(root, "echo agent > a.txt", 1)
    stop(root)
    prompt(root, "remove b")
    bash(root, "rm b.txt", 2, post=False)  # Esc: no PostToolUse, no Stop

    shown = sn(root, "list")
    assert "interrupted: remove b" in shown.stdout, shown.stdout
    done = sn(root, "undo")
    assert done.returncode == 0, done.stderr
    assert (root / "b.txt").read_text() == "b\n", "the interrupted turn is undone"
    assert (root / "a.txt").read_text() == "agent\n", "the finished turn before it is not"
    prompt(root, "next")  # the session goes on: nothing recorded twice
    stop(root)
    assert [cp["label"] for cp in listed(root) if cp["kind"] == "turn"] == [
        "edit a",
        "interrupted: remove b",
    ]


def test_checkpoint_after_undo_holds_only_the_users_edit(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    start(root)
    prompt(root, "edit a and c")
    bash(root, "echo agent > a.txt && rm c.txt", 1)
    stop(root)
    assert sn(root, "undo").returncode == 0
    write(root, "b.txt", "mine\n")

    done = sn(root, "checkpoint", "-m", "my b edit", "--json")
    assert done.returncode == 0, done.stderr
    cp = json.loads(done.stdout)
    assert [f["path"] for f in cp["files"]] == ["b.txt"], cp
    assert sn(root, "undo").returncode == 0
    assert (root / "b.txt").read_text() == "b\n"
    assert (root / "a.txt").read_text() == "a\n", "the agent's undone change stays undone"
    assert (root / "c.txt").read_text() == "c\n"


def test_a_named_file_outside_the_sessions_directory_is_the_tools(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"README.md": "# r\n", "sub/x.txt": "x\n"})
    sub = root / "sub"
    start(root, cwd=sub)
    prompt(sub, "fix the readme")
    edit(root, sub, "README.md", "# agent\n", 1)
    stop(sub)

    cps = listed(root)
    paths = {f["path"] for cp in cps for f in cp["files"]}
    assert "README.md" in paths, cps
    done = sn(sub, "undo")
    assert done.returncode == 0, done.stderr
    assert (root / "README.md").read_text() == "# r\n"
    assert sn(sub, "redo").returncode == 0
    assert (root / "README.md").read_text() == "# agent\n"


def test_a_named_path_outside_the_worktree_is_logged(tmp_path: Path, data_dir: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    start(root)
    prompt(root, "write outside")
    tool = {"tool_name": "Write", "tool_input": {"file_path": str(elsewhere / "o.txt")}}
    hook_ok(claude_event("PreToolUse", S, root, tool_use_id="toolu_9", **tool))
    write(elsewhere, "o.txt", "o\n")
    hook_ok(claude_event("PostToolUse", S, root, tool_use_id="toolu_9", **tool))
    text = log_path(data_dir).read_text()
    assert str(elsewhere / "o.txt") in text and "outside the worktree" in text, text
    assert text.count("o.txt") == 1, "one line per tool, not one per event"


def test_no_refusal_for_snapshotters_own_writes(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n"})
    start(root)
    prompt(root, "one")
    bash(root, "echo one > a.txt", 1)
    stop(root)
    prompt(root, "two")
    bash(root, "echo two > a.txt && echo two > b.txt", 2)
    stop(root)
    first, second = [cp["id"] for cp in listed(root) if cp["kind"] == "turn"]

    # restore, then undo: the restore is snapshotter's own write, not the user's edit
    restored = sn(root, "restore", str(first), "--", str(root / "a.txt"))
    assert restored.returncode == 0, restored.stderr
    assert (root / "a.txt").read_text() == "a\n"
    undone = sn(root, "undo")
    assert undone.returncode == 0, undone.stderr
    assert (root / "a.txt").read_text() == "one\n" and (root / "b.txt").read_text() == "b\n"
    assert sn(root, "redo").returncode == 0
    assert sn(root, "redo").returncode == 0
    assert (root / "a.txt").read_text() == "two\n" and (root / "b.txt").read_text() == "two\n"

    # checkpoint 1 never touched b.txt and a later checkpoint of the same session
    # did: restoring b.txt as before checkpoint 1 is no "you edited it"
    again = sn(root, "restore", str(first), "--", str(root / "b.txt"))
    assert again.returncode == 0, again.stderr
    assert (root / "b.txt").read_text() == "b\n"
    assert second > first


def test_a_refusal_names_who_changed_the_file(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    start(root)
    prompt(root, "one")
    bash(root, "echo one > a.txt", 1)
    stop(root)
    write(root, "a.txt", "mine\n")
    refused = sn(root, "undo")
    assert refused.returncode == 4
    assert "a.txt (by you)" in refused.stderr, refused.stderr
