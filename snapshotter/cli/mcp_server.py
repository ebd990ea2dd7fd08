"""`snapshotter mcp`: the agent's undo, as a Model Context Protocol server on stdio (issue 25).

Built on the official Python SDK, major version 2 (``mcp.server.MCPServer``;
v1 called it ``FastMCP``), installed with ``pip install 'snapshotter[mcp]'``:
it costs about 0.6 s of imports, which no other command pays. It answers
both handshakes a client may start with: ``server/discover`` (protocol
2026-07-28, what Claude Code sends first) and ``initialize``.

The tools are agent_tools.py's, each with a description written for a model:
when to use it, and what it never does. stdout carries protocol messages only;
anything else (a restore a killed process left, the SDK's warnings) goes to
stderr.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from snapshotter.cli.agent_tools import AgentTools, Refusal
from snapshotter.cli.context import Ctx, pass_ctx
from snapshotter.errors import SnapshotterError

if TYPE_CHECKING:
    from mcp.server import MCPServer

SERVER_NAME = "snapshotter"
INSTRUCTIONS = (
    "snapshotter recorded every change in this git worktree automatically: each of your "
    "turns and tool calls, shell commands included, is a checkpoint. Use these tools when "
    "the user asks you to undo, take back or revert what you did, or to see what you "
    "changed: undo reverts exactly what you changed, never the user's own edits, and "
    "`snapshotter redo` (or the redo tool) brings it back. Prefer them to re-editing files "
    "from memory."
)
NEVER = (
    " It never overwrites a file the user changed since: it refuses, names the files and "
    "gives a sentence to tell the user. Dry run first when unsure (dry_run=true changes "
    "nothing)."
)
DESCRIPTIONS = {
    "list_checkpoints": (
        "List the checkpoints of your session in this worktree, oldest first: id, kind "
        "(turn, or tool nested under its turn by parent), label (the prompt or command), "
        "files changed with status, undone flag. Use it first to see what undo would take "
        "back. Changes nothing."
    ),
    "show_checkpoint": (
        "Show one checkpoint: its files and a unified diff from before to after it, cut "
        "at max_lines lines (truncated says so). Changes nothing."
    ),
    "diff_to_now": (
        "Diff from before a checkpoint (default: your newest) to the worktree as it is "
        "now, the user's later edits included, cut at max_lines. Use it to see what an "
        "undo or restore would meet. Changes nothing."
    ),
    "undo": (
        "Undo your newest checkpoint not yet undone (a whole turn with its tool calls, "
        "or a tool call): every file it changed goes back to how it was before; files it "
        "added are removed, files it deleted come back. Call again to undo the one "
        "before. The user can take it back with `snapshotter redo`." + NEVER
    ),
    "redo": (
        "Redo: put back exactly what the last undo or restore of your session took "
        "away. Use it when an undo was a mistake." + NEVER
    ),
    "restore_files": (
        "Put only some files (worktree-relative paths; a directory takes the files "
        "below it) back as they were before checkpoint checkpoint_id (after=true: as "
        "they were after it). The checkpoint stays as it is; `snapshotter redo` takes "
        "this back." + NEVER
    ),
    "checkpoint": (
        "Record a save point named label, e.g. before something risky: what changed "
        "since the last snapshot (possibly nothing), so that exactly what follows can be "
        "undone and the user can go back to it by name (`snapshotter reset --to LABEL`). "
        "Writes no file; returns the checkpoint."
    ),
}


def build(tools: AgentTools) -> MCPServer[Any]:
    """The server, its tools bound to ``tools`` (the worktree, the user's policy)."""
    from mcp.server import MCPServer
    from mcp_types import ToolAnnotations

    from snapshotter import __version__

    server: MCPServer[Any] = MCPServer(
        SERVER_NAME, instructions=INSTRUCTIONS, version=__version__, log_level="WARNING"
    )
    looks = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    changes = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

    for name, hints in (
        ("list_checkpoints", looks),
        ("show_checkpoint", looks),
        ("diff_to_now", looks),
        ("undo", changes),
        ("redo", changes),
        ("restore_files", changes),
        ("checkpoint", changes),
    ):
        server.add_tool(
            _tool(getattr(tools, name)),
            name=name,
            description=_described(name, tools),
            annotations=hints,
            structured_output=False,
        )
    return server


def _tool(method: Callable[..., dict[str, Any]]) -> Callable[..., Any]:
    """``method`` as an MCP tool: its parameters are the tool's input schema (the SDK
    reads them through ``__wrapped__``); it returns its own CallToolResult, the JSON
    document as text and as structuredContent, or a tool error the model reads."""

    @functools.wraps(method)
    def tool(*args: Any, **kwargs: Any) -> Any:
        return _call(lambda: method(*args, **kwargs))

    return tool


def _described(name: str, tools: AgentTools) -> str:
    """The tool's description, with what the user's policy allows said where it matters."""
    text = DESCRIPTIONS[name]
    if name in ("undo", "redo", "restore_files"):
        if tools.policy.allow_force:
            text += " force=true overwrites the user's changes: only when the user asks."
        else:
            text += " force is not allowed here: leave it false."
    if name in ("undo", "redo", "list_checkpoints") and not tools.policy.any_session:
        text += " Only your own session: leave session and all_sessions unset."
    return text


def _call(act: Any) -> Any:
    """The tool's JSON document; an error as a tool error the model can read and relay
    (``error``, ``exit_code`` as the CLI's ``--json`` gives them)."""
    from mcp_types import CallToolResult, TextContent

    try:
        data: dict[str, Any] = act()
    except Refusal as exc:
        return _error(exc.data)
    except SnapshotterError as exc:
        return _error({"error": str(exc), "exit_code": exc.exit_code})
    import json

    text = json.dumps(data, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _error(data: dict[str, Any]) -> Any:
    import json

    from mcp_types import CallToolResult, TextContent

    text = data.get("tell_the_user") or data["error"]
    said = f"{text}\n{json.dumps(data, ensure_ascii=False)}"
    return CallToolResult(
        content=[TextContent(type="text", text=said)], structured_content=data, is_error=True
    )


def serve(tools: AgentTools) -> None:
    """Serve on stdin/stdout until the client closes stdin or stops the process.

    A client stops its servers with SIGINT, then SIGTERM 100 ms later (Claude
    Code). The SDK reads stdin in a worker thread that a KeyboardInterrupt
    cannot end, so the process would wait for it forever: both signals end the
    process at once instead. A restore under way then stops as a killed one
    does, and the next command finishes or rolls it back (its journal).
    """
    import signal

    server = build(tools)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _exit_now)
    server.run("stdio")


def _exit_now(signum: int, _frame: object) -> None:
    import os
    import sys

    sys.stderr.flush()
    os._exit(128 + signum)


@click.command(name="mcp")
@click.option(
    "--allow-force",
    is_flag=True,
    help="Let the agent overwrite files changed since a checkpoint (off: it must ask you).",
)
@click.option(
    "--any-session",
    is_flag=True,
    help="Let the agent list and change other sessions' checkpoints (off: its own only).",
)
@pass_ctx
def mcp(c: Ctx, allow_force: bool, any_session: bool) -> None:
    """Serve the agent's undo over MCP on stdio (needs: pip install 'snapshotter[mcp]').

    \b
    Tools: list_checkpoints, show_checkpoint, diff_to_now, undo, redo,
    restore_files, checkpoint. Each returns what the matching command's
    --json prints.

    The agent acts on its own session: the one its runtime names
    ($SNAPSHOTTER_SESSION, $CLAUDE_CODE_SESSION_ID, $GEMINI_SESSION_ID,
    $CODEX_THREAD_ID, $CODEX_SESSION_ID) if the hooks reported it here, else
    the session with an open turn or the newest checkpoint. It never forces.
    What it does is in `snapshotter log`, and `snapshotter redo` takes it
    back. The worktree is $CLAUDE_PROJECT_DIR's (or $GEMINI_PROJECT_DIR's),
    else the current directory's. Wire it with `snapshotter init AGENT --mcp`.
    """
    from importlib.util import find_spec

    from snapshotter.cli.agent_tools import Policy

    if find_spec("mcp") is None:
        raise click.ClickException(
            "the MCP server needs the official MCP SDK: pip install 'snapshotter[mcp]'"
        )
    serve(AgentTools(c, Policy(allow_force=allow_force, any_session=any_session)))
