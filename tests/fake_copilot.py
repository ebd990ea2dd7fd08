"""A fake OpenAI chat-completions API that scripts tool calls, and a driver that runs ``copilot``.

Only for the opt-in real-client tests (``pytest -m realclient``): the real
GitHub Copilot CLI runs in BYOK offline mode (``COPILOT_OFFLINE=true``,
``COPILOT_PROVIDER_BASE_URL`` pointing here, see ``copilot help providers``)
and talks to this server over loopback, in a network namespace of its own
(``unshare -n``), so nothing leaves the machine and no GitHub login is needed.

The script maps a *key* (a word in brackets in the user's prompt) to the
answers for that prompt, in order: ``{"tool": NAME, "args": {...}}`` (one
``tool_calls`` entry), or ``{"text": TEXT}``, which ends the turn. Which
answer a request gets is read from the request itself (how many assistant
messages follow the prompt that holds the key), so a retried request gets the
same answer again. Requests that carry no key (a title, a summary) get a short
text answer.

Run as a script (``python fake_copilot.py SPEC.json``) it is the driver: it
starts the server on 127.0.0.1 on a random port, runs each ``copilot`` command
of the spec against it in turn, and logs every request to the spec's
``requests`` file.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fake_api import JsonHandler, ScriptedServer, drive

# key -> the answers to that prompt, in order: {"tool": NAME, "args": {...}} or {"text": TEXT}.
Script = dict[str, list[dict[str, Any]]]

MODEL = "gpt-4.1"


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
        return None  # the agent's requests offer tools; side requests do not
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


def completion(key: str, step: int, answer: dict[str, Any], model: str) -> dict[str, Any]:
    """A whole (non-streamed) chat completion for one answer."""
    if "tool" in answer:
        call = {
            "id": f"call_{key}_{step:02d}".replace("-", "_"),
            "type": "function",
            "function": {"name": answer["tool"], "arguments": json.dumps(answer["args"])},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": answer["text"]}
        finish = "stop"
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def sse_chunks(full: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The streamed chunks of one completion: role, then content or the tool call, then finish."""
    base = {k: full[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    (choice,) = full["choices"]
    message = choice["message"]
    yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    if message.get("tool_calls"):
        calls = [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]
        yield {**base, "choices": [{"index": 0, "delta": {"tool_calls": calls}}]}
    else:
        yield {**base, "choices": [{"index": 0, "delta": {"content": message["content"]}}]}
    end = {"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}
    yield {**base, "choices": [end], "usage": full["usage"]}


class FakeOpenAI(ScriptedServer):
    url_path = "/v1"

    def __init__(self, script: Script, log: Path | None = None) -> None:
        super().__init__(Handler, script, log)


class Handler(JsonHandler):
    server: FakeOpenAI

    def do_GET(self) -> None:
        self.server.record({"method": "GET", "path": self.path})
        if self.path.split("?")[0].endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not here"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        if not path.endswith("/chat/completions"):
            self.server.record({"method": "POST", "path": path, "body": body})
            self._json(404, {"error": {"message": f"no {path} here"}})
            return
        self._complete(body if isinstance(body, dict) else {})

    def _complete(self, body: dict[str, Any]) -> None:
        found = next_answer(self.server.script, body)
        if found is None:
            key, step, answer, tag = "side", 0, {"text": "OK"}, None
        else:
            key, step, answer = found
            tag = [key, step]
            with self.server.lock:
                self.server.served.append((key, step))
        tools = body.get("tools") or []
        self.server.record(
            {
                "method": "POST",
                "path": "/chat/completions",
                "stream": bool(body.get("stream")),
                "tools": [t.get("function", {}).get("name") for t in tools],
                "tool_schemas": {
                    t.get("function", {}).get("name"): t.get("function", {}).get("parameters")
                    for t in tools
                    if t.get("function", {}).get("name") in ("bash", "edit", "create")
                },
                "scripted": tag,
                "answer": answer,
            }
        )
        full = completion(key, step, answer, str(body.get("model") or MODEL))
        if not body.get("stream"):
            self._json(200, full)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for chunk in sse_chunks(full):
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


# -- the driver: runs inside `unshare -n`, with only loopback -----------------------


def main(spec_path: str) -> int:
    return drive(
        spec_path,
        lambda spec: FakeOpenAI(spec["script"], Path(spec["requests"])),
        lambda server: {"COPILOT_PROVIDER_BASE_URL": server.url},
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
