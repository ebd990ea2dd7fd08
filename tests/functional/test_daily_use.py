"""What a user hits first (issue 15): list that reads, -C anywhere, honest wording, ASCII."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
from pathlib import Path
from typing import Any

from builders import argv, event, hook_ok, run_cli, run_hook, turn, write


def sn(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, cwd=cwd, env=env, errors="replace")


def test_list_has_a_header_local_time_with_age_and_names_the_other_sessions(repo: Path) -> None:
    turn(repo, "alpha", {"a.txt": "a\n"})
    turn(repo, "beta", {"b.txt": "b\n"})
    out = sn("list", "-C", repo).stdout
    lines = out.splitlines()
    assert lines[0].startswith("session beta") and "1 other session" in lines[0], out
    assert "list --all" in lines[0], "it says how to see the others"
    assert re.match(r"\s+ID\s+WHEN\s+KIND\s+WHAT\s+FILES", lines[1]), out
    assert re.search(r"\d\d:\d\d:\d\d \((just now|\d+ s ago)\)", lines[2]), out
    stamp = json.loads(sn("list", "-C", repo, "--json").stdout)[0]["created_at"]
    assert stamp.endswith("Z"), "JSON stays UTC ISO 8601"


def test_dash_c_works_before_the_command_like_git(repo: Path, tmp_path: Path) -> None:
    turn(repo, "s", {"src/app.py": "print('agent')\n"})
    before = sn("-C", repo / "src", "list", cwd=tmp_path)
    assert before.returncode == 0 and "+0 ~1 -0" in before.stdout, before.stderr
    nested = sn("-C", repo, "list", "-C", "src", cwd=tmp_path)
    assert nested.stdout == before.stdout, "a command's -C is relative to the global one"
    bad = sn("-C", tmp_path / "missing", "list")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_dry_runs_say_would_undo_and_would_redo(repo: Path) -> None:
    turn(repo, "s", {"src/app.py": "print('agent')\n"})
    dry = sn("undo", "--dry-run", "-C", repo)
    assert dry.stdout.startswith("would undo checkpoint 1: 1 would restore"), dry.stdout
    assert sn("undo", "-C", repo).returncode == 0
    dry_redo = sn("redo", "--dry-run", "-C", repo)
    assert dry_redo.stdout.startswith("would redo checkpoint 1"), dry_redo.stdout


def test_a_data_dir_that_is_a_file_is_an_error(repo: Path, tmp_path: Path) -> None:
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("x")
    done = sn("--data-dir", a_file, "list", "-C", repo)
    assert done.returncode == 2, done
    assert "is a file" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_json_errors_are_a_json_object_on_stdout_too(repo: Path) -> None:
    done = sn("undo", "-C", repo, "--json")
    assert done.returncode == 3
    data = json.loads(done.stdout)
    assert data["exit_code"] == 3 and "no snapshots" in data["error"], data
    assert len(done.stderr.strip().splitlines()) == 1, "and still one line on stderr"


def test_too_many_files_names_the_option_to_raise(repo: Path) -> None:
    done = sn("capture", "-C", repo, "--max-files", "1")
    assert done.returncode == 1 and "--max-files" in done.stderr, done.stderr


def test_a_latin1_stdout_falls_back_to_ascii(repo: Path) -> None:
    tool: dict[str, Any] = {
        "tool_name": "edit_file",
        "tool_use_id": "t",
        "tool_input": {"path": "README.md"},
    }
    hook_ok(event("turn_start", repo))
    hook_ok(event("pre_tool_use", repo, **tool))
    write(repo, "README.md", "caf\u00e9 \u2603\n")
    hook_ok(event("post_tool_use", repo, **tool))
    hook_ok(event("turn_end", repo))
    env = {"PYTHONIOENCODING": "latin-1"}
    listed = sn("list", "-C", repo, env=env)
    assert listed.returncode == 0 and "internal error" not in listed.stderr, listed.stderr
    assert "+ tool" in listed.stdout, f"the nesting mark in ASCII: {listed.stdout}"
    shown = sn("show", "2", "-C", repo, env=env)
    assert shown.returncode == 0 and "->" in shown.stdout, shown.stdout
    diff = sn("diff", "-C", repo, env=env)
    assert diff.returncode == 0, diff.stderr


def on_a_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run with stderr on a pseudo-terminal (stdout piped); (exit code, what the tty saw)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        argv(None, *args), stdout=subprocess.PIPE, stderr=follower, env={**os.environ, **env}
    )
    os.close(follower)
    seen = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
    proc.wait(timeout=120)
    os.close(leader)
    return proc.returncode, seen.decode(errors="replace")


def test_long_walks_show_a_live_count_only_on_a_terminal(repo: Path) -> None:
    for i in range(300):
        write(repo, f"many/f{i:03}.txt", f"{i}\n")
    env = {"SNAPSHOTTER_PROGRESS_AFTER_S": "0"}  # no waiting a second in a test
    code, tty = on_a_terminal(["capture", "-C", str(repo)], env)
    assert code == 0 and re.search(r"\d+ files", tty), f"no live count on the terminal: {tty!r}"
    piped = sn("capture", "-C", repo, env=env)
    assert "files" not in piped.stderr, "nothing when stderr is not a terminal"


def test_gc_speaks_human_sizes_and_its_dry_run_estimates_what_it_frees(repo: Path) -> None:
    for i in range(3):  # captures no checkpoint keeps: their blobs are garbage
        write(repo, "big.txt", f"version {i}\n" * 20_000)
        assert sn("capture", "-C", repo).returncode == 0
    dry = sn("gc", "-C", repo, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    estimate = re.search(r"would free about (\d+(?:\.\d)?) (bytes|KiB|MiB)", dry.stdout)
    assert estimate and float(estimate.group(1)) > 0, dry.stdout
    done = sn("gc", "-C", repo)
    assert re.search(r"freed \d+(\.\d)? (KiB|MiB)", done.stdout), done.stdout


def test_bad_hook_input_names_the_field(repo: Path, data_dir: Path) -> None:
    done = run_hook({"session_id": 5, "cwd": str(repo), "hook_event_name": "turn_end"})
    assert done.returncode == 0
    assert done.stderr == b"", "bad input is said in hook.log only (#26.6)"
    log = (data_dir / "snapshot" / "hook.log").read_text()
    assert "session_id: Input should be a valid string" in log, log


def test_undo_of_many_files_shows_a_live_count_on_a_terminal(repo: Path) -> None:
    turn(repo, "s", {f"many/f{i:03}.txt": f"{i}\n" for i in range(200)})
    code, tty = on_a_terminal(["undo", "-C", str(repo)], {"SNAPSHOTTER_PROGRESS_AFTER_S": "0"})
    assert code == 0 and re.search(r"\d+ files", tty), f"no live count: {tty!r}"
    assert not (repo / "many").exists()


def test_reset_to_an_unknown_checkpoint_hints_list_all(repo: Path) -> None:
    turn(repo, "s", {"a.txt": "a\n"})
    done = sn("reset", "99", "-C", repo)
    assert done.returncode == 1 and "list --all" in done.stderr, done.stderr


def test_a_failed_tool_is_marked_failed_in_list_show_and_json(repo: Path) -> None:
    """#26.4: Claude Code's PostToolUseFailure (and docker-agent's tool_error) end the
    tool's span as a failure, and every view says so."""
    from builders import claude_event, run_cli_in_process

    def send(name: str, **fields: Any) -> None:
        raw = json.dumps(claude_event(name, "cc", repo, **fields)).encode()
        r = run_cli_in_process("hook", stdin=raw)
        assert r.code == 0 and not r.err, r

    bash = {"tool_name": "Bash", "tool_use_id": "toolu_1", "tool_input": {"command": "make"}}
    send("UserPromptSubmit", prompt="build it")
    send("PreToolUse", **bash)
    write(repo, "build.log", "error\n")
    send("PostToolUseFailure", **bash, error="Exit code 2")
    send("Stop")
    listing = run_cli_in_process("list", "-C", repo).out
    tool_line = next(line for line in listing.splitlines() if "Bash: make" in line)
    assert tool_line.endswith("(failed)"), listing
    tool = next(
        c
        for c in json.loads(run_cli_in_process("list", "-C", repo, "--json").out)
        if c["kind"] == "tool"
    )
    assert tool["reason"] == "failed", tool
    assert "the tool failed" in run_cli_in_process("show", "-C", repo, str(tool["id"])).out
