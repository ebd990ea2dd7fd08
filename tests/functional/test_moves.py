"""Issue 21.2: moving a directory is a move, not a deletion.

A renamed directory keeps its files' times, so the old rule ("an added file
older than the span was only made visible") took ``git mv src lib`` for three
deletions: undo left both ``src/`` and ``lib/``, and a directory moved in from
elsewhere was no checkpoint at all. What the rules in force at the span's
start would have captured, and the start tree lacks, was not there: the span
added it. Every event goes through a real ``snapshotter hook`` process in
Claude Code's shapes; the moves are made by real ``git`` and ``mv`` commands.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from builders import claude_event, files_of, hook_ok, listed, make_repo, run_cli, write

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")

SRC = {"src/app.py": "print('hi')\n", "src/util.py": "X = 1\n", "src/data/table.csv": "a,b\n1,2\n"}
GEN = {"gen/out.py": "GENERATED = True\n", "gen/sub/schema.json": '{"v": 1}\n'}


def committed(tmp_path: Path) -> Path:
    """A repository whose ``src/`` was committed well before the session starts."""
    root = make_repo(tmp_path / "repo", {"README.md": "# demo\n", **SRC})
    time.sleep(0.2)  # the files predate the span by far more than the racy window
    return root


def bash_turn(root: Path, data_dir: Path, *commands: str) -> None:
    """One Claude Code turn whose only tool is Bash, running ``commands`` for real."""

    def hook(name: str, **fields: object) -> None:
        hook_ok(claude_event(name, "s", root, **fields), data_dir, cwd=root)

    hook("SessionStart", source="startup")
    hook("UserPromptSubmit", prompt="move things around")
    tool = {
        "tool_name": "Bash",
        "tool_use_id": "t1",
        "tool_input": {"command": "; ".join(commands)},
    }
    hook("PreToolUse", **tool)
    for command in commands:
        subprocess.run(command, shell=True, cwd=root, check=True)
    hook("PostToolUse", **tool, tool_response={"stdout": "", "stderr": ""})
    hook("Stop", stop_hook_active=False)


def the_turn(root: Path, data_dir: Path) -> dict[str, str]:
    """The one turn checkpoint's files (path -> status)."""
    turns = [cp for cp in listed(root, data_dir) if cp["kind"] == "turn"]
    assert len(turns) == 1, f"expected one turn checkpoint, got {turns}"
    return files_of(turns[0])


def files_below(root: Path, top: str) -> dict[str, bytes]:
    """Every file under ``root/top``, by worktree path, with its bytes."""
    base = root / top
    if not base.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in base.rglob("*") if p.is_file()}


def moved(files: dict[str, str], old: str, new: str) -> dict[str, str]:
    return {new + path[len(old) :]: text for path, text in files.items()}


def as_bytes(files: dict[str, str]) -> dict[str, bytes]:
    return {path: text.encode() for path, text in files.items()}


def undo(root: Path, data_dir: Path) -> dict[str, Any]:
    done = run_cli("undo", "-C", root, "--json", data_dir=data_dir)
    assert done.returncode == 0, f"undo failed: {done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def redo(root: Path, data_dir: Path) -> None:
    done = run_cli("redo", "-C", root, data_dir=data_dir)
    assert done.returncode == 0, f"redo failed: {done.stderr}"


def assert_moves_undo_and_redo(root: Path, data_dir: Path, old: str, new: str) -> None:
    """The turn moved ``src/`` (as ``old``) to ``new``: list, undo and redo say so exactly."""
    lib = moved(SRC, "src", new)
    expected = {**dict.fromkeys(SRC, "deleted"), **dict.fromkeys(lib, "added")}
    assert the_turn(root, data_dir) == expected, "a move lists its adds and its deletes"
    result = undo(root, data_dir)
    assert sorted(result["restored"]) == sorted(SRC), f"undo restores src/: {result}"
    assert sorted(result["removed"]) == sorted(lib), f"undo removes {new}/: {result}"
    assert files_below(root, "src") == as_bytes(SRC), "undo brings src/ back byte for byte"
    assert not (root / new).exists() or not files_below(root, new), f"undo leaves no {new}/"
    redo(root, data_dir)
    assert files_below(root, new) == as_bytes(lib), f"redo brings {new}/ back byte for byte"
    assert files_below(root, "src") == {}, "redo leaves no src/"


def test_git_mv_of_a_committed_directory_is_a_move(tmp_path: Path, data_dir: Path) -> None:
    root = committed(tmp_path)
    bash_turn(root, data_dir, "git mv src lib")
    assert_moves_undo_and_redo(root, data_dir, "src", "lib")


def test_plain_mv_of_a_committed_directory_is_a_move(tmp_path: Path, data_dir: Path) -> None:
    root = committed(tmp_path)
    bash_turn(root, data_dir, "mv src lib")
    assert_moves_undo_and_redo(root, data_dir, "src", "lib")


def test_a_directory_renamed_twice_in_one_turn_is_one_move(tmp_path: Path, data_dir: Path) -> None:
    root = committed(tmp_path)
    bash_turn(root, data_dir, "git mv src mid", "mv mid lib")
    assert_moves_undo_and_redo(root, data_dir, "src", "lib")
    assert not (root / "mid").exists(), "the name in between never comes back"


def test_a_directory_moved_in_from_outside_is_added_and_undone(
    tmp_path: Path, data_dir: Path
) -> None:
    root = committed(tmp_path)
    outside = tmp_path / "outside"
    for rel, text in GEN.items():
        write(outside, rel, text)
    time.sleep(0.2)  # generated well before the turn, as a build's output is
    bash_turn(root, data_dir, f"mv {outside / 'gen'} gen")
    assert the_turn(root, data_dir) == dict.fromkeys(GEN, "added"), (
        "a directory moved in is the turn's own addition"
    )
    result = undo(root, data_dir)
    assert sorted(result["removed"]) == sorted(GEN), f"undo removes gen/: {result}"
    assert files_below(root, "gen") == {}, "undo leaves no gen/ file"
    assert files_below(root, "src") == as_bytes(SRC), "undo touches nothing else"
    redo(root, data_dir)
    assert files_below(root, "gen") == as_bytes(GEN), "redo brings gen/ back byte for byte"


def test_a_directory_moved_out_of_the_worktree_comes_back_on_undo(
    tmp_path: Path, data_dir: Path
) -> None:
    root = committed(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    bash_turn(root, data_dir, f"mv src {outside / 'x'}")
    assert the_turn(root, data_dir) == dict.fromkeys(SRC, "deleted")
    undo(root, data_dir)
    assert files_below(root, "src") == as_bytes(SRC), "undo brings src/ back byte for byte"
    redo(root, data_dir)
    assert files_below(root, "src") == {}, "redo takes src/ away again"


def test_a_directory_moved_out_of_an_ignored_one_is_a_move(tmp_path: Path, data_dir: Path) -> None:
    """``build/`` was ignored when the turn began: what comes out of it is the turn's."""
    root = make_repo(tmp_path / "repo", {".gitignore": "build/\n", "README.md": "# demo\n"})
    for rel, text in GEN.items():
        write(root, "build/" + rel, text)
    time.sleep(0.2)
    bash_turn(root, data_dir, "mv build/gen gen")
    assert the_turn(root, data_dir) == dict.fromkeys(GEN, "added")
    undo(root, data_dir)
    assert files_below(root, "gen") == {}, "undo takes gen/ away"
    assert files_below(root, "build") == {}, "undo never writes into the ignored build/"
    # The ignored copy is gone for good: it was never captured (ignored), so
    # only the moved-in one can come back, and redo brings it.
    redo(root, data_dir)
    assert files_below(root, "gen") == as_bytes(GEN)


def test_a_file_made_visible_by_the_start_trees_rules_is_still_left_alone(
    tmp_path: Path, data_dir: Path
) -> None:
    """The agent un-ignores ``secrets/`` and moves ``src`` in one turn: only the move is its."""
    root = make_repo(
        tmp_path / "repo", {".gitignore": "secrets/\n", "README.md": "# demo\n", **SRC}
    )
    write(root, "secrets/.env", "API_KEY=the user's\n")
    time.sleep(0.2)
    bash_turn(root, data_dir, "printf '# none\\n' > .gitignore", "git mv src lib")
    lib = moved(SRC, "src", "lib")
    expected = {
        ".gitignore": "modified",
        **dict.fromkeys(SRC, "deleted"),
        **dict.fromkeys(lib, "added"),
    }
    assert the_turn(root, data_dir) == expected, "secrets/.env was only made visible"
    undo(root, data_dir)
    assert (root / "secrets/.env").read_text() == "API_KEY=the user's\n", "never deleted"
    assert files_below(root, "src") == as_bytes(SRC)
    assert files_below(root, "lib") == {}


def test_rules_below_the_top_and_in_info_exclude_are_the_starts_too(
    tmp_path: Path, data_dir: Path
) -> None:
    """``src/.gitignore`` and ``info/exclude`` at the start decide, wherever a file goes."""
    root = make_repo(
        tmp_path / "repo", {"README.md": "# demo\n", "src/.gitignore": "*.log\n", **SRC}
    )
    write(root, "src/debug.log", "the user's log\n")
    write(root, ".git/info/exclude", "scratch.txt\n")
    write(root, "scratch.txt", "the user's scratch\n")
    time.sleep(0.2)
    bash_turn(
        root,
        data_dir,
        "git rm -q --cached src/.gitignore",
        "rm src/.gitignore",
        "git add -f scratch.txt",
        "mv src/data data",
    )
    assert the_turn(root, data_dir) == {
        "src/.gitignore": "deleted",
        "src/data/table.csv": "deleted",
        "data/table.csv": "added",
    }, "the log and the scratch file were only made visible; data/ was moved"
    undo(root, data_dir)
    assert (root / "src/debug.log").read_text() == "the user's log\n", "never deleted"
    assert (root / "scratch.txt").read_text() == "the user's scratch\n", "never deleted"
    assert (root / "src/data/table.csv").read_text() == SRC["src/data/table.csv"]
    assert not (root / "data").exists() or files_below(root, "data") == {}
