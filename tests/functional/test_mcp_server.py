"""`snapshotter mcp` as a process: both handshakes, its tool list, how it stops (issue 25).

What Claude Code really sent is replayed in test_mcp_recorded.py; each tool's
behaviour is in test_mcp_tools.py. Here what only the process shows.
"""

from __future__ import annotations

import importlib.util
import signal
from pathlib import Path

import pytest
from builders import event, hook_in_process_ok, make_repo, run_cli_in_process, write
from mcp_stdio import McpProcess

# The 2026-07-28 protocol: no initialize, each request carries its envelope.
MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    hook_in_process_ok(event("turn_start", repo, "s1"), None)
    write(repo, "a.txt", "A\n")
    hook_in_process_ok(event("turn_end", repo, "s1"), None)
    return repo


def test_server_discover_then_a_call_and_sigint_ends_it_at_once(root: Path) -> None:
    """Claude Code's newer protocol starts with server/discover; it stops a server
    with SIGINT (then SIGTERM 100 ms later)."""
    with McpProcess(root) as server:
        found = server.request("server/discover", {"_meta": MODERN})
        assert "tools" in found["result"]["capabilities"], found
        assert "undo" in found["result"]["instructions"], "the model is told when to use it"
        answer = server.request(
            "tools/call", {"name": "undo", "arguments": {"dry_run": True}, "_meta": MODERN}
        )
        report = answer["result"]["structuredContent"]
        assert report["dry_run"] and report["restored"] == ["a.txt"], answer
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(timeout=10) == 128 + signal.SIGINT
        assert server.proc.stdout is not None and server.proc.stdout.read() == b""
    assert (root / "a.txt").read_text() == "A\n", "a dry run changed nothing"


def test_the_tool_list_says_what_the_user_allows(root: Path) -> None:
    with McpProcess(root) as safe:
        safe.handshake()
        tools = {t["name"]: t for t in safe.request("tools/list")["result"]["tools"]}
    assert set(tools) == {
        "list_checkpoints",
        "show_checkpoint",
        "diff_to_now",
        "undo",
        "redo",
        "restore_files",
        "checkpoint",
    }
    undo = tools["undo"]
    assert "never overwrites a file the user changed" in undo["description"], undo
    assert "force is not allowed here" in undo["description"], undo
    assert tools["list_checkpoints"]["annotations"]["readOnlyHint"] is True
    assert set(undo["inputSchema"]["properties"]) == {"dry_run", "force", "session"}
    with McpProcess(root, "--allow-force") as forcing:
        forcing.handshake()
        listed = forcing.request("tools/list")["result"]["tools"]
    (undo,) = [t for t in listed if t["name"] == "undo"]
    assert "only when the user asks" in undo["description"], undo


def test_without_the_sdk_it_says_how_to_install_it(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "mcp" else real(name, *a)
    )
    done = run_cli_in_process("mcp", cwd=root)
    assert done.code == 1 and done.out == "", done
    assert "pip install 'snapshotter[mcp]'" in done.err and done.err.count("\n") == 1, done.err
