"""snapshotter/store/refusals.py: a refused worktree is refused at once while nothing changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from snapshotter.errors import Refused
from snapshotter.git.worktree import Worktree
from snapshotter.store import refusals


@pytest.fixture
def worktree(tmp_path: Path) -> Worktree:
    root = tmp_path / "w"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "index").write_bytes(b"index")
    return Worktree(root, root / ".git", root / ".git", "")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    (tmp_path / "store").mkdir()
    return tmp_path / "store"


def test_nothing_on_record_lets_a_capture_walk(store: Path, worktree: Worktree) -> None:
    assert refusals.check(store, worktree, None) is False


def test_a_remembered_refusal_is_raised_with_its_reason(store: Path, worktree: Worktree) -> None:
    refusals.remember(store, worktree, "/home/me is your home directory", 100)
    with pytest.raises(Refused, match=r"your home directory .*refused before"):
        refusals.check(store, worktree, 100)
    refusals.clear(store)
    assert refusals.check(store, worktree, 100) is False
    refusals.clear(store)  # twice: nothing to clear is fine


@pytest.mark.parametrize("change", ["cap", "top directory", "index", "time"])
def test_a_change_it_depends_on_lets_the_next_capture_walk(
    store: Path, worktree: Worktree, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusals.remember(store, worktree, "too many files", 100)
    cap = 100
    if change == "cap":
        cap = 200
    elif change == "top directory":
        (worktree.root / "new").write_bytes(b"")
        os.utime(worktree.root, ns=(1, 1))
    elif change == "index":
        (worktree.git_dir / "index").write_bytes(b"another index")
    else:
        monkeypatch.setattr(refusals, "REFUSAL_TTL_S", 0.0)
    assert refusals.check(store, worktree, cap) is True, "outdated: to clear once through"


def test_a_damaged_record_is_outdated_not_an_error(store: Path, worktree: Worktree) -> None:
    (store / refusals.REFUSED).write_bytes(b"{not json")
    assert refusals.check(store, worktree, None) is True
    (store / refusals.REFUSED).write_text(json.dumps([1, 2]))
    assert refusals.check(store, worktree, None) is True


def test_an_unwritable_store_only_costs_the_next_walk(tmp_path: Path, worktree: Worktree) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_bytes(b"")
    refusals.remember(not_a_dir, worktree, "why", None)  # raises nothing
    assert not_a_dir.read_bytes() == b""
