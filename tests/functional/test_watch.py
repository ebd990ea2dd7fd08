"""The inotify watcher: a capture skips the walk only when nothing at all changed."""

from __future__ import annotations

import os
import random
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from builders import blob_at, git, make_repo, open_engine, write

from snapshotter.engine import Engine
from snapshotter.store import capture as capture_mod
from snapshotter.store import walk as scan_mod
from snapshotter.store import watch
from snapshotter.store.resident import Resident

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or watch.filesystem_type(Path.cwd()) is None,
    reason="inotify is Linux-only",
)


@pytest.fixture
def resident() -> Iterator[Resident]:
    """A long-lived process's state (the hook server's): its captures are watched."""
    with Resident() as found:
        yield found


def watcher_of(resident: Resident, engine: Engine) -> watch.Watcher | None:
    assert resident.watchers is not None
    return resident.watchers.for_worktree(engine.root)


class Walks:
    """Counts full walks and partial rescans (the real ones still run)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.partial = 0
        real_scan, real_rescan = scan_mod.scan, scan_mod.rescan

        def counted(*args: object, **kwargs: object) -> scan_mod.ScanResult:
            self.count += 1
            return real_scan(*args, **kwargs)  # type: ignore[arg-type]

        def counted_rescan(*args: object, **kwargs: object) -> scan_mod.ScanResult | None:
            self.partial += 1
            return real_rescan(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(capture_mod, "scan", counted)
        monkeypatch.setattr(capture_mod, "rescan", counted_rescan)


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> Walks:
    return Walks(monkeypatch)


@pytest.fixture
def engine(tmp_path: Path, data_dir: Path, resident: Resident) -> Engine:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "src/b.py": "b\n", ".gitignore": "*.log\n"})
    if watch.filesystem_type(root) not in watch.LOCAL_FILESYSTEMS:
        pytest.skip(f"{root} is not on a local filesystem")
    return open_engine(root, data_dir, resident=resident)


def test_nothing_changed_means_no_walk(engine: Engine, walks: Walks) -> None:
    first = engine.capture().tree
    assert walks.count == 1
    assert engine.capture().tree == first
    assert engine.capture().tree == first
    assert walks.count == 1, "two no-change captures answered from the watcher"


def test_without_a_resident_always_walks(engine: Engine, walks: Walks) -> None:
    plain = Engine.open(engine.root, data_dir_path=engine.store.root.parent.parent)
    plain.capture()
    plain.capture()
    assert walks.count == 2


def plain_capture(engine: Engine) -> str:
    """The oracle: a full walk into a store of its own, no watcher."""
    other = Engine.open(engine.root, data_dir_path=engine.store.root.parent.parent / "oracle")
    return other.capture().tree


@pytest.mark.parametrize(
    ("change", "full"),
    [
        ("edit", False),
        ("create", False),
        ("delete", False),
        ("chmod", False),
        ("rename", False),
        ("mkdir", False),
        ("rmtree", False),
        ("dir-rename", True),
        ("gitignore", True),
        ("dir-to-file", False),
        ("file-to-dir", False),
    ],
)
def test_every_kind_of_change_is_seen(
    engine: Engine, walks: Walks, change: str, full: bool
) -> None:
    root = engine.root
    write(root, "src/sub/deep.txt", "deep\n")
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
        os.rename(root / "src/b.py", root / "c.py")
    elif change == "mkdir":
        write(root, "deep/er/x.txt", "x\n")
    elif change == "rmtree":
        shutil.rmtree(root / "src/sub")
    elif change == "dir-rename":
        os.rename(root / "src/sub", root / "moved")
    elif change == "gitignore":
        write(root, "src/.gitignore", "*.py\n")
    elif change == "file-to-dir":
        os.unlink(root / "src/b.py")
        write(root, "src/b.py/inside.txt", "now a directory\n")
    else:
        shutil.rmtree(root / "src/sub")
        write(root, "src/sub", "now a file\n")
    after = engine.capture().tree
    assert after != before
    assert walks.count == (2 if full else 1), "only what cannot be pinned down walks again"
    assert after == plain_capture(engine), "the watched capture equals a plain walk"


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


def test_a_failed_watch_stops_trusting(
    engine: Engine, walks: Walks, monkeypatch: pytest.MonkeyPatch, resident: Resident
) -> None:
    watcher = watcher_of(resident, engine)
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


def _random_step(rng: random.Random, root: Path, step: int) -> str:
    """One random change of the kinds an agent or a user makes; returns what it did."""
    files = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if ".git" not in p.relative_to(root).parts and (p.is_file() or p.is_symlink())
    )
    dirs = sorted(
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if ".git" not in p.relative_to(root).parts and p.is_dir() and not p.is_symlink()
    )
    where = rng.choice(["", *dirs])
    leaf = f"f{step}_{rng.randrange(10**6)}"
    name = f"{where}/{leaf}" if where else leaf
    kind = rng.choice(
        [
            "new",
            "new",
            "edit",
            "edit",
            "samesize",
            "delete",
            "move",
            "mkdir",
            "rmtree",
            "mvdir",
            "chmod",
            "symlink",
            "log",
            "gitignore",
            "swap",
            "hardlink",
            "index",
            "exclude",
        ]
    )
    regular = [f for f in files if not (root / f).is_symlink()]
    if kind == "new":
        write(root, name + rng.choice([".txt", ".log", ".py"]), f"new {step}\n")
    elif kind == "edit" and regular:
        with open(root / rng.choice(regular), "ab") as f:
            f.write(f"edit {step}\n".encode())
    elif kind == "samesize" and regular:
        path = root / rng.choice(regular)
        st = path.stat()
        data = path.read_bytes()
        path.write_bytes(bytes(reversed(data)) if len(data) > 1 else b"Z")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif kind == "delete" and files:
        os.unlink(root / rng.choice(files))
    elif kind == "move" and files:
        os.rename(root / rng.choice(files), root / name)
    elif kind == "mkdir":
        write(root, f"{name}/x/y.txt", f"deep {step}\n")
    elif kind == "rmtree" and dirs:
        shutil.rmtree(root / rng.choice(dirs))
    elif kind == "mvdir" and dirs:
        source = rng.choice(dirs)
        if not name.startswith(source + "/"):
            os.rename(root / source, root / name)
    elif kind == "chmod" and regular:
        path = root / rng.choice(regular)
        os.chmod(path, path.stat().st_mode ^ 0o100)
    elif kind == "symlink":
        os.symlink(rng.choice(["a.txt", "src", "missing"]), root / name)
    elif kind == "log":
        write(root, name + ".log", f"ignored {step}\n")
    elif kind == "gitignore":
        rules = rng.choice(["*.log\n", "*.py\n", "x/\n", "!f1*\n*.txt\n", ""])
        write(root, f"{where}/.gitignore" if where else ".gitignore", rules)
    elif kind == "swap" and dirs:
        target = rng.choice(dirs)
        shutil.rmtree(root / target)
        write(root, target, f"was a directory {step}\n")
    elif kind == "hardlink" and regular:
        linked = root / rng.choice(regular)
        os.link(linked, root / name)
        with open(linked, "ab") as f:  # written through the other name
            f.write(b"through the other link\n")
    elif kind == "index" and regular:
        git(root, "add", "-f", "--", rng.choice(regular))
    elif kind == "exclude":
        write(root, ".git/info/exclude", rng.choice(["*.txt\n", "", "f1*\n"]))
    return kind


@pytest.mark.parametrize("seed", range(int(os.environ.get("SNAPSHOTTER_WATCH_SEEDS", "3"))))
def test_watched_captures_match_plain_walks_through_random_changes(
    engine: Engine, walks: Walks, seed: int
) -> None:
    rng = random.Random(seed)
    engine.capture()
    done = []
    for step in range(40):
        for _ in range(rng.randint(1, 3)):
            done.append(_random_step(rng, engine.root, step))
        watched = engine.capture().tree
        assert watched == plain_capture(engine), f"seed {seed}, step {step}, after {done[-3:]}"
        if rng.random() < 0.3:
            assert engine.capture().tree == watched, "an unchanged tree stays put"
    assert walks.partial > 10, "most captures redid single directories"


def test_remembered_walks_are_bounded(engine: Engine, walks: Walks) -> None:
    scopes = ["", "src", "src/sub", "a", "b", "c"]
    for d in scopes[3:]:
        write(engine.root, f"{d}/x.txt", "x\n")
    write(engine.root, "src/sub/y.txt", "y\n")
    for scope in scopes:
        engine.with_scope(scope).capture()
    assert walks.count == len(scopes)
    engine.with_scope("c").capture()  # the newest are remembered ...
    assert walks.count == len(scopes)
    engine.with_scope("").capture()  # ... the oldest went
    assert walks.count == len(scopes) + 1


def test_out_of_watches_stops_trying_in_this_process(
    engine: Engine, walks: Walks, monkeypatch: pytest.MonkeyPatch, resident: Resident
) -> None:
    import ctypes
    import errno

    watcher = watcher_of(resident, engine)
    assert watcher is not None
    monkeypatch.setattr(watcher, "_add_watch", lambda *_args: -1)
    monkeypatch.setattr(ctypes, "get_errno", lambda: errno.ENOSPC)
    engine.capture()
    assert watcher.out_of_watches
    monkeypatch.undo()
    assert watcher_of(resident, engine) is None, "no new watcher to fill up again"
    write(engine.root, "a.txt", "still seen\n")
    assert blob_at(engine, engine.capture().tree, "a.txt") == b"still seen\n"


@pytest.fixture(params=["file watches", "sweep"])
def file_watches(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Files with watches of their own, or too many files for the user's allowance."""
    if request.param == "sweep":
        monkeypatch.setattr(watch, "max_user_watches", lambda: 4)
    return str(request.param)


def test_a_hard_link_made_after_the_walk_is_never_trusted_to_events(
    engine: Engine, walks: Walks, tmp_path: Path, file_watches: str, resident: Resident
) -> None:
    """link(2) from outside raises no event in any watched directory (issue 13.17)."""
    engine.capture()
    watcher = watcher_of(resident, engine)
    assert watcher is not None and watcher.sweep == (file_watches == "sweep")
    outside = tmp_path / "outside-name"
    os.link(engine.root / "src/b.py", outside)
    with open(outside, "w") as f:  # written through the other name only
        f.write("written from outside\n")
    assert blob_at(engine, engine.capture().tree, "src/b.py") == b"written from outside\n"
    with open(outside, "w") as f:  # and again, now that the file is known to be linked
        f.write("and again\n")
    assert blob_at(engine, engine.capture().tree, "src/b.py") == b"and again\n"
    assert engine.capture().tree == plain_capture(engine)


@pytest.mark.parametrize("seed", range(2))
def test_a_sweep_instead_of_file_watches_stays_exact_without_walking(
    engine: Engine,
    walks: Walks,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    resident: Resident,
) -> None:
    """More files than the user's inotify allowance: every capture stats them all (16.3)."""
    monkeypatch.setattr(watch, "max_user_watches", lambda: 4)
    rng = random.Random(seed)
    engine.capture()
    watcher = watcher_of(resident, engine)
    assert watcher is not None and watcher.sweep and not watcher._files, "no file watches"
    for step in range(15):
        _random_step(rng, engine.root, step)
        if rng.random() < 0.3 and (engine.root / "src/b.py").is_file():
            outside = tmp_path / f"outside-{step}"
            os.link(engine.root / "src/b.py", outside)
            outside.write_text(f"through another name {step}\n")
        assert engine.capture().tree == plain_capture(engine), f"seed {seed}, step {step}"
    engine.capture()
    before = walks.count
    write(engine.root, "a.txt", "one more edit\n")
    outside = tmp_path / "outside-last"
    os.link(engine.root / "a.txt", outside)
    outside.write_text("and one through another name\n")
    tree = engine.capture().tree
    assert walks.count == before, "a sweep and a rescan of one directory, no walk"
    assert blob_at(engine, tree, "a.txt") == b"and one through another name\n"


def test_out_of_watches_for_files_only_means_a_sweep(
    engine: Engine,
    walks: Walks,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    resident: Resident,
) -> None:
    """Other watchers took the room: the directories stay watched, the files are swept."""
    import ctypes
    import errno

    watcher = watcher_of(resident, engine)
    assert watcher is not None
    real = watcher._add_watch
    monkeypatch.setattr(
        watcher,
        "_add_watch",
        lambda fd, path, mask: -1 if mask == watch._FILE_MASK else real(fd, path, mask),
    )
    monkeypatch.setattr(ctypes, "get_errno", lambda: errno.ENOSPC)
    engine.capture()
    assert watcher.sweep and not watcher.broken and not watcher.out_of_watches
    monkeypatch.undo()
    outside = tmp_path / "outside"
    os.link(engine.root / "a.txt", outside)
    outside.write_text("through another name\n")
    assert blob_at(engine, engine.capture().tree, "a.txt") == b"through another name\n"
    assert walks.count == 1


class Listings:
    """Counts the directories each capture lists (``_Walker._visit``; the real one runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.dirs: list[str] = []
        real = scan_mod._Walker._visit

        def visit(walker: scan_mod._Walker, d: scan_mod._Dir) -> list[scan_mod._Dir]:
            self.dirs.append(d.rel)
            return real(walker, d)

        monkeypatch.setattr(scan_mod._Walker, "_visit", visit)


@pytest.fixture
def big(engine: Engine) -> Path:
    """A directory of a few hundred files beside the engine's, captured once."""
    for i in range(300):
        write(engine.root, f"big/f{i:03}.txt", f"file {i}\n")
    write(engine.root, "big/keep.log", "ignored\n")
    engine.capture()
    return engine.root / "big"


def test_an_edit_looks_at_the_files_inotify_named_not_their_directory(
    engine: Engine, big: Path, walks: Walks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 24.1: a 10-file turn in a directory of thousands costs ten stats."""
    listings = Listings(monkeypatch)
    with open(big / "f007.txt", "a") as f:
        f.write("appended\n")
    (big / "f123.txt").write_text("rewritten in place\n")
    os.chmod(big / "f200.txt", 0o755)
    with open(big / "keep.log", "a") as f:  # an ignored file: nothing to do
        f.write("more\n")
    tree = engine.capture().tree
    assert listings.dirs == [], "no directory listed again"
    assert walks.count == 0 and walks.partial == 1
    assert blob_at(engine, tree, "big/f007.txt") == b"file 7\nappended\n"
    assert blob_at(engine, tree, "big/f123.txt") == b"rewritten in place\n"
    assert engine.entry(tree, "big/f200.txt") is not None
    assert engine.entry(tree, "big/f200.txt").mode == 0o100755  # type: ignore[union-attr]
    assert tree == plain_capture(engine)


def test_files_that_come_and_go_in_a_large_directory_are_looked_at_by_name(
    engine: Engine, big: Path, walks: Walks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restore writes through a temp file renamed over the target: names, not listings."""
    listings = Listings(monkeypatch)
    (big / "new.txt").write_text("new\n")
    os.rename(big / "f001.txt", big / "renamed.txt")
    os.unlink(big / "f002.txt")
    (big / ".tmp-f003").write_text("replaced\n")
    os.rename(big / ".tmp-f003", big / "f003.txt")
    (big / "new.log").write_text("ignored\n")
    os.symlink("f004.txt", big / "link")
    tree = engine.capture().tree
    assert listings.dirs == [], "no directory listed again"
    assert blob_at(engine, tree, "big/new.txt") == b"new\n"
    assert blob_at(engine, tree, "big/renamed.txt") == b"file 1\n"
    assert blob_at(engine, tree, "big/f001.txt") is None
    assert blob_at(engine, tree, "big/f002.txt") is None
    assert blob_at(engine, tree, "big/f003.txt") == b"replaced\n"
    assert blob_at(engine, tree, "big/new.log") is None
    assert blob_at(engine, tree, "big/link") == b"f004.txt"
    assert tree == plain_capture(engine)


def test_the_size_limit_for_new_files_holds_for_names_looked_at_alone(
    engine: Engine, big: Path, data_dir: Path, resident: Resident, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = open_engine(engine.root, data_dir, max_new_file_size=1000, resident=resident)
    small.capture()
    listings = Listings(monkeypatch)
    (big / "huge.bin").write_bytes(b"x" * 2000)
    assert blob_at(small, small.capture().tree, "big/huge.bin") is None, "too large: skipped"
    (big / "huge.bin").write_bytes(b"small now\n")
    assert blob_at(small, small.capture().tree, "big/huge.bin") == b"small now\n"
    assert listings.dirs == []


def test_a_name_that_became_a_directory_lists_its_directory_again(
    engine: Engine, big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listings = Listings(monkeypatch)
    os.unlink(big / "f005.txt")
    write(big, "f005.txt/inside.txt", "now a directory\n")
    tree = engine.capture().tree
    assert "big" in listings.dirs
    assert blob_at(engine, tree, "big/f005.txt/inside.txt") == b"now a directory\n"
    assert tree == plain_capture(engine)


def test_a_racy_rewrite_is_read_again_though_its_stat_data_did_not_move(
    engine: Engine, big: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written within the clock's granularity of the capture: the stat data cannot tell."""
    path = big / "f050.txt"
    path.write_text("racy one\n")
    engine.capture()  # right after the write: its stat data is not trusted
    frozen = os.lstat(path)
    path.write_text("racy two\n")  # same size; as if within the same clock tick
    real = os.lstat

    def lstat(target: object, *args: object, **kwargs: object) -> os.stat_result:
        return frozen if str(target) == str(path) else real(target, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "lstat", lstat)
    assert blob_at(engine, engine.capture().tree, "big/f050.txt") == b"racy two\n"


def test_lost_events_mean_a_full_walk(
    engine: Engine, big: Path, walks: Walks, resident: Resident
) -> None:
    """IN_Q_OVERFLOW: the kernel dropped events, nothing remembered can be trusted."""
    watcher = watcher_of(resident, engine)
    assert watcher is not None
    (big / "f010.txt").write_text("changed\n")
    watcher.poll()
    watcher._absorb(watch._EVENT.pack(-1, watch._IN_Q_OVERFLOW, 0, 0))
    tree = engine.capture().tree
    assert walks.count == 1, "walked everything again"
    assert blob_at(engine, tree, "big/f010.txt") == b"changed\n"


def test_a_sweep_of_many_files_is_spread_over_captures(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident: Resident
) -> None:
    """Over the allowance, with SNAPSHOTTER_SWEEP=40: a share of the files per capture,
    round robin, so a write through a link made from outside shows a few captures late."""
    monkeypatch.setattr(watch, "max_user_watches", lambda: 4)
    monkeypatch.setenv("SNAPSHOTTER_SWEEP", "40")
    old = 1_600_000_000_000_000_000  # out of the racy window: no file is looked at again
    for d in range(10):
        for i in range(20):
            os.utime(write(engine.root, f"d{d}/f{i}.txt", f"{d}/{i}\n"), ns=(old, old))
    engine.capture()
    outside = tmp_path / "outside"
    os.link(engine.root / "d3/f5.txt", outside)
    outside.write_text("through another name\n")
    stats = []
    real = os.lstat

    def lstat(path: object, *args: object, **kwargs: object) -> os.stat_result:
        stats.append(path)
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "lstat", lstat)
    seen = []
    for _ in range(7):  # 13 directories, two or three a capture
        stats.clear()
        seen.append(blob_at(engine, engine.capture().tree, "d3/f5.txt"))
        assert len(stats) < 100, "a share of the 203 files, not all of them"
    assert seen[-1] == b"through another name\n"
    assert engine.capture().tree == plain_capture(engine)


def test_over_the_allowance_every_capture_sees_a_write_through_an_outside_link(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident: Resident
) -> None:
    """By default the sweep stats every unwatched file: such a write is in the very
    next capture, the checkpoint it belongs to (exactness first, issue 24)."""
    from snapshotter.store.resident import SWEEP_ENV, sweep_per_capture

    monkeypatch.delenv(SWEEP_ENV, raising=False)
    assert sweep_per_capture() is None, "every unwatched file, unless the user trades it"
    for value, share in (("40", 40), ("0", None), ("lots", None)):
        monkeypatch.setenv(SWEEP_ENV, value)
        assert sweep_per_capture() == share, value
    monkeypatch.delenv(SWEEP_ENV)
    monkeypatch.setattr(watch, "max_user_watches", lambda: 4)
    old = 1_600_000_000_000_000_000  # out of the racy window: no file is looked at again
    for d in range(10):
        for i in range(20):
            os.utime(write(engine.root, f"d{d}/f{i}.txt", f"{d}/{i}\n"), ns=(old, old))
    engine.capture()
    for d in (3, 8):
        outside = tmp_path / f"outside{d}"
        os.link(engine.root / f"d{d}/f5.txt", outside)
        outside.write_text(f"through another name {d}\n")
        tree = engine.capture().tree
        assert blob_at(engine, tree, f"d{d}/f5.txt") == f"through another name {d}\n".encode()
    for rel in ("d0/f1.txt", "d9/f19.txt"):  # two at once, in directories far apart
        os.link(engine.root / rel, tmp_path / rel.replace("/", "-"))
        (tmp_path / rel.replace("/", "-")).write_text(f"{rel} from outside\n")
    tree = engine.capture().tree
    for rel in ("d0/f1.txt", "d9/f19.txt"):
        assert blob_at(engine, tree, rel) == f"{rel} from outside\n".encode()


def test_a_kept_walk_holds_the_stat_caches_own_entries(
    engine: Engine, big: Path, resident: Resident
) -> None:
    """Issue 24.5: one record a path in a watching process, not a walk's copy beside the
    stat cache's (500k files took 660-752 MB)."""
    old = 1_600_000_000_000_000_000  # out of the racy window: their entries are trusted
    for path in big.glob("f0*.txt"):
        os.utime(path, ns=(old, old))
    engine.capture()
    (big / "f001.txt").write_text("changed\n")
    engine.capture()
    watcher = watcher_of(resident, engine)
    assert watcher is not None and resident.manifests is not None
    (kept,) = watcher._memory.values()
    manifest = resident.manifests.get(engine.store.root / "manifest")
    assert manifest is not None
    walked = kept.scan.entries
    unchanged = [rel for rel in walked if rel.startswith("big/f0") and rel != "big/f001.txt"]
    assert len(unchanged) == 99
    for rel in unchanged:
        assert walked[rel] is cast(object, manifest.entries[rel]), f"{rel}: a tuple of its own"
    keys = {id(k) for k in walked}
    assert all(id(k) in keys for k in manifest.entries if k in unchanged), "one string a path"
