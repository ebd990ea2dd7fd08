"""A fake OpenAI Responses API that scripts tool calls, and a driver that runs ``codex`` on it.

Only for the opt-in real-client tests (``pytest -m realclient``): the real
Codex CLI talks to this server over loopback (a ``model_provider`` with
``base_url`` ``http://127.0.0.1:PORT/v1`` and ``wire_api = "responses"``), in a
network namespace of its own (``unshare -n``), so nothing leaves the machine.

Codex sends ``POST /v1/responses`` with ``stream: true`` and reads Server-Sent
Events; what it needs of a stream is ``response.created``, one
``response.output_item.done`` per output item and ``response.completed`` (with
the response id and usage). The tools it offers are in the request.

The script maps a *key* (a word that appears in the user's prompt) to the
answers for that prompt, in order: ``{"shell": CMD}`` (an ``exec_command``
function call), ``{"patch": TEXT}`` (an ``apply_patch`` call, the patch text
with ``*** Begin Patch`` … ``*** End Patch``), or ``{"text": TEXT}``, which ends
the turn. Which answer a request gets is read from the request itself (how
many tool calls follow the last user message that holds the key), so a retried
request gets the same answer again. Requests without a key get a short text.
The request log holds, for each request, what Codex sent back of each tool call
(``outputs``: call_id -> output text), so a test can read how a command ended.

Run as a script (``python fake_openai.py SPEC.json``) it is the driver, as
``fake_anthropic.py``'s (whose interrupt and wait-for-hooks helpers it uses): the
server listens on the spec's ``port`` (the test writes that port into the
provider's ``base_url`` in ``$CODEX_HOME/config.toml`` beforehand; inside the
namespace every port is free), each run's argv is started in turn. With
``FAKE_OPENAI_BODIES=1`` the request log holds each request's whole body too.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fake_api import JsonHandler, ScriptedServer, drive

# key -> the answers to that prompt, in order: {"shell": CMD}, {"patch": TEXT} or {"text": TEXT}.
Script = dict[str, list[dict[str, str]]]

MODEL = "gpt-5-codex"
TOOL_CALLS = {"function_call", "custom_tool_call", "local_shell_call"}


def _texts(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))


def tool_names(body: dict[str, Any]) -> list[str]:
    """The names of the tools a request offers."""
    return [
        str(t.get("name") or t.get("type")) for t in body.get("tools") or [] if isinstance(t, dict)
    ]


def tool_outputs(body: dict[str, Any]) -> dict[str, str]:
    """call_id -> what Codex sent back as the output of each tool call the request holds."""
    found: dict[str, str] = {}
    for item in body.get("input") or []:
        if isinstance(item, dict) and str(item.get("type", "")).endswith("_call_output"):
            output = item.get("output")
            if isinstance(output, list):  # content items
                output = "\n".join(str(o.get("text", "")) for o in output if isinstance(o, dict))
            elif isinstance(output, dict):
                output = str(output.get("content", output))
            found[str(item.get("call_id"))] = str(output)
    return found


def next_answer(script: Script, body: dict[str, Any]) -> tuple[str, int, dict[str, str]] | None:
    """(key, step, answer) for a scripted prompt; None for a request the script does not know."""
    items = body.get("input")
    if not isinstance(items, list) or not body.get("tools"):
        return None
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if not isinstance(item, dict) or item.get("role") != "user":
            continue
        key = next((k for k in script if f"[{k}]" in _texts(item)), None)
        if key is None:
            continue
        step = sum(
            1 for i in items[index + 1 :] if isinstance(i, dict) and i.get("type") in TOOL_CALLS
        )
        answers = script[key]
        return key, step, answers[step] if step < len(answers) else {"text": "Done."}
    return None


def output_item(key: str, step: int, answer: dict[str, str], tools: list[str]) -> dict[str, Any]:
    """The one output item of an answer, shaped for the tools the request offered."""
    call_id = f"call_{key}_{step:02d}"
    if "shell" in answer:
        # exec_command (unified exec) is what the current models get; shell_command,
        # shell (an argv) what older model metadata offers.
        args: dict[str, Any]
        if "exec_command" in tools:
            name, args = "exec_command", {"cmd": answer["shell"]}
        elif "shell_command" in tools:
            name, args = "shell_command", {"command": answer["shell"]}
        else:
            name, args = "shell", {"command": ["bash", "-lc", answer["shell"]]}
        return {
            "type": "function_call",
            "id": f"fc_{key}_{step:02d}",
            "call_id": call_id,
            "name": name,
            "arguments": json.dumps(args),
            "status": "completed",
        }
    if "patch" in answer:
        # apply_patch is a freeform ("custom") tool for the Codex models, a function otherwise.
        return {
            "type": "custom_tool_call",
            "id": f"ctc_{key}_{step:02d}",
            "call_id": call_id,
            "name": "apply_patch",
            "input": answer["patch"],
            "status": "completed",
        }
    return {
        "type": "message",
        "id": f"msg_{key}_{step:02d}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": answer.get("text", "?"), "annotations": []}],
    }


def sse_events(response_id: str, item: dict[str, Any], model: str) -> Iterator[dict[str, Any]]:
    """The streaming events of one response with one output item."""
    base = {"id": response_id, "object": "response", "model": model, "created_at": int(time.time())}
    yield {"type": "response.created", "response": {**base, "status": "in_progress", "output": []}}
    yield {"type": "response.output_item.added", "output_index": 0, "item": item}
    if item["type"] == "message":
        text = item["content"][0]["text"]
        yield {
            "type": "response.output_text.delta",
            "item_id": item["id"],
            "output_index": 0,
            "content_index": 0,
            "delta": text,
        }
    yield {"type": "response.output_item.done", "output_index": 0, "item": item}
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 15,
    }
    done = {**base, "status": "completed", "output": [item], "usage": usage}
    yield {"type": "response.completed", "response": done}


class FakeOpenAI(ScriptedServer):
    url_path = "/v1"

    def __init__(self, script: Script, log: Path | None = None, port: int = 0) -> None:
        super().__init__(Handler, script, log, port)


class Handler(JsonHandler):
    server: FakeOpenAI

    def do_GET(self) -> None:
        self.server.record({"method": "GET", "path": self.path})
        if self.path.split("?")[0].endswith("/models"):
            self._json(200, {"object": "list", "data": [], "models": []})
        else:
            self._json(404, {"error": {"message": "not here"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("content-encoding") == "zstd":
            self.server.record({"method": "POST", "path": self.path, "note": "zstd body"})
            self._json(400, {"error": {"message": "zstd bodies are not supported here"}})
            return
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        path = self.path.split("?")[0]
        if not path.endswith("/responses"):
            self.server.record({"method": "POST", "path": path})
            self._json(404, {"error": {"message": "not here"}})
            return
        self._responses(body if isinstance(body, dict) else {})

    def _responses(self, body: dict[str, Any]) -> None:
        tools = tool_names(body)
        found = next_answer(self.server.script, body)
        if found is None:
            key, step, answer, tag = "side", 0, {"text": "OK"}, None
        else:
            key, step, answer = found
            tag = [key, step]
            with self.server.lock:
                self.server.served.append((key, step))
        item = output_item(key, step, answer, tools)
        self.server.record(
            {
                "method": "POST",
                "path": "/v1/responses",
                "stream": bool(body.get("stream")),
                "tools": tools,
                "input_types": [
                    i.get("type") for i in body.get("input") or [] if isinstance(i, dict)
                ],
                "scripted": tag,
                "outputs": tool_outputs(body),
                "answer": item,
                **({"body": body} if os.environ.get("FAKE_OPENAI_BODIES") == "1" else {}),
            }
        )
        response_id = f"resp_{time.monotonic_ns()}"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        for event in sse_events(response_id, item, str(body.get("model") or MODEL)):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True


# -- the driver: runs inside `unshare -n`, with only loopback -----------------------


def main(spec_path: str) -> int:
    return drive(
        spec_path,
        lambda spec: FakeOpenAI(spec["script"], Path(spec["requests"]), int(spec.get("port", 0))),
        lambda server: {},
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
