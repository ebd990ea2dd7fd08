"""A served capture costs what changed, and records exactly what a full walk records.

The hook server keeps each store's manifest in memory and appends what a
capture changed to a log beside it (store/stat_cache.py); with the watcher
naming the changed directories, only their files are compared and hashed.
Each test checks the result against a watch-disabled capture of the same
state in a store of its own (a full walk, as every CLI process does).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import make_repo, open_engine, write

from snapshotter.engine import Engine
from snapshotter.git import trees as treebuild
from snapshotter.store import records, stat_cache, watch
from snapshotter.store.capture import Capture, Snapshot
from snapshotter.store.resident import Resident

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or watch.filesystem_type(Path.cwd()) is None,
    reason="inotify is Linux-only",
)


@pytest.fixture
def resident() -> Iterator[Resident]:
    """The hook server's state: watchers, and the manifests it keeps in memory."""
    with Resident() as found:
        yield found


def kept(resident: Resident) -> stat_cache.Kept:
    assert resident.manifests is not None
    return resident.manifests


class Calls:
    """How often the O(changes) capture, the full comparison and a manifest read ran."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.changes = self.full = self.reads = 0
        changes, full, read = (
            Snapshot._capture_changes,
            Snapshot._capture_all,
            stat_cache._read,
        )

        def counted_changes(*args: object) -> tuple[str, set[str]]:
            self.changes += 1
            return changes(*args)  # type: ignore[arg-type]

        def counted_full(*args: object) -> tuple[str, set[str]]:
            self.full += 1
            return full(*args)  # type: ignore[arg-type]

        def counted_read(path: Path) -> stat_cache.Manifest:
            self.reads += 1
            return read(path)

        monkeypatch.setattr(Snapshot, "_capture_changes", counted_changes)
        monkeypatch.setattr(Snapshot, "_capture_all", counted_full)
        monkeypatch.setattr(stat_cache, "_read", counted_read)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    return Calls(monkeypatch)


FILES = {
    ".gitignore": "*.log\n",
    "a.txt": "a\n",
    "src/b.py": "b\n",
    "src/c.py": "c\n",
    "src/deep/d.py": "d\n",
    "src/deep/er/e.py": "e\n",
    "docs/x.md": "x\n",
    "docs/y.md": "y\n",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    found = make_repo(tmp_path / "r", FILES)
    if watch.filesystem_type(found) not in watch.LOCAL_FILESYSTEMS:
        pytest.skip(f"{found} is not on a local filesystem")
    return found


def cold(root: Path, data: Path, scope: str = "") -> Capture:
    """A capture without a resident (a full walk, as a CLI's), in the store under ``data``."""
    engine = open_engine(root, data)
    return (engine.with_scope(scope) if scope else engine).capture()


def manifest_path(engine: Engine) -> Path:
    return engine.store.root / "manifest"


def open_served(root: Path, data: Path, resident: Resident) -> Engine:
    """An engine as the hook server opens it."""
    return open_engine(root, data, resident=resident)


def check_manifest(engine: Engine, tree: str) -> None:
    """The files on disk say what memory says, and the trees map is a full build's."""
    path = manifest_path(engine)
    on_disk = stat_cache._read(path)
    assert engine.store.resident is not None
    in_memory = stat_cache.load(path, kept(engine.store.resident))
    assert on_disk.tree == tree == in_memory.tree
    assert on_disk.entries == in_memory.entries
    assert on_disk.trees == in_memory.trees
    assert on_disk.log_end == stat_cache.log_path(path).stat().st_size, "no torn tail"
    root, _written, ids = treebuild.build(on_disk.entries, read=records.mode_and_id)
    assert root.hex() == tree and ids == on_disk.trees


def _edit(root: Path, rng: random.Random, step: int) -> None:
    files = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if ".git" not in p.relative_to(root).parts and (p.is_file() or p.is_symlink())
    )
    dirs = sorted(
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_dir() and not p.is_symlink() and ".git" not in p.relative_to(root).parts
    )
    pick = rng.choice
    kinds = "modify modify add add remove rmdir mode newdir file2dir link dir2file rename"
    kind = rng.choice([*kinds.split(), "ignored", "empty"])
    if kind == "modify" and files:
        rel = pick(files)
        if not (root / rel).is_symlink():
            with open(root / rel, "ab") as f:
                f.write(b"more %d\n" % step)
    elif kind == "add":
        write(root, f"{pick([*dirs, ''])}/n{step}.txt".lstrip("/"), f"new {step}\n")
    elif kind == "remove" and files:
        os.unlink(root / pick(files))
    elif kind == "rmdir" and dirs:
        shutil.rmtree(root / pick(dirs))
    elif kind == "mode" and files:
        rel = pick(files)
        if not (root / rel).is_symlink():
            os.chmod(root / rel, (root / rel).stat().st_mode ^ 0o111)
    elif kind == "newdir":
        write(root, f"{pick([*dirs, ''])}/nd{step}/sub/f.txt".lstrip("/"), f"{step}\n")
        write(root, f"{pick([*dirs, ''])}/nd{step}/g.txt".lstrip("/"), f"{step}\n")
    elif kind == "file2dir" and files:
        rel = pick(files)
        os.unlink(root / rel)
        write(root, f"{rel}/inside.txt", f"was a file {step}\n")
    elif kind == "dir2file" and dirs:
        rel = pick(dirs)
        shutil.rmtree(root / rel)
        write(root, rel, f"was a directory {step}\n")
    elif kind == "link":
        os.symlink(f"target-{step}", root / f"link{step}")
    elif kind == "rename" and files:
        rel = pick(files)
        os.rename(root / rel, root / f"{rel}.renamed")
    elif kind == "ignored":
        write(root, f"{pick([*dirs, ''])}/x{step}.log".lstrip("/"), "ignored\n")
    elif kind == "empty" and dirs:
        shutil.rmtree(root / pick(dirs))
        (root / f"empty{step}").mkdir()


@pytest.mark.parametrize("seed", range(4))
def test_served_captures_record_what_a_full_walk_records(
    root: Path, tmp_path: Path, calls: Calls, seed: int, resident: Resident
) -> None:
    """Adds, removes, directory removals, mode changes, files that became
    directories and back: each served capture equals a full walk's."""
    served = open_served(root, tmp_path / "served", resident)
    rng = random.Random(seed)
    served.capture()
    for step in range(25):
        for n in range(rng.randint(1, 3)):
            _edit(root, rng, step * 10 + n)
        got = served.capture()
        want = cold(root, tmp_path / f"cold-{step}")
        assert got.tree == want.tree, f"seed {seed} step {step}"
        assert sorted(got.skipped) == sorted(want.skipped)
        check_manifest(served, got.tree)
    assert calls.changes >= 10, "the O(changes) capture must have run"


def test_scoped_captures_keep_the_rest_as_last_captured(
    root: Path, tmp_path: Path, calls: Calls, resident: Resident
) -> None:
    """Scoped and whole captures in turn: each matches the same sequence, walked."""
    served = open_served(root, tmp_path / "served", resident)
    scoped = served.with_scope("src")
    data = tmp_path / "cold"
    rng = random.Random(7)
    for step in range(12):
        _edit(root, rng, step)
        write(root, f"src/s{step}.py", f"{step}\n")
        write(root, f"docs/d{step}.md", f"{step}\n")
        got = scoped.capture().tree
        assert got == cold(root, data, "src").tree, f"step {step}, scoped"
        check_manifest(served, got)
        if step % 3 == 2:
            whole = served.capture().tree
            assert whole == cold(root, data).tree, f"step {step}, whole"
            check_manifest(served, whole)
        write(root, f"src/again{step}.py", f"{step}\n")
        got = scoped.capture().tree
        assert got == cold(root, data, "src").tree, f"step {step}, scoped again"
    assert calls.changes >= 5


def test_the_manifest_stays_in_memory_between_served_captures(
    root: Path, tmp_path: Path, calls: Calls, resident: Resident
) -> None:
    served = open_served(root, tmp_path / "served", resident)
    served.capture()
    reads = calls.reads
    for step in range(3):
        write(root, "src/b.py", f"b {step}\n")
        served.capture()
    assert calls.reads == reads, "nobody else wrote: the files were not read again"
    assert calls.changes == 3


def test_another_process_capture_is_noticed(
    root: Path, tmp_path: Path, calls: Calls, resident: Resident
) -> None:
    """A cold CLI capturing between two served captures: its record is seen, kept."""
    data = tmp_path / "data"
    served = open_served(root, data, resident)
    served.capture()
    write(root, "src/b.py", "served\n")
    first = served.capture().tree
    write(root, "a.txt", "by another process\n")
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from snapshotter.engine import Engine; "
            "print(Engine.open(sys.argv[1], data_dir_path=sys.argv[2]).capture().tree)",
            str(root),
            str(data),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert other != first
    reads = calls.reads
    assert served.store.last_tree() == other, "the newest capture, by anyone"
    assert calls.reads > reads, "the other process's write was noticed"
    write(root, "docs/x.md", "served again\n")
    got = served.capture().tree
    assert got == cold(root, tmp_path / "cold").tree
    check_manifest(served, got)


def _served_log(root: Path, tmp_path: Path, resident: Resident) -> tuple[Engine, list[str]]:
    served = open_served(root, tmp_path / "served", resident)
    trees = [served.capture().tree]
    for step in range(3):
        write(root, f"src/t{step}.py", f"{step}\n")
        trees.append(served.capture().tree)
    log = stat_cache.log_path(manifest_path(served))
    assert log.stat().st_size > 100, "the captures were appended to the log"
    return served, trees


@pytest.mark.parametrize("damage", ["truncate", "garble", "zeros"])
def test_a_torn_log_tail_is_ignored(
    root: Path, tmp_path: Path, damage: str, resident: Resident
) -> None:
    """A kill -9 mid-append: the last record is ignored, the next capture is right."""
    served, trees = _served_log(root, tmp_path, resident)
    path = manifest_path(served)
    log = stat_cache.log_path(path)
    data = log.read_bytes()
    if damage == "truncate":
        log.write_bytes(data[:-3])
    elif damage == "garble":  # still a well-formed record, naming another tree
        at = data.rindex(trees[-1].encode()) + 5
        other = b"0" if data[at : at + 1] != b"0" else b"1"
        log.write_bytes(data[:at] + other + data[at + 1 :])
    else:
        log.write_bytes(data + b"\0" * 40)  # a power cut's zero-filled tail
    loaded = stat_cache.load(path)
    if damage == "zeros":
        assert loaded.tree == trees[-1]
    else:
        assert loaded.tree == trees[-2], "the state of the last intact record"
    assert loaded.entries == stat_cache._read(path).entries
    # The next capture, served or not, records the worktree as it is.
    write(root, "docs/new.md", "after the kill\n")
    got = served.capture().tree  # the files changed under the server: read again
    assert got == cold(root, tmp_path / "cold").tree
    check_manifest(served, got)
    resident.close()
    again = cold(root, tmp_path / "served")  # a CLI on the same store
    assert again.tree == got
    assert stat_cache._read(path).tree == got


def test_a_log_of_another_base_is_ignored(root: Path, tmp_path: Path, resident: Resident) -> None:
    """Killed between writing a new base and its empty log: the old log stays unread."""
    served, trees = _served_log(root, tmp_path, resident)
    path = manifest_path(served)
    log = stat_cache.log_path(path)
    old_log = log.read_bytes()
    base = stat_cache.load(path)
    base.tree = trees[0]  # a different state, written whole
    stat_cache.save(path, base)
    log.write_bytes(old_log)
    assert stat_cache.load(path).tree == trees[0], "the stale log was not applied"


def test_a_damaged_manifest_only_costs_a_rehash(
    root: Path, tmp_path: Path, resident: Resident
) -> None:
    served, _trees = _served_log(root, tmp_path, resident)
    path = manifest_path(served)
    path.write_bytes(b"garbage")
    assert stat_cache.load(path).entries == {}
    write(root, "src/b.py", "after damage\n")
    got = served.capture().tree
    assert got == cold(root, tmp_path / "cold").tree
    check_manifest(served, got)


def test_compaction_keeps_content(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, calls: Calls, resident: Resident
) -> None:
    """The log folded into a new base, again and again: nothing lost on the way."""
    monkeypatch.setattr(stat_cache, "COMPACT_MIN_BYTES", 0)
    served = open_served(root, tmp_path / "served", resident)
    served.capture()
    path = manifest_path(served)
    tokens = {stat_cache._read(path).token}
    rng = random.Random(3)
    for step in range(12):
        _edit(root, rng, step)
        write(root, f"src/c{step}.py", f"{step}\n")
        got = served.capture().tree
        assert got == cold(root, tmp_path / f"cold-{step}").tree
        check_manifest(served, got)
        tokens.add(stat_cache._read(path).token)
    assert len(tokens) >= 3, "the log was compacted into new bases"
    assert calls.changes >= 6


def test_no_watch_captures_append_to_the_log(root: Path, tmp_path: Path) -> None:
    """CLI captures (no watcher) write what changed too, and read base and log."""
    data = tmp_path / "data"
    first = cold(root, data)
    engine = Engine.open(root, data_dir_path=data)
    path = manifest_path(engine)
    base = path.read_bytes()
    for step in range(3):
        write(root, f"n{step}.txt", f"{step}\n")
        got = cold(root, data).tree
        assert got == cold(root, tmp_path / f"other-{step}").tree
        assert stat_cache.load(path).tree == got
    assert path.read_bytes() == base, "appended to the log, the base left alone"
    assert first.tree != got
