"""The real Claude Code CLI undoes its own turn through `snapshotter mcp` (issue 25.6).

Opt-in: ``pytest -m realclient`` (see test_realclient_claude.py for what it
needs). ``snapshotter init claude-code --mcp`` wires the hooks and the server;
the first ``claude -p`` turn rewrites two files with its Bash tool; the
second (``--resume``) calls ``list_checkpoints``, ``undo`` with ``dry_run``,
then ``undo``, scripted by the fake Messages API. The files must be back to
their bytes before the first turn, the operation log must say the agent did
it, and ``snapshotter redo`` from the shell must bring the turn back.

The server is started by Claude Code through ``sh -c 'tee IN | snapshotter mcp
| tee OUT'``: ``SNAPSHOTTER_RECORD_FIXTURES=1`` writes what the client sent
(and what the server answered) to ``fixtures/mcp/claude-code.json``, which
``test_mcp_recorded.py`` replays against ``snapshotter mcp`` in the default run.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
from builders import cli_ok, files_of, listed, make_repo, run_cli
from test_mcp_recorded import FIXTURE, REPO, TWO_FILES, request_shape
from test_realclient_claude import (
    FAKE,
    SESSION,
    anonymised,
    claude_or_skip,
    client_env,
    no_hook_failures,
    read_payloads,
    run_fake,
    succeeded,
    wrap_hooks,
)

from snapshotter.cli.agent_setup.mcp_config import TOOLS_RULE

pytestmark = pytest.mark.realclient


@pytest.fixture(scope="module")
def claude() -> str:
    return claude_or_skip()


SCRIPT: dict[str, list[dict[str, Any]]] = {
    "turn-two": [{"bash": TWO_FILES}, {"text": "Rewrote f.txt and g.txt."}],
    "turn-undo": [
        {"tool": "mcp__snapshotter__list_checkpoints", "input": {}},
        {"tool": "mcp__snapshotter__undo", "input": {"dry_run": True}},
        {"tool": "mcp__snapshotter__undo", "input": {}},
        {"text": "Undone: f.txt and g.txt are as before my last turn."},
    ],
}
PROMPTS = {
    "turn-two": "[turn-two] Rewrite f.txt and g.txt",
    "turn-undo": "[turn-undo] Undo what you just did",
}


def wired(tmp_path: Path, claude: str) -> tuple[Path, Path, Path]:
    """The repository wired by ``init claude-code --mcp``, its server started through tee
    (what the client sent to IN, what the server answered to OUT)."""
    root = make_repo(tmp_path / "repo", REPO)
    done = run_cli("init", "claude-code", "--mcp", cwd=root, env=client_env(claude))
    assert done.returncode == 0, f"init claude-code --mcp failed: {done.stderr}"
    settings = json.loads((root / ".claude" / "settings.json").read_text())
    assert settings["enabledMcpjsonServers"] == ["snapshotter"], settings
    assert settings["permissions"]["allow"] == [TOOLS_RULE], settings
    mcp = json.loads((root / ".mcp.json").read_text())
    assert mcp["mcpServers"]["snapshotter"]["args"] == ["mcp"], mcp
    sent, answered = tmp_path / "mcp-in.jsonl", tmp_path / "mcp-out.jsonl"
    pipe = (
        f"tee -a {shlex.quote(str(sent))} | snapshotter mcp | tee -a {shlex.quote(str(answered))}"
    )
    mcp["mcpServers"]["snapshotter"] = {"type": "stdio", "command": "sh", "args": ["-c", pipe]}
    (root / ".mcp.json").write_text(json.dumps(mcp, indent=2))
    return root, sent, answered


def trust_folder(home: Path, root: Path) -> None:
    """What accepting Claude Code's trust dialog for ``root`` writes. Without it the
    project's permission rules (init's ``mcp__snapshotter``) are ignored: each tool
    call is refused, "Claude requested permissions to use mcp__snapshotter__undo,
    but you haven't granted it yet" (2.1.197, -p); with it they apply."""
    path = home / ".claude.json"
    config = json.loads(path.read_text()) if path.exists() else {}
    config.setdefault("projects", {})[str(root)] = {"hasTrustDialogAccepted": True}
    path.write_text(json.dumps(config))


def drive(tmp_path: Path, claude: str, root: Path) -> dict[str, Any]:
    """Two runs of ``claude -p``: only Bash allowed on the command line; the server's
    tools are allowed by what init wrote (``permissions.allow``)."""
    work = tmp_path / "client"
    work.mkdir(exist_ok=True)
    env = client_env(claude)  # the default wait for MCP servers: start-up must fit in it
    runs = []
    for index, key in enumerate(PROMPTS):
        session = ["--session-id" if index == 0 else "--resume", SESSION]
        argv = [claude, "-p", PROMPTS[key], "--allowedTools", "Bash", *session]
        runs.append({"argv": argv, "cwd": str(root), "env": env, "timeout": 120})
    return run_fake(FAKE, work, SCRIPT, runs)


def tool_results(tmp_path: Path) -> list[dict[str, Any]]:
    """What each MCP tool call gave back to the model, in order (the fake logged it)."""
    lines = (tmp_path / "client" / "requests.jsonl").read_text().splitlines()
    found = []
    for entry in map(json.loads, lines):
        scripted = entry.get("scripted")
        if scripted and scripted[0] == "turn-undo" and scripted[1] > 0:
            found.extend(entry["tool_results"])
    return found


def test_claude_code_undoes_its_turn_through_mcp(
    tmp_path: Path, claude: str, hermetic: Path
) -> None:
    root, sent, answered = wired(tmp_path, claude)
    hooks = tmp_path / "hooks.jsonl"
    wrap_hooks(root, hooks)
    trust_folder(hermetic, root)
    summary = drive(tmp_path, claude, root)
    succeeded(summary, tmp_path)
    served = [tuple(s) for s in summary["served"]]
    assert served == [
        ("turn-two", 0),
        ("turn-two", 1),
        ("turn-undo", 0),
        ("turn-undo", 1),
        ("turn-undo", 2),
        ("turn-undo", 3),
    ], f"the model got every scripted step: {served}"

    results = tool_results(tmp_path)
    print(f"[realclient] the tools said: {json.dumps(results)[:3000]}")
    assert len(results) == 3 and not any(r["is_error"] for r in results), results
    listing, dry, undo = (json.loads(_text(r)) for r in results)
    turn = next(cp for cp in listing["checkpoints"] if cp["prompt"] == PROMPTS["turn-two"])
    assert files_of(turn) == {"f.txt": "modified", "g.txt": "modified"}, listing
    assert listing["session"] == SESSION, "the server found the agent's session"
    assert dry == {**dry, "dry_run": True, "restored": ["f.txt", "g.txt"]}, dry
    assert undo == {**undo, "dry_run": False, "checkpoint": [turn["id"]]}, undo

    for rel, content in REPO.items():
        assert (root / rel).read_bytes() == content.encode(), f"{rel} is as before the turn"
    (after,) = [cp for cp in listed(root) if cp["id"] == turn["id"]]
    assert after["undone"], after
    log = json.loads(cli_ok(root, "log", "--json"))
    assert [(o["op"], o["by"], o["checkpoints"]) for o in log] == [
        ("undo", "agent", [turn["id"]])
    ], f"the operation log shows the agent's undo: {log}"
    print(f"[realclient] snapshotter log:\n{cli_ok(root, 'log')}")

    print(f"[realclient] snapshotter redo: {cli_ok(root, 'redo').strip()}")
    assert (root / "f.txt").read_bytes() == b"f by the agent\n", "redo brings the turn back"
    assert (root / "g.txt").read_bytes() == b"g by the agent\n"
    no_hook_failures()
    _record(claude, hooks, sent, answered, root, hermetic)


def _shell(event: dict[str, Any]) -> list[dict[str, Any]]:
    if event["hook_event_name"] == "PreToolUse" and event.get("tool_name") == "Bash":
        return [{"shell": event["tool_input"]["command"]}]
    return []


def _text(result: dict[str, Any]) -> str:
    content = result["content"]
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


def _record(claude: str, hooks: Path, sent: Path, answered: Path, root: Path, home: Path) -> None:
    """The client's messages must have the recorded shape; with
    ``SNAPSHOTTER_RECORD_FIXTURES=1`` they become the fixture, with the hook payloads
    (each Bash PreToolUse followed by its command) the replay records history from."""
    events = anonymised(read_payloads(hooks), root, home)
    steps: list[dict[str, Any]] = []
    for event in events:
        steps += [{"event": event}, *_shell(event)]
    messages = anonymised([json.loads(line) for line in sent.read_text().splitlines()], root, home)
    answers = anonymised(
        [json.loads(line) for line in answered.read_text().splitlines()], root, home
    )
    if os.environ.get("SNAPSHOTTER_RECORD_FIXTURES") == "1":
        version = subprocess.run([claude, "--version"], capture_output=True, text=True)
        recorded = {
            "client": version.stdout.strip(),
            "how": "claude -p twice (--session-id, --resume) after snapshotter init claude-code "
            "--mcp; turn 1 rewrote f.txt and g.txt with Bash; turn 2 called list_checkpoints, "
            "undo dry_run, undo; fake Messages API; the server's stdin and stdout through tee",
            "repo": REPO,
            "session": SESSION,
            "steps": steps,
            "sent": messages,
            "answered": answers,
        }
        FIXTURE.parent.mkdir(parents=True, exist_ok=True)
        FIXTURE.write_text(json.dumps(recorded, indent=1) + "\n")
    stored = json.loads(FIXTURE.read_text())
    assert request_shape(messages) == request_shape(stored["sent"]), (
        f"Claude Code now sends other MCP requests than {FIXTURE.name} holds (recorded from "
        f"{stored['client']}); re-record with SNAPSHOTTER_RECORD_FIXTURES=1"
    )
