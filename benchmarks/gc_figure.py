"""The gc figure for issue 7's closing note (run by hand, never by the test suite).

Builds a worktree of 10,000 text files (nested directories of 20 files,
1-20 KB each), commits it, records 200 checkpoints (each a turn editing a
few files), then reports the store's size (the objects directory) before
and after ``gc`` and how long gc took.

    python benchmarks/gc_figure.py [--files 10000] [--checkpoints 200] [--keep DIR]

It goes through snapshotter's public API only (``import snapshotter``).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILES_PER_DIR = 20
_LETTERS = "abcdefghijklmnopqrstuvwxyz_"
WORDS = ["".join(random.Random(i).choices(_LETTERS, k=2 + i % 9)) for i in range(4000)]
SESSION_END_GC_BUDGET_S = 2.0  # the bounded gc session_end runs (the snapshot builtin's)


def text(rng: random.Random, size: int, tag: str) -> bytes:
    """About ``size`` bytes of word soup, in lines, starting with a unique tag line."""
    words = rng.choices(WORDS, k=max(1, size // 6))
    lines = [" ".join(words[i : i + 12]) for i in range(0, len(words), 12)]
    return (f"# {tag}\n" + "\n".join(lines) + "\n").encode()[:size]


def build_worktree(root: Path, files: int, rng: random.Random) -> list[str]:
    paths = []
    for n in range(files):
        leaf = n // FILES_PER_DIR
        rel = f"pkg{leaf // 25:02}/mod{leaf % 25:02}/file{n % FILES_PER_DIR:02}.txt"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text(rng, rng.randint(1024, 20 * 1024), rel))
        paths.append(rel)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    return paths


def edit_turn(root: Path, paths: list[str], rng: random.Random, turn: int) -> None:
    """A few files changed the way an agent changes them: edits, a new file, a deletion."""
    for _ in range(rng.randint(2, 4)):
        path = root / rng.choice(paths)
        lines = path.read_bytes().split(b"\n")
        at = rng.randrange(len(lines))
        lines[at : at + rng.randint(0, 3)] = text(rng, rng.randint(40, 400), f"turn {turn}").split(
            b"\n"
        )
        path.write_bytes(b"\n".join(lines))
    roll = rng.random()
    if roll < 0.15:
        rel = f"pkg{rng.randrange(20):02}/new/turn{turn}.txt"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text(rng, rng.randint(1024, 8192), rel))
        paths.append(rel)
    elif roll < 0.25 and len(paths) > 100:
        rel = paths.pop(rng.randrange(len(paths)))
        (root / rel).unlink()


def _git_dirs(data: Path) -> list[Path]:
    return sorted(
        Path(d) for d, dirs, files in os.walk(data) if "HEAD" in files and "objects" in dirs
    )


def objects_size(data: Path) -> tuple[int, int, int, int]:
    """(apparent bytes, bytes on disk, loose objects, packs) of the store's objects.

    The store is found by git's own layout (a directory with HEAD and
    objects/ under the data dir), not by snapshotter's.
    """
    apparent = on_disk = loose = packs = 0
    for git_dir in _git_dirs(data):
        for dirpath, _dirs, names in os.walk(git_dir / "objects"):
            for name in names:
                st = os.lstat(os.path.join(dirpath, name))
                apparent += st.st_size
                on_disk += st.st_blocks * 512
                loose += len(name) == 38
                packs += name.endswith(".idx")
    return apparent, on_disk, loose, packs


def mib(n: int) -> str:
    return f"{n / 2**20:8.1f} MiB"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--checkpoints", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="work in DIR and leave it there")
    args = parser.parse_args(argv)

    import snapshotter

    base = args.keep or Path(tempfile.mkdtemp(prefix="gc-figure-"))
    root, data = base / "worktree", base / "data"
    rng = random.Random(args.seed)
    try:
        t0 = time.perf_counter()
        paths = build_worktree(root, args.files, rng)
        tree_bytes = sum((root / p).stat().st_size for p in paths)
        print(
            f"worktree: {len(paths)} files, {mib(tree_bytes)} "
            f"(built in {time.perf_counter() - t0:.1f} s)"
        )

        # The public API only: the snapshot builtin for the turns, its controller
        # for list/undo/redo, Engine.gc for gc (fresh engines: gc replaces packs).
        controller = snapshotter.register_snapshot(snapshotter.Registry(), data_dir_path=data)
        builtin = snapshotter.SnapshotBuiltin(data_dir_path=data)

        def event(name: str) -> snapshotter.Checkpoint | None:
            return builtin.handle(
                snapshotter.HookInput(hook_event_name=name, session_id="bench", cwd=str(root)), []
            )

        def engine() -> snapshotter.Engine:
            return snapshotter.Engine.open(root, data_dir_path=data)

        t0 = time.perf_counter()
        event("session_start")
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        for turn in range(args.checkpoints):
            event("turn_start")
            edit_turn(root, paths, rng, turn)
            if event("turn_end") is None:
                raise SystemExit(f"turn {turn} recorded nothing")
        record = time.perf_counter() - t0
        recorded = controller.list(root, all_sessions=True)
        print(
            f"recorded: {len(recorded)} checkpoints "
            f"(first capture {first:.1f} s, then {record:.1f} s for all turns)"
        )

        before = objects_size(data)
        t0 = time.perf_counter()
        quick = engine().gc(budget_s=SESSION_END_GC_BUDGET_S)  # what session_end runs
        elapsed_quick = time.perf_counter() - t0
        middle = objects_size(data)
        t0 = time.perf_counter()
        report = engine().gc()
        elapsed = time.perf_counter() - t0
        after = objects_size(data)
        t0 = time.perf_counter()
        again = engine().gc()
        elapsed_again = time.perf_counter() - t0

        # Sanity, not timing: the newest checkpoint still undoes and redoes.
        controller.undo_last(root, "bench")
        controller.redo(root, "bench")

        print()
        print("store objects       apparent       on disk    loose   packs")
        for label, row in (("before gc", before), ("bounded gc", middle), ("full gc", after)):
            print(f"  {label:11}  {mib(row[0])}  {mib(row[1])}  {row[2]:7}  {row[3]:6}")
        print(
            f"bounded gc (session_end, budget {SESSION_END_GC_BUDGET_S:g} s): "
            f"{elapsed_quick:.2f} s ({quick.reason or 'full'})"
        )
        print(
            f"full gc: {elapsed:.2f} s; kept {report.objects_kept} objects from "
            f"{report.live_trees} live trees; dropped {len(report.dropped.checkpoints)} "
            f"checkpoints"
        )
        same = "same size" if again.bytes_after == report.bytes_after else "size changed"
        print(f"second gc (nothing changed): {elapsed_again:.2f} s, {same}")
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
