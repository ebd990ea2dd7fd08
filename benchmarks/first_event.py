"""The first events of a session with no hook server running, as the agent sees them (issue 24.3).

``python -m benchmarks.first_event [--sizes 10000] [--worktree PATH] [--rounds 3]``

Every figure is the wall time of one ``snapshotter hook`` process (what the
runtime waits for), measured after every hook server of the run was stopped
(as after the server's idle exit), beside ``git status --porcelain`` (the
floor) in the same round. The store already holds the worktree (an earlier
session captured it), so "no server" is the everyday case, not a first capture.

- ``first_start``: ``session_start``, no server running.
- ``first_prompt``: the first prompt (``turn_start``) after ``PAUSE_S`` — the
  user typing it — and ``first_pre_tool``, the tool call that follows.
- ``first_now``: a ``pre_tool`` sent at once after ``session_start`` (a
  headless run: nobody types), which must wait for the baseline.
- ``first_nostart``: the first event of a runtime that sends no
  ``session_start`` (a ``turn_start``), no server running.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from benchmarks import procs
from benchmarks.install import measured_install
from benchmarks.worktrees import GeneratedWorktree, append_edit, copy_existing, generate, pick

PAUSE_S = 3.0  # the user typing the first prompt after the agent started

# key: (title, what it waits for)
FIGURES: dict[str, str] = {
    "floor": "git status --porcelain (the floor)",
    "first_start": "session_start, no server running",
    "first_prompt": f"the first prompt (turn_start), {PAUSE_S:g} s after session_start",
    "first_pre_tool": "the first pre_tool, right after that prompt",
    "first_now": "a pre_tool at once after session_start (headless: nobody types)",
    "first_nostart": "turn_start as a session's first event (no session_start), no server",
}

Hook = Callable[[str, str, dict[str, object] | None], procs.Done]


def session_figures(
    hook: Hook, wt: GeneratedWorktree, stop: Callable[[], None], r: int
) -> dict[str, float]:
    """One round of every scenario above: figure key → ms. ``hook(event, session, extra)``
    runs one hook process; ``stop`` stops every hook server of the run."""
    found: dict[str, float] = {}
    edit = pick(wt, r, 1)[0]
    tool: dict[str, object] = {
        "tool_name": "Write",
        "tool_input": {"file_path": str(wt.root / edit)},
    }
    stop()
    found["first_start"] = hook("session_start", f"typed-{r}", None).ms
    time.sleep(PAUSE_S)  # the user types the prompt meanwhile
    found["first_prompt"] = hook("turn_start", f"typed-{r}", None).ms
    found["first_pre_tool"] = hook("pre_tool_use", f"typed-{r}", tool).ms
    append_edit(wt.root, edit, f"typed {r}")
    hook("post_tool_use", f"typed-{r}", tool)
    hook("turn_end", f"typed-{r}", None)
    stop()
    hook("session_start", f"now-{r}", None)
    found["first_now"] = hook("pre_tool_use", f"now-{r}", tool).ms
    append_edit(wt.root, edit, f"now {r}")
    hook("post_tool_use", f"now-{r}", tool)
    stop()
    found["first_nostart"] = hook("turn_start", f"nostart-{r}", None).ms
    hook("turn_end", f"nostart-{r}", None)
    stop()
    return found


class Hooks:
    """``snapshotter hook`` processes on one worktree and data directory, each one's
    wall time what the runtime waits for; ``stop`` ends every hook server of the run."""

    def __init__(self, wt: GeneratedWorktree, env: dict[str, str], runtime: Path, data: Path):
        self.wt, self.env, self.runtime, self.data = wt, env, runtime, data
        self.cmd = [*procs.snapshotter_cmd(), "--data-dir", str(data), "hook"]

    def __call__(self, event: str, session: str, extra: dict[str, object] | None) -> procs.Done:
        body = {
            "hook_event_name": event,
            "session_id": session,
            "cwd": str(self.wt.root),
            **(extra or {}),
        }
        done = procs.run(
            self.cmd,
            dict(self.env, SNAPSHOTTER_HOOK_SERVER="1"),
            cwd=self.wt.root,
            stdin=json.dumps(body).encode(),
        )
        if done.code != 0 or done.stderr:
            raise RuntimeError(f"hook {event}: exit {done.code}, {done.stderr[:300]!r}")
        return done

    def stop(self) -> None:
        stuck = procs.stop_servers(self.runtime)
        if stuck:
            raise RuntimeError(f"hook servers {stuck} did not stop")


def measure(
    wt: GeneratedWorktree, env: dict[str, str], runtime: Path, work: Path, rounds: int
) -> dict[str, list[float]]:
    hook = Hooks(wt, env, runtime, work / "data")
    hook("session_start", "prime", None)  # the store's first capture: not measured
    figures: dict[str, list[float]] = {}
    for r in range(rounds):
        figures.setdefault("floor", []).append(
            procs.run(["git", "status", "--porcelain"], env, cwd=wt.root).ms
        )
        for key, ms in session_figures(hook, wt, hook.stop, r).items():
            figures.setdefault(key, []).append(ms)
    return figures


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_source_options(parser)
    args = parser.parse_args(argv)
    for label, wt, env, runtime, work in each_worktree(args, "snapshotter-first-event-"):
        figures = measure(wt, env, runtime, work, args.rounds)
        report(label, figures, args.rounds)


def add_source_options(parser: argparse.ArgumentParser) -> None:
    """``--sizes``, ``--worktree`` and ``--rounds``, as ``each_worktree`` reads them."""
    parser.add_argument("--sizes", default="", help="synthetic worktrees, e.g. 10000")
    parser.add_argument("--worktree", type=Path, action="append", default=[])
    parser.add_argument("--rounds", type=int, default=3)


def each_worktree(
    args: argparse.Namespace, prefix: str
) -> Iterator[tuple[str, GeneratedWorktree, dict[str, str], Path, Path]]:
    """(label, worktree, env, runtime dir, work dir) for each of ``--sizes`` and
    ``--worktree`` (a copy), in a private HOME and runtime dir; removed afterwards."""
    from benchmarks.run import hermetic  # (run.py imports this module)

    sources: list[int | Path] = [int(s) for s in args.sizes.split(",") if s]
    sources += args.worktree
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    runtime = Path(tempfile.mkdtemp(prefix="snb-", dir="/tmp"))
    try:
        procs.use_install(measured_install(tmp))
        (tmp / "home").mkdir()
        with hermetic(tmp / "home", runtime) as env:
            for i, source in enumerate(sources):
                work = tmp / f"w{i}"
                work.mkdir()
                if isinstance(source, int):
                    wt = generate(work / "wt", source, env)
                else:
                    wt = copy_existing(source, work / "wt", env)
                yield f"{source} ({wt.tracked} files)", wt, env, runtime, work
    finally:
        procs.stop_servers(runtime)
        shutil.rmtree(runtime, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def report(label: str, figures: dict[str, list[float]], rounds: int) -> None:
    floor = statistics.median(figures["floor"])
    print(f"\n{label}, median of {rounds} rounds (hook process wall time)")
    print("| figure | ms | x git status |")
    print("| --- | ---: | ---: |")
    for key, title in FIGURES.items():
        if key in figures:
            ms = statistics.median(figures[key])
            print(f"| {title} | {ms:.0f} | {ms / floor:.1f}x |")


if __name__ == "__main__":
    main()
