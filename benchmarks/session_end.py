"""``session_end`` as Claude Code waits for it: cold and warm hook times (issue 11.4).

``python -m benchmarks.session_end [--size 10000] [--rounds 5] [--tmp-dir DIR]``

Claude Code kills a SessionEnd hook after 1.5 s. Each round opens a turn,
edits 10 files and ends the session with ``max_checkpoints=1`` (what default
retention does to a month-old session, the case that took 16-39 s of gc
inside the hook): the hook closes the turn, records its checkpoint and starts
gc in a process of its own. Cold: no hook server running (the hook imports
everything itself). Warm: through the resident server. Beside them, the
reference git-CLI capture of the same 10 edits (one capture is what a
session_end amounts to), and how long the detached gc ran after the hook had
returned. Medians of ``--rounds``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks import procs
from benchmarks.install import measured_install
from benchmarks.reference import ReferenceShadow
from benchmarks.run import hermetic, timed
from benchmarks.worktrees import append_edit, generate, pick

EDITS = 10
GC_WAIT_S = 600.0


def hook(data: Path, env: dict[str, str], event: dict[str, str], *args: str) -> float:
    """One ``snapshotter hook`` process; its wall time in ms."""
    cmd = [*procs.snapshotter_cmd(), "--data-dir", str(data), "hook", *args]
    ms, done = timed(
        lambda: subprocess.run(
            cmd, input=json.dumps(event).encode(), capture_output=True, env=env, check=False
        )
    )
    if done.returncode != 0 or done.stderr:
        raise RuntimeError(f"hook {event['hook_event_name']}: {done.stderr[:500]!r}")
    return ms


def wait_for_gc(worktree: Path) -> float:
    """Milliseconds until the detached gc of ``worktree`` has exited (it exists already:
    the hook started it before returning)."""
    marker = f"\0{worktree}\0--detached\0".encode()
    start = time.perf_counter()
    deadline = time.monotonic() + GC_WAIT_S
    while time.monotonic() < deadline and any(marker in cmd for cmd in _cmdlines()):
        time.sleep(0.01)
    return (time.perf_counter() - start) * 1000.0


def _cmdlines() -> list[bytes]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            with contextlib.suppress(OSError):
                found.append((proc / "cmdline").read_bytes())
    return found


def measure(size: int, rounds: int, work: Path) -> dict[str, list[float]]:
    home = work / "home"
    home.mkdir()
    figures: dict[str, list[float]] = {}
    runtime = Path(tempfile.mkdtemp(prefix="snb-", dir="/tmp"))  # the servers' sockets
    try:
        procs.use_install(measured_install(work))
        with hermetic(home, runtime) as env:
            wt = generate(work / "wt", size, env)
            ref = ReferenceShadow(work / "ref-shadow", wt.root, env)
            ref.init()
            ref.capture()
            data = work / "data"
            served = dict(env, SNAPSHOTTER_HOOK_SERVER="1")
            base = {"session_id": "bench", "cwd": str(wt.root)}
            hook(data, served, {**base, "hook_event_name": "session_start"})  # the first capture
            wait_for_gc(wt.root)
            modes = ["cold"] * rounds + ["warm"] * rounds  # warm rounds keep one server up
            for rnd, mode in enumerate(modes):
                hook(data, served, {**base, "hook_event_name": "turn_start"})
                for rel in pick(wt, rnd * EDITS, EDITS):
                    append_edit(wt.root, rel, f"round {rnd}")
                if mode == "cold":
                    procs.stop_servers(runtime)  # as after the server's idle exit
                else:
                    procs.wait_for_server(runtime)  # the turn_start hook started it
                ms = hook(
                    data,
                    served,
                    {**base, "hook_event_name": "session_end"},
                    "--arg",
                    "max_checkpoints=1",
                )
                figures.setdefault(f"session_end_{mode}", []).append(ms)
                figures.setdefault("gc_after_hook", []).append(wait_for_gc(wt.root))
                ref_ms, _tree = timed(ref.capture)
                figures.setdefault("ref_edit10", []).append(ref_ms)
    finally:
        procs.stop_servers(runtime)
        shutil.rmtree(runtime, ignore_errors=True)
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tmp-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="snapshotter-session-end-", dir=args.tmp_dir))
    try:
        figures = measure(args.size, args.rounds, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    titles = {
        "session_end_cold": "session_end hook, cold (no server running)",
        "session_end_warm": "session_end hook, warm (through the server)",
        "ref_edit10": "reference capture, 10 files changed",
        "gc_after_hook": "detached gc, after the hook returned",
    }
    print(f"| {args.size} files, median of {args.rounds} | ms |")
    print("| --- | ---: |")
    for key, title in titles.items():
        with contextlib.suppress(statistics.StatisticsError):
            print(f"| {title} | {statistics.median(figures[key]):.0f} |")


if __name__ == "__main__":
    main()
