"""Every runtime's hook dialect, read by real ``snapshotter hook`` processes (issue 22).

Payload shapes as the runtimes document them (``hooks.dialects``): Codex's
``apply_patch``, Gemini CLI's event names, Copilot CLI's camelCase payloads
that name no event, Cursor's ``conversation_id``; and an event no runtime
sends is said in ``hook.log``, once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import claude_event, hook_ok, listed, make_repo, run_cli, write

from snapshotter.logfile import log_path

# Hooks run as a runtime runs them by default: each event's `snapshotter hook`
# process hands it to the hook server (hooks/server.py), which also runs the
# commands; the rest of the suite covers hooks that handle their event alone.
pytestmark = pytest.mark.usefixtures("server_socket")

S = "sess-dialect"


def undo_ok(root: Path) -> None:
    done = run_cli("-C", root, "undo")
    assert done.returncode == 0, done.stderr


def test_codex_apply_patch_names_every_path_it_writes(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "d.txt": "d\n", "m.txt": "m\n"})
    patch = "\n".join(
        [
            "*** Begin Patch",
            "*** Update File: a.txt",
            "@@",
            "-a",
            "+patched",
            "*** Add File: new.txt",
            "+new",
            "*** Delete File: d.txt",
            "*** Update File: m.txt",
            "*** Move to: n.txt",
            "*** End Patch",
        ]
    )
    tool: dict[str, Any] = {"tool_name": "apply_patch", "tool_input": {"command": patch}}
    hook_ok(claude_event("SessionStart", S, root, source="startup"))
    hook_ok(claude_event("UserPromptSubmit", S, root, prompt="patch it", turn_id="t1"))
    hook_ok(claude_event("PreToolUse", S, root, tool_use_id="call_1", **tool))
    write(root, "a.txt", "patched\n")
    write(root, "new.txt", "new\n")
    (root / "d.txt").unlink()
    (root / "m.txt").rename(root / "n.txt")
    hook_ok(claude_event("PostToolUse", S, root, tool_use_id="call_1", **tool))
    hook_ok(claude_event("Stop", S, root, turn_id="t1"))

    (tool_cp,) = [cp for cp in listed(root) if cp["kind"] == "tool"]
    assert tool_cp["named_paths"] == ["a.txt", "d.txt", "m.txt", "n.txt", "new.txt"], tool_cp
    assert tool_cp["label"] == "apply_patch a.txt (+4)", tool_cp
    undo_ok(root)
    assert sorted(p.name for p in root.iterdir() if p.is_file()) == ["a.txt", "d.txt", "m.txt"]
    assert (root / "a.txt").read_text() == "a\n"


def test_gemini_events_make_a_turn_with_its_tools(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})

    def gemini(name: str, **fields: Any) -> dict[str, Any]:
        return {"session_id": S, "cwd": str(root), "hook_event_name": name, **fields}

    write_a = {"tool_name": "write_file", "tool_input": {"file_path": str(root / "a.txt")}}
    hook_ok(gemini("SessionStart", source="startup"))
    hook_ok(gemini("BeforeAgent", prompt="rewrite a"))
    hook_ok(gemini("BeforeTool", **write_a))  # no call id: pre and post pair in order
    write(root, "a.txt", "gemini\n")
    hook_ok(gemini("AfterTool", **write_a))
    hook_ok(gemini("AfterAgent"))

    cps = listed(root)
    (turn,) = [cp for cp in cps if cp["kind"] == "turn"]
    (tool,) = [cp for cp in cps if cp["kind"] == "tool"]
    assert turn["label"] == "rewrite a" and tool["parent"] == turn["id"], cps
    assert tool["label"] == "write_file a.txt", tool
    undo_ok(root)
    assert (root / "a.txt").read_text() == "a\n"


def test_copilot_camel_case_payloads_take_their_event_from_the_command(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})

    def copilot(event: str, **fields: Any) -> None:
        sent = {"sessionId": S, "timestamp": 1764090000000, "cwd": str(root), **fields}
        hook_ok(sent, None, "--arg", "dialect=copilot", "--arg", f"event={event}")

    shell = {"toolName": "bash", "toolArgs": json.dumps({"command": "echo x > a.txt"})}
    copilot("sessionStart", source="new")
    copilot("userPromptSubmitted", prompt="change a")
    copilot("preToolUse", **shell)
    write(root, "a.txt", "x\n")
    copilot("postToolUse", **shell)
    copilot("agentStop")

    cps = listed(root)
    (turn,) = [cp for cp in cps if cp["kind"] == "turn"]
    (tool,) = [cp for cp in cps if cp["kind"] == "tool"]
    assert turn["label"] == "change a" and tool["parent"] == turn["id"], cps
    assert tool["command"] == "echo x > a.txt", tool
    undo_ok(root)
    assert (root / "a.txt").read_text() == "a\n"


def test_cursor_payloads_use_the_conversation_and_the_workspace_root(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})

    def cursor(name: str, **fields: Any) -> dict[str, Any]:
        return {
            "conversation_id": S,
            "generation_id": "g1",
            "hook_event_name": name,
            "workspace_roots": [str(root)],
            **fields,
        }

    hook_ok(cursor("beforeSubmitPrompt", prompt="edit a"))
    write(root, "a.txt", "cursor\n")
    hook_ok(cursor("stop", status="completed"))

    (turn,) = listed(root)
    assert turn["label"] == "edit a" and turn["files"] == [
        {"path": "a.txt", "status": "modified"}
    ], turn
    undo_ok(root)
    assert (root / "a.txt").read_text() == "a\n"


def test_an_unknown_event_is_said_once_and_a_known_one_never(
    tmp_path: Path, data_dir: Path
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    for _ in range(3):
        hook_ok({"session_id": S, "cwd": str(root), "hook_event_name": "BeforeSomething"})
        hook_ok({"sessionId": S, "cwd": str(root), "toolName": "bash"})  # no event at all
        hook_ok(claude_event("Notification", S, root, message="waiting"))
    log = log_path(data_dir).read_text()
    assert log.count("'BeforeSomething'") == 1, log
    assert log.count("no hook_event_name") == 1 and "sessionId, toolName" in log, log
    assert "Notification" not in log, "an event a runtime sends and we leave alone is no news"


def test_codex_interrupt_ends_the_turn_as_interrupted(tmp_path: Path) -> None:
    """Ctrl-C in Codex: Interrupt, then SessionEnd; no PostToolUse, no Stop."""
    root = make_repo(tmp_path / "r", {"b.txt": "b\n"})
    shell: dict[str, Any] = {"tool_name": "Bash", "tool_input": {"command": "rm b.txt"}}
    hook_ok(claude_event("SessionStart", S, root, source="startup"))
    hook_ok(claude_event("UserPromptSubmit", S, root, prompt="remove b", turn_id="t1"))
    hook_ok(claude_event("PreToolUse", S, root, tool_use_id="call_1", turn_id="t1", **shell))
    (root / "b.txt").unlink()
    hook_ok(claude_event("Interrupt", S, root, turn_id="t1"))
    (turn,) = listed(root)
    assert turn["label"] == "interrupted: remove b" and turn["reason"] == "interrupted", turn
    undo_ok(root)
    assert (root / "b.txt").read_text() == "b\n"


def test_parallel_tools_without_ids_never_lose_an_edit(tmp_path: Path) -> None:
    """Gemini and Copilot send no call id: two tools at once pair in order, and
    whatever they changed is the turn's, so undo takes all of it back."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n"})
    shell: dict[str, Any] = {"tool_name": "Bash", "tool_input": {"command": "edit"}}
    hook_ok(claude_event("UserPromptSubmit", S, root, prompt="both at once"))
    hook_ok(claude_event("PreToolUse", S, root, **shell))
    hook_ok(claude_event("PreToolUse", S, root, **shell))
    write(root, "b.txt", "B\n")
    hook_ok(claude_event("PostToolUse", S, root, **shell))
    write(root, "a.txt", "A\n")
    hook_ok(claude_event("PostToolUse", S, root, **shell))
    hook_ok(claude_event("Stop", S, root))
    cps = listed(root)
    (turn,) = [cp for cp in cps if cp["kind"] == "turn"]
    assert {f["path"] for f in turn["files"]} == {"a.txt", "b.txt"}, cps
    undo_ok(root)
    assert (root / "a.txt").read_text() == "a\n" and (root / "b.txt").read_text() == "b\n"
