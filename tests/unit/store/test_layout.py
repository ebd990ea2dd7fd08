"""snapshotter/store/layout.py: one store per worktree, found from its path; its lock."""

from __future__ import annotations

import threading
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
            except filelock.Timeout:
                outcome.append("timed out")

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(5)
        assert outcome == ["timed out"]
    with layout.file_lock(path, timeout=0.05):
        pass  # free again once released


def test_a_lock_held_elsewhere_is_a_no_op() -> None:
    with layout.HeldElsewhere() as held:
        assert isinstance(held, layout.HeldElsewhere)
    with pytest.raises(ValueError, match="kept"), layout.HeldElsewhere():
        raise ValueError("kept")  # exceptions pass through
