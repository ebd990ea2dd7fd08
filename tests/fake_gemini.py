"""A fake Gemini API that scripts function calls, and a driver that runs ``gemini`` on it.

Only for the opt-in real-client tests (``pytest -m realclient``): the real
Gemini CLI talks to this server over loopback (``GOOGLE_GEMINI_BASE_URL``), in
a network namespace of its own (``unshare -n``), so nothing leaves the machine.

The script maps a *key* (a word in brackets in the user's prompt) to the
answers for that prompt, in order: a function call ``{"call": NAME, "args":
{...}}`` (``run_shell_command``, ``write_file``, ``replace``), or ``{"text":
TEXT}``, which ends the turn. Which answer a request gets is read from the
request itself (how many ``model`` contents follow the prompt that holds the
key), so a retried request gets the same answer again. Requests that offer no
tools (side requests: a title, a summary, a check) get a short text answer.

Run as a script (``python fake_gemini.py SPEC.json``) it is the driver: it
starts the server on 127.0.0.1 on a random port, runs each ``gemini`` command
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

# key -> the answers to that prompt, in order: {"call": NAME, "args": {...}} or {"text": TEXT}.
Script = dict[str, list[dict[str, Any]]]

MODEL = "gemini-2.5-flash"


def _texts(content: dict[str, Any]) -> str:
    parts = content.get("parts")
    if not isinstance(parts, list):
        return ""
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))


def next_answer(script: Script, body: dict[str, Any]) -> tuple[str, int, dict[str, Any]] | None:
    """(key, step, answer) for a scripted prompt; None for a request the script does not know."""
    contents = body.get("contents")
    if not isinstance(contents, list) or not body.get("tools"):
        return None  # the agent's requests always offer tools; side requests do not
    for index in range(len(contents) - 1, -1, -1):
        content = contents[index]
        if not isinstance(content, dict) or content.get("role") != "user":
            continue
        text = _texts(content)
        key = next((k for k in script if f"[{k}]" in text), None)
        if key is None:
            continue
        step = sum(
            1 for c in contents[index + 1 :] if isinstance(c, dict) and c.get("role") == "model"
        )
        answers = script[key]
        return key, step, answers[step] if step < len(answers) else {"text": "Done."}
    return None


def function_responses(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``functionResponse`` parts of the request's last content: what the client told
    the model its last tool call gave (logged, to see how a failed command reads)."""
    contents = body.get("contents")
    if not isinstance(contents, list) or not contents or not isinstance(contents[-1], dict):
        return []
    parts = contents[-1].get("parts")
    return [
        p["functionResponse"]
        for p in parts or []
        if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
    ]


def part(answer: dict[str, Any]) -> dict[str, Any]:
    if "call" in answer:
        return {"functionCall": {"name": answer["call"], "args": answer["args"]}}
    return {"text": answer["text"]}


def response(answer: dict[str, Any], model: str) -> dict[str, Any]:
    """One GenerateContentResponse holding the whole answer."""
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [part(answer)]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": model,
        "responseId": f"resp-{time.monotonic_ns()}",
    }


def sse_chunks(full: dict[str, Any]) -> Iterator[bytes]:
    """``alt=sse`` streaming: each chunk a ``data:`` line; one chunk is enough."""
    yield f"data: {json.dumps(full)}\r\n\r\n".encode()


class FakeGemini(ScriptedServer):
    def __init__(self, script: Script, log: Path | None = None) -> None:
        super().__init__(Handler, script, log)


class Handler(JsonHandler):
    server: FakeGemini

    def do_GET(self) -> None:
        self.server.record({"method": "GET", "path": self.path})
        path = self.path.split("?")[0]
        if path.endswith("/models"):
            self._json(200, {"models": [{"name": f"models/{MODEL}"}]})
        elif "/models/" in path:
            self._json(200, {"name": f"models/{MODEL}"})
        else:
            self._json(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        path = self.path.split("?")[0]
        model = path.rsplit("/", 1)[-1].split(":")[0] or MODEL
        if path.endswith(":countTokens"):
            self.server.record({"method": "POST", "path": path})
            self._json(200, {"totalTokens": 100})
        elif path.endswith(":streamGenerateContent") or path.endswith(":generateContent"):
            self._generate(path, body, model, stream=path.endswith(":streamGenerateContent"))
        else:
            self.server.record({"method": "POST", "path": path, "body": body})
            self._json(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})

    def _generate(self, path: str, body: dict[str, Any], model: str, stream: bool) -> None:
        found = next_answer(self.server.script, body)
        config = body.get("generationConfig") or {}
        if found is not None:
            key, step, answer = found
            tag: list[Any] | None = [key, step]
            with self.server.lock:
                self.server.served.append((key, step))
        elif config.get("responseMimeType") == "application/json":
            answer, tag = {"text": "{}"}, None  # a side request that wants JSON
        else:
            answer, tag = {"text": "OK"}, None
        self.server.record(
            {
                "method": "POST",
                "path": path,
                "stream": stream,
                "contents": len(body.get("contents") or []),
                "tools": sum(
                    len(t.get("functionDeclarations") or []) for t in body.get("tools") or []
                ),
                "json": config.get("responseMimeType") == "application/json",
                "scripted": tag,
                "function_responses": function_responses(body),
                "answer": part(answer),
            }
        )
        full = response(answer, model)
        if not stream:
            self._json(200, full)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for chunk in sse_chunks(full):
            self.wfile.write(chunk)
            self.wfile.flush()
        self.close_connection = True


# -- the driver: runs inside `unshare -n`, with only loopback -----------------------


def main(spec_path: str) -> int:
    return drive(
        spec_path,
        lambda spec: FakeGemini(spec["script"], Path(spec["requests"])),
        lambda server: {"GOOGLE_GEMINI_BASE_URL": server.url},
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
