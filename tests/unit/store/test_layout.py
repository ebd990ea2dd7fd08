"""snapshotter/store/layout.py: one store per worktree, found from its path; its lock."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import filelock
import pytest

from snapshotter.store import layout


def test_a_worktree_path_names_one_store() -> None:
    key = layout.store_key(Path("/home/me/project"))
    assert key == layout.store_key(Path("/home/me/project"))
    assert key != layout.store_key(Path("/home/me/project2"))
    assert len(key) == 16 and int(key, 16) >= 0


def test_only_directories_holding_a_repository_are_stores(tmp_path: Path) -> None:
    assert layout.all_store_roots(tmp_path) == []
    base = tmp_path / "snapshot"
    for name in ("b", "a"):
        (base / name / "git").mkdir(parents=True)
        (base / name / "git" / "HEAD").write_text("ref: refs/heads/main\n")
    (base / "half" / "git").mkdir(parents=True)  # no HEAD: a store being made, or junk
    (base / "hook.log").write_text("")
    assert layout.all_store_roots(tmp_path) == [base / "a", base / "b"]


def test_a_held_lock_makes_another_holder_wait_then_time_out(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    held = layout.file_lock(path, timeout=5)
    with held:
        outcome: list[str] = []

        def other() -> None:
            try:
                with layout.file_lock(path, timeout=0.05):
                    outcome.append("taken")
            except TimeoutError:
                outcome.append("timed out")

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(5)
        assert outcome == ["timed out"]
    with layout.file_lock(path, timeout=0.05):
        pass  # free again once released


def test_the_lock_is_re_entrant_in_a_thread_and_free_after_the_last_release(
    tmp_path: Path,
) -> None:
    lock = layout.file_lock(tmp_path / "lock", timeout=0)
    # A store's views share one lock: holding it twice must not wait.
    with lock, lock, pytest.raises(TimeoutError):
        filelock.FileLock(str(tmp_path / "lock"), timeout=0).acquire()
    with filelock.FileLock(str(tmp_path / "lock"), timeout=0):
        pass  # both holds released


def test_one_lock_object_makes_two_threads_take_turns(tmp_path: Path) -> None:
    """The hook server's threads share a store's lock object and must still exclude
    each other, as processes do."""
    lock = layout.file_lock(tmp_path / "lock", timeout=0.05)
    outcome: list[str] = []

    def other() -> None:
        try:
            with lock:
                outcome.append("taken")
        except TimeoutError:
            outcome.append("timed out")

    with lock:
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(5)
    assert outcome == ["timed out"]


def test_a_lock_file_removed_while_waiting_is_not_locked_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A waiter that wins the lock of a file someone removed would hold a lock no one
    else can see: it locks the file now at that path instead."""
    path = tmp_path / "lock"
    holder = filelock.FileLock(str(path), timeout=0)
    holder.acquire()
    polling, taken, checked = threading.Event(), threading.Event(), threading.Event()

    class Clock:
        monotonic = staticmethod(time.monotonic)

        @staticmethod
        def sleep(seconds: float) -> None:
            polling.set()  # the waiter has its file open and found it locked
            time.sleep(seconds)

    monkeypatch.setattr(layout, "time", Clock)

    def waiter() -> None:
        with layout.file_lock(path, timeout=5):
            taken.set()
            checked.wait(5)

    thread = threading.Thread(target=waiter)
    thread.start()
    assert polling.wait(5)
    path.unlink()
    holder.release()  # the waiter now wins the flock of a file no longer there
    assert taken.wait(5)
    try:
        with pytest.raises(TimeoutError):  # it holds the file others find at the path
            filelock.FileLock(str(path), timeout=0).acquire()
    finally:
        checked.set()
        thread.join(5)


def test_a_lock_held_elsewhere_is_a_no_op() -> None:
    with layout.HeldElsewhere() as held:
        assert isinstance(held, layout.HeldElsewhere)
    with pytest.raises(ValueError, match="kept"), layout.HeldElsewhere():
        raise ValueError("kept")  # exceptions pass through
