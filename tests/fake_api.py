"""What every fake model API of the real-client tests shares: a server on
127.0.0.1 that answers from a script and logs each request, a quiet HTTP/1.1
handler that answers JSON, and the driver that runs the client against it
inside ``unshare -n`` (only loopback) and waits for its hooks. Each API's own
shapes live in fake_anthropic.py, fake_openai.py, fake_gemini.py and
fake_copilot.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
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


# -- the driver: runs inside `unshare -n`, with only loopback -----------------------


def interrupt_when_gone(proc: subprocess.Popen[bytes], spec: dict[str, Any]) -> str:
    """Send the spec's signal to ``proc`` once ``gone`` no longer exists (and a pause)."""
    gone = Path(spec["gone"])
    deadline = time.monotonic() + float(spec.get("within", 60))
    while gone.exists():
        if proc.poll() is not None:
            return f"the client exited ({proc.returncode}) before {gone.name} was removed"
        if time.monotonic() > deadline:
            return f"{gone.name} was not removed in time"
        time.sleep(0.05)
    time.sleep(float(spec.get("after", 1.0)))
    proc.send_signal(getattr(signal, spec.get("signal", "SIGINT")))
    return f"sent {spec.get('signal', 'SIGINT')}"


def hooks_running() -> list[int]:
    """``snapshotter hook`` processes still running (in this PID namespace's /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if b"snapshotter" in argv and b"hook" in argv:
            found.append(int(entry.name))
    return found


def wait_for_hooks(within: float) -> float:
    """Wait until the hooks the client started are done: it may exit without waiting for
    SessionEnd's, and every process here is killed when the driver, PID 1, exits."""
    started = time.monotonic()
    while hooks_running() and time.monotonic() - started < within:
        time.sleep(0.05)
    return round(time.monotonic() - started, 2)


def run_one(run: dict[str, Any], env: dict[str, str], out: Path) -> dict[str, Any]:
    """Run the client once (``run``: argv, cwd, env, interrupt?, timeout?), then wait
    for the hooks it started."""
    env = {**os.environ, **run.get("env", {}), **env}
    started = time.monotonic()
    with (
        (out.with_suffix(".stdout")).open("ab") as so,
        (out.with_suffix(".stderr")).open("ab") as se,
    ):
        proc = subprocess.Popen(
            run["argv"], cwd=run["cwd"], env=env, stdin=subprocess.DEVNULL, stdout=so, stderr=se
        )
        note = interrupt_when_gone(proc, run["interrupt"]) if "interrupt" in run else None
        try:
            code = proc.wait(timeout=float(run.get("timeout", 120)))
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
            note = (note or "") + "; killed after the timeout"
    seconds = round(time.monotonic() - started, 2)
    waited = wait_for_hooks(float(run.get("hooks_within", 20)))
    return {"returncode": code, "seconds": seconds, "hooks_after_exit": waited, "note": note}


def drive(
    spec_path: str,
    make: Callable[[dict[str, Any]], ScriptedServer],
    client_env: Callable[[ScriptedServer], dict[str, str]],
) -> int:
    """Serve the spec's script, run its client runs one by one, write the summary."""
    spec = json.loads(Path(spec_path).read_text())
    out = Path(spec["out"])
    server = make(spec)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    results = [run_one(run, client_env(server), out) for run in spec["runs"]]
    server.shutdown()
    summary = {"runs": results, "served": server.served}
    out.write_text(json.dumps(summary, indent=1))
    return 0
