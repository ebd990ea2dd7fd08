"""cProfile of the paths issue 16 names, in-process, on any worktree.

``python -m benchmarks.profile {first,cold-hook,turn,undo,redo} WORKTREE [--top N]``

- ``first``: a first capture into a fresh data directory (seeding, walk, trees).
- ``cold-hook``: a session's first event with no watcher, on a store whose stat
  cache is full (what a hook pays without the server, less the interpreter and
  its imports).
- ``turn``: a ``turn_end`` after 10 files in 10 directories were edited, with the
  watcher on, as the hook server handles it. The edits are appended to the
  files: run it on a copy.
- ``undo``, ``redo``: after that turn, ``Engine.undo`` of it (and then
  ``Engine.redo``), on an engine opened with the watcher as the hook server
  opens one; the store's records, trees and syncs as a served ``snapshotter
  undo`` pays them (less the fork, the CLI and its output).

Public API only (``snapshotter.Engine``, ``snapshotter.SnapshotBuiltin``,
``snapshotter.HookInput``) plus the watcher's documented opt-in
(``SnapshotBuiltin(resident=Resident())``, store/resident.py). Figures are for
reading causes, not for ratios: ``python -m benchmarks`` measures those.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

EDITS = 10


def _profiled(label: str, call: Callable[[], object], top: int) -> None:
    prof = cProfile.Profile()
    started = time.perf_counter()
    prof.enable()
    call()
    prof.disable()
    print(f"{label}: {(time.perf_counter() - started) * 1000:.0f} ms (under cProfile)")
    pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(top)


def _event(builtin: object, root: Path, name: str, session: str) -> None:
    import snapshotter

    hook = snapshotter.HookInput.model_validate(
        {"hook_event_name": name, "session_id": session, "cwd": str(root)}
    )
    builtin.handle(hook, [])  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profile", description=__doc__)
    parser.add_argument("what", choices=["first", "cold-hook", "turn", "undo", "redo"])
    parser.add_argument("worktree", type=Path)
    parser.add_argument("--top", type=int, default=15, help="entries to print (default 15)")
    opts = parser.parse_args(argv)
    import snapshotter

    root = opts.worktree.resolve()
    with tempfile.TemporaryDirectory(prefix="snapshotter-profile-") as tmp:
        data = Path(tmp)
        if opts.what == "first":
            engine = snapshotter.Engine.open(root, data_dir_path=data)
            _profiled("first capture", engine.capture, opts.top)
            return
        builtin = snapshotter.SnapshotBuiltin(data_dir_path=data)
        if opts.what == "cold-hook":
            _event(builtin, root, "session_start", "warm")  # the store and its stat cache
            time.sleep(0.1)  # out of the racy window
            _profiled(
                "session_start, no watcher",
                lambda: _event(builtin, root, "session_start", "cold"),
                opts.top,
            )
            return
        from snapshotter.store.resident import Resident

        resident = Resident()
        builtin = snapshotter.SnapshotBuiltin(data_dir_path=data, resident=resident)
        _event(builtin, root, "session_start", "turn")
        _event(builtin, root, "turn_start", "turn")
        _edit(root)

        def end_turn() -> None:
            _event(builtin, root, "turn_end", "turn")

        if opts.what == "turn":
            _profiled("turn_end, 10 files edited", end_turn, opts.top)
            return
        end_turn()
        engine = snapshotter.Engine.open(root, data_dir_path=data, resident=resident)
        assert engine is not None
        time.sleep(0.1)

        def undo() -> None:
            assert engine is not None
            engine.undo("turn")

        if opts.what == "undo":
            _profiled("undo of the 10-file turn", undo, opts.top)
            return
        undo()
        time.sleep(0.1)
        _profiled("redo of it", lambda: engine.redo("turn"), opts.top)


def _edit(root: Path) -> None:
    """Append a line to EDITS files spread over the worktree (not rule files: an edit
    to a .gitignore means a full walk)."""
    files = sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    for path in files[:: max(1, len(files) // EDITS)][:EDITS]:
        with open(path, "ab") as f:
            f.write(b"edited by benchmarks.profile\n")
    time.sleep(0.1)


if __name__ == "__main__":
    main()
