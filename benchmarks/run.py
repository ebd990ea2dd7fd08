"""Measure snapshotter against the git-CLI reference capture and print the table.

``python -m benchmarks [--sizes 1000,10000,50000] [--stdlib] [--rounds 5]
[--json out.json]``. Everything happens in one temp directory that is removed
at the end; git and the hook run with a private HOME and no system config, so
nothing else is written (no network either) except the hook helper's socket,
whose server the runner stops when it is done with a worktree.

Per worktree, the figures are interleaved: every round runs the floor, the
reference and ours one after the other (the order of reference and ours
alternates between rounds), and each figure is the median of its rounds.
First captures run in their own rounds (``--cold-rounds``), with a ``sync``
before each so one's write-back does not land on the next.
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
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO, TypeVar

from benchmarks.reference import MAX_NEW_FILE_SIZE, ReferenceShadow
from benchmarks.worktrees import (
    GeneratedWorktree,
    append_edit,
    copy_stdlib,
    generate,
    git,
    git_env,
    pick,
)

T = TypeVar("T")
EDITS = 10
HELPER_START_S = 10.0
RACY_SETTLE_S = 0.1  # longer than the store's 50 ms racy window
MB = 1024 * 1024

# key: (title, unit, key of the figure the "x reference" column divides by)
FIGURES: dict[str, tuple[str, str, str | None]] = {
    "floor": ("git status --porcelain (the floor)", "ms", None),
    "ref_first": ("reference capture, first (cold shadow)", "ms", None),
    "ref_nochange": ("reference capture, no change", "ms", None),
    "ref_edit10": ("reference capture, 10 files edited", "ms", None),
    "ref_changes": ("reference changes since a tree (diff-tree)", "ms", None),
    "ref_restore10": ("reference restore of 10 files (checkout T -- paths)", "ms", None),
    "first": ("ours: first capture (fresh data dir)", "ms", "ref_first"),
    "nochange_watch": ("ours: no-change capture, in-process, watcher on", "ms", "ref_nochange"),
    "nochange": ("ours: no-change capture, in-process, full walk", "ms", "ref_nochange"),
    "edit10": ("ours: capture, 10 files edited", "ms", "ref_edit10"),
    "changes": ("ours: changes since a tree (10 files)", "ms", "ref_changes"),
    "undo10": ("ours: undo of a 10-file checkpoint", "ms", "ref_restore10"),
    "hook": ("ours: `snapshotter hook` round trip, helper running", "ms", "ref_nochange"),
    "hook_fallback": ("ours: `snapshotter hook` round trip, no helper", "ms", "ref_nochange"),
    "python": ("python -c pass (interpreter start, context)", "ms", None),
    "ref_store_first": ("reference shadow on disk after first capture", "MB", None),
    "store_first": ("ours: store's own bytes on disk after first capture", "MB",
                    "ref_store_first"),
    "store_first_shared": ("ours: files hard-linked with the source's objects", "MB", None),
}


@dataclass
class WorktreeResult:
    label: str
    tracked: int
    disk_bytes: int
    samples: dict[str, list[float]] = field(default_factory=dict)
    store_apparent: dict[str, list[int]] = field(default_factory=dict)
    checkpoints: dict[str, Any] | None = None
    checks: list[str] = field(default_factory=list)  # anything that did not look right
    notes: list[str] = field(default_factory=list)  # differences that are explained
    profile: str | None = None
    seconds: float = 0.0

    def add(self, key: str, value: float) -> None:
        self.samples.setdefault(key, []).append(value)

    def median(self, key: str) -> float | None:
        values = self.samples.get(key)
        return statistics.median(values) if values else None

    def ratio(self, key: str, other: str) -> float | None:
        a, b = self.median(key), self.median(other)
        return a / b if a is not None and b else None

    def check(self, ok: bool, message: str) -> None:
        if not ok and message not in self.checks:
            self.checks.append(message)


@dataclass(frozen=True)
class Options:
    sizes: list[int]
    stdlib: bool
    rounds: int
    cold_rounds: int
    checkpoints: int
    checkpoints_at: str
    profile: bool
    pack_source: bool


# -- environment and timing ----------------------------------------------------


@contextlib.contextmanager
def hermetic(home: Path) -> Iterator[dict[str, str]]:
    """Point this process's git config lookups (env and libgit2) at a private HOME."""
    import pygit2

    env = git_env(home)
    saved_env = dict(os.environ)
    levels = (pygit2.enums.ConfigLevel.GLOBAL, pygit2.enums.ConfigLevel.XDG,
              pygit2.enums.ConfigLevel.SYSTEM)
    saved_paths = {level: pygit2.settings.search_path[level] for level in levels}
    for key in [k for k in os.environ if k.startswith("GIT_")]:
        del os.environ[key]
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


# -- one worktree ----------------------------------------------------------------


class Bench:
    """All measurements on one generated worktree."""

    def __init__(self, wt: GeneratedWorktree, work: Path, env: Mapping[str, str],
                 opts: Options) -> None:
        self.wt = wt
        self.work = work
        self.env = dict(env)
        self.opts = opts
        self.result = WorktreeResult(wt.label, wt.tracked, wt.disk_bytes)
        self.explained: set[str] = set()

    # The pieces --------------------------------------------------------------

    def floor(self) -> None:
        ms, _ = timed(lambda: git(self.wt.root, self.env, "status", "--porcelain"))
        self.result.add("floor", ms)

    def _sizes(self, key: str, path: Path) -> None:
        allocated, apparent = disk_usage(path)
        self.result.add(key, allocated / MB)
        self.result.store_apparent.setdefault(key, []).append(apparent)

    def cold_reference(self, c: int) -> tuple[ReferenceShadow, str]:
        ref = ReferenceShadow(self.work / f"ref-shadow-{c}", self.wt.root, self.env)

        def first() -> str:
            ref.init()
            return ref.capture()

        _sync()
        ms, tree = timed(first)
        self.result.add("ref_first", ms)
        self._sizes("ref_store_first", ref.shadow)
        return ref, tree

    def cold_ours(self, c: int) -> tuple[Any, Path, str]:
        from snapshotter.engine import Engine

        data = self.work / f"ours-data-{c}"

        def first() -> tuple[Engine, str]:
            engine = Engine.open(self.wt.root, data_dir_path=data)
            assert engine is not None
            return engine, engine.capture().tree

        _sync()
        ms, (engine, tree) = timed(first)
        self.result.add("first", ms)
        self._sizes("store_first", data)
        self.result.add("store_first_shared", shared_usage(data) / MB)
        return engine, data, tree

    def hook(self, data: Path, *, helper: bool = True, key: str | None = "hook") -> None:
        """One ``snapshotter hook`` process, no change; ``helper=False`` turns the server off."""
        event = {"hook_event_name": "turn_start", "session_id": "b", "cwd": str(self.wt.root)}
        payload = json.dumps(event).encode()
        cmd = [sys.executable, "-m", "snapshotter", "--data-dir", str(data), "hook"]
        env = dict(self.env, SNAPSHOTTER_HOOK_SERVER="1" if helper else "0")
        ms, done = timed(lambda: subprocess.run(cmd, input=payload, capture_output=True,
                                                env=env, check=False))
        if key is not None:
            self.result.add(key, ms)
        self.result.check(done.returncode == 0 and not done.stderr,
                          f"hook: exit {done.returncode}, stderr {done.stderr[:300]!r}")

    def both_capture(self, ref: ReferenceShadow, engine: Any, key: str, ours_first: bool,
                     then: Callable[[Any, str], None] | None = None) -> tuple[str, str]:
        """The reference's capture and ours, timed as ``ref_<key>`` and ``<key>``, in turn."""
        ref_tree = our_tree = ""
        for side in (("ours", "ref") if ours_first else ("ref", "ours")):
            if side == "ref":
                ms, ref_tree = timed(ref.capture)
                self.result.add(f"ref_{key}", ms)
            else:
                ms, cap = timed(engine.capture)
                our_tree = cap.tree
                self.result.add(key, ms)
                if then is not None:
                    then(engine, our_tree)
        return ref_tree, our_tree

    def watched_nochange(self, engine: Any, expected: str) -> None:
        """A no-change capture with the inotify watcher on (what the hook server runs)."""
        from snapshotter.store import watch

        watch.enable()
        try:
            engine.capture()  # the watcher's first walk
            ms, cap = timed(engine.capture)
        finally:
            watch.enable(False)
        self.result.add("nochange_watch", ms)
        self.result.check(cap.tree == expected, "watched capture: a different tree")

    def start_helper(self, data: Path) -> None:
        """Let a first hook start the resident server (if the engine has one); wait for it."""
        self.hook(data, key=None)
        path = _helper_socket(data)
        deadline = time.monotonic() + HELPER_START_S
        while path is not None and not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if path is not None and not path.exists():
            self.result.notes.append("the hook's resident server did not come up; "
                                     "the hook figure is the in-process fallback")

    def interpreter(self) -> None:
        cmd = [sys.executable, "-c", "pass"]
        ms, _ = timed(lambda: subprocess.run(cmd, env=self.env, check=True))
        self.result.add("python", ms)

    def compare_trees(self, ref: ReferenceShadow | None, ref_tree: str, engine: Any,
                      our_tree: str, phase: str) -> None:
        """Both sides must snapshot the same files, or the difference must be explained.

        The one known difference: the reference's 2 MiB rule looks at files that
        are new *to its shadow*, so a cold shadow drops big files the source
        tracks; ours keeps every tracked file.
        """
        if ref_tree == our_tree or ref is None:
            return
        theirs = ref.listing(ref_tree)
        ours = _listing(engine, our_tree)
        differing = sorted(p for p in theirs.keys() | ours.keys() if theirs.get(p) != ours.get(p))
        unexplained = [p for p in differing if p not in self.explained]
        if not unexplained:
            return
        tracked = set(ref.source_tracked())
        for rel in unexplained:
            size = (self.wt.root / rel).stat().st_size if (self.wt.root / rel).is_file() else 0
            if rel not in theirs and rel in tracked and size > MAX_NEW_FILE_SIZE:
                self.explained.add(rel)
                self.result.notes.append(
                    f"{phase}: the reference leaves out {rel} ({size / MB:.1f} MB, tracked in "
                    f"the source): its 2 MiB rule counts files new to its shadow"
                )
        rest = [p for p in unexplained if p not in self.explained]
        self.result.check(not rest, f"{phase}: trees differ at {', '.join(rest[:5])}"
                                    f"{' …' if len(rest) > 5 else ''}")

    # The run -----------------------------------------------------------------

    def run(self) -> WorktreeResult:
        started = time.perf_counter()
        res = self.result
        ref: ReferenceShadow | None = None
        engine: Any = None
        data = self.work / "unused"
        for c in range(self.opts.cold_rounds):
            progress(f"{self.wt.label}: first captures, round {c + 1}/{self.opts.cold_rounds}")
            if ref is not None:  # only the last round's shadow and store are kept
                shutil.rmtree(ref.shadow)
                engine = None
                shutil.rmtree(data)
            ref_tree = our_tree = ""
            for side in (("ref", "ours") if c % 2 == 0 else ("ours", "ref")):
                if side == "ref":
                    ref, ref_tree = self.cold_reference(c)
                else:
                    engine, data, our_tree = self.cold_ours(c)
            self.compare_trees(ref, ref_tree, engine, our_tree, "first capture")
        assert ref is not None and engine is not None

        from snapshotter.history import undo as history
        from snapshotter.history.recorder import Recorder

        undo_rec = Recorder(engine, "bench-undo")
        self.start_helper(data)
        for r in range(self.opts.rounds):
            progress(f"{self.wt.label}: round {r + 1}/{self.opts.rounds}")
            ours_first = r % 2 == 1
            # Settle: the previous round's restores left new mtimes behind; once
            # they are out of the racy window both sides trust their stat data.
            time.sleep(RACY_SETTLE_S)
            ref.capture()
            engine.capture()
            self.floor()
            ref_t0, our_t0 = self.both_capture(ref, engine, "nochange", ours_first,
                                               then=self.watched_nochange)
            self.compare_trees(ref, ref_t0, engine, our_t0, f"no-change capture, round {r}")
            # The server's watcher catches up with this round's in-process work
            # first: "no change" means none since the previous agent event.
            self.hook(data, key=None)
            self.hook(data)
            self.hook(data, helper=False, key="hook_fallback")
            self.interpreter()

            edited = pick(self.wt, r * 2 * EDITS, EDITS)
            for rel in edited:
                append_edit(self.wt.root, rel, f"round {r}")
            ref_t1, our_t1 = self.both_capture(ref, engine, "edit10", ours_first)
            self.compare_trees(ref, ref_t1, engine, our_t1, f"capture after edits, round {r}")

            ms, ref_paths = timed(partial(ref.changed_paths, ref_t0, ref_t1))
            res.add("ref_changes", ms)
            ms, ours_changes = timed(partial(engine.changes, our_t0, our_t1))
            res.add("changes", ms)
            res.check(sorted(ref_paths) == sorted(edited), "reference diff-tree: wrong paths")
            res.check(sorted(ch.path for ch in ours_changes) == sorted(edited),
                      "changes since a tree: wrong paths")

            # Undo: a recorded 10-file turn, reverted through history.
            undo_files = pick(self.wt, r * 2 * EDITS + EDITS, EDITS)
            original = {rel: (self.wt.root / rel).read_bytes() for rel in undo_files}
            undo_rec.turn_start()
            for rel in undo_files:
                append_edit(self.wt.root, rel, f"undo round {r}")
            cp = undo_rec.turn_end("bench")
            res.check(cp is not None and len(cp.files) == EDITS,
                      "undo: the turn did not record a 10-file checkpoint")
            ms, report = timed(lambda: history.undo_last(engine, "bench-undo"))
            res.add("undo10", ms)
            res.check(len(report.restored) == EDITS, f"undo restored {len(report.restored)} files")
            res.check(all((self.wt.root / p).read_bytes() == b for p, b in original.items()),
                      "undo: files not back to their checkpoint")

            # The reference restore of the same files, edited again.
            for rel in undo_files:
                append_edit(self.wt.root, rel, f"restore round {r}")
            ms, _ = timed(partial(ref.restore, ref_t1, undo_files))
            res.add("ref_restore10", ms)
            res.check(all((self.wt.root / p).read_bytes() == b for p, b in original.items()),
                      "reference restore: files not back")

        if self.opts.profile:
            time.sleep(RACY_SETTLE_S)
            engine.capture()
            res.profile = profile_capture(engine)
        if self._checkpoints_here():
            res.checkpoints = self.checkpoints(engine, data)
        stop_helper(data)
        res.seconds = time.perf_counter() - started
        return res

    def _checkpoints_here(self) -> bool:
        at = self.opts.checkpoints_at
        if self.opts.checkpoints <= 0 or at == "none":
            return False
        smallest = self.wt.label != "stdlib" and self.wt.tracked == min(self.opts.sizes)
        return at == "all" or smallest

    def checkpoints(self, engine: Any, data: Path) -> dict[str, Any]:
        """Store growth over many one-file turns, against the bytes they changed."""
        from snapshotter.history import maintenance as gc_mod
        from snapshotter.history.recorder import Recorder

        count = self.opts.checkpoints
        progress(f"{self.wt.label}: {count} small checkpoints")
        engine.capture()
        gc_error = ""
        try:  # a packed baseline, so "after gc" compares like with like
            gc_mod.collect_store(engine.store)
        except Exception as exc:  # report, do not lose the rest of the run
            gc_error = f"{type(exc).__name__}: {exc}"
        engine.store.reopen()
        before, before_apparent = disk_usage(data)
        rec = Recorder(engine, "bench-checkpoints")
        edit_bytes = file_bytes = recorded = 0
        times: list[float] = []
        offset = 2 * EDITS * self.opts.rounds
        for i in range(count):
            rel = pick(self.wt, offset + i, 1)[0]
            start = time.perf_counter()
            rec.turn_start()
            edit_bytes += append_edit(self.wt.root, rel, f"checkpoint {i}")
            cp = rec.turn_end("bench")
            times.append((time.perf_counter() - start) * 1000.0)
            file_bytes += (self.wt.root / rel).stat().st_size
            recorded += cp is not None
        after, after_apparent = disk_usage(data)
        try:
            gc_mod.collect_store(engine.store)
        except Exception as exc:
            gc_error = gc_error or f"{type(exc).__name__}: {exc}"
        engine.store.reopen()
        after_gc, after_gc_apparent = disk_usage(data)
        self.result.check(recorded == count, f"checkpoints: {recorded} of {count} recorded")
        self.result.check(not gc_error, f"gc after checkpoints failed: {gc_error}")
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


def _helper_socket(data: Path) -> Path | None:
    """The resident hook server's socket for ``data`` (this process's env is the hook's)."""
    try:
        from snapshotter.hooks import client
    except ImportError:
        return None
    path: Path | None = client.socket_path(data)
    return path


def stop_helper(data: Path) -> None:
    """Stop the resident hook server this run started, rather than leave it idling."""
    path = _helper_socket(data)
    if path is None or not path.exists():
        return
    from snapshotter.hooks import client

    with contextlib.suppress(OSError):
        client.stop(path)


def _listing(engine: Any, tree: str) -> dict[str, tuple[int, str]]:
    """Every file of one of our trees: path -> (mode, blob id)."""
    import pygit2

    found: dict[str, tuple[int, str]] = {}
    stack = [("", engine.store.tree_object(tree))]
    while stack:
        prefix, obj = stack.pop()
        for item in obj:
            path = prefix + item.name
            if isinstance(item, pygit2.Tree):
                stack.append((path + "/", item))
            else:
                found[path] = (int(item.filemode), str(item.id))
    return found


def profile_capture(engine: Any) -> str:
    """cProfile of one no-change capture: the top entries by own time and cumulative."""
    prof = cProfile.Profile()
    prof.enable()
    engine.capture()
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(15)
    stats.sort_stats("cumulative").print_stats(15)
    return out.getvalue()


# -- the table -------------------------------------------------------------------


def _fmt_ratio(value: float | None) -> str:
    return f"{value:.2f}x" if value is not None else ""


def _fmt_value(value: float, unit: str) -> str:
    if unit == "MB":
        return f"{value:.1f} MB"
    return f"{value:.0f} ms" if value >= 1000 else f"{value:.1f} ms"


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
                note = (f"{median * MB / res.disk_bytes:.1%} of the worktree's "
                        f"{res.disk_bytes / MB:.0f} MB (apparent {apparent / MB:.1f} MB)")
            out.append({
                "key": key,
                "figure": title,
                "size": res.label,
                "unit": unit,
                "median": median,
                "n": len(res.samples[key]),
                "samples": res.samples[key],
                "ratio_ref": res.ratio(key, ref_key) if ref_key else None,
                "ratio_floor": res.ratio(key, "floor") if unit == "ms" else None,
                "note": note,
            })
        cps = res.checkpoints
        if cps:
            base = cps["edit_bytes"] or 1
            grown = {"growth": cps["apparent_after"] - cps["apparent_before"],
                   "growth_after_gc": cps["apparent_after_gc"] - cps["apparent_before"]}
            for key, label in (("growth", "before gc"), ("growth_after_gc", "after gc")):
                out.append({
                    "key": f"checkpoints_{key}",
                    "figure": f"ours: store growth, {cps['count']} small checkpoints ({label})",
                    "size": res.label,
                    "unit": "MB",
                    "median": cps[key] / MB,
                    "n": 1,
                    "samples": [cps[key] / MB],
                    "ratio_ref": None,
                    "ratio_floor": None,
                    "note": (f"{cps[key] / base:.1f}x the {cps['edit_bytes']} changed bytes; "
                             f"{cps[key] / (cps['changed_file_bytes'] or 1):.2f}x the changed "
                             f"files' {cps['changed_file_bytes'] / MB:.1f} MB; apparent "
                             f"{grown[key] / MB:.1f} MB"),
                })
    return out


def print_table(table: list[dict[str, Any]], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    headers = ("figure", "size", "median", "n", "x reference", "x floor", "note")
    lines = [
        (r["figure"], r["size"], _fmt_value(r["median"], r["unit"]), str(r["n"]),
         _fmt_ratio(r["ratio_ref"]), _fmt_ratio(r["ratio_floor"]), r["note"])
        for r in table
    ]
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h)
              for i, h in enumerate(headers)]
    right = {2, 3, 4, 5}

    def fmt(cells: tuple[str, ...]) -> str:
        parts = [c.rjust(w) if i in right else c.ljust(w)
                 for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "| " + " | ".join(parts) + " |"

    print(fmt(headers), file=out)
    print("|" + "|".join(("-" * (w + 1) + ":" if i in right else "-" * (w + 2))
                         for i, w in enumerate(widths)) + "|", file=out)
    previous = None
    for row, line in zip(table, lines, strict=True):
        if previous is not None and row["size"] != previous:
            print(fmt(tuple("" for _ in headers)), file=out)
        previous = row["size"]
        print(fmt(line), file=out)


def targets(results: list[WorktreeResult]) -> list[dict[str, Any]]:
    """Issue 5's targets, each judged on this run's ratios."""
    found = []

    def add(res: WorktreeResult, name: str, value: float | None, limit: float,
            binding: bool) -> None:
        if value is None:
            return
        found.append({"size": res.label, "target": name, "value": value, "limit": limit,
                      "met": value <= limit, "binding": binding})

    for res in results:
        big = res.label in ("10k", "50k")
        add(res, "no-change capture (watcher on) / reference no-change",
            res.ratio("nochange_watch", "ref_nochange"), 1.0, big)
        add(res, "same with a full walk", res.ratio("nochange", "ref_nochange"), 1.0, False)
        add(res, "hook round trip / reference no-change", res.ratio("hook", "ref_nochange"),
            1.2 if res.label == "50k" else 1.5, big)
        # The issue states these at 10k and 50k ("here: 10.9 s at 10k, 50.8 s at 50k").
        add(res, "first capture / reference first", res.ratio("first", "ref_first"), 0.05, big)
        store = res.median("store_first")
        add(res, "store's own bytes after first capture / worktree bytes",
            store * MB / res.disk_bytes if store is not None else None, 0.05, big)
        add(res, "undo 10 files / our no-change capture (full walk, as the CLI runs it)",
            res.ratio("undo10", "nochange"), 1.2, True)
        if res.checkpoints:
            # "Changed bytes" = the new versions of the changed files: a snapshot
            # stores whole files, so that is what a checkpoint must keep.
            cps = res.checkpoints
            files = cps["changed_file_bytes"] or 1
            add(res, f"store growth, {cps['count']} checkpoints / changed files' bytes",
                cps["growth"] / files, 2.0, True)
            add(res, f"same after gc ({cps['count']} checkpoints)",
                cps["growth_after_gc"] / files, 2.0, False)
            add(res, "store growth / bytes the edits appended",
                cps["growth"] / (cps["edit_bytes"] or 1), 2.0, False)
    return found


def print_targets(found: list[dict[str, Any]]) -> None:
    print("\nTargets (issue 5; 'info' = not a target at this size):")
    for t in found:
        verdict = "met" if t["met"] else "MISSED"
        kind = "" if t["binding"] else " (info)"
        print(f"  {t['size']:>6}  {t['target']}: {t['value']:.3f} ≤ {t['limit']} "
              f"→ {verdict}{kind}")


# -- entry point -------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> tuple[Options, argparse.Namespace]:
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1000,10000",
                   help="comma-separated file counts (default 1000,10000; e.g. 1000,10000,50000)")
    p.add_argument("--stdlib", action="store_true",
                   help="also measure a committed copy of the Python standard library")
    p.add_argument("--rounds", type=int, default=5, help="rounds per figure (default 5)")
    p.add_argument("--cold-rounds", type=int, default=None,
                   help="rounds of first captures (default: --rounds)")
    p.add_argument("--checkpoints", type=int, default=1000,
                   help="small checkpoints for the store-growth figure (default 1000)")
    p.add_argument("--checkpoints-at", choices=("smallest", "all", "none"), default="smallest",
                   help="where to run the checkpoint figure (slow; default: smallest size)")
    p.add_argument("--profile", action="store_true",
                   help="print a cProfile of one no-change capture per worktree")
    p.add_argument("--loose-source", action="store_true",
                   help="leave the source repository's objects loose (default: packed, "
                        "like a clone)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    p.add_argument("--tmp-dir", metavar="DIR", help="parent of the temp directory")
    p.add_argument("--keep", action="store_true", help="keep the temp directory")
    ns = p.parse_args(argv)
    try:
        sizes = [int(s) for s in ns.sizes.split(",") if s.strip()]
    except ValueError:
        p.error(f"--sizes: not a list of integers: {ns.sizes!r}")
    if any(s < 20 for s in sizes) or (not sizes and not ns.stdlib):
        p.error("--sizes: give file counts of at least 20")
    if ns.rounds < 1:
        p.error("--rounds must be at least 1")
    cold = ns.rounds if ns.cold_rounds is None else ns.cold_rounds
    if cold < 1:
        p.error("--cold-rounds must be at least 1")
    opts = Options(sorted(sizes), ns.stdlib, ns.rounds, cold, ns.checkpoints,
                   ns.checkpoints_at, ns.profile, not ns.loose_source)
    return opts, ns


def _versions() -> dict[str, Any]:
    import pygit2

    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True,
                                 check=False).stdout.strip()
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "git": git_version,
        "pygit2": getattr(pygit2, "__version__", "?"),
        "libgit2": pygit2.LIBGIT2_VERSION,
    }


def main(argv: list[str] | None = None) -> int:
    opts, ns = parse_args(argv)
    if shutil.which("git") is None:
        print("the benchmarks need the git CLI on PATH", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="snapshotter-bench-", dir=ns.tmp_dir)).resolve()
    results: list[WorktreeResult] = []
    try:
        home = tmp / "home"
        home.mkdir()
        with hermetic(home) as env:
            specs: list[tuple[str, int | None]] = [(str(n), n) for n in opts.sizes]
            if opts.stdlib:
                specs.append(("stdlib", None))
            for name, n in specs:
                work = tmp / f"w-{name}"
                work.mkdir()
                progress(f"generating the {name} worktree")
                start = time.perf_counter()
                if n is None:
                    wt = copy_stdlib(work / "worktree", env, pack=opts.pack_source)
                else:
                    wt = generate(work / "worktree", n, env, pack=opts.pack_source)
                progress(f"{wt.label}: {wt.tracked} tracked files, {wt.disk_bytes / MB:.0f} MB, "
                         f"generated in {time.perf_counter() - start:.1f} s")
                results.append(Bench(wt, work, env, opts).run())
                shutil.rmtree(work, ignore_errors=True)
    finally:
        if ns.keep:
            progress(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    table = rows(results)
    found = targets(results)
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
                "sizes": opts.sizes, "stdlib": opts.stdlib, "rounds": opts.rounds,
                "cold_rounds": opts.cold_rounds, "checkpoints": opts.checkpoints,
                "checkpoints_at": opts.checkpoints_at, "pack_source": opts.pack_source,
            },
            "worktrees": [
                {"label": r.label, "tracked": r.tracked, "disk_bytes": r.disk_bytes,
                 "seconds": r.seconds, "checkpoints": r.checkpoints, "checks": r.checks,
                 "notes": r.notes,
                 "profile": r.profile}
                for r in results
            ],
            "rows": table,
            "targets": found,
        }
        Path(ns.json).write_text(json.dumps(document, indent=2) + "\n")
    return 1 if any(res.checks for res in results) else 0
