"""snapshotter/durable.py: what is noted is synced at the next settle, files before
the directories naming them, once; a batch of many is one syncfs per filesystem."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from snapshotter import durable


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every path fsynced (``syncfs: <path>`` for a filesystem flush), in order."""
    calls: list[str] = []
    real_open = os.open
    opened: dict[int, str] = {}

    def tracking_open(path: str | os.PathLike[str], flags: int, *args: int) -> int:
        fd = real_open(path, flags, *args)
        opened[fd] = os.fspath(path)
        return fd

    monkeypatch.setattr(os, "open", tracking_open)

    def syncfs(fd: int) -> int:
        calls.append(f"syncfs: {opened[fd]}")
        return 0

    monkeypatch.setattr(os, "fsync", lambda fd: calls.append(opened[fd]))
    monkeypatch.setattr(durable, "_syncfs", lambda: syncfs)
    durable.settle()  # nothing left from an earlier test
    calls.clear()
    yield calls
    durable.settle()


def test_settle_syncs_what_was_noted_files_first_then_forgets_it(
    tmp_path: Path, synced: list[str]
) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a").write_bytes(b"a")
    durable.wrote(tmp_path / "d" / "a")
    durable.entered(tmp_path)
    assert durable.pending() == 3  # the file, its directory, and the one above
    durable.settle()
    assert synced == [str(tmp_path / "d" / "a"), str(tmp_path / "d"), str(tmp_path)]
    assert durable.pending() == 0
    durable.settle()
    assert len(synced) == 3, "nothing noted: nothing synced"


def test_wrote_in_notes_each_file_and_their_directory(tmp_path: Path, synced: list[str]) -> None:
    for name in ("a", "b"):
        (tmp_path / name).write_bytes(b"x")
    durable.wrote_in(str(tmp_path), ["a", "b"])
    assert durable.pending() == 3
    durable.settle()
    assert synced == [str(tmp_path / "a"), str(tmp_path / "b"), str(tmp_path)]


def test_a_file_gone_before_the_settle_needs_no_sync(tmp_path: Path, synced: list[str]) -> None:
    durable.wrote(tmp_path / "renamed-on")
    durable.settle()
    assert synced == [str(tmp_path)]


def test_settle_also_syncs_the_records_named(tmp_path: Path, synced: list[str]) -> None:
    (tmp_path / "state.json").write_text("{}")
    durable.settle(tmp_path / "state.json", tmp_path / "absent")
    assert synced == [str(tmp_path / "state.json"), str(tmp_path)]


def test_many_are_one_syncfs_per_filesystem(tmp_path: Path, synced: list[str]) -> None:
    for i in range(durable.FEW + 1):
        (tmp_path / f"o{i}").write_bytes(b"x")
        durable.wrote(tmp_path / f"o{i}")
    durable.settle()
    assert len(synced) == 1 and synced[0].startswith("syncfs: "), synced
    assert durable.pending() == 0


def test_made_dirs_notes_each_parent_up_to_the_top(tmp_path: Path, synced: list[str]) -> None:
    deep = tmp_path / "store" / "git" / "objects"
    deep.mkdir(parents=True)
    durable.made_dirs(deep, tmp_path / "store")
    durable.settle()
    assert synced == [str(deep.parent), str(tmp_path / "store"), str(tmp_path)]


def test_a_slow_sync_holds_up_no_other_thread_and_keeps_what_was_noted_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook server's threads share what is noted: one worktree's slow disk must
    not hold up another's event, and a file noted again while a sync ran is synced
    by a later settle, not forgotten."""
    import threading

    first, second = tmp_path / "first", tmp_path / "second"
    first.write_bytes(b"1")
    second.write_bytes(b"2")
    durable.settle()
    started, release = threading.Event(), threading.Event()
    synced: list[set[str]] = []
    real_sync = durable._sync

    def sync(files: set[str], dirs: set[str]) -> None:
        synced.append(set(files))
        if threading.current_thread().name == "slow":
            started.set()
            assert release.wait(4)
        real_sync(files, dirs)

    monkeypatch.setattr(durable, "_sync", sync)
    durable.wrote(first)
    slow = threading.Thread(target=durable.settle, name="slow")
    slow.start()
    assert started.wait(4)
    durable.wrote(first)  # written again while the slow sync runs
    durable.wrote(second)
    durable.settle()
    assert slow.is_alive(), "this settle waited for the slow one: a lock was held over a sync"
    assert synced[-1] == {str(first), str(second)}, "it syncs all pending, the slow one's too"
    durable.wrote(first)  # and once more, still during the slow sync
    release.set()
    slow.join(4)
    assert durable.pending() > 0, "what was noted during the slow sync is still pending"
    durable.settle()
    assert synced[-1] == {str(first)}
    assert durable.pending() == 0
