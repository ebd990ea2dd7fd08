"""What every fake model API of the real-client tests shares: a server on
127.0.0.1 that answers from a script and logs each request, and a quiet
HTTP/1.1 handler that answers JSON. Each API's own shapes live in
fake_anthropic.py, fake_openai.py, fake_gemini.py and fake_copilot.py."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Script = dict[str, list[dict[str, Any]]]  # prompt key -> the tool calls to answer, in order


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True
    url_path = ""  # what the client's base URL adds after host and port (``/v1``)

    def __init__(
        self,
        handler: type[BaseHTTPRequestHandler],
        script: Script,
        log: Path | None = None,
        port: int = 0,
    ) -> None:
        super().__init__(("127.0.0.1", port), handler)
        self.script = script
        self.log = log
        self.lock = threading.Lock()
        self.served: list[tuple[str, int]] = []  # (key, step) of each scripted answer

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{self.url_path}"

    def record(self, entry: dict[str, Any]) -> None:
        if self.log is None:
            return
        with self.lock, self.log.open("a") as f:
            f.write(json.dumps(entry) + "\n")


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _json(self, status: int, data: Any) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)
