"""When the worktree loses its ``.git`` or is renamed, the history is not lost (issue 21.5).

Real processes throughout: every event is a ``snapshotter hook`` process fed
a Claude-shaped event, and every command a ``snapshotter`` process.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from builders import claude_event, hook_ok, listed, run_cli, snapshot_dir_bytes, write

from snapshotter.logfile import log_path

SESSION = "sess-gone"


def bash(name: str, root: Path, command: str) -> dict[str, Any]:
    """A Claude ``PreToolUse``/``PostToolUse`` of the Bash tool."""
    return claude_event(
        name,
        SESSION,
        root,
        tool_name="Bash",
        tool_use_id="toolu_1",
        tool_input={"command": command},
    )


def log_lines(data_dir: Path) -> list[str]:
    path = log_path(data_dir)
    return path.read_text().splitlines() if path.exists() else []


def test_rm_rf_dot_git_is_said_once_and_recover_brings_the_files_back(
    repo: Path, data_dir: Path
) -> None:
    write(repo, "src/new.py", b"fresh = True\n")  # untracked: only the store has it
    src = snapshot_dir_bytes(repo / "src")
    hook_ok(claude_event("SessionStart", SESSION, repo, source="startup"))
    hook_ok(claude_event("UserPromptSubmit", SESSION, repo, prompt="clean up"))
    hook_ok(bash("PreToolUse", repo, "rm -rf .git src"))
    shutil.rmtree(repo / ".git")
    shutil.rmtree(repo / "src")
    hook_ok(bash("PostToolUse", repo, "rm -rf .git src"))
    hook_ok(claude_event("Stop", SESSION, repo))

    lines = log_lines(data_dir)
    assert len(lines) == 1, f"one hook.log line when capture stops: {lines}"
    assert "capture stopped" in lines[0] and "no longer a git worktree" in lines[0], lines[0]
    assert "recover" in lines[0], f"the log names the way back: {lines[0]}"

    for command in (("list",), ("undo",), ("reset", "--original")):
        done = run_cli(*command, "-C", repo)
        assert done.returncode == 1, f"{command}: exit {done.returncode} ({done.stderr!r})"
        said = done.stderr.strip()
        assert len(said.splitlines()) == 1, f"{command}: one stderr line: {said!r}"
        assert "no longer a git worktree" in said and "recover" in said, f"{command}: {said!r}"

    done = run_cli("recover", "-C", repo)
    assert done.returncode == 0, f"recover: {done.stderr}"
    assert snapshot_dir_bytes(repo / "src") == src, "recover brings src/ back byte-exact"
    assert not (repo / ".git").exists(), "snapshotter never creates a .git"
    assert (repo / "README.md").read_bytes() == b"# demo\n"
    assert len(log_lines(data_dir)) == 1, "no more hook.log lines"


def test_recover_never_overwrites_bytes_the_store_does_not_hold(repo: Path, data_dir: Path) -> None:
    hook_ok(claude_event("UserPromptSubmit", SESSION, repo, prompt="go"))
    shutil.rmtree(repo / ".git")
    write(repo, "src/app.py", b"mine, never captured\n")
    (repo / "src" / "util.py").unlink()

    done = run_cli("recover", "-C", repo, "--json")
    assert done.returncode == 0, f"recover: {done.stderr}"
    report = json.loads(done.stdout)
    assert report["restored"] == ["src/util.py"] and report["kept"] == ["src/app.py"], report
    assert (repo / "src" / "app.py").read_bytes() == b"mine, never captured\n"
    assert (repo / "src" / "util.py").read_bytes() == b"X = 1\n"


def test_renamed_worktree_is_named_and_adopt_brings_the_history(repo: Path, data_dir: Path) -> None:
    hook_ok(claude_event("UserPromptSubmit", SESSION, repo, prompt="edit"))
    write(repo, "src/app.py", b"print('edited')\n")
    write(repo, "notes.txt", b"new\n")
    hook_ok(claude_event("Stop", SESSION, repo))
    assert len(listed(repo)) == 1, "one turn recorded"
    moved = repo.with_name("repo2")
    repo.rename(moved)

    done = run_cli("list", "-C", moved)
    assert done.returncode == 0, f"list: {done.stderr}"
    assert str(repo) in done.stderr and "adopt" in done.stderr, f"list names it: {done.stderr!r}"
    undo = run_cli("undo", "-C", moved)
    assert undo.returncode == 3 and "adopt" in undo.stderr, f"undo: {undo.stderr!r}"

    done = run_cli("adopt", "-C", moved)
    assert done.returncode == 0, f"adopt: {done.stderr}"
    assert [cp["id"] for cp in listed(moved)] == [1], "the history is here now"
    assert run_cli("adopt", "-C", moved).returncode != 0, "nothing left to adopt"

    undo = run_cli("undo", "-C", moved)
    assert undo.returncode == 0, f"undo: {undo.stderr}"
    assert (moved / "src" / "app.py").read_bytes() == b"print('hi')\n"
    assert not (moved / "notes.txt").exists(), "undo removed the file the turn added"


def test_adopt_refuses_a_worktree_with_checkpoints_of_its_own(repo: Path, data_dir: Path) -> None:
    hook_ok(claude_event("UserPromptSubmit", SESSION, repo, prompt="edit"))
    write(repo, "a.txt", b"a\n")
    hook_ok(claude_event("Stop", SESSION, repo))
    moved = repo.with_name("repo2")
    repo.rename(moved)
    hook_ok(claude_event("UserPromptSubmit", "other", moved, prompt="more"))
    write(moved, "b.txt", b"b\n")
    hook_ok(claude_event("Stop", "other", moved))

    done = run_cli("adopt", str(repo), "-C", moved)
    assert done.returncode == 1 and "of its own" in done.stderr, f"adopt: {done.stderr!r}"
    assert [cp["session_id"] for cp in listed(moved)] == ["other"], "its own history stays"


def test_adopt_and_recover_explain_themselves_in_help() -> None:
    for name, needle in (("adopt", "moved"), ("recover", ".git is gone")):
        done = run_cli(name, "--help")
        assert done.returncode == 0 and needle in done.stdout, f"{name} --help: {done.stdout}"
    listing = run_cli("--help").stdout
    assert "adopt" in listing and "recover" in listing, f"both listed: {listing}"
