"""`snapshotter init`: hooks merged into real agent configurations, by round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builders import run_cli_in_process
from test_cli_e2e import commands_for, listed, parse_yaml, replay_through, shape

from snapshotter.cli.replay import build_repo, load_recipe, load_session
from snapshotter.hooks.dialects import claude_code

CLAUDE_EVENTS = list(claude_code.DIALECT.events)
THEIRS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 3}]}],
    },
}
AGENT_YAML = """\
version: "2"
agents:
  root:
    model: openai/gpt-4o
    description: the main agent
    instruction: You are helpful.
    sub_agents:
      - helper

  helper:
    model: openai/gpt-4o
    instruction: You help.

models:
  gpt:
    provider: openai
"""


def ours(hooks: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [
        h
        for g in hooks.get(event, [])
        for h in g.get("hooks", [g])
        if h.get("command") == "snapshotter hook"
    ]


def test_claude_code_init_merges_keeps_theirs_and_is_idempotent(repo: Path) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(THEIRS, indent=2))
    settings.chmod(0o640)
    done = run_cli_in_process("init", "claude-code", "-C", str(repo / "src"))
    assert done.code == 0, done.out
    assert "hooks added" in done.out
    merged = json.loads(settings.read_text())
    assert merged["permissions"] == THEIRS["permissions"], "other settings are kept"
    for event in CLAUDE_EVENTS:
        (hook,) = ours(merged["hooks"], event)
        assert isinstance(hook["timeout"], int), f"{event}: an explicit timeout"
    assert merged["hooks"]["PreToolUse"][0] == THEIRS["hooks"]["PreToolUse"][0], "theirs first"
    assert merged["hooks"]["Stop"][0] == THEIRS["hooks"]["Stop"][0]
    assert settings.stat().st_mode & 0o777 == 0o640, "the file keeps its mode"
    (backup,) = settings.parent.glob("settings.json.*.bak")
    assert json.loads(backup.read_text()) == THEIRS, "the old file is backed up"

    before = settings.read_bytes()
    again = run_cli_in_process("init", "claude-code", "-C", str(repo))
    assert again.code == 0 and "already wired" in again.out, again.out
    assert settings.read_bytes() == before, "a second run changes nothing"
    assert len(list(settings.parent.glob("*.bak"))) == 1, "and makes no second backup"


def test_claude_code_settings_from_init_record_a_real_session(tmp_path: Path) -> None:
    session = load_session("claude_code_cd_interrupt")
    root = build_repo(tmp_path / "agent-repo", load_recipe(session["repo"]))
    assert run_cli_in_process("init", "claude-code", "-C", str(root)).code == 0
    hooks = json.loads((root / ".claude" / "settings.json").read_text())["hooks"]
    assert commands_for(hooks, "PostToolUseFailure", "Bash") == ["snapshotter hook"]
    replay_through(hooks, session, root)
    # .claude/ is an untracked directory the agent did not write: it is in no checkpoint.
    assert shape(listed(root)) == session["expect"]


def test_claude_code_dry_run_and_global(repo: Path, hermetic: Path) -> None:
    dry = run_cli_in_process("init", "claude-code", "-C", str(repo), "--dry-run")
    assert dry.code == 0
    assert sorted(json.loads(dry.out)["hooks"]) == sorted(CLAUDE_EVENTS)
    assert not (repo / ".claude").exists(), "--dry-run writes nothing"
    done = run_cli_in_process("init", "claude-code", "--global")
    assert done.code == 0, done.out
    assert sorted(
        json.loads((hermetic / ".claude" / "settings.json").read_text())["hooks"]
    ) == sorted(CLAUDE_EVENTS)


def test_claude_code_settings_that_are_not_json_are_left_alone(repo: Path) -> None:
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{ not json")
    done = run_cli_in_process("init", "claude-code", "-C", str(repo))
    assert done.code == 1
    assert "is not JSON" in done.err and len(done.err.strip().splitlines()) == 1
    assert settings.read_text() == "{ not json"


def test_docker_agent_init_adds_hooks_to_the_root_agent(tmp_path: Path) -> None:
    agent = tmp_path / "agent.yaml"
    agent.write_text(AGENT_YAML)
    done = run_cli_in_process("init", "docker-agent", str(agent))
    assert done.code == 0, done.out
    config = parse_yaml(agent.read_text())
    hooks = config["agents"]["root"]["hooks"]
    for event in (
        "session_start",
        "turn_start",
        "pre_tool_use",
        "post_tool_use",
        "turn_end",
        "session_end",
    ):
        assert commands_for(hooks, event, "shell") == ["snapshotter hook"], event
    assert "hooks" not in config["agents"]["helper"], "only the chosen agent is wired"
    assert config["agents"]["root"]["sub_agents"] == ["helper"]
    assert config["models"] == {"gpt": {"provider": "openai"}}, "the rest of the file is kept"
    (backup,) = tmp_path.glob("agent.yaml.*.bak")
    assert backup.read_text() == AGENT_YAML

    before = agent.read_bytes()
    again = run_cli_in_process("init", "docker-agent", str(agent))
    assert again.code == 0 and "already wired" in again.out
    assert agent.read_bytes() == before


def test_docker_agent_init_prints_the_block_and_refuses_to_guess(tmp_path: Path) -> None:
    printed = run_cli_in_process("init", "docker-agent")
    assert printed.code == 0
    block = parse_yaml(printed.out)["hooks"]
    assert commands_for(block, "pre_tool_use", "edit_file") == ["snapshotter hook"]

    agent = tmp_path / "agent.yaml"
    agent.write_text(
        AGENT_YAML.replace(
            "    instruction: You help.\n",
            "    instruction: You help.\n    hooks:\n"
            "      turn_end:\n        - type: command\n"
            "          command: ./notify.sh\n",
        )
    )
    text = agent.read_text()
    done = run_cli_in_process("init", "docker-agent", str(agent), "--agent", "helper")
    assert done.code == 1 and "already has hooks" in done.err, done.err
    assert agent.read_text() == text
    missing = run_cli_in_process("init", "docker-agent", str(agent), "--agent", "nope")
    assert missing.code == 1 and "no agent 'nope'" in missing.err


def test_init_names_the_script_by_path_when_it_is_not_on_path(repo: Path) -> None:
    """An agent runs hooks through its own PATH: a command it cannot find fails every event."""
    import os
    import subprocess
    import sys

    script = Path(sys.executable).parent / "snapshotter"
    done = subprocess.run(
        [str(script), "init", "claude-code", "-C", str(repo), "--dry-run"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={**os.environ, "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    hooks = json.loads(done.stdout)["hooks"]
    (hook,) = ours_by_name(hooks, "Stop")
    assert hook["command"] == f"{script} hook", hook


def ours_by_name(hooks: dict[str, Any], event: str) -> list[dict[str, Any]]:
    return [
        h
        for g in hooks.get(event, [])
        for h in g.get("hooks", [])
        if str(h.get("command", "")).endswith("snapshotter hook")
    ]


def test_init_outside_a_git_worktree_refuses_and_writes_nothing(tmp_path: Path) -> None:
    """#26.6: hooks wired where nothing is recorded would be silently useless."""
    plain = tmp_path / "plain"
    plain.mkdir()
    done = run_cli_in_process("init", "claude-code", "-C", str(plain))
    assert done.code == 1, done
    done.one_line_error("not inside a git worktree", "--global")
    assert not (plain / ".claude").exists(), "nothing written"
