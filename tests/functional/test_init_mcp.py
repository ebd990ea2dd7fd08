"""`snapshotter init AGENT --mcp`: `snapshotter mcp` registered with each runtime (issue 25.5)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from builders import run_cli_in_process

SERVER = {"command": "snapshotter", "args": ["mcp"]}


def init(repo: Path, *args: str) -> str:
    done = run_cli_in_process("init", *args, "--mcp", "-C", str(repo))
    assert done.code == 0, done.err
    return done.out


def test_claude_code_registers_approves_and_allows_keeping_theirs(repo: Path) -> None:
    mcp = repo / ".mcp.json"
    theirs = {"mcpServers": {"db": {"command": "db-mcp"}}}
    mcp.write_text(json.dumps(theirs))
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(npm test)"]}}))

    dry = run_cli_in_process("init", "claude-code", "--mcp", "--dry-run", "-C", str(repo))
    assert dry.code == 0 and f"# {mcp}" in dry.out and '"snapshotter"' in dry.out, dry.out
    assert json.loads(mcp.read_text()) == theirs, "--dry-run writes nothing"

    out = init(repo, "claude-code")
    assert f"{mcp}: MCP server added (backup: " in out, out
    servers = json.loads(mcp.read_text())["mcpServers"]
    assert servers == {**theirs["mcpServers"], "snapshotter": {"type": "stdio", **SERVER}}
    merged = json.loads(settings.read_text())
    assert merged["enabledMcpjsonServers"] == ["snapshotter"], "pre-approved"
    assert merged["permissions"]["allow"] == ["Bash(npm test)", "mcp__snapshotter"]
    assert "UserPromptSubmit" in merged["hooks"], "the hooks come with it"
    assert list(mcp.parent.glob(".mcp.json.*.bak")), "the old file is kept"

    texts = (mcp.read_text(), settings.read_text())
    again = init(repo, "claude-code")
    assert again.count("already wired, nothing to change") == 2, again
    assert (mcp.read_text(), settings.read_text()) == texts, "a second run changes nothing"


def test_an_entry_the_user_changed_is_kept(repo: Path) -> None:
    mine = {
        "mcpServers": {"snapshotter": {"command": "snapshotter", "args": ["mcp", "--any-session"]}}
    }
    (repo / ".mcp.json").write_text(json.dumps(mine))
    init(repo, "claude-code")
    assert json.loads((repo / ".mcp.json").read_text()) == mine


def test_gemini_gets_the_server_in_its_settings(repo: Path) -> None:
    init(repo, "gemini")
    settings = json.loads((repo / ".gemini" / "settings.json").read_text())
    assert settings["mcpServers"] == {"snapshotter": SERVER}
    assert "BeforeTool" in settings["hooks"]


def test_codex_gets_a_table_in_the_projects_config_or_codex_home(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = repo / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o4"\n')
    init(repo, "codex")
    loaded = tomllib.loads(config.read_text())
    assert loaded["model"] == "o4" and loaded["mcp_servers"]["snapshotter"] == SERVER
    text = config.read_text()
    init(repo, "codex")
    assert config.read_text() == text, "idempotent"

    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    init(repo, "codex", "--global")
    home = tomllib.loads((tmp_path / "codex-home" / "config.toml").read_text())
    assert home["mcp_servers"]["snapshotter"] == SERVER


@pytest.mark.parametrize(("agent", "extra"), [("cursor", ()), ("claude-code", ("--global",))])
def test_where_there_is_no_mcp_config_init_says_so(
    repo: Path, agent: str, extra: tuple[str, ...]
) -> None:
    done = run_cli_in_process("init", agent, *extra, "--mcp", "-C", str(repo))
    assert done.code == 1 and done.err.count("\n") == 1, done.err
    assert "--mcp is for" in done.err or "claude mcp add --scope user" in done.err, done.err
    assert not list(repo.glob(".*/*.json")) and not (Path.home() / ".claude").exists(), (
        "nothing is written when --mcp cannot be done"
    )
