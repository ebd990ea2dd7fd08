"""`snapshotter init` for every runtime that runs command hooks (issue 22.2).

Each config ``init`` writes is read back and its commands run as the runtime
would run them (``sh -c COMMAND`` with the event on stdin, from the config's
own entry for that event), so ``init`` and the hook's reading of the
runtime's events cannot drift apart. Merging keeps other hooks, a second run
changes nothing, a changed file is backed up, ``--dry-run`` writes nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from builders import listed, make_repo, run_cli, run_cli_in_process, write

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")

S = "sess-init"
Payload = Callable[[Path, str], dict[str, Any]]


def claude_shaped(root: Path, event: str) -> dict[str, Any]:
    return {"session_id": S, "cwd": str(root), "hook_event_name": event}


def copilot(root: Path, _event: str) -> dict[str, Any]:
    return {"sessionId": S, "timestamp": 1764090000000, "cwd": str(root)}


def cursor(root: Path, event: str) -> dict[str, Any]:
    return {"conversation_id": S, "hook_event_name": event, "workspace_roots": [str(root)]}


CLAUDE_TURN = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop")
GEMINI_TURN = ("BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent")
CAMEL_TURN = ("userPromptSubmitted", "preToolUse", "postToolUse", "agentStop")
CURSOR_TURN = ("beforeSubmitPrompt", "preToolUse", "postToolUse", "stop")
# runtime → its config, its payloads, its turn's events (start, pre, post, end), timeout unit
RUNTIMES: dict[str, tuple[str, Payload, tuple[str, str, str, str], int]] = {
    "codex": (".codex/hooks.json", claude_shaped, CLAUDE_TURN, 1),
    "qwen": (".qwen/settings.json", claude_shaped, CLAUDE_TURN, 1000),
    "gemini": (".gemini/settings.json", claude_shaped, GEMINI_TURN, 1000),
    "copilot": (".github/hooks/snapshotter.json", copilot, CAMEL_TURN, 1),
    "cursor": (".cursor/hooks.json", cursor, CURSOR_TURN, 1),
}


def init(root: Path, runtime: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``snapshotter init RUNTIME -C ROOT ARGS`` through ``cli.main`` in this process
    (what these tests check is the file it writes and what it says)."""
    # The hook command is found on PATH, as the runtime finds it.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    with mock.patch.dict(os.environ, {"PATH": path}):
        done = run_cli_in_process("init", runtime, "-C", root, *args)
    return subprocess.CompletedProcess(
        ["snapshotter", "init", runtime], done.code, done.out, done.err
    )


def commands(config: dict[str, Any], event: str) -> list[str]:
    found = []
    for item in config["hooks"].get(event, []):
        found += [item.get("command"), item.get("bash")]
        found += [h.get("command") for h in item.get("hooks", [])]
    return [c for c in found if c]


def fire(root: Path, config: dict[str, Any], event: str, payload: dict[str, Any]) -> None:
    """Run each command the config has for ``event``, as the runtime does."""
    (command,) = commands(config, event)
    fire_raw(root, command, payload)


@pytest.mark.parametrize("runtime", list(RUNTIMES))
def test_init_wires_a_runtime_whose_events_then_make_an_undoable_turn(
    tmp_path: Path, runtime: str
) -> None:
    file, payload, (start, pre, post, end), unit = RUNTIMES[runtime]
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    done = init(root, runtime)
    assert done.returncode == 0, done.stderr
    config = json.loads((root / file).read_text())
    timeouts = [
        h.get("timeout", h.get("timeoutSec"))
        for groups in config["hooks"].values()
        for g in groups
        for h in [g, *g.get("hooks", [])]
        if "timeout" in h or "timeoutSec" in h
    ]
    assert all(t >= 3 * unit for t in timeouts), f"timeouts in the runtime's unit: {timeouts}"

    tool = {"command": "echo x > a.txt"}
    fire(root, config, start, {**payload(root, start), "prompt": "change a"})
    fire(root, config, pre, {**payload(root, pre), "tool_name": "Bash", "tool_input": tool})
    write(root, "a.txt", "x\n")
    fire(root, config, post, {**payload(root, post), "tool_name": "Bash", "tool_input": tool})
    fire(root, config, end, payload(root, end))

    turns = [cp for cp in listed(root) if cp["kind"] == "turn"]
    assert [(t["label"], t["files"]) for t in turns] == [
        ("change a", [{"path": "a.txt", "status": "modified"}])
    ], turns
    undone = run_cli("-C", root, "undo")
    assert undone.returncode == 0, undone.stderr
    assert (root / "a.txt").read_text() == "a\n"


@pytest.mark.parametrize("runtime", list(RUNTIMES))
def test_init_keeps_other_hooks_backs_up_and_changes_nothing_twice(
    tmp_path: Path, runtime: str
) -> None:
    file, *_rest = RUNTIMES[runtime]
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    theirs = {"hooks": {"someEvent": [{"command": "true"}]}, "other": 1}
    write(root, file, json.dumps(theirs))
    dry = init(root, runtime, "--dry-run")
    assert dry.returncode == 0 and json.loads(dry.stdout)["other"] == 1, dry
    assert json.loads((root / file).read_text()) == theirs, "--dry-run writes nothing"

    first = init(root, runtime)
    assert first.returncode == 0 and "hooks added" in first.stdout, first
    merged = json.loads((root / file).read_text())
    assert merged["hooks"]["someEvent"] == [{"command": "true"}] and merged["other"] == 1
    assert [json.loads(p.read_text()) for p in (root / file).parent.glob("*.bak")] == [theirs]
    again = init(root, runtime)
    assert "already wired" in again.stdout, again
    assert json.loads((root / file).read_text()) == merged


def test_init_codex_says_the_hooks_need_trust(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    done = init(root, "codex")
    assert "trust" in done.stderr and "/hooks" in done.stderr, done.stderr


def test_init_copilot_says_when_claude_code_is_wired_too(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    assert init(root, "claude-code").returncode == 0
    done = init(root, "copilot")
    assert ".claude/settings.json" in done.stderr, done.stderr


@pytest.mark.parametrize("runtime", list(RUNTIMES))
def test_the_readme_shows_what_init_writes(tmp_path: Path, runtime: str) -> None:
    """README's block for each runtime is ``init NAME --dry-run`` on a new project."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    dry = init(root, runtime, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    heading = f"`snapshotter init {runtime}`"
    after = readme[readme.index(heading) :]
    block = after[after.index("```json\n") + len("```json\n") : after.index("```\n", 8)]
    assert json.loads(block) == json.loads(dry.stdout), f"README's {runtime} block is stale"


def test_init_codex_trust_records_each_hook_once(tmp_path: Path) -> None:
    import tomllib

    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text('model = "theirs"\n')
    env = {"CODEX_HOME": str(codex_home)}
    first = run_cli("init", "codex", "-C", root, "--trust", env=env)
    assert first.returncode == 0 and "trusted" in first.stderr, first
    config = tomllib.loads((codex_home / "config.toml").read_text())
    assert config["model"] == "theirs" and config["projects"][str(root)] == {
        "trust_level": "trusted"
    }
    hooks = json.loads((root / ".codex/hooks.json").read_text())["hooks"]
    state = config["hooks"]["state"]
    assert len(state) == sum(len(groups) for groups in hooks.values()), state
    assert all(v["trusted_hash"].startswith("sha256:") for v in state.values())
    before = (codex_home / "config.toml").read_text()
    again = run_cli("init", "codex", "-C", root, "--trust", env=env)
    assert again.returncode == 0 and "trust" not in again.stderr, again
    assert (codex_home / "config.toml").read_text() == before, "no table is written twice"


def test_list_says_when_a_wired_worktree_has_received_no_event(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    assert init(root, "codex").returncode == 0
    assert init(root, "gemini").returncode == 0
    done = run_cli("list", "-C", root)
    assert done.returncode == 0 and "no checkpoints" in done.stdout, done
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert "Codex CLI is wired here (.codex/hooks.json)" in lines[0] and "--trust" in lines[0]
    assert "Gemini CLI is wired here" in lines[1] and "trusted folder" in lines[1]


def test_doctor_says_which_wired_runtime_has_sent_no_event(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    assert init(root, "claude-code").returncode == 0
    assert init(root, "codex").returncode == 0
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {"PATH": path}
    claude = json.loads((root / ".claude/settings.json").read_text())
    fire(root, claude, "SessionStart", claude_shaped(root, "SessionStart"))
    fire_raw(root, "snapshotter hook", claude_shaped(root, "Mystery"))

    done = run_cli("doctor", "-C", root, "--json", env=env)
    assert done.returncode == 1, "a wired runtime sent nothing: exit 1"
    report = json.loads(done.stdout)
    by_name = {r["runtime"]: r for r in report["runtimes"]}
    assert sorted(by_name) == ["claude-code", "codex"], report
    assert by_name["claude-code"]["problem"] is None and by_name["claude-code"]["last_event"]
    assert "trust" in by_name["codex"]["problem"], by_name["codex"]
    assert report["unknown_events"] == ["Mystery"], report
    shown = run_cli("doctor", "-C", root, env=env).stdout
    assert "Codex CLI" in shown and "no event has arrived yet" in shown, shown

    codex = json.loads((root / ".codex/hooks.json").read_text())
    fire(root, codex, "SessionStart", claude_shaped(root, "SessionStart"))
    again = run_cli("doctor", "-C", root, "--json", env=env)
    assert again.returncode == 0, again.stdout
    assert all(r["problem"] is None for r in json.loads(again.stdout)["runtimes"])


def fire_raw(root: Path, command: str, payload: dict[str, Any]) -> None:
    """Run the hook ``command`` with ``payload`` on stdin as a runtime does: through sh,
    the venv's scripts on PATH; it exits 0 and prints nothing or {}."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        ["sh", "-c", command],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=root,
        env={**os.environ, "PATH": path},
        check=False,
    )
    assert done.returncode == 0 and not done.stderr, (command, done)
    assert done.stdout.strip() in (b"", b"{}"), (command, done.stdout)
