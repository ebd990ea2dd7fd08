"""How far a no-server capture and a headless first tool call are above Python's floor (issue 24).

``python -m benchmarks.floor [--sizes 10000] [--worktree PATH] [--rounds 5]``

Issue 24 asks for ``snapshotter capture`` without a server within 2x the
reference capture, and for a tool call sent at once after ``session_start``
within 2x ``git status``. Neither can wait for less than a Python process that
stats every file: this module measures that floor beside our figures, each the
wall time of one process (median of the rounds, interleaved, in the worktree):

- ``git status --porcelain`` and the reference no-change capture (reference.py);
- ``python -c pass``: the interpreter's start-up, site and ``.pth`` files included;
- ``python -c 'import pygit2'``: that, and the library every capture reads objects with;
- the bare walk: a ``python`` process that lists every directory (``os.scandir``)
  and lstats every entry, and nothing else (``.git`` left out); the walk alone is
  the time it measures inside itself;
- the bare watched walk: the same walk, with an inotify watch on every directory
  and every regular file before its lstat, as the hook server's baseline takes
  it (store/watch.py: the file watches catch writes through hard links made from
  outside); the time it measures inside itself;
- ``snapshotter capture``, no server, nothing changed since its last capture;
- ``snapshotter list``: the start-up every command pays, with no walk;
- the headless first tool call: ``session_start`` with no server running, then a
  ``pre_tool_use`` at once (first_event.py's ``first_now``).

The Python floor of the capture is ``python -c pass`` plus the bare walk alone:
a no-change capture reads no object (pygit2's import, shown for scale, is paid
only once something changed). The first tool call's is ``python -c pass`` plus
the watched walk alone: the server that takes its baseline starts with
``session_start`` (the tool call's own hook process runs meanwhile), and must
have every watch in place before it answers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks import procs
from benchmarks.first_event import Hooks, add_source_options, each_worktree
from benchmarks.reference import ReferenceShadow
from benchmarks.worktrees import GeneratedWorktree

# The bare walk: every directory listed, every entry lstat'ed; prints its own ms.
# ``{setup}``, ``{watch_dir}`` and ``{watch_file}`` are empty for it; the watched
# walk below fills them in.
_WALK = """
import os, sys, time
{setup}
start = time.perf_counter()
stack, files = [sys.argv[1]], 0
while stack:
    path = stack.pop()
    {watch_dir}
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.name == ".git":
                continue
            {watch_file}
            entry.stat(follow_symlinks=False)
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            else:
                files += 1
print((time.perf_counter() - start) * 1000.0, files)
"""
BARE_WALK = _WALK.format(setup="", watch_dir="", watch_file="")

# The same walk as the hook server's baseline does it: every directory and every
# regular file gets an inotify watch of its own before its lstat (what catches a
# write through a hard link made from outside, watch.py). Prints its own ms.
BARE_WATCHED_WALK = _WALK.format(
    setup="import ctypes\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)\n"
    "add = libc.inotify_add_watch",
    # a directory's events (watch._MASK); then each regular file's IN_ATTRIB
    watch_dir="add(fd, os.fsencode(path), 0xFCE | 0x1000000 | 0x2000000); "
    'prefix = os.fsencode(path) + b"/"',
    watch_file="if entry.is_file(follow_symlinks=False): "
    "add(fd, prefix + os.fsencode(entry.name), 0x4 | 0x2000000)",
)

TOOL: dict[str, object] = {"tool_name": "Bash", "tool_input": {"command": "true"}}

# key: title
FIGURES: dict[str, str] = {
    "git_status": "git status --porcelain",
    "reference": "reference capture, no change",
    "python": "python -c pass (interpreter start-up)",
    "pygit2": "python -c 'import pygit2'",
    "walk_process": "bare walk: a python process that lstats every file",
    "walk": "bare walk alone (inside that process)",
    "watched_walk": "bare walk with an inotify watch a file and a directory, alone",
    "capture": "ours: `snapshotter capture`, no change, no server",
    "list": "ours: `snapshotter list` (start-up, no walk)",
    "first_now": "ours: pre_tool at once after session_start, no server before",
}


def measure(
    wt: GeneratedWorktree, env: dict[str, str], runtime: Path, work: Path, rounds: int
) -> dict[str, list[float]]:
    """Every figure above, ``rounds`` times: key → ms."""
    data = work / "data"
    quiet = dict(env, SNAPSHOTTER_HOOK_SERVER="0")
    ours = [*procs.snapshotter_cmd(), "--data-dir", str(data)]
    ref = ReferenceShadow(work / "shadow", wt.root, env)
    ref.init()
    ref.capture()
    hook = Hooks(wt, env, runtime, data)
    hook("session_start", "prime", None)  # the store's first capture: not measured
    hook.stop()

    def run(cmd: list[str], environ: dict[str, str] = env) -> procs.Done:
        done = procs.run(cmd, environ, cwd=wt.root)
        if done.code != 0:
            raise RuntimeError(f"{cmd}: exit {done.code}, {done.stderr[:300]!r}")
        return done

    def bare_walk() -> float:
        done = run([procs.python(), "-c", BARE_WALK, str(wt.root)])
        found["walk"].append(float(done.stdout.split()[0]))
        return done.ms

    def watched_walk() -> float:
        done = run([procs.python(), "-c", BARE_WATCHED_WALK, str(wt.root)])
        return float(done.stdout.split()[0])

    def reference() -> float:
        started = time.perf_counter()
        ref.capture()
        return (time.perf_counter() - started) * 1000.0

    def first_now() -> float:
        session = f"floor-{time.time_ns()}"
        hook.stop()
        hook("session_start", session, None)
        ms = hook("pre_tool_use", session, TOOL).ms
        hook("post_tool_use", session, TOOL)
        hook.stop()
        return ms

    steps: dict[str, Callable[[], float]] = {
        "git_status": lambda: run(["git", "status", "--porcelain"]).ms,
        "reference": reference,
        "python": lambda: run([procs.python(), "-c", "pass"]).ms,
        "pygit2": lambda: run([procs.python(), "-c", "import pygit2"]).ms,
        "walk_process": bare_walk,
        "watched_walk": watched_walk,
        "capture": lambda: run([*ours, "capture"], quiet).ms,
        "list": lambda: run([*ours, "list"], quiet).ms,
        "first_now": first_now,
    }
    run([*ours, "capture"], quiet)  # the stat cache as a capture from the shell leaves it
    found: dict[str, list[float]] = {key: [] for key in FIGURES}
    for r in range(rounds):
        order = list(steps) if r % 2 == 0 else list(reversed(steps))
        for key in order:
            found[key].append(steps[key]())
    return found


def report(label: str, figures: dict[str, list[float]], rounds: int) -> dict[str, float]:
    """The table for one worktree; returns the medians."""
    ms = {key: statistics.median(values) for key, values in figures.items() if values}
    status, ref = ms["git_status"], ms["reference"]
    print(f"\n{label}, median of {rounds} rounds (process wall time)")
    print("| figure | ms | x git status | x reference |")
    print("| --- | ---: | ---: | ---: |")
    for key, title in FIGURES.items():
        if key in ms:
            print(f"| {title} | {ms[key]:.1f} | {ms[key] / status:.2f}x | {ms[key] / ref:.2f}x |")
    floor = ms["python"] + ms["walk"]
    watched = ms["python"] + ms["watched_walk"]
    print(
        f"\nPython floor (interpreter + bare walk): {floor:.0f} ms, {floor / ref:.2f}x the "
        f"reference, {floor / status:.2f}x git status. Ours: no-change capture "
        f"{ms['capture'] / floor:.2f}x it.\nThe headless first tool call's floor "
        f"(interpreter + the walk with its watches): {watched:.0f} ms, "
        f"{watched / status:.2f}x git status; ours {ms['first_now'] / watched:.2f}x it"
    )
    return ms


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_source_options(parser)
    parser.add_argument("--json", type=Path, help="also write the medians here")
    args = parser.parse_args(argv)
    results = {}
    for label, wt, env, runtime, work in each_worktree(args, "snapshotter-floor-"):
        results[label] = report(label, measure(wt, env, runtime, work, args.rounds), args.rounds)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
