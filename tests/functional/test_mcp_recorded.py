"""What the real Claude Code CLI sent to `snapshotter mcp`, replayed against the server.

``fixtures/mcp/claude-code.json`` holds the messages of one real session,
recorded by ``test_realclient_mcp.py`` (``pytest -m realclient``): Claude Code
2.1 after ``snapshotter init claude-code --mcp``, two ``claude -p`` runs (the
second ``--resume``). The first turn's Bash rewrote f.txt and g.txt; the
second called ``list_checkpoints``, ``undo`` with ``dry_run``, then ``undo``.
It holds the hook payloads (``steps``), what the client sent to the server
(``sent``, one server process per run) and what the server answered.

Here the payloads go to ``snapshotter hook`` processes, and the client's
messages, in the order it sent them, to ``snapshotter mcp`` processes (a real
subprocess on stdio, as Claude Code starts it): each answer must be the
recorded one (tree ids and times aside), the bytes must be back to the
committed ones, and ``snapshotter redo`` must bring the turn back.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from builders import cli_ok, hook_ok, listed, make_repo
from mcp_stdio import McpProcess

FIXTURE = Path(__file__).parents[2] / "fixtures" / "mcp" / "claude-code.json"
REPO = {"f.txt": "f as committed\n", "g.txt": "g as committed\n", "b.txt": "b as committed\n"}
TWO_FILES = "printf 'f by the agent\\n' > f.txt && printf 'g by the agent\\n' > g.txt"


def request_shape(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """What must not drift: each message's method, and the tool a call names."""
    return [
        (m.get("method", ""), str(m.get("params", {}).get("name", "")))
        for m in messages
        if "method" in m
    ]


def substitute_steps(root: Path, home: Path) -> list[dict[str, Any]]:
    from test_claude_code_recorded import substitute

    return substitute(json.loads(FIXTURE.read_text())["steps"], root, home)


def lifetimes(sent: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The client's messages, one list per server process (each starts with initialize)."""
    found: list[list[dict[str, Any]]] = []
    for message in sent:
        if message.get("method") == "initialize" or not found:
            found.append([])
        found[-1].append(message)
    return found


VOLATILE = {"before", "after", "created_at", "from", "to"}  # tree ids and times differ per run


def stable(value: Any) -> Any:
    """``value`` without what differs from run to run."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


class Replay:
    """The recorded session: hook events through `snapshotter hook`, the client's MCP
    messages through `snapshotter mcp` processes, in the order the client sent them."""

    def __init__(self, root: Path, home: Path) -> None:
        recorded = json.loads(FIXTURE.read_text())
        self.root = root
        self.servers = lifetimes(recorded["sent"])
        self.recorded = recorded["answered"]
        self.answers: list[dict[str, Any]] = []
        self.server: McpProcess | None = None
        # Under --resume the runtime's session id is a fresh one the hooks never saw
        # (MEASURED.md): the server must find the agent's session anyway.
        self.env = {"CLAUDE_PROJECT_DIR": str(root), "CLAUDE_CODE_SESSION_ID": "not-a-hook-id"}
        self.steps = substitute_steps(root, home)

    def run(self) -> None:
        for step in self.steps:
            if "shell" in step:
                subprocess.run(["sh", "-c", step["shell"]], cwd=self.root, check=True)
                continue
            event = step["event"]
            name = event["hook_event_name"]
            if name == "SessionStart":
                self.start()
            hook_ok(event, cwd=event["cwd"], env={"CLAUDE_PROJECT_DIR": str(self.root)})
            if name == "PreToolUse" and event["tool_name"].startswith("mcp__snapshotter__"):
                self.next_call(event["tool_name"].removeprefix("mcp__snapshotter__"))
            if name == "SessionEnd":
                self.stop()

    def start(self) -> None:
        """A server as the client starts one, handshake and listings replayed."""
        self.messages = self.servers.pop(0)
        self.server = McpProcess(self.root, env=self.env)
        while self.messages and self.messages[0].get("method") != "tools/call":
            self.send(self.messages.pop(0))

    def next_call(self, tool: str) -> None:
        message = self.messages.pop(0)
        assert message["params"]["name"] == tool, f"the calls come in the recorded order: {tool}"
        self.send(message)

    def send(self, message: dict[str, Any]) -> None:
        assert self.server is not None
        answer = self.server.send(message)
        if answer is not None:
            self.answers.append(answer)

    def stop(self) -> None:
        assert self.server is not None and not self.messages, self.messages
        assert self.server.close() == 0, self.server.stderr()
        self.server = None


def test_the_recorded_fixture_is_what_the_replay_expects() -> None:
    recorded = json.loads(FIXTURE.read_text())
    assert recorded["repo"] == REPO
    calls = [m["params"] for m in recorded["sent"] if m.get("method") == "tools/call"]
    assert [(c["name"], c["arguments"]) for c in calls] == [
        ("list_checkpoints", {}),
        ("undo", {"dry_run": True}),
        ("undo", {}),
    ], calls
    assert [m["method"] for m in recorded["sent"]].count("initialize") == 2, "two runs"


def test_the_recorded_claude_code_session_undoes_through_mcp(
    tmp_path: Path, hermetic: Path
) -> None:
    root = make_repo(tmp_path / "repo", REPO)
    replay = Replay(root, hermetic)
    replay.run()

    assert len(replay.answers) == len(replay.recorded), "one answer per recorded answer"
    for got, want in zip(replay.answers, replay.recorded, strict=True):
        assert got["id"] == want["id"] and "error" not in got, got
        if "structuredContent" in want.get("result", {}):
            assert stable(got["result"]["structuredContent"]) == stable(
                want["result"]["structuredContent"]
            ), f"answer {got['id']} is as recorded"
        if "tools" in want.get("result", {}):
            names = [t["name"] for t in got["result"]["tools"]]
            assert names == [t["name"] for t in want["result"]["tools"]], names

    for rel, content in REPO.items():
        assert (root / rel).read_bytes() == content.encode(), f"{rel} is as committed"
    cps = listed(root)
    assert [(cp["kind"], cp["tool_name"]) for cp in cps] == [("tool", "Bash"), ("turn", None)], (
        f"the agent's undo is nobody's change: no checkpoint of the turn that called it: {cps}"
    )
    turn = cps[1]
    assert turn["undone"] and turn["prompt"].startswith("[turn-two]"), turn
    log = json.loads(cli_ok(root, "log", "--json"))
    assert [(o["op"], o["by"], o["checkpoints"], o["paths"]) for o in log] == [
        ("undo", "agent", [turn["id"]], 2)
    ], log
    assert log[0]["redo"] == {"op": "undo", "checkpoints": [turn["id"]]}, log
    assert "agent  undo" in cli_ok(root, "log"), "the human log names the agent"
    cli_ok(root, "redo")
    assert (root / "f.txt").read_bytes() == b"f by the agent\n", "redo from the shell"
    assert (root / "g.txt").read_bytes() == b"g by the agent\n"
