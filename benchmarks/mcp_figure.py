"""`snapshotter mcp` as an agent runtime starts it: start-up time and resident memory (issue 25).

Claude Code waits about 2 s for its MCP servers in ``-p`` mode, then starts
without them (MEASURED.md): the server must answer its handshake well within
that. One process per call of ``measure``, on a worktree with history: the
time from spawn to the answer to ``initialize`` (start-up), to the answer to
``tools/list``, and to a first ``list_checkpoints`` (which opens the store);
then its VmRSS and VmHWM from ``/proc``. The server is the installed CLI's,
like every figure here (``procs.snapshotter_cmd``).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from benchmarks import procs

TIMEOUT_S = 60.0
HANDSHAKE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "benchmarks", "version": "1"},
}


@dataclass(frozen=True)
class McpFigures:
    start_ms: float  # spawn to the initialize answer
    tools_ms: float  # spawn to the tools/list answer
    call_ms: float  # the first list_checkpoints call alone
    rss_kb: int  # VmRSS after that call
    hwm_kb: int  # VmHWM (its peak) after that call


class McpFailed(RuntimeError):
    """The server did not answer as it should (the mcp extra not installed, say)."""


def measure(cmd: Sequence[str], data: Path, root: Path, env: Mapping[str, str]) -> McpFigures:
    """One server process in ``root`` on the store in ``data``, timed and measured."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*cmd, "--data-dir", str(data), "mcp"],
        cwd=root,
        env=dict(env),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        _ask(proc, 1, "initialize", HANDSHAKE)
        started = _ms(start)
        _send(proc.stdin, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _ask(proc, 2, "tools/list", {})
        listed = _ms(start)
        call = time.perf_counter()
        answer = _ask(proc, 3, "tools/call", {"name": "list_checkpoints", "arguments": {}})
        called = _ms(call)
        if answer.get("result", {}).get("isError"):
            raise McpFailed(f"list_checkpoints failed: {answer}")
        memory = procs.memory_kb(proc.pid)
        if memory is None:
            raise McpFailed("the server's /proc status could not be read")
        return McpFigures(started, listed, called, memory[0], memory[1])
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ask(proc: subprocess.Popen[bytes], ident: int, method: str, params: Any) -> dict[str, Any]:
    """Send one request; its answer (a line on stdout that is not one is a failure)."""
    assert proc.stdin is not None and proc.stdout is not None
    _send(proc.stdin, {"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
    line = proc.stdout.readline()
    if not line:
        err = proc.stderr.read().decode(errors="replace")[:300] if proc.stderr else ""
        raise McpFailed(f"`snapshotter mcp` exited before answering {method}: {err}")
    answer: dict[str, Any] = json.loads(line)
    if answer.get("id") != ident or "error" in answer:
        raise McpFailed(f"{method}: {answer}")
    return answer


def _send(stream: IO[bytes], message: dict[str, Any]) -> None:
    stream.write(json.dumps(message).encode() + b"\n")
    stream.flush()


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0
