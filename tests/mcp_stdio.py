"""A JSON-RPC client over a `snapshotter mcp` process's stdin and stdout, for the tests.

One request at a time, as a real client does: each answer is read before the
next request goes out (closing stdin with requests in flight cancels them).
Notifications get no answer. Lines on stdout that are not JSON-RPC fail the
test: the server's stdout is protocol only (issue 25.1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


class McpProcess:
    def __init__(self, cwd: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "snapshotter", "mcp", *args],
            cwd=cwd,
            env={**os.environ, **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.next_id = 100

    def send(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Send one message; the answer to it (None for a notification)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()
        if "id" not in message:
            return None
        while True:
            line = self.proc.stdout.readline()
            assert line, f"the server exited: {self.stderr()}"
            answer: dict[str, Any] = json.loads(line)
            assert answer.get("jsonrpc") == "2.0", f"not JSON-RPC on stdout: {line!r}"
            if answer.get("id") == message["id"]:
                return answer

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        answer = self.send(message)
        assert answer is not None
        return answer

    def handshake(self) -> dict[str, Any]:
        answer = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "tests", "version": "1"},
            },
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        """A tool's result (``structuredContent``, ``isError``, ``content``)."""
        answer = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in answer, f"{tool}: a protocol error instead of a result: {answer}"
        result: dict[str, Any] = answer["result"]
        return result

    def stderr(self) -> str:
        self.close()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")

    def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.proc.wait(timeout=30)

    def __enter__(self) -> McpProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.close()
