"""Measure snapshotter against the git-CLI reference and print the tables.

``python -m benchmarks [--sizes 1000,10000 | --size 500000] [--worktree PATH]
[--stdlib] [--rounds 5] [--cache DIR] [--json out.json]``

What is measured is what an agent and a user run: processes of the installed
CLI (``snapshotter capture``, ``hook``, ``undo``, ``redo``), each with its wall
time and its own peak RSS (``os.wait4``), and the resident hook server's RSS
(``/proc``). In-process figures use the public API only (``snapshotter.Engine``,
``snapshotter.SnapshotBuiltin``): nothing here imports snapshotter's internal
modules. The reference is the git-CLI sequence docker-agent and opencode run
(``reference.py``); the floor is ``git status --porcelain``; both are measured
in the same run, interleaved with ours round by round (the order alternates),
and every figure is the median of its rounds.

Worktrees: synthetic ones of ``--sizes`` files (kept and reused under
``--cache DIR``), a copy of the Python standard library (``--stdlib``), and a
copy of any worktree (``--worktree PATH``: cloned, or copied with
``--copy cp``; the benchmark edits, undoes and redoes files in the copy only).

Everything else happens in one temp directory that is removed at the end; git
and the hooks run with a private HOME, no system config and a private
``XDG_RUNTIME_DIR`` (where the hook servers live; they are stopped at the end).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import os
import platform
import pstats
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO, TypeVar

from benchmarks import cold_undo, flat_dir, procs
from benchmarks.first_event import PAUSE_S
from benchmarks.install import measured_install
from benchmarks.procs import Done
from benchmarks.reference import MAX_NEW_FILE_SIZE, ReferenceShadow
from benchmarks.worktrees import (
    GeneratedWorktree,
    TimedOut,
    append_edit,
    cached,
    copy_existing,
    copy_stdlib,
    generate,
    git,
    git_env,
    pick,
    refresh,
)

T = TypeVar("T")
EDITS = 10
SERVER_START_S = 30.0
WARM_HOOKS = 10  # at most this many untimed hooks to get one the server handles
SERVED_RSS_SHARE = 0.6  # a served hook's RSS is well below an in-process one's
RACY_SETTLE_S = 0.1  # longer than the store's 50 ms racy window
MB = 1024 * 1024

# key: (title, unit, key of the figure the "x reference" column divides by)
FIGURES: dict[str, tuple[str, str, str | None]] = {
    "floor": ("git status --porcelain (the floor)", "ms", None),
    "python": ("python -c pass (interpreter start, context)", "ms", None),
    "ref_first": ("reference capture, first (cold shadow)", "ms", None),
    "ref_nochange": ("reference capture, no change", "ms", None),
    "ref_edit10": ("reference capture, 10 files edited", "ms", None),
    "ref_changes": ("reference changes since a tree (diff-tree)", "ms", None),
    "ref_revert10": (
        "reference revert of 10 files (add -A ., write-tree, checkout T -- paths)",
        "ms",
        None,
    ),
    "ref_redo10": ("reference redo (the same, back to the safety tree)", "ms", None),
    "first": ("ours: `snapshotter capture`, first (fresh data dir)", "ms", "ref_first"),
    "first_racy": (
        "ours: `snapshotter capture`, first, right after `git add -u && git commit` "
        "(index racy by whole seconds)",
        "ms",
        "ref_first",
    ),
    "nochange": ("ours: `snapshotter capture`, no change, no server", "ms", "ref_nochange"),
    "nochange_served": (
        "ours: `snapshotter capture`, no change, a hook server running",
        "ms",
        "ref_nochange",
    ),
    "hook_first": (
        "ours: `snapshotter hook` session_start, no server (it asks for one and returns)",
        "ms",
        "floor",
    ),
    "hook_first_prompt": (
        "ours: the first prompt, --typing-pause after that session_start (the user typing)",
        "ms",
        "floor",
    ),
    "hook_first_now": (
        "ours: a pre_tool at once after session_start, no server (waits for the baseline)",
        "ms",
        "floor",
    ),
    "hook_alone": (
        "ours: `snapshotter hook` in its own process (SNAPSHOTTER_HOOK_SERVER=0)",
        "ms",
        "ref_nochange",
    ),
    "hook": ("ours: `snapshotter hook` with the server, no change", "ms", "ref_nochange"),
    "hook_edit10": (
        "ours: `snapshotter hook` with the server, 10 files edited (turn_end)",
        "ms",
        "ref_edit10",
    ),
    "undo10": (
        "ours: `snapshotter undo` of a 10-file turn (a hook server running)",
        "ms",
        "ref_revert10",
    ),
    "redo10": ("ours: `snapshotter redo` (a hook server running)", "ms", "ref_redo10"),
    "undo10_cold": (  # cold_undo.py
        "ours: `snapshotter undo` of a 10-file turn, no server (it idled out)",
        "ms",
        "ref_revert10",
    ),
    "redo10_cold": ("ours: `snapshotter redo`, no server", "ms", "ref_redo10"),
    "list_cold": ("ours: `snapshotter list`, no server (start-up, state read)", "ms", "floor"),
    "api_nochange": (
        "ours: Engine.capture(), no change (public API, in-process)",
        "ms",
        "ref_nochange",
    ),
    "changes": ("ours: Engine.changes() of the turn (public API, in-process)", "ms", "ref_changes"),
    "ref_store_first": ("reference shadow on disk after first capture", "MB", None),
    "store_first": ("ours: store's own bytes on disk after first capture", "MB", "ref_store_first"),
    "store_first_shared": ("ours: bytes hard-linked with the source's .git (seeded)", "MB", None),
    "server_rss": ("hook server resident (VmRSS) after warm-up", "MB", "server_hwm"),
    "mcp_start": ("ours: `snapshotter mcp` start-up, spawn to initialize answered", "ms", "python"),
    "mcp_tools": ("ours: `snapshotter mcp`, spawn to tools/list answered", "ms", "python"),
    "mcp_call": ("ours: `snapshotter mcp`, its first list_checkpoints call", "ms", None),
    "mcp_rss": ("`snapshotter mcp` resident (VmRSS) after that call", "MB", "server_rss"),
    "mcp_hwm": ("`snapshotter mcp` peak (VmHWM) after that call", "MB", None),
    "server_hwm": ("hook server peak (VmHWM) after warm-up", "MB", None),
}

# Issue 16's table: (title, our figure, the baseline it is divided by).
SUMMARY: list[tuple[str, str, str]] = [
    ("first capture / reference first", "first", "ref_first"),
    (
        "first capture right after a commit (racy index) / reference first",
        "first_racy",
        "ref_first",
    ),
    (
        "bytes seeded from the source (linked + own / reference shadow)",
        "store_first",
        "ref_store_first",
    ),
    ("`snapshotter capture` no change, no server / reference", "nochange", "ref_nochange"),
    (
        "`snapshotter capture` no change, server running / reference",
        "nochange_served",
        "ref_nochange",
    ),
    ("session_start, no server / git status", "hook_first", "floor"),
    ("first prompt after session_start, no server / git status", "hook_first_prompt", "floor"),
    ("pre_tool at once after session_start, no server / git status", "hook_first_now", "floor"),
    ("hook with server, 10 files edited / reference capture", "hook_edit10", "ref_edit10"),
    ("`undo` of a 10-file turn / reference revert", "undo10", "ref_revert10"),
    ("`redo` / reference redo", "redo10", "ref_redo10"),
    ("no server: `undo` of a 10-file turn / reference revert", "undo10_cold", "ref_revert10"),
    ("no server: `redo` / reference redo", "redo10_cold", "ref_redo10"),
    ("hook server RSS after warm-up / its peak", "server_rss", "server_hwm"),
    ("`snapshotter mcp` start-up / python -c pass (Claude Code waits ~2 s)", "mcp_start", "python"),
    ("`snapshotter mcp` RSS / the hook server's", "mcp_rss", "server_rss"),
]


@dataclass
class WorktreeResult:
    label: str
    tracked: int
    disk_bytes: int
    samples: dict[str, list[float]] = field(default_factory=dict)
    rss_kb: dict[str, list[int]] = field(default_factory=dict)  # peak RSS per figure
    store_apparent: dict[str, list[int]] = field(default_factory=dict)
    checkpoints: dict[str, Any] | None = None
    checks: list[str] = field(default_factory=list)  # anything that did not look right
    notes: list[str] = field(default_factory=list)  # differences that are explained
    profile: str | None = None
    seconds: float = 0.0
    max_cli_rss_kb: int = 0  # the largest snapshotter process of the run, timed or not
    lower_bounds: set[str] = field(default_factory=set)  # figures cut off at a time limit

    def add(self, key: str, value: float, rss_kb: int | None = None) -> None:
        self.samples.setdefault(key, []).append(value)
        if rss_kb is not None:
            self.rss_kb.setdefault(key, []).append(rss_kb)

    def median(self, key: str) -> float | None:
        values = self.samples.get(key)
        return statistics.median(values) if values else None

    def rss_mb(self, key: str) -> float | None:
        values = self.rss_kb.get(key)
        return statistics.median(values) / 1024 if values else None

    def ratio(self, key: str, other: str) -> float | None:
        a, b = self.median(key), self.median(other)
        return a / b if a is not None and b else None

    def check(self, ok: bool, message: str) -> None:
        if not ok and message not in self.checks:
            self.checks.append(message)

    def note(self, message: str) -> None:
        if message not in self.notes:
            self.notes.append(message)


@dataclass(frozen=True)
class Options:
    sizes: list[int]
    stdlib: bool
    worktrees: list[Path]
    copy: str
    cache: Path | None
    rounds: int
    cold_rounds: int
    checkpoints: int
    checkpoints_at: str
    profile: bool
    pack_source: bool
    ref_first_limit_s: float | None
    typing_pause_s: float = PAUSE_S  # between session_start and the first prompt
    flat: list[int] = field(default_factory=list)  # flat_dir.py's worktrees, by file count


# -- environment and timing ----------------------------------------------------


@contextlib.contextmanager
def hermetic(home: Path, runtime: Path | None = None) -> Iterator[dict[str, str]]:
    """Point this process's git config lookups (env and libgit2) at a private HOME.

    ``runtime`` becomes ``XDG_RUNTIME_DIR``, where the hook servers put their sockets.
    """
    import pygit2

    env = git_env(home)
    if runtime is not None:
        env["XDG_RUNTIME_DIR"] = str(runtime)
    env.pop("SNAPSHOTTER_DATA_DIR", None)  # every command gets --data-dir
    saved_env = dict(os.environ)
    levels = (
        pygit2.enums.ConfigLevel.GLOBAL,
        pygit2.enums.ConfigLevel.XDG,
        pygit2.enums.ConfigLevel.SYSTEM,
    )
    saved_paths = {level: pygit2.settings.search_path[level] for level in levels}
    for key in [k for k in os.environ if k.startswith("GIT_")]:
        del os.environ[key]
    os.environ.pop("SNAPSHOTTER_DATA_DIR", None)
    os.environ.update(env)
    for level in levels:
        pygit2.settings.search_path[level] = str(home)
    try:
        yield env
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        for level, value in saved_paths.items():
            pygit2.settings.search_path[level] = value


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    """(milliseconds, result) of one call, after a collection so gc does not land in it."""
    gc.collect()
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1000.0, result


def disk_usage(path: Path) -> tuple[int, int]:
    """(bytes allocated on disk, apparent bytes) of the files only ``path`` holds.

    A file with more than one link (a pack hard-linked from the source
    repository) is not counted: deleting ``path`` would not free it.
    ``shared_usage`` reports those.
    """
    allocated = apparent = 0
    for st in _file_stats(path):
        if st.st_nlink == 1:
            allocated += st.st_blocks * 512
            apparent += st.st_size
    return allocated, apparent


def shared_usage(path: Path) -> int:
    """Bytes allocated for files under ``path`` that other names (the source) share."""
    return sum(st.st_blocks * 512 for st in _file_stats(path) if st.st_nlink > 1)


def _file_stats(path: Path) -> Iterator[os.stat_result]:
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                yield os.lstat(os.path.join(dirpath, name))


def progress(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _sync() -> None:
    if hasattr(os, "sync"):
        os.sync()


def _git_dirs(data: Path) -> list[Path]:
    """Git directories under a data dir, found by git's own layout (HEAD and objects/).

    Only for a diagnostic (listing one of our trees when it differs from the
    reference's); nothing of snapshotter's own layout is assumed.
    """
    return sorted(
        Path(d) for d, dirs, files in os.walk(data) if "HEAD" in files and "objects" in dirs
    )


def listing(env: Mapping[str, str], git_dir: Path, tree: str) -> dict[str, tuple[int, str]]:
    """Every file of ``tree`` in ``git_dir``: path -> (mode, blob id)."""
    out = git(git_dir, env, "--git-dir", str(git_dir), "ls-tree", "-r", "-z", "--full-tree", tree)
    found: dict[str, tuple[int, str]] = {}
    for record in (os.fsdecode(r) for r in out.split(b"\0") if r):
        meta, _, path = record.partition("\t")
        mode, _kind, oid = meta.split()
        found[path] = (int(mode, 8), oid)
    return found


# -- one worktree ----------------------------------------------------------------


class Bench:
    """All measurements on one worktree."""

    def __init__(
        self,
        wt: GeneratedWorktree,
        work: Path,
        env: Mapping[str, str],
        runtime: Path,
        opts: Options,
        *,
        smallest: bool = False,
    ) -> None:
        self.wt = wt
        self.smallest = smallest  # the smallest synthetic worktree of the run
        self.work = work
        self.env = dict(env)
        self.runtime = runtime
        self.opts = opts
        self.result = WorktreeResult(wt.label, wt.tracked, wt.disk_bytes)
        self.explained: set[str] = set()
        self.cmd = procs.snapshotter_cmd()

    # Processes ---------------------------------------------------------------

    def cli(self, data: Path, *args: str, stdin: bytes | None = None, server: str = "1") -> Done:
        """One snapshotter process on ``data``, run in the worktree; it must succeed.

        The hook server is allowed (``SNAPSHOTTER_HOOK_SERVER=1``): hooks start it,
        and while it runs the CLI's commands are forked from it (issue 16.2).
        """
        env = dict(self.env, SNAPSHOTTER_HOOK_SERVER=server)
        gc.collect()
        done = procs.run(
            [*self.cmd, "--data-dir", str(data), *args], env, cwd=self.wt.root, stdin=stdin
        )
        self.result.max_cli_rss_kb = max(self.result.max_cli_rss_kb, done.rss_kb)
        self.result.check(
            done.code == 0, f"snapshotter {args[0]}: exit {done.code}, stderr {done.stderr[:300]!r}"
        )
        return done

    def hook(
        self, data: Path, event: str, session: str, key: str | None = None, alone: bool = False
    ) -> Done:
        """One ``snapshotter hook`` process; its figure under ``key``. ``alone``: with
        the server turned off (the event handled in that process)."""
        body = json.dumps(
            {"hook_event_name": event, "session_id": session, "cwd": str(self.wt.root)}
        ).encode()
        done = self.cli(data, "hook", stdin=body, server="0" if alone else "1")
        self.result.check(not done.stderr, f"hook {event}: stderr {done.stderr[:300]!r}")
        if key is not None:
            self.result.add(key, done.ms, done.rss_kb)
        return done

    def reference(self, key: str, ref: ReferenceShadow, fn: Callable[[], T]) -> T:
        """Time one reference operation; its peak RSS is its largest git process's.

        One cut off at its time limit (TimedOut) counts as a lower bound.
        """
        ref.meter.clear()
        gc.collect()
        start = time.perf_counter()
        try:
            result = fn()
        except TimedOut:
            self.result.lower_bounds.add(key)
            raise
        finally:
            self.result.add(key, (time.perf_counter() - start) * 1000.0, max(ref.meter, default=0))
        return result

    def floor(self) -> None:
        done = procs.run(["git", "status", "--porcelain"], self.env, cwd=self.wt.root)
        self.result.add("floor", done.ms, done.rss_kb)

    def interpreter(self) -> None:
        done = procs.run([procs.python(), "-c", "pass"], self.env)
        self.result.add("python", done.ms, done.rss_kb)

    # First captures ------------------------------------------------------------

    def _sizes(self, key: str, path: Path) -> None:
        allocated, apparent = disk_usage(path)
        self.result.add(key, allocated / MB)
        self.result.store_apparent.setdefault(key, []).append(apparent)

    def cold_reference(self, c: int) -> tuple[ReferenceShadow, str]:
        ref = ReferenceShadow(self.work / f"ref-shadow-{c}", self.wt.root, self.env)

        def first() -> str:
            ref.init()
            return ref.capture(add_limit_s=self.opts.ref_first_limit_s)

        _sync()
        try:
            tree = self.reference("ref_first", ref, first)
        except TimedOut:
            self.result.note(
                f"the reference's first capture was stopped after "
                f"{self.opts.ref_first_limit_s:g} s (its git add matches every "
                "path against every pathspec): its time is a lower bound, its "
                "shadow was finished with add -A"
            )
            tree = ref.finish_cold()
        self._sizes("ref_store_first", ref.shadow)
        return ref, tree

    def cold_ours(self, c: int) -> tuple[Path, str]:
        data = self.work / f"ours-data-{c}"
        _sync()
        done = self.cli(data, "capture")
        self.result.add("first", done.ms, done.rss_kb)
        self._sizes("store_first", data)
        self.result.add("store_first_shared", shared_usage(data) / MB)
        return data, _tree_of(done)

    def racy_first(self) -> None:
        """First captures right after a commit whose index is racy by whole seconds
        (racy_figure.py); last, as they restamp every tracked file."""
        from benchmarks.racy_figure import racy_commit

        procs.stop_servers(self.runtime)
        stamped = 0
        for c in range(self.opts.cold_rounds):
            progress(f"{self.wt.label}: first capture after a racy commit, {c + 1}")
            stamped = racy_commit(self.wt.root, self.env)
            data = self.work / f"ours-racy-{c}"
            _sync()
            done = self.cli(data, "capture")
            self.result.add("first_racy", done.ms, done.rss_kb)
            shutil.rmtree(data, ignore_errors=True)
        self.result.note(
            f"first_racy: {stamped} tracked files stamped in the second the index was "
            "written, the index in the instant of the newest"
        )

    def compare_trees(
        self, ref: ReferenceShadow, ref_tree: str, data: Path, our_tree: str, phase: str
    ) -> None:
        """Both sides must snapshot the same files, or the difference must be explained.

        The one known difference: the reference's 2 MiB rule looks at files that
        are new *to its shadow*, so a cold shadow drops big files the source
        tracks; ours keeps every tracked file.
        """
        if ref_tree == our_tree or not our_tree:
            self.result.check(bool(our_tree), f"{phase}: no tree id printed")
            return
        theirs = ref.listing(ref_tree)
        ours: dict[str, tuple[int, str]] = {}
        for git_dir in _git_dirs(data):
            with contextlib.suppress(RuntimeError):
                ours = listing(self.env, git_dir, our_tree)
                break
        differing = sorted(p for p in theirs.keys() | ours.keys() if theirs.get(p) != ours.get(p))
        unexplained = [p for p in differing if p not in self.explained]
        if not unexplained:
            return
        tracked = set(ref.source_tracked())
        for rel in unexplained:
            size = (self.wt.root / rel).stat().st_size if (self.wt.root / rel).is_file() else 0
            if rel not in theirs and rel in tracked and size > MAX_NEW_FILE_SIZE:
                self.explained.add(rel)
                self.result.note(
                    f"{phase}: the reference leaves out {rel} ({size / MB:.1f} MB, tracked in "
                    f"the source): its 2 MiB rule counts files new to its shadow"
                )
        rest = [p for p in unexplained if p not in self.explained]
        self.result.check(
            not rest,
            f"{phase}: trees differ at {', '.join(rest[:5])}{' …' if len(rest) > 5 else ''}",
        )

    # The hook server -------------------------------------------------------------

    def await_server(self, data: Path, session: str, in_process_kb: int) -> None:
        """Wait for the server a first hook started, then until it handles a hook.

        A served hook process is small (no pygit2, no pydantic); one that gave
        up waiting for the server and handled its event itself is not.
        """
        if procs.wait_for_server(self.runtime, SERVER_START_S) is None:
            self.result.note(
                "the hook server did not come up: the 'with the server' figures "
                "are in-process hooks"
            )
            return
        for _ in range(WARM_HOOKS):
            done = self.hook(data, "turn_start", session)
            if done.rss_kb < SERVED_RSS_SHARE * in_process_kb:
                return
        self.result.note("no warm-up hook was handled by the server")

    def server_memory(self) -> None:
        pids = procs.servers(self.runtime)
        found = procs.memory_kb(pids[0]) if pids else None
        if found is None:
            self.result.note("no hook server to read the RSS of")
            return
        rss, hwm = found
        self.result.add("server_rss", rss / 1024)
        self.result.add("server_hwm", hwm / 1024)

    def served(self, key: str) -> None:
        """Note a 'with the server' figure whose hook process looks in-process."""
        ours, alone = self.result.rss_kb.get(key, []), self.result.rss_kb.get("hook_alone", [])
        if ours and alone and ours[-1] >= SERVED_RSS_SHARE * alone[-1]:
            self.result.note(
                f"{key}: a hook ran in-process (peak RSS {ours[-1] // 1024} MB), "
                "not through the server"
            )

    # The run -----------------------------------------------------------------

    def run(self) -> WorktreeResult:
        started = time.perf_counter()
        res = self.result
        ref: ReferenceShadow | None = None
        data = self.work / "unused"
        for c in range(self.opts.cold_rounds):
            progress(f"{self.wt.label}: first captures, round {c + 1}/{self.opts.cold_rounds}")
            if ref is not None:  # only the last round's shadow and store are kept
                shutil.rmtree(ref.shadow)
                shutil.rmtree(data)
            ref_tree = our_tree = ""
            for side in ("ref", "ours") if c % 2 == 0 else ("ours", "ref"):
                if side == "ref":
                    ref, ref_tree = self.cold_reference(c)
                else:
                    data, our_tree = self.cold_ours(c)
            assert ref is not None
            self.compare_trees(ref, ref_tree, data, our_tree, "first capture")
        assert ref is not None
        try:
            for r in range(self.opts.rounds):
                progress(f"{self.wt.label}: round {r + 1}/{self.opts.rounds}")
                self.round(r, ref, data)
            if self.opts.profile:
                res.profile = profile_capture(self.wt.root, data)
            if self._checkpoints_here():
                res.checkpoints = self.checkpoints(data)
            self.racy_first()
        finally:
            stuck = procs.stop_servers(self.runtime)
            res.check(not stuck, f"hook servers {stuck} did not stop on SIGTERM")
        res.seconds = time.perf_counter() - started
        return res

    def round(self, r: int, ref: ReferenceShadow, data: Path) -> None:
        res, root = self.result, self.wt.root
        session = f"bench-{r}"
        ours_first = r % 2 == 1
        order = ("ours", "ref") if ours_first else ("ref", "ours")
        # A session's first event finds no server (as after the server's idle exit).
        procs.stop_servers(self.runtime)
        # Settle: the previous round's restores left new mtimes behind; once they
        # are out of the racy window both sides trust their stat data. Then both
        # sides catch up, so "no change" means none since each one's last capture.
        time.sleep(RACY_SETTLE_S)
        ref.capture()
        self.cli(data, "capture")
        self.floor()

        ref_t0 = our_t0 = ""
        for side in order:
            if side == "ref":
                ref_t0 = self.reference("ref_nochange", ref, ref.capture)
            else:
                done = self.cli(data, "capture")
                res.add("nochange", done.ms, done.rss_kb)
                our_t0 = _tree_of(done)
        self.compare_trees(ref, ref_t0, data, our_t0, f"no-change capture, round {r}")
        self.api_nochange(data)
        # A headless session's first events (first_event.py): a tool call at once.
        self.hook(data, "session_start", f"{session}-now")
        self.hook(data, "pre_tool_use", f"{session}-now", key="hook_first_now")
        procs.stop_servers(self.runtime)
        alone = self.hook(data, "turn_start", f"{session}-alone", key="hook_alone", alone=True)
        # Then only hooks capture until the turn is recorded: a capture by another
        # process would make the server check the whole tree again (as it must).
        self.hook(data, "session_start", session, key="hook_first")
        time.sleep(self.opts.typing_pause_s)  # the user types the first prompt meanwhile
        self.hook(data, "turn_start", session, key="hook_first_prompt")
        self.await_server(data, session, alone.rss_kb)
        self.hook(data, "turn_start", session, key="hook")
        self.served("hook")

        # A 10-file turn, recorded by the hook through the server.
        edited = pick(self.wt, r * EDITS, EDITS)
        original = {rel: (root / rel).read_bytes() for rel in edited}
        for rel in edited:
            append_edit(root, rel, f"round {r}")
        after = {rel: (root / rel).read_bytes() for rel in edited}
        ref_t1 = ""
        for side in order:
            if side == "ref":
                ref_t1 = self.reference("ref_edit10", ref, ref.capture)
            else:
                self.hook(data, "turn_end", session, key="hook_edit10")
                self.served("hook_edit10")
        turn = self.newest_checkpoint(data, session, edited)
        # The CLI while the server runs: nothing changed since the turn's capture.
        served = self.cli(data, "capture")
        res.add("nochange_served", served.ms, served.rss_kb)
        ref_paths = self.reference("ref_changes", ref, partial(ref.changed_paths, ref_t0, ref_t1))
        res.check(sorted(ref_paths) == sorted(edited), "reference diff-tree: wrong paths")
        if turn is not None:
            self.api_changes(data, turn["before"], turn["after"], edited)

        # Undo and redo of that turn, beside the reference's revert and redo.
        def back(state: dict[str, bytes], what: str) -> None:
            res.check(
                all((root / p).read_bytes() == b for p, b in state.items()),
                f"{what}: files not as expected afterwards",
            )

        for side in order:
            if side == "ours":
                undo = self.cli(data, "undo", "--session", session, "--json")
                res.add("undo10", undo.ms, undo.rss_kb)
                back(original, "undo")
                res.check(len(_restored(undo)) == EDITS, f"undo: {_restored(undo)!r} restored")
                redo = self.cli(data, "redo", "--session", session, "--json")
                res.add("redo10", redo.ms, redo.rss_kb)
                back(after, "redo")
            else:
                safety = self.reference("ref_revert10", ref, partial(ref.revert, ref_t0, edited))
                back(original, "reference revert")
                self.reference("ref_redo10", ref, partial(ref.revert, safety, edited))
                back(after, "reference redo")
        self.server_memory()
        cold_undo.measure(self, data, session, {"original": original, "after": after}, back)
        self.interpreter()
        self.mcp_server(data)

    def mcp_server(self, data: Path) -> None:
        """`snapshotter mcp` started as an agent runtime starts it (mcp_figure.py)."""
        from benchmarks.mcp_figure import McpFailed, measure

        try:
            found = measure(self.cmd, data, self.wt.root, self.env)
        except McpFailed as exc:
            self.result.note(f"no `snapshotter mcp` figures: {exc}")
            return
        self.result.add("mcp_start", found.start_ms)
        self.result.add("mcp_tools", found.tools_ms)
        self.result.add("mcp_call", found.call_ms)
        self.result.add("mcp_rss", found.rss_kb / 1024)
        self.result.add("mcp_hwm", found.hwm_kb / 1024)

    def newest_checkpoint(
        self, data: Path, session: str, edited: list[str]
    ) -> dict[str, Any] | None:
        """The turn the hook just recorded (``list --json``), checked: the 10 files."""
        done = self.cli(data, "list", "--session", session, "--json")
        try:
            checkpoints = json.loads(done.stdout)
        except ValueError:
            checkpoints = []
        turn = checkpoints[-1] if checkpoints else None
        files = sorted(f["path"] for f in turn["files"]) if turn else []
        self.result.check(
            files == sorted(edited),
            f"the turn's checkpoint has {files[:3]}…, not the 10 edited files",
        )
        return turn if files == sorted(edited) else None

    # The public API, in-process ----------------------------------------------------

    def api_nochange(self, data: Path) -> None:
        import snapshotter

        engine = snapshotter.Engine.open(self.wt.root, data_dir_path=data)
        engine.capture()
        ms, _ = timed(engine.capture)
        self.result.add("api_nochange", ms)

    def api_changes(self, data: Path, before: str, after: str, edited: list[str]) -> None:
        import snapshotter

        engine = snapshotter.Engine.open(self.wt.root, data_dir_path=data)
        ms, found = timed(lambda: engine.changes(before, after))
        self.result.add("changes", ms)
        self.result.check(
            sorted(ch.path for ch in found) == sorted(edited), "Engine.changes: wrong paths"
        )

    def _checkpoints_here(self) -> bool:
        at = self.opts.checkpoints_at
        if self.opts.checkpoints <= 0 or at == "none":
            return False
        return at == "all" or self.smallest

    def checkpoints(self, data: Path) -> dict[str, Any]:
        """Store growth over many one-file turns, against the bytes they changed.

        The turns go through ``snapshotter.SnapshotBuiltin`` in this process (an
        agent runtime's way in); gc through ``snapshotter.Engine.gc``.
        """
        import snapshotter

        count = self.opts.checkpoints
        progress(f"{self.wt.label}: {count} small checkpoints")
        root = self.wt.root
        procs.stop_servers(self.runtime)  # nothing else writes to the store meanwhile
        builtin = snapshotter.SnapshotBuiltin(data_dir_path=data)

        def event(name: str) -> Any:
            return builtin.handle(
                snapshotter.HookInput(
                    hook_event_name=name, session_id="bench-checkpoints", cwd=str(root)
                ),
                [],
            )

        def collect() -> str:
            try:  # a fresh engine: the one before gc may hold the packs gc replaced
                snapshotter.Engine.open(root, data_dir_path=data).gc()
            except Exception as exc:  # report, do not lose the rest of the run
                return f"{type(exc).__name__}: {exc}"
            return ""

        event("session_start")
        gc_error = collect()  # a packed baseline, so "after gc" compares like with like
        before, before_apparent = disk_usage(data)
        edit_bytes = file_bytes = recorded = 0
        times: list[float] = []
        offset = EDITS * self.opts.rounds
        for i in range(count):
            rel = pick(self.wt, offset + i, 1)[0]
            start = time.perf_counter()
            event("turn_start")
            edit_bytes += append_edit(root, rel, f"checkpoint {i}")
            cp = event("turn_end")
            times.append((time.perf_counter() - start) * 1000.0)
            file_bytes += (root / rel).stat().st_size
            recorded += cp is not None
        after, after_apparent = disk_usage(data)
        gc_error = gc_error or collect()
        after_gc, after_gc_apparent = disk_usage(data)
        self.result.check(recorded == count, f"checkpoints: {recorded} of {count} recorded")
        self.result.check(not gc_error, f"gc around the checkpoints failed: {gc_error}")
        return {
            "count": count,
            "recorded": recorded,
            "edit_bytes": edit_bytes,  # bytes the edits appended
            "changed_file_bytes": file_bytes,  # whole new sizes of the files they changed
            "store_before": before,
            "store_after": after,
            "store_after_gc": after_gc,
            "apparent_before": before_apparent,
            "apparent_after": after_apparent,
            "apparent_after_gc": after_gc_apparent,
            "growth": after - before,
            "growth_after_gc": after_gc - before,
            "median_checkpoint_ms": statistics.median(times) if times else None,
            "gc_error": gc_error,
        }


def _tree_of(done: Done) -> str:
    """The tree id ``snapshotter capture`` printed (its last line)."""
    lines = done.stdout.decode(errors="replace").split()
    return lines[-1] if done.code == 0 and lines else ""


def _restored(done: Done) -> list[Any]:
    try:
        report = json.loads(done.stdout)
    except ValueError:
        return []
    restored = report.get("restored", []) if isinstance(report, dict) else []
    return restored if isinstance(restored, list) else []


def profile_capture(root: Path, data: Path) -> str:
    """cProfile of one no-change ``Engine.capture()``: the top entries by own time and total."""
    import snapshotter

    engine = snapshotter.Engine.open(root, data_dir_path=data)
    time.sleep(RACY_SETTLE_S)
    engine.capture()
    prof = cProfile.Profile()
    prof.enable()
    engine.capture()
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(15)
    stats.sort_stats("cumulative").print_stats(15)
    return out.getvalue()


# -- the tables ------------------------------------------------------------------


def _fmt_ratio(value: float | None, bound: str = "") -> str:
    """``bound``: "<" or ">" when the ratio's divisor or dividend was cut off."""
    return f"{bound}{value:.2f}x" if value is not None else ""


def _fmt_value(value: float | None, unit: str, lower_bound: bool = False) -> str:
    if value is None:
        return ""
    if unit == "MB":
        return f"{value:.1f} MB"
    prefix = "> " if lower_bound else ""
    return f"{prefix}{value:.0f} ms" if value >= 1000 else f"{prefix}{value:.1f} ms"


def _bound(res: WorktreeResult, key: str, other: str | None) -> str:
    """How a ratio key/other is bounded by figures cut off at a time limit."""
    if key in res.lower_bounds:
        return ">"
    return "<" if other in res.lower_bounds else ""


def _fmt_rss(value: float | None) -> str:
    return f"{value:.0f} MB" if value is not None else ""


def rows(results: list[WorktreeResult]) -> list[dict[str, Any]]:
    out = []
    for res in results:
        for key, (title, unit, ref_key) in FIGURES.items():
            median = res.median(key)
            if median is None:
                continue
            note = ""
            if key in ("store_first", "ref_store_first"):
                apparent = statistics.median(res.store_apparent[key])
                note = (
                    f"{median * MB / res.disk_bytes:.1%} of the worktree's "
                    f"{res.disk_bytes / MB:.0f} MB (apparent {apparent / MB:.1f} MB)"
                )
            out.append(
                {
                    "key": key,
                    "figure": title,
                    "size": res.label,
                    "unit": unit,
                    "median": median,
                    "n": len(res.samples[key]),
                    "samples": res.samples[key],
                    "peak_rss_mb": res.rss_mb(key),
                    "lower_bound": key in res.lower_bounds,
                    "ratio_bound": _bound(res, key, ref_key),
                    "ratio_ref": res.ratio(key, ref_key) if ref_key else None,
                    "ratio_floor": res.ratio(key, "floor") if unit == "ms" else None,
                    "note": note,
                }
            )
        cps = res.checkpoints
        if cps:
            base = cps["edit_bytes"] or 1
            grown = {
                "growth": cps["apparent_after"] - cps["apparent_before"],
                "growth_after_gc": cps["apparent_after_gc"] - cps["apparent_before"],
            }
            for key, label in (("growth", "before gc"), ("growth_after_gc", "after gc")):
                out.append(
                    {
                        "key": f"checkpoints_{key}",
                        "figure": f"ours: store growth, {cps['count']} small checkpoints ({label})",
                        "size": res.label,
                        "unit": "MB",
                        "median": cps[key] / MB,
                        "n": 1,
                        "samples": [cps[key] / MB],
                        "peak_rss_mb": None,
                        "lower_bound": False,
                        "ratio_bound": "",
                        "ratio_ref": None,
                        "ratio_floor": None,
                        "note": (
                            f"{cps[key] / base:.1f}x the {cps['edit_bytes']} changed bytes; "
                            f"{cps[key] / (cps['changed_file_bytes'] or 1):.2f}x the changed "
                            f"files' {cps['changed_file_bytes'] / MB:.1f} MB; apparent "
                            f"{grown[key] / MB:.1f} MB"
                        ),
                    }
                )
    return out


def summary(results: list[WorktreeResult]) -> list[dict[str, Any]]:
    """Issue 16's rows: ours, the baseline, their ratio, ours against the floor, peak RSS."""
    out = []
    for res in results:
        for title, ours, base in SUMMARY:
            unit = FIGURES[ours][1]
            row = {
                "key": ours,
                "figure": title,
                "size": res.label,
                "unit": unit,
                "ours": res.median(ours),
                "baseline": res.median(base),
                "ratio": res.ratio(ours, base),
                "ratio_floor": res.ratio(ours, "floor") if unit == "ms" else None,
                "ours_rss_mb": res.rss_mb(ours),
                "baseline_rss_mb": res.rss_mb(base),
                "baseline_lower_bound": base in res.lower_bounds,
                "ratio_bound": _bound(res, ours, base),
                "n": len(res.samples.get(ours, [])),
                "shown": "",
            }
            if ours == "store_first":  # linked + own, beside the reference's whole shadow
                shared = res.median("store_first_shared")
                own = res.median("store_first")
                if shared is not None and own is not None:
                    row["shown"] = f"{shared:.1f} MB linked + {own:.1f} MB own"
            out.append(row)
        out.append(
            {
                "key": "floor",
                "figure": "floor: git status --porcelain",
                "size": res.label,
                "unit": "ms",
                "ours": res.median("floor"),
                "baseline": None,
                "ratio": None,
                "ratio_floor": 1.0 if res.median("floor") else None,
                "ours_rss_mb": res.rss_mb("floor"),
                "baseline_rss_mb": None,
                "baseline_lower_bound": False,
                "ratio_bound": "",
                "n": len(res.samples.get("floor", [])),
                "shown": "",
            }
        )
    return out


def _markdown(
    headers: tuple[str, ...],
    lines: Sequence[tuple[str, ...]],
    right: set[int],
    groups: list[str],
    out: TextIO,
) -> None:
    widths = [
        max(len(h), *(len(line[i]) for line in lines)) if lines else len(h)
        for i, h in enumerate(headers)
    ]

    def fmt(cells: tuple[str, ...]) -> str:
        parts = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(parts) + " |"

    print(fmt(headers), file=out)
    print(
        "|"
        + "|".join(
            ("-" * (w + 1) + ":" if i in right else "-" * (w + 2)) for i, w in enumerate(widths)
        )
        + "|",
        file=out,
    )
    previous = None
    for group, line in zip(groups, lines, strict=True):
        if previous is not None and group != previous:
            print(fmt(tuple("" for _ in headers)), file=out)
        previous = group
        print(fmt(line), file=out)


def print_summary(table: list[dict[str, Any]], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    headers = (
        "figure",
        "size",
        "ours",
        "baseline",
        "ratio",
        "x floor",
        "peak RSS ours",
        "peak RSS baseline",
        "n",
    )
    lines = [
        (
            r["figure"],
            r["size"],
            r["shown"] or _fmt_value(r["ours"], r["unit"]),
            _fmt_value(r["baseline"], r["unit"], r["baseline_lower_bound"]),
            _fmt_ratio(r["ratio"], r["ratio_bound"]),
            _fmt_ratio(r["ratio_floor"]),
            _fmt_rss(r["ours_rss_mb"]),
            _fmt_rss(r["baseline_rss_mb"]),
            str(r["n"]),
        )
        for r in table
    ]
    _markdown(headers, lines, {2, 3, 4, 5, 6, 7, 8}, [r["size"] for r in table], out)


def print_table(table: list[dict[str, Any]], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    headers = ("figure", "size", "median", "n", "x reference", "x floor", "peak RSS", "note")
    lines = [
        (
            r["figure"],
            r["size"],
            _fmt_value(r["median"], r["unit"], r["lower_bound"]),
            str(r["n"]),
            _fmt_ratio(r["ratio_ref"], r["ratio_bound"]),
            _fmt_ratio(r["ratio_floor"], ">" if r["lower_bound"] else ""),
            _fmt_rss(r["peak_rss_mb"]),
            r["note"],
        )
        for r in table
    ]
    _markdown(headers, lines, {2, 3, 4, 5, 6}, [r["size"] for r in table], out)


def targets(results: list[WorktreeResult]) -> list[dict[str, Any]]:
    """Issue 5's targets, each judged on this run's ratios."""
    found = []

    def add(
        res: WorktreeResult,
        name: str,
        value: float | None,
        limit: float,
        binding: bool,
        bound: str = "",
    ) -> None:
        if value is None:
            return
        met: bool | None = value <= limit
        if (bound == "<" and not met) or (bound == ">" and met):
            met = None  # a bound on the wrong side of the limit decides nothing
        found.append(
            {
                "size": res.label,
                "target": name,
                "value": value,
                "limit": limit,
                "met": met,
                "binding": binding,
                "bound": bound,
            }
        )

    for res in results:
        big = res.label in ("10k", "50k")
        # Issue 16's targets (2: the CLI on warm state; 3: edits cost what changed).
        add(
            res,
            "16.2 `capture` no change, server running / reference no change",
            res.ratio("nochange_served", "ref_nochange"),
            1.0,
            True,
        )
        add(
            res,
            "16.2 `undo` of 10 files, server running / reference revert",
            res.ratio("undo10", "ref_revert10"),
            1.0,
            True,
        )
        add(
            res,
            "16.3 hook with server, 10 files edited / reference capture",
            res.ratio("hook_edit10", "ref_edit10"),
            0.2 if res.tracked >= 200_000 else 0.5,
            res.tracked >= 20_000,
        )
        add(
            res,
            "16.4 hook, no server (first event) / floor",
            res.ratio("hook_first", "floor"),
            2.0,
            res.tracked >= 20_000,
        )
        add(
            res,
            "24.3 first prompt after session_start, no server / floor",
            res.ratio("hook_first_prompt", "floor"),
            2.0,
            res.tracked >= 20_000,
        )
        add(
            res,
            "Engine.capture() no change / reference no-change",
            res.ratio("api_nochange", "ref_nochange"),
            1.0,
            False,
        )
        add(
            res,
            "hook with the server, no change / reference no-change",
            res.ratio("hook", "ref_nochange"),
            1.2 if res.label == "50k" else 1.5,
            big,
        )
        # The issue states these at 10k and 50k ("here: 10.9 s at 10k, 50.8 s at 50k").
        add(
            res,
            "first capture / reference first",
            res.ratio("first", "ref_first"),
            0.05,
            big,
            _bound(res, "first", "ref_first"),
        )
        store = res.median("store_first")
        add(
            res,
            "store's own bytes after first capture / worktree bytes",
            store * MB / res.disk_bytes if store is not None else None,
            0.05,
            big,
        )
        add(
            res,
            "`snapshotter undo` of 10 files / `snapshotter capture`, no change",
            res.ratio("undo10", "nochange"),
            1.2,
            True,
        )
        if res.checkpoints:
            # "Changed bytes" = the new versions of the changed files: a snapshot
            # stores whole files, so that is what a checkpoint must keep.
            cps = res.checkpoints
            files = cps["changed_file_bytes"] or 1
            add(
                res,
                f"store growth, {cps['count']} checkpoints / changed files' bytes",
                cps["growth"] / files,
                2.0,
                True,
            )
            add(
                res,
                f"same after gc ({cps['count']} checkpoints)",
                cps["growth_after_gc"] / files,
                2.0,
                False,
            )
            add(
                res,
                "store growth / bytes the edits appended",
                cps["growth"] / (cps["edit_bytes"] or 1),
                2.0,
                False,
            )
    return found


def print_targets(found: list[dict[str, Any]]) -> None:
    print("\nTargets (issue 5; 'info' = not a target at this size):")
    for t in found:
        verdict = {True: "met", False: "MISSED", None: "unknown"}[t["met"]]
        kind = "" if t["binding"] else " (info)"
        print(
            f"  {t['size']:>6}  {t['target']}: {t['bound']}{t['value']:.3f} ≤ {t['limit']} "
            f"→ {verdict}{kind}"
        )


# -- entry point -------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> tuple[Options, argparse.Namespace]:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--sizes",
        "--size",
        dest="sizes",
        default=None,
        help="comma-separated file counts of synthetic worktrees (default "
        "1000,10000 unless --worktree or --stdlib is given; e.g. 500000)",
    )
    p.add_argument(
        "--worktree",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help="also measure (a copy of) this worktree; may be repeated",
    )
    p.add_argument(
        "--copy",
        choices=("clone", "cp"),
        default="clone",
        help="how --worktree is copied: git clone --no-hardlinks (default; the "
        "committed files) or cp (the whole directory, untracked and ignored "
        "files included)",
    )
    p.add_argument(
        "--stdlib",
        action="store_true",
        help="also measure a committed copy of the Python standard library",
    )
    p.add_argument(
        "--cache",
        type=Path,
        metavar="DIR",
        help="keep generated worktrees here and reuse them (the temp directory "
        "goes here too, unless --tmp-dir: seeding hard-links need one "
        "filesystem)",
    )
    p.add_argument("--rounds", type=int, default=5, help="rounds per figure (default 5)")
    p.add_argument(
        "--cold-rounds",
        type=int,
        default=None,
        help="rounds of first captures (default: --rounds, at most 3)",
    )
    p.add_argument(
        "--checkpoints",
        type=int,
        default=100,
        help="small checkpoints for the store-growth figure (default 100)",
    )
    p.add_argument(
        "--checkpoints-at",
        choices=("smallest", "all", "none"),
        default="smallest",
        help="where to run the checkpoint figure (slow; default: smallest size)",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="print a cProfile of one no-change Engine.capture() per worktree",
    )
    p.add_argument(
        "--loose-source",
        action="store_true",
        help="commit synthetic worktrees with git add (loose objects) instead of "
        "one fast-import pack, like a clone",
    )
    p.add_argument(
        "--reference-first-limit",
        type=float,
        default=900.0,
        metavar="SECONDS",
        help="stop the reference's first capture after this long and report a lower "
        "bound (default 900; its git add is quadratic in the paths, hours at "
        "500k files; 0: no limit)",
    )
    p.add_argument(
        "--typing-pause",
        type=float,
        default=PAUSE_S,
        metavar="SECONDS",
        help=f"the user typing the first prompt after session_start (default {PAUSE_S:g})",
    )
    p.add_argument(
        "--flat",
        type=int,
        action="append",
        default=[],
        metavar="N",
        help="also measure a synthetic worktree of N files nearly all in one directory "
        "(flat_dir.py; a 10-file edit beside thousands of siblings); may be repeated",
    )
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    p.add_argument("--tmp-dir", metavar="DIR", help="parent of the temp directory")
    p.add_argument("--keep", action="store_true", help="keep the temp directory")
    ns = p.parse_args(argv)
    default = "" if ns.worktree or ns.stdlib or ns.flat else "1000,10000"
    try:
        sizes = [
            int(s) for s in (ns.sizes if ns.sizes is not None else default).split(",") if s.strip()
        ]
    except ValueError:
        p.error(f"--sizes: not a list of integers: {ns.sizes!r}")
    if any(s < 20 for s in sizes):
        p.error("--sizes: give file counts of at least 20")
    if any(n < 100 for n in ns.flat):
        p.error("--flat: give file counts of at least 100")
    if not (sizes or ns.stdlib or ns.worktree or ns.flat):
        p.error("nothing to measure")
    for path in ns.worktree:
        if not path.is_dir():
            p.error(f"--worktree: {path} is not a directory")
    if ns.rounds < 1:
        p.error("--rounds must be at least 1")
    cold = min(ns.rounds, 3) if ns.cold_rounds is None else ns.cold_rounds
    if cold < 1:
        p.error("--cold-rounds must be at least 1")
    opts = Options(
        sorted(sizes),
        ns.stdlib,
        [w.resolve() for w in ns.worktree],
        ns.copy,
        ns.cache.resolve() if ns.cache else None,
        ns.rounds,
        cold,
        ns.checkpoints,
        ns.checkpoints_at,
        ns.profile,
        not ns.loose_source,
        ns.reference_first_limit or None,
        ns.typing_pause,
        list(ns.flat),
    )
    return opts, ns


def _versions() -> dict[str, Any]:
    import pygit2

    import snapshotter

    git_version = subprocess.run(
        ["git", "--version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "snapshotter": snapshotter.__version__,
        "cli": procs.snapshotter_cmd(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "git": git_version,
        "pygit2": getattr(pygit2, "__version__", "?"),
        "libgit2": pygit2.LIBGIT2_VERSION,
    }


@dataclass(frozen=True)
class Spec:
    name: str
    size: int | None = None
    source: Path | None = None
    flat: bool = False  # flat_dir.py's worktree of ``size`` files


def _prepare(spec: Spec, work: Path, env: Mapping[str, str], opts: Options) -> GeneratedWorktree:
    if spec.source is not None:
        return copy_existing(spec.source, work / "worktree", env, how=opts.copy)
    if spec.size is None:
        return copy_stdlib(work / "worktree", env, pack=opts.pack_source)
    if spec.flat:
        return flat_dir.generate(work / "worktree", spec.size, env)
    if opts.cache is not None:
        return cached(opts.cache, spec.size, env, pack=opts.pack_source)
    return generate(work / "worktree", spec.size, env, pack=opts.pack_source)


def _specs(opts: Options) -> list[Spec]:
    specs = [Spec(str(n), size=n) for n in opts.sizes]
    if opts.stdlib:
        specs.append(Spec("stdlib"))
    specs += [Spec(f"wt{i}", source=path) for i, path in enumerate(opts.worktrees)]
    specs += [Spec(f"flat{n}", size=n, flat=True) for n in opts.flat]
    return specs


def measure(opts: Options, tmp: Path) -> tuple[list[WorktreeResult], float]:
    """Every worktree's results, and the least RSS a reading can show (MB)."""
    results: list[WorktreeResult] = []
    home = tmp / "home"
    home.mkdir()
    # Short and private: a Unix socket's path holds about 100 bytes.
    runtime = Path(tempfile.mkdtemp(prefix="snb-", dir="/tmp" if os.path.isdir("/tmp") else None))
    try:
        with hermetic(home, runtime) as env:
            smallest = min(opts.sizes, default=None)
            for spec in _specs(opts):
                work = tmp / f"w-{spec.name}"
                work.mkdir()
                progress(f"preparing the {spec.source or spec.name} worktree")
                start = time.perf_counter()
                wt = _prepare(spec, work, env, opts)
                progress(
                    f"{wt.label}: {wt.tracked} tracked files, {wt.disk_bytes / MB:.0f} MB, "
                    f"ready in {time.perf_counter() - start:.1f} s"
                )
                bench = Bench(
                    wt,
                    work,
                    env,
                    runtime,
                    opts,
                    smallest=spec.size is not None and spec.size == smallest,
                )
                try:
                    results.append(bench.run())
                finally:
                    if opts.cache is not None and spec.size is not None:
                        refresh(wt, env)  # the cached tree is left as generated
                progress(
                    f"{wt.label}: measured in {results[-1].seconds:.0f} s; removing its temp files"
                )
                shutil.rmtree(work, ignore_errors=True)
        floor_mb = procs.floor_kb() / 1024  # while the spawner still runs
    finally:
        procs.close()  # first: a process still running (an interrupted run) is ended
        stuck = procs.stop_servers(runtime)
        if stuck:
            progress(f"hook servers {stuck} had to be killed")
        shutil.rmtree(runtime, ignore_errors=True)
    return results, floor_mb


def compile_measured() -> None:
    """Bytecode for the package every measured process imports, as ``pip install .``
    leaves it: from an editable checkout with PYTHONDONTWRITEBYTECODE set (CI machines)
    every process would compile ~140 modules again (~0.4 s), and that is no figure of
    ours. Found without importing it: nothing here imports snapshotter's modules."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("snapshotter")
    if spec is not None and spec.origin is not None:
        compileall.compile_dir(Path(spec.origin).parent, quiet=1)


def main(argv: list[str] | None = None) -> int:
    opts, ns = parse_args(argv)
    # SIGTERM unwinds like an exception: hook servers stopped, temp files removed.
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    if shutil.which("git") is None:
        print("the benchmarks need the git CLI on PATH", file=sys.stderr)
        return 2
    compile_measured()
    parent = ns.tmp_dir or (str(opts.cache) if opts.cache else None)
    if parent:
        Path(parent).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="snapshotter-bench-", dir=parent)).resolve()
    try:
        procs.use_install(measured_install(tmp))
        results, floor_mb = measure(opts, tmp)
    finally:
        if ns.keep:
            progress(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    progress("done")

    short = summary(results)
    table = rows(results)
    found = targets(results)
    print(
        f"Medians of {opts.rounds} rounds ({opts.cold_rounds} for first captures); "
        "ratios against baselines measured in the same run. Peak RSS per process "
        f"(readings of {floor_mb:.0f} MB mean that much or less).\n"
    )
    print_summary(short)
    print()
    print_table(table)
    print_targets(found)
    for res in results:
        for message in res.notes:
            print(f"NOTE {res.label}: {message}")
        for message in res.checks:
            print(f"CHECK {res.label}: {message}")
        if res.profile:
            print(f"\ncProfile, one no-change capture at {res.label}:\n{res.profile}")
    if ns.json:
        document = {
            "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "versions": _versions(),
            "options": {
                "sizes": opts.sizes,
                "stdlib": opts.stdlib,
                "worktrees": [str(w) for w in opts.worktrees],
                "copy": opts.copy,
                "rounds": opts.rounds,
                "cold_rounds": opts.cold_rounds,
                "checkpoints": opts.checkpoints,
                "checkpoints_at": opts.checkpoints_at,
                "pack_source": opts.pack_source,
            },
            "worktrees": [
                {
                    "label": r.label,
                    "tracked": r.tracked,
                    "disk_bytes": r.disk_bytes,
                    "seconds": r.seconds,
                    "max_cli_rss_mb": r.max_cli_rss_kb / 1024,
                    "checkpoints": r.checkpoints,
                    "checks": r.checks,
                    "notes": r.notes,
                    "profile": r.profile,
                }
                for r in results
            ],
            "rss_floor_mb": floor_mb,
            "summary": short,
            "rows": table,
            "targets": found,
        }
        Path(ns.json).write_text(json.dumps(document, indent=2) + "\n")
    return 1 if any(res.checks for res in results) else 0
