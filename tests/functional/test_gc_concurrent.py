"""gc never holds hooks up, never waits in session_end, and forgets deleted worktrees.

Issue 13.13 / 11.4: session_end ran gc for 16-39 s inside the hook, holding
the store lock, while another session's turn_end failed to get it. Issue
13.19: stores of deleted worktrees piled up forever.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import filelock
import pytest
from builders import hook_input, keep_loose, make_repo, open_engine, run_cli, write

from snapshotter.config import stores_dir
from snapshotter.git import packs as packwriter
from snapshotter.git.kinds import BLOB
from snapshotter.git.loose import loose_files
from snapshotter.history import maintenance as gc_mod
from snapshotter.history import undo
from snapshotter.history.recorder import Recorder
from snapshotter.history.retention import Policy
from snapshotter.history.state_file import load, save
from snapshotter.hooks import detached_gc
from snapshotter.hooks.builtin import SnapshotBuiltin
from snapshotter.store import compaction, loose_packing
from snapshotter.store.capture import Snapshot
from snapshotter.store.shadow import Store


def lock_is_free(store: Store) -> bool:
    """Whether another process could take the store lock right now."""
    try:
        with filelock.FileLock(str(store.root / "lock"), timeout=0):
            return True
    except filelock.Timeout:
        return False


def test_gc_session_end_starts_gc_detached_and_never_runs_it_itself(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    builtin = SnapshotBuiltin(data_dir_path=data_dir)
    in_process: list[str] = []
    started: list[dict[str, Any]] = []

    def refuse(*_args: object, **_kwargs: object) -> gc_mod.GcReport:
        in_process.append("gc ran inside the hook")
        raise AssertionError("gc inside the hook")

    class FakePopen:
        def __init__(self, argv: list[str], **kwargs: Any) -> None:
            started.append({"argv": argv, **kwargs})

    monkeypatch.setattr(gc_mod, "collect", refuse)
    monkeypatch.setattr(gc_mod, "collect_store", refuse)
    monkeypatch.setattr(subprocess, "Popen", FakePopen)

    for i in range(3):  # three turns and the open one: max_checkpoints=3 drops one
        builtin.handle(hook_input("turn_start", root), [])
        write(root, "a.txt", f"turn {i}\n")
        builtin.handle(hook_input("turn_end", root), [])
    builtin.handle(hook_input("turn_start", root), [])
    write(root, "a.txt", "changed\n")
    cp = builtin.handle(hook_input("session_end", root), ["max_checkpoints=3"])
    assert cp is not None and cp.label == "interrupted", "the open turn is recorded first"
    assert in_process == [], "session_end must not run gc within the hook's time"
    assert len(started) == 1, f"one detached gc process started: {started}"
    spawn = started[0]
    assert spawn["start_new_session"] is True, "detached from the hook's session"
    assert all(spawn[k] == subprocess.DEVNULL for k in ("stdin", "stdout", "stderr"))
    argv = spawn["argv"]
    assert argv[1:4] == ["-P", "-m", "snapshotter"] and "gc" in argv and "--detached" in argv
    assert argv[argv.index("--max-checkpoints") + 1] == "3", "retention args travel along"


def test_gc_detached_process_really_compacts(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    engine = open_engine(root, data_dir)
    for i in range(packwriter.LOOSE_PACK_AT + 10):
        write(root, f"new/f{i}.txt", f"file {i}\n")
    engine.capture()
    # What session_end starts, in a real process (waited for here, never in the hook).
    argv_seen: list[list[str]] = []
    monkeypatch.setattr(subprocess, "Popen", lambda argv, **_kw: argv_seen.append(argv))
    detached_gc.start(engine.data_dir, engine.root, budget_s=2.0, policy=Policy())
    monkeypatch.undo()
    done = subprocess.run(argv_seen[0], capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert loose_packing.count_loose_objects(engine.store) == 0, "the detached gc packed them"


def test_gc_writes_packs_without_the_store_lock(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    engine = open_engine(root, data_dir)
    rec = Recorder(engine, "s")
    rec.session_start()
    monkeypatch.setattr(Snapshot, "_pack_if_many", keep_loose)  # the loose objects wait for gc
    for turn in range(2):
        rec.turn_start()
        for i in range(packwriter.LOOSE_PACK_AT // 20 + 1):  # ten files a capture: loose objects
            for j in range(10):
                write(root, f"new/t{turn}/d{i}/f{j}.txt", f"turn {turn} file {i}/{j}\n")
            engine.capture()
        write(root, "a.txt", f"turn {turn}\n")
        rec.turn_end("done")
    calls: list[str] = []
    real_write, real_copy = compaction._write_pack, packwriter.copy_pack

    def check_write(*args: Any, **kwargs: Any) -> Any:
        calls.append("write" if lock_is_free(engine.store) else "write under the lock")
        return real_write(*args, **kwargs)

    def check_copy(*args: Any, **kwargs: Any) -> Any:
        calls.append("copy" if lock_is_free(engine.store) else "copy under the lock")
        return real_copy(*args, **kwargs)

    monkeypatch.setattr(compaction, "_write_pack", check_write)
    monkeypatch.setattr(packwriter, "copy_pack", check_copy)
    objects = engine.store.root / "git" / "objects"
    # How many of those captures wrote loose objects depends on timing (a batch of
    # racy files is re-hashed into a pack): top up, so the quick gc has work.
    for n in range(packwriter.LOOSE_PACK_AT):
        if len(loose_files(objects)) >= packwriter.LOOSE_PACK_AT:
            break
        engine.store.put(BLOB, f"loose garbage {n}\n".encode())
    assert len(loose_files(objects)) >= packwriter.LOOSE_PACK_AT
    gc_mod.collect(engine, budget_s=2.0, policy=Policy(None, None, None))  # the quick gc
    assert calls == ["write", "copy"], f"the quick gc packed without the lock: {calls}"
    state = load(engine.store)
    state.checkpoints = state.checkpoints[-1:]  # the first turn's objects are garbage now
    save(engine.store, state)
    gc_mod.collect(engine, policy=Policy(None, None, None), compact=True)  # a full one
    monkeypatch.undo()
    assert calls == ["write", "copy"] * 2, f"the full gc rewrote without the lock: {calls}"
    assert undo.undo_last(open_engine(root, data_dir), "s").restored == ["a.txt"]


@pytest.mark.parametrize("where", ["loose", "packed"])
def test_gc_keeps_an_old_object_a_capture_names_again_while_it_packs(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    engine = open_engine(root, data_dir)
    old = Recorder(engine, "old")
    old.turn_start()
    write(root, "x.txt", "bytes only an old, dropped checkpoint holds\n")
    assert old.turn_end("done") is not None
    os.unlink(root / "x.txt")
    engine.capture()  # the stat cache's tree no longer holds x.txt
    if where == "packed":  # in a pack the dropping gc rewrites, not a loose object
        gc_mod.collect(engine, policy=Policy(None, None, None))
        assert loose_packing.count_loose_objects(engine.store) == 0
    state = load(engine.store)
    for cp in state.checkpoints:
        cp.created_at = "2000-01-01T00:00:00Z"
    state.sessions["old"].touched = "2000-01-01T00:00:00Z"
    save(engine.store, state)
    real_write = compaction._write_pack
    trees: list[str] = []

    def meanwhile(*args: Any, **kwargs: Any) -> Any:
        written = real_write(*args, **kwargs)
        # A hook in another process, while gc writes its pack: x.txt is back,
        # and its blob already exists (in a file gc is about to drop).
        write(root, "x.txt", "bytes only an old, dropped checkpoint holds\n")
        trees.append(open_engine(root, data_dir).capture().tree)
        return written

    monkeypatch.setattr(compaction, "_write_pack", meanwhile)
    report = gc_mod.collect(engine, policy=Policy(1, None, None), compact=True)
    assert report.dropped.sessions == ["old"], report.dropped
    assert where == "loose" or report.packs_rewritten == 1, f"x.txt's pack is rewritten: {report}"
    monkeypatch.undo()
    fresh = open_engine(root, data_dir)
    entry = fresh.entry(trees[0], "x.txt")  # the stat cache's tree, as that capture left it
    assert entry is not None
    assert fresh.store.blob(entry[1]) == b"bytes only an old, dropped checkpoint holds\n", (
        "the blob the new capture names survived the gc"
    )


def run_gc_all(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("gc", "--all", *args, data_dir=data_dir, timeout=300)


def test_gc_all_drops_stores_of_deleted_worktrees_after_the_retention_age(
    tmp_path: Path, data_dir: Path
) -> None:
    kept = make_repo(tmp_path / "kept", {"a.txt": "a\n"})
    gone = make_repo(tmp_path / "gone", {"b.txt": "b\n"})
    kept_root = open_engine(kept, data_dir).store.root
    gone_engine = open_engine(gone, data_dir)
    gone_engine.capture()
    gone_store = gone_engine.store
    shutil.rmtree(gone)
    done = run_gc_all(data_dir, "--max-age-days", "30")
    assert done.returncode == 0, done.stderr
    assert gone_store.root.exists(), "a recently used store outlives its worktree for a while"
    done = run_gc_all(data_dir, "--max-age-days", "0", "--dry-run")
    assert done.returncode == 0 and gone_store.root.exists(), "a dry run deletes nothing"
    done = run_gc_all(data_dir, "--max-age-days", "0")
    assert done.returncode == 0, done.stderr
    assert not gone_store.root.exists(), "the deleted worktree's store is gone"
    assert kept_root.exists(), "a live worktree's store stays"
    left = sorted(p.name for p in stores_dir(data_dir).iterdir() if p.is_dir())
    assert left == [kept_root.name], f"nothing else left behind: {left}"
