"""A watched whole walk watches each file before it stats it (issue 24.3).

The hook server's baseline gives every file a watch of its own (a write
through a hard link made from outside raises no event anywhere else). The
walk adds each file's watch first and takes its stat data after, so what it
records is what the watch saw from then on, with no second stat: these tests
put a change exactly between a file's watch and its stat, where that order
is what keeps the capture exact.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from builders import blob_at, make_repo, open_engine

from snapshotter.engine import Engine
from snapshotter.errors import TooManyFiles
from snapshotter.store import watch
from snapshotter.store.resident import Resident

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or watch.filesystem_type(Path.cwd()) is None,
    reason="inotify is Linux-only",
)

OnFile = Callable[[bytes, str], bool]


@pytest.fixture
def resident() -> Iterator[Resident]:
    with Resident() as found:
        yield found


@pytest.fixture
def engine(tmp_path: Path, data_dir: Path, resident: Resident) -> Engine:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "src/b.py": "b\n", "src/c.py": "c\n"})
    if watch.filesystem_type(root) not in watch.LOCAL_FILESYSTEMS:
        pytest.skip(f"{root} is not on a local filesystem")
    for name in ("a.txt", "src/b.py", "src/c.py"):
        settled(root / name)
    return open_engine(root, data_dir, resident=resident)


def settled(path: Path) -> None:
    """Date ``path`` a minute back: its stat data is trusted, not read again as racy
    (which would hide a change the watches missed)."""
    old = time.time_ns() - 60 * 10**9
    os.utime(path, ns=(old, old))


def between_watch_and_stat(
    monkeypatch: pytest.MonkeyPatch, rel: str, act: Callable[[], None]
) -> list[str]:
    """Run ``act`` once, right after the walk added ``rel``'s watch (before its stat);
    returns the files the walk announced, in order."""
    real = watch.Watcher.file_watcher
    seen: list[str] = []

    def file_watcher(self: watch.Watcher, expected: int) -> OnFile | None:
        on_file = real(self, expected)
        if on_file is None:
            return None

        def wrapped(path: bytes, name: str) -> bool:
            taken = on_file(path, name)
            seen.append(name)
            if name == rel:
                act()
            return taken

        return wrapped

    monkeypatch.setattr(watch.Watcher, "file_watcher", file_watcher)
    return seen


def test_a_write_through_an_outside_link_between_watch_and_stat_is_in_the_capture(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk's stat data comes after the watch: a link made and written in between
    is in this capture, and a later write through that link raises the watch's event."""
    engine.capture()  # the stat cache holds src/b.py as "b\n"
    engine.store.resident.close()  # type: ignore[union-attr]  # the next capture walks whole
    outside = tmp_path / "outside"

    def link_and_write() -> None:
        os.link(engine.root / "src/b.py", outside)
        outside.write_text("written between its watch and its stat\n")

    seen = between_watch_and_stat(monkeypatch, "src/b.py", link_and_write)
    tree = engine.capture().tree
    assert "src/b.py" in seen, "the walk watched the file itself"
    assert blob_at(engine, tree, "src/b.py") == b"written between its watch and its stat\n"
    monkeypatch.undo()
    outside.write_text("and later, through the other name\n")
    assert blob_at(engine, engine.capture().tree, "src/b.py") == (
        b"and later, through the other name\n"
    )


def test_a_file_replaced_between_watch_and_stat_gets_a_watch_of_its_own(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watch went to the file that was there; the walk recorded the one renamed over
    it. The rename names the file in its directory: the new one is watched next time,
    so a write through a link made to it later from outside is seen."""
    replacement = tmp_path / "replacement"
    replacement.write_text("the file renamed over it\n")
    settled(replacement)

    def replace() -> None:
        # (the replaced file lives on under another name: its watch stays, silent)
        os.link(engine.root / "src/b.py", tmp_path / "the-old-one")
        os.replace(replacement, engine.root / "src/b.py")

    between_watch_and_stat(monkeypatch, "src/b.py", replace)
    tree = engine.capture().tree
    assert blob_at(engine, tree, "src/b.py") == b"the file renamed over it\n"
    monkeypatch.undo()
    engine.capture()  # the rename's event: src/b.py looked at (and watched) again
    outside = tmp_path / "outside"
    os.link(engine.root / "src/b.py", outside)
    outside.write_text("through a link made from outside\n")
    assert blob_at(engine, engine.capture().tree, "src/b.py") == (
        b"through a link made from outside\n"
    )


def test_files_past_the_allowance_keep_no_watches(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident: Resident
) -> None:
    """A tree that outgrew the allowance during the walk: the file watches it made go
    (the user's other watchers keep their room) and every capture sweeps instead."""
    for i in range(8):
        (engine.root / f"n{i}.txt").write_text(f"new {i}\n")
    monkeypatch.setattr(watch, "max_user_watches", lambda: 12)  # a share of 6
    engine.capture()
    assert resident.watchers is not None
    watcher = resident.watchers.for_worktree(engine.root)
    assert watcher is not None and watcher.sweep and not watcher.broken
    assert not watcher._files, "no file keeps a watch"
    outside = tmp_path / "outside"
    os.link(engine.root / "n3.txt", outside)
    outside.write_text("through another name\n")
    assert blob_at(engine, engine.capture().tree, "n3.txt") == b"through another name\n"


def test_a_walk_that_fails_leaves_no_file_watches_behind(
    tmp_path: Path, data_dir: Path, resident: Resident
) -> None:
    """A refused tree (here: more files than the cap) may hold many files: the watches
    its walk added go with it, not stay for the server's life."""
    files = {f"f{i}.txt": f"{i}\n" for i in range(6)}
    root = make_repo(tmp_path / "r", files)
    engine = open_engine(root, data_dir, resident=resident, max_files=3)
    with pytest.raises(TooManyFiles):
        engine.capture()
    assert resident.watchers is not None
    (watcher,) = resident.watchers._found.values()
    assert watcher.broken and not watcher._files, "its file watches closed with it"
