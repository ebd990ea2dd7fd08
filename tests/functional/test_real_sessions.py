"""Real agents are not our fixtures (issue 11): `cd`, Esc, sub-agents, parallel sessions.

Every event goes through a real `snapshotter hook` process fed JSON on stdin,
started in the directory the event names (Claude Code's hook process moves
with its shell), in the payload shapes Claude Code 2.1 and docker-agent send.
"""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from builders import claude_event as claude
from builders import fast_and_full, files_of, hook_ok, listed, load_state, run_cli, write

from snapshotter.logfile import log_path

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")


def hook(
    data_dir: Path, event: dict[str, Any], env: dict[str, str] | None = None, *args: str
) -> None:
    """One event through `snapshotter hook`, started in the event's cwd (as Claude Code's)."""
    hook_ok(event, data_dir, *args, cwd=event["cwd"], env=env)


def no_failures_logged(data_dir: Path) -> None:
    log = log_path(data_dir)
    assert not log.exists(), f"hooks logged failures: {log.read_text()}"


# -- 1. one scope per session -------------------------------------------------


def test_a_cd_in_the_agents_shell_does_not_shrink_the_turn(repo: Path, data_dir: Path) -> None:
    """turn_start in the repo; the shell cds into src; turn_end arrives from src."""
    src = repo / "src"
    hook(data_dir, {"session_id": "s", "cwd": str(repo), "hook_event_name": "turn_start"})
    write(repo, "README.md", "# rewritten by the agent\n")
    write(repo, "src/a.py", "A = 1\n")
    hook(data_dir, {"session_id": "s", "cwd": str(src), "hook_event_name": "turn_end"})
    (cp,) = listed(repo, data_dir)
    assert files_of(cp) == {"README.md": "modified", "src/a.py": "added"}, (
        "the turn must hold every file of the session's scope, not just those under the cwd"
    )
    done = run_cli("reset", "--original", data_dir=data_dir, cwd=src)
    assert done.returncode == 0, done.stderr
    assert (repo / "README.md").read_text() == "# demo\n", "reset --original brings README back"
    assert not (repo / "src/a.py").exists()
    no_failures_logged(data_dir)


def test_later_events_from_another_worktree_stay_with_the_sessions_own(
    repo: Path, data_dir: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["git", "init", "-q", str(other)], check=True)
    write(other, "o.txt", "other's file\n")
    hook(data_dir, claude("UserPromptSubmit", "s", repo, prompt="go"))
    write(repo, "src/app.py", "print('agent')\n")
    write(other, "o.txt", "changed in the other repository\n")
    hook(data_dir, claude("Stop", "s", other, stop_hook_active=False))
    (cp,) = listed(repo, data_dir)
    assert files_of(cp) == {"src/app.py": "modified"}, "the turn is the session's worktree's"
    assert run_cli("list", "--json", data_dir=data_dir, cwd=other).stdout.strip() in ("", "[]"), (
        "nothing may be recorded in a worktree the session never started in"
    )


def test_claude_project_dir_names_the_sessions_scope(repo: Path, data_dir: Path) -> None:
    """The first event already comes from src, but the project is the whole repository."""
    src = repo / "src"
    env = {"CLAUDE_PROJECT_DIR": str(repo)}
    hook(data_dir, claude("UserPromptSubmit", "s", src, prompt="go"), env)
    write(repo, "README.md", "# agent\n")
    hook(data_dir, claude("Stop", "s", src, stop_hook_active=False), env)
    (cp,) = listed(repo, data_dir)
    assert files_of(cp) == {"README.md": "modified"}, "CLAUDE_PROJECT_DIR sets the scope"


def test_without_a_project_dir_the_first_cwd_still_limits_the_scope(
    repo: Path, data_dir: Path
) -> None:
    """SPEC §3's scope rule applies to the first event: started in src, limited to src."""
    src = repo / "src"
    hook(data_dir, {"session_id": "s", "cwd": str(src), "hook_event_name": "turn_start"})
    write(repo, "README.md", "# outside the scope\n")
    write(repo, "src/app.py", "print('inside')\n")
    hook(data_dir, {"session_id": "s", "cwd": str(repo), "hook_event_name": "turn_end"})
    (cp,) = listed(repo, data_dir)
    assert files_of(cp) == {"src/app.py": "modified"}


# -- 2. interrupted turns -------------------------------------------------------


def test_a_prompt_after_esc_closes_the_interrupted_turn(repo: Path, data_dir: Path) -> None:
    """UserPromptSubmit, PreToolUse(Bash), edit, Esc (nothing), UserPromptSubmit, Stop."""
    write(repo, "lib.py", "def f():\n    return 1\n")
    subprocess.run(["git", "add", "lib.py"], cwd=repo, check=True)
    original = (repo / "lib.py").read_bytes()
    hook(
        data_dir,
        claude(
            "UserPromptSubmit",
            "s",
            repo,
            prompt="extend lib",
            prompt_id="p1",
            permission_mode="default",
        ),
    )
    hook(
        data_dir,
        claude(
            "PreToolUse",
            "s",
            repo,
            tool_name="Bash",
            tool_use_id="t1",
            tool_input={"command": "echo more >> lib.py"},
            prompt_id="p1",
        ),
    )
    with (repo / "lib.py").open("a") as f:
        f.write("# more\n")
    hook(data_dir, claude("UserPromptSubmit", "s", repo, prompt="never mind", prompt_id="p2"))
    hook(data_dir, claude("Stop", "s", repo, stop_hook_active=False))
    cps = listed(repo, data_dir)
    assert [(cp["kind"], cp["reason"], cp["label"], files_of(cp)) for cp in cps] == [
        ("turn", "interrupted", "interrupted: extend lib", {"lib.py": "modified"})
    ], f"the interrupted turn must be recorded, the next one empty: {cps}"
    done = run_cli("reset", "--original", data_dir=data_dir, cwd=repo)
    assert done.returncode == 0, done.stderr
    assert (repo / "lib.py").read_bytes() == original


def test_interrupted_turn_keeps_its_tool_checkpoints_nested(repo: Path, data_dir: Path) -> None:
    hook(data_dir, claude("UserPromptSubmit", "s", repo, prompt="one"))
    edit = {"file_path": str(repo / "README.md")}
    hook(
        data_dir,
        claude("PreToolUse", "s", repo, tool_name="Edit", tool_use_id="t1", tool_input=edit),
    )
    write(repo, "README.md", "# edited\n")
    hook(
        data_dir,
        claude(
            "PostToolUse",
            "s",
            repo,
            tool_name="Edit",
            tool_use_id="t1",
            tool_input=edit,
            tool_response={"success": True},
        ),
    )
    hook(
        data_dir,
        claude(
            "PreToolUse",
            "s",
            repo,
            tool_name="Bash",
            tool_use_id="t2",
            tool_input={"command": "sleep 100"},
        ),
    )
    write(repo, "src/util.py", "X = 2\n")
    hook(data_dir, claude("SessionStart", "s", repo, source="resume"))
    cps = listed(repo, data_dir)
    turn = next(cp for cp in cps if cp["kind"] == "turn")
    assert (turn["reason"], turn["label"]) == ("interrupted", "interrupted: one")
    assert files_of(turn) == {"README.md": "modified", "src/util.py": "modified"}
    tools = [cp for cp in cps if cp["kind"] == "tool"]
    assert [(t["label"], t["parent"]) for t in tools] == [("Edit README.md", turn["id"])]
    done = run_cli("undo", "--json", data_dir=data_dir, cwd=repo)
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)["restored"]) == ["README.md", "src/util.py"]


# -- 3. attribution by tool input -------------------------------------------------


@pytest.mark.parametrize("per_session", fast_and_full(3, 6))
def test_parallel_named_writes_in_two_sessions(
    repo: Path, data_dir: Path, per_session: int
) -> None:
    """Each tool holds its own file, each turn its own tools', undo leaves the other's.

    Every tool is open while every write lands: 6 at once, 12 in the full run.
    """
    sessions = {
        "main": [f"m/f{i}.txt" for i in range(per_session)],
        "bg": [f"b/f{i}.txt" for i in range(per_session)],
    }
    for session in sessions:  # docker-agent shape: a background agent is its own session
        hook(data_dir, {"session_id": session, "cwd": str(repo), "hook_event_name": "turn_start"})
    tools = [(s, f"{s}-{i}", path) for s, paths in sessions.items() for i, path in enumerate(paths)]

    def event(kind: str, session: str, tool_id: str, path: str) -> dict[str, Any]:
        return {
            "session_id": session,
            "cwd": str(repo),
            "hook_event_name": kind,
            "tool_name": "write_file",
            "tool_use_id": tool_id,
            "tool_input": {"path": path, "content": "..."},
        }

    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(lambda t: hook(data_dir, event("pre_tool_use", *t)), tools))
        for _session, tool_id, path in tools:  # every write lands while all are open
            write(repo, path, f"written by {tool_id}\n")
        list(pool.map(lambda t: hook(data_dir, event("post_tool_use", *t)), reversed(tools)))
    for session in sessions:
        hook(data_dir, {"session_id": session, "cwd": str(repo), "hook_event_name": "turn_end"})
    no_failures_logged(data_dir)
    cps = listed(repo, data_dir, "--all")
    for session, paths in sessions.items():
        mine = [cp for cp in cps if cp["session_id"] == session]
        tool_files = sorted(tuple(files_of(cp)) for cp in mine if cp["kind"] == "tool")
        assert tool_files == [(p,) for p in sorted(paths)], (
            f"{session}: each tool checkpoint must hold exactly its own file: {tool_files}"
        )
        (turn,) = [cp for cp in mine if cp["kind"] == "turn"]
        assert sorted(files_of(turn)) == sorted(paths), f"{session}: the turn's own files only"
    theirs = {p: (repo / p).read_bytes() for p in sessions["bg"]}
    done = run_cli("undo", "--session", "main", data_dir=data_dir, cwd=repo)
    assert done.returncode == 0, done.stderr
    assert all(not (repo / p).exists() for p in sessions["main"]), "main's writes undone"
    assert {p: (repo / p).read_bytes() for p in sessions["bg"]} == theirs, (
        "undoing one session's turn must leave the other session's files byte-identical"
    )


def test_a_relative_path_in_tool_input_is_relative_to_the_events_cwd(
    repo: Path, data_dir: Path
) -> None:
    src = repo / "src"
    hook(data_dir, {"session_id": "s", "cwd": str(repo), "hook_event_name": "turn_start"})
    for tool_id, name in (("a", "one.py"), ("b", "two.py")):
        hook(
            data_dir,
            {
                "session_id": "s",
                "cwd": str(src),
                "hook_event_name": "pre_tool_use",
                "tool_name": "edit_file",
                "tool_use_id": tool_id,
                "tool_input": {"paths": [name]},
            },
        )
    write(repo, "src/one.py", "1\n")
    write(repo, "src/two.py", "2\n")
    for tool_id, name in (("b", "two.py"), ("a", "one.py")):
        hook(
            data_dir,
            {
                "session_id": "s",
                "cwd": str(src),
                "hook_event_name": "post_tool_use",
                "tool_name": "edit_file",
                "tool_use_id": tool_id,
                "tool_input": {"paths": [name]},
            },
        )
    tools = [cp for cp in listed(repo, data_dir) if cp["kind"] == "tool"]
    assert [files_of(cp) for cp in tools] == [{"src/two.py": "added"}, {"src/one.py": "added"}]
    assert [cp["named_paths"] for cp in tools] == [["src/two.py"], ["src/one.py"]]


# -- 4. failed tools end their span --------------------------------------------------


def test_failed_tools_end_their_span(repo: Path, data_dir: Path) -> None:
    """Claude Code's PostToolUseFailure and docker-agent's tool_error both record."""
    hook(
        data_dir,
        claude(
            "PreToolUse",
            "cc",
            repo,
            tool_name="Bash",
            tool_use_id="t1",
            tool_input={"command": "make"},
        ),
    )
    write(repo, "build.txt", "half-built\n")
    hook(
        data_dir,
        claude(
            "PostToolUseFailure",
            "cc",
            repo,
            tool_name="Bash",
            tool_use_id="t1",
            tool_input={"command": "make"},
            error="Exit code 2",
            is_interrupt=False,
        ),
    )
    hook(
        data_dir,
        {
            "session_id": "da",
            "cwd": str(repo),
            "hook_event_name": "pre_tool_use",
            "tool_name": "shell",
            "tool_use_id": "c1",
        },
    )
    write(repo, "src/app.py", "broken(\n")
    hook(
        data_dir,
        {
            "session_id": "da",
            "cwd": str(repo),
            "hook_event_name": "post_tool_use",
            "tool_name": "shell",
            "tool_use_id": "c1",
            "tool_error": True,
            "tool_response": "exit status 1",
        },
    )
    cps = listed(repo, data_dir, "--all")
    assert [(cp["session_id"], cp["tool_name"], files_of(cp)) for cp in cps] == [
        ("cc", "Bash", {"build.txt": "added"}),
        ("da", "shell", {"src/app.py": "modified"}),
    ]


def test_gc_all_forgets_where_idle_sessions_worked(repo: Path, data_dir: Path) -> None:
    hook(data_dir, {"session_id": "old", "cwd": str(repo), "hook_event_name": "turn_start"})
    hook(data_dir, {"session_id": "new", "cwd": str(repo), "hook_event_name": "turn_start"})
    records = sorted((data_dir / "sessions").iterdir())
    assert len(records) == 2, "each session's first event recorded where it works"
    old = next(r for r in records if json.loads(r.read_text())["session_id"] == "old")
    os.utime(old, (0, 0))  # idle since 1970
    done = run_cli("gc", "--all", "--max-age-days", "30", data_dir=data_dir, cwd=repo)
    assert done.returncode == 0, done.stderr
    left = [json.loads(r.read_text())["session_id"] for r in (data_dir / "sessions").iterdir()]
    assert left == ["new"], f"only the idle session's record goes: {left}"


# -- 4. never on the runtime's clock -------------------------------------------------


def test_session_end_leaves_gc_to_a_process_of_its_own(repo: Path, data_dir: Path) -> None:
    """The retention gc applies must not run inside the session_end hook (issue 11.4).

    A gc already holding the store's gc lock makes the detached one give up, so
    whatever the hook itself did is all that happened when it returns.
    """
    import time

    import filelock

    for i in range(3):
        hook(data_dir, {"session_id": "s", "cwd": str(repo), "hook_event_name": "turn_start"})
        write(repo, f"t{i}.txt", f"turn {i}\n")
        hook(data_dir, {"session_id": "s", "cwd": str(repo), "hook_event_name": "turn_end"})
    (store,) = (p.parent for p in (data_dir / "snapshot").glob("*/git"))
    end = {"session_id": "s", "cwd": str(repo), "hook_event_name": "SessionEnd"}
    with filelock.FileLock(str(store / "gc.lock"), timeout=30):
        hook(data_dir, end, None, "--arg", "max_checkpoints=1")
        assert len(listed(repo, data_dir)) == 3, "the hook returned before any retention ran"
    hook(data_dir, end, None, "--arg", "max_checkpoints=1")
    deadline = time.monotonic() + 120
    # The detached gc works after the hook has returned: wait on its state file
    # (reading it starts no process), then ask `list` for the outcome.
    while len(load_state(data_dir)["checkpoints"]) != 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(listed(repo, data_dir)) == 1, "the detached gc applied max_checkpoints=1"
