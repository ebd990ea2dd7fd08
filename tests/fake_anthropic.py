"""A fake Anthropic Messages API that scripts tool calls, and a driver that runs ``claude`` on it.

Only for the opt-in real-client tests (``pytest -m realclient``): the real
Claude Code CLI talks to this server over loopback, in a network namespace of
its own (``unshare -n``), so nothing leaves the machine.

The script maps a *key* (a word that appears in the user's prompt) to the
answers for that prompt, in order: a Bash command (a ``tool_use`` block), a
call of any other tool by name (``{"tool": NAME, "input": {...}}``: an MCP
server's, ``mcp__SERVER__TOOL``), or text, which ends the turn. Which answer a
request gets is read from the request itself (how many assistant messages
follow the prompt that holds the key), so a retried request gets the same
answer again. Requests that carry no key (a title, a quota probe, a summary)
get a short text answer.

Run as a script (``python fake_anthropic.py SPEC.json``) it is the driver: it
starts the server on 127.0.0.1 on a random port, runs each ``claude`` command
of the spec against it in turn, optionally interrupts one (a signal, once a
file it names is gone), and logs every request to the spec's ``requests`` file.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fake_api import JsonHandler, ScriptedServer, drive

# key -> the answers to that prompt, in order: {"bash": CMD}, {"tool": NAME, "input": {...}}
# or {"text": TEXT}.
Script = dict[str, list[dict[str, Any]]]

MODEL = "claude-sonnet-4-5"


def _texts(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


def next_answer(script: Script, body: dict[str, Any]) -> tuple[str, int, dict[str, Any]] | None:
    """(key, step, answer) for a scripted prompt; None for a request the script does not know."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not body.get("tools"):
        return None  # the agent's requests always offer tools; side requests do not
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        text = _texts(message)
        key = next((k for k in script if f"[{k}]" in text), None)
        if key is None:
            continue
        step = sum(
            1 for m in messages[index + 1 :] if isinstance(m, dict) and m.get("role") == "assistant"
        )
        answers = script[key]
        return key, step, answers[step] if step < len(answers) else {"text": "Done."}
    return None


def content_block(key: str, step: int, answer: dict[str, Any]) -> dict[str, Any]:
    if "tool" in answer:
        return {
            "type": "tool_use",
            "id": f"toolu_{key}_{step:02d}",
            "name": answer["tool"],
            "input": answer.get("input", {}),
        }
    if "bash" in answer:
        return {
            "type": "tool_use",
            "id": f"toolu_{key}_{step:02d}",
            "name": "Bash",
            "input": {"command": answer["bash"], "description": f"step {step} of {key}"},
        }
    return {"type": "text", "text": answer["text"]}


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results the last message gives back to the model (what a tool said)."""
    messages = body.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else {}
    content = last.get("content") if isinstance(last, dict) else None
    if not isinstance(content, list):
        return []
    return [
        {
            "tool_use_id": b.get("tool_use_id"),
            "is_error": b.get("is_error"),
            "content": b.get("content"),
        }
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def message(block: dict[str, Any], model: str) -> dict[str, Any]:
    return {
        "id": f"msg_{time.monotonic_ns()}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def sse_events(full: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The streaming events of one message with one content block."""
    (block,) = full["content"]
    start = {**full, "content": [], "stop_reason": None}
    yield "message_start", {"type": "message_start", "message": start}
    if block["type"] == "tool_use":
        empty = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        empty = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": empty}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": full["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}


class FakeAnthropic(ScriptedServer):
    def __init__(self, script: Script, log: Path | None = None) -> None:
        super().__init__(Handler, script, log)


class Handler(JsonHandler):
    server: FakeAnthropic

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self.server.record({"method": "GET", "path": self.path})
        if self.path.startswith("/v1/models"):
            self._json(200, {"data": [{"type": "model", "id": MODEL}], "has_more": False})
        else:
            self._json(200, {})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            self.server.record({"method": "POST", "path": path})
            self._json(200, {"input_tokens": 100})
            return
        if not path.endswith("/v1/messages"):
            self.server.record({"method": "POST", "path": path})
            self._json(200, {})
            return
        self._messages(body if isinstance(body, dict) else {})

    def _messages(self, body: dict[str, Any]) -> None:
        found = next_answer(self.server.script, body)
        if found is None:
            block: dict[str, Any] = {"type": "text", "text": "OK"}
            tag = None
        else:
            key, step, answer = found
            block = content_block(key, step, answer)
            tag = [key, step]
            with self.server.lock:
                self.server.served.append((key, step))
        self.server.record(
            {
                "method": "POST",
                "path": "/v1/messages",
                "stream": bool(body.get("stream")),
                "max_tokens": body.get("max_tokens"),
                "tools": len(body.get("tools") or []),
                "scripted": tag,
                "answer": block,
                "tool_results": tool_results(body),
            }
        )
        full = message(block, str(body.get("model") or MODEL))
        if not body.get("stream"):
            self._json(200, full)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for name, data in sse_events(full):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True


# -- the driver: runs inside `unshare -n`, with only loopback -----------------------


def main(spec_path: str) -> int:
    return drive(
        spec_path,
        lambda spec: FakeAnthropic(spec["script"], Path(spec["requests"])),
        lambda server: {"ANTHROPIC_BASE_URL": server.url},
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
