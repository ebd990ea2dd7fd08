"""The inotify watcher: a capture skips the walk only when nothing at all changed."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git, make_repo, write

from snapshotter import scan as scan_mod
from snapshotter import store as store_mod
from snapshotter import watch
from snapshotter.engine import Engine

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or watch.filesystem_type(Path.cwd()) is None,
    reason="inotify is Linux-only",
)


@pytest.fixture(autouse=True)
def watching() -> Iterator[None]:
    watch.enable()
    yield
    watch.enable(False)
    watch.close_all()


class Walks:
    """Counts full walks (the real scan still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = scan_mod.scan

        def counted(*args: object, **kwargs: object) -> scan_mod.ScanResult:
            self.count += 1
            return real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(store_mod, "scan", counted)


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Walks:
    return Walks(monkeypatch)


@pytest.fixture
def engine(tmp_path: Path, data_dir: Path) -> Engine:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "src/b.py": "b\n", ".gitignore": "*.log\n"})
    if watch.filesystem_type(root) not in watch.LOCAL_FILESYSTEMS:
        pytest.skip(f"{root} is not on a local filesystem")
    found = Engine.open(root, data_dir_path=data_dir)
    assert found is not None
    return found


def blob_at(engine: Engine, tree: str, rel: str) -> bytes | None:
    entry = engine.store.entry(tree, rel)
    return None if entry is None else engine.store.blob(entry[1])


def test_nothing_changed_means_no_walk(engine: Engine, walks: Walks) -> None:
    first = engine.capture().tree
    assert walks.count == 1
    assert engine.capture().tree == first
    assert engine.capture().tree == first
    assert walks.count == 1, "two no-change captures answered from the watcher"


def test_disabled_always_walks(engine: Engine, walks: Walks) -> None:
    watch.enable(False)
    engine.capture()
    engine.capture()
    assert walks.count == 2


@pytest.mark.parametrize("change", ["edit", "create", "delete", "chmod", "rename", "mkdir"])
def test_every_kind_of_change_is_seen(engine: Engine, walks: Walks, change: str) -> None:
    root = engine.root
    before = engine.capture().tree
    if change == "edit":
        # Same size, and the old mtime put back: only the event can tell.
        st = os.stat(root / "src/b.py")
        write(root, "src/b.py", "B\n")
        os.utime(root / "src/b.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    elif change == "create":
        write(root, "src/new.py", "new\n")
    elif change == "delete":
        os.unlink(root / "src/b.py")
    elif change == "chmod":
        os.chmod(root / "src/b.py", 0o755)
    elif change == "rename":
        os.rename(root / "src/b.py", root / "src/c.py")
    else:
        write(root, "deep/er/x.txt", "x\n")
    after = engine.capture().tree
    assert walks.count == 2 and after != before
    fresh = Engine.open(root, data_dir_path=engine.store.root.parent.parent / "other")
    assert fresh is not None
    watch.enable(False)
    assert after == fresh.capture().tree, "the watched capture equals a plain walk"


def test_changes_in_a_directory_made_after_the_first_walk(engine: Engine, walks: Walks) -> None:
    root = engine.root
    engine.capture()
    write(root, "late/dir/f.txt", "one\n")
    t1 = engine.capture().tree
    assert blob_at(engine, t1, "late/dir/f.txt") == b"one\n"
    assert engine.capture().tree == t1  # watched from now on
    write(root, "late/dir/f.txt", "two\n")
    t2 = engine.capture().tree
    assert blob_at(engine, t2, "late/dir/f.txt") == b"two\n"


def test_rule_files_outside_the_worktree_are_checked(engine: Engine, walks: Walks) -> None:
    root = engine.root
    write(root, "notes.tmp", "keep?\n")
    t1 = engine.capture().tree
    assert blob_at(engine, t1, "notes.tmp") == b"keep?\n"
    write(root, ".git/info/exclude", "*.tmp\n")  # no event in any watched directory
    t2 = engine.capture().tree
    assert blob_at(engine, t2, "notes.tmp") is None, "info/exclude's new rule applied"
    write(root, "debug.log", "ignored\n")
    t3 = engine.capture().tree
    assert blob_at(engine, t3, "debug.log") is None
    git(root, "add", "-f", "debug.log")  # tracked now: only the source index says so
    t4 = engine.capture().tree
    assert blob_at(engine, t4, "debug.log") == b"ignored\n"


def test_nested_repositories_always_walk(engine: Engine, walks: Walks) -> None:
    make_repo(engine.root / "vendor", {"v.txt": "v\n"})
    engine.capture()
    engine.capture()
    assert walks.count == 2


def test_a_failed_watch_stops_trusting(engine: Engine, walks: Walks,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    watcher = watch.for_worktree(engine.root)
    assert watcher is not None
    monkeypatch.setattr(watcher, "_add_watch", lambda *_args: -1)  # as ENOSPC would
    engine.capture()
    engine.capture()
    assert walks.count == 2, "out of watches: every capture walks"
    write(engine.root, "a.txt", "changed\n")
    assert blob_at(engine, engine.capture().tree, "a.txt") == b"changed\n"


def test_scoped_and_whole_captures_are_remembered_apart(engine: Engine, walks: Walks) -> None:
    whole = engine.capture().tree
    scoped = engine.with_scope("src")
    scoped.capture()
    assert walks.count == 2
    assert engine.capture().tree == whole and walks.count == 2
    scoped.capture()
    assert walks.count == 2


def test_mountinfo_names_this_filesystem(tmp_path: Path) -> None:
    assert watch.filesystem_type(tmp_path) is not None
    assert watch.filesystem_type(Path("/proc/self")) == "proc"
    assert watch.Watcher.create(Path("/proc")) is None, "not a local disk filesystem"
