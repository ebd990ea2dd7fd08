"""gc in proportion (issue 16.7): what is packed stays packed; a gc costs what is new.

A full gc used to rewrite every live object with libgit2's delta search: 35-40 s
on a 10k-file store, with nothing to do as much as after new work. These tests
follow the pack files by name and inode through real captures and gcs: a gc with
nothing new touches no pack; one after new checkpoints packs only the new loose
objects; a pack is rewritten once retention left enough garbage in it, and its
dropped bytes go then; undo works after every gc; a gc killed mid-way loses
nothing.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest
from builders import age_session, edit_files, make_repo, open_engine, reachable

from snapshotter.engine import Engine
from snapshotter.git import packs as packwriter
from snapshotter.git.loose import loose_files
from snapshotter.git.pack_index import read_pack_index
from snapshotter.history import maintenance as gc_mod
from snapshotter.history import undo
from snapshotter.history.recorder import Recorder
from snapshotter.history.retention import Policy
from snapshotter.history.state_file import load
from snapshotter.store import compaction
from snapshotter.store.shadow import Store

KEEP_ALL = Policy(max_age_days=None, max_checkpoints=None, max_store_bytes=None)

Files = dict[str, bytes]


def files(root: Path) -> Files:
    found = {}
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(dirpath) / name
            found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found


def objects_dir(store: Store) -> Path:
    return store.root / "git" / "objects"


def pack_inodes(store: Store) -> dict[str, int]:
    """Every file in objects/pack, with its inode (a rewrite makes a new one)."""
    pack = objects_dir(store) / "pack"
    return {p.name: p.stat().st_ino for p in pack.iterdir()}


def pack_ids(store: Store, name: str) -> set[bytes]:
    index = read_pack_index(objects_dir(store) / "pack" / f"{name}.idx")
    assert index is not None, f"{name}: unreadable index"
    return index.names()


def own_pack_counts(store: Store) -> list[int]:
    pack = objects_dir(store) / "pack"
    return sorted(len(pack_ids(store, p.stem)) for p in pack.glob("pack-*.idx"))


def loose_ids(store: Store) -> set[bytes]:
    found = loose_files(objects_dir(store))
    assert all(p.stat().st_nlink == 1 for p in found), "no loose object is shared with the source"
    return {bytes.fromhex(p.parent.name + p.name) for p in found}


def has_object(store: Store, content: bytes) -> bool:
    return str(pygit2.hash(content)) in pygit2.Repository(str(store.root / "git")).odb


def live_objects(store: Store) -> set[str]:
    """Every object gc must keep; fails if one cannot be read back."""
    from snapshotter.store import stat_cache as manifest_io

    trees = load(store).live_trees() | {manifest_io.load(store.root / "manifest").tree or ""}
    return reachable(store.root / "git", trees - {""})


class Session:
    """Turns of one session; each remembers the worktree before and after it."""

    def __init__(self, engine: Engine, name: str) -> None:
        self.engine, self.name = engine, name
        self.recorder = Recorder(engine, name)
        self.recorder.session_start()
        self.turns: list[tuple[int, Files, Files]] = []

    def turn(self, edits: dict[str, bytes | None]) -> None:
        root = self.engine.root
        before = files(root)
        self.recorder.turn_start()
        edit_files(root, edits)
        cp = self.recorder.turn_end("stop")
        assert cp is not None, f"a turn of {self.name} changed files"
        self.turns.append((cp.id, before, files(root)))


def undo_redo_newest(engine: Engine, session: Session, what: str) -> None:
    """The session's newest turn undoes to exactly what was before it, and redoes."""
    fresh = open_engine(engine.root, engine.store.root.parent.parent)  # a new process would
    cp, before, after = session.turns[-1]
    assert undo.undo_last(fresh, session.name).checkpoint == [cp], f"{what}: undo"
    assert files(engine.root) == before, f"{what}: undo restores the worktree exactly"
    assert undo.redo(fresh, session.name).checkpoint == [cp], f"{what}: redo"
    assert files(engine.root) == after, f"{what}: redo restores the worktree exactly"


def text(seed: int, size: int = 600) -> bytes:
    rng = random.Random(seed)
    return " ".join(f"w{rng.randrange(5000)}" for _ in range(size // 6)).encode() + b"\n"


BIG = 300


def big_repo(path: Path) -> Path:
    """Enough files that the first capture packs their blobs: one big pack of the store's own.

    Not committed: files the source index vouches for would be linked from the
    source's objects instead (shared files, which gc leaves alone anyway). Not
    racily clean either: those the next capture would hash, and pack, again.
    """
    root = make_repo(path, {name(i): text(i) for i in range(BIG)}, commit=False)
    past = time.time() - 60
    for i in range(BIG):
        os.utime(root / name(i), (past, past))
    return root


def name(i: int) -> str:
    return f"src/d{i // 20}/f{i}.txt"


def edits(turn: int, count: int = 3) -> dict[str, bytes | None]:
    """``count`` files of a big_repo changed, in different directories."""
    return {name((37 * turn + 20 * i) % BIG): text(1000 + 10 * turn + i) for i in range(count)}


# -- nothing new: nothing rewritten --------------------------------------------------


def test_a_gc_with_nothing_new_rewrites_no_pack(tmp_path: Path, data_dir: Path) -> None:
    root = big_repo(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    session = Session(engine, "s")
    assert own_pack_counts(engine.store)[-1] >= BIG, "the first capture packed the files"
    for turn in range(4):
        session.turn(edits(turn))
    assert loose_ids(engine.store), "the turns wrote loose objects"
    gc_mod.collect(engine, policy=KEEP_ALL)
    assert not loose_ids(engine.store), "the first gc packed them"
    undo_redo_newest(engine, session, "after the first gc")
    before = pack_inodes(engine.store)

    for bounded in (None, 30.0, None):
        report = gc_mod.collect(engine, policy=KEEP_ALL, budget_s=bounded)
        assert pack_inodes(engine.store) == before, (
            f"a gc with nothing new (budget {bounded}) left every pack file as it was"
        )
        assert report.objects_written == 0 and report.packs_rewritten == 0, report
        assert report.bytes_after == report.bytes_before, "nothing freed, nothing written"
        assert report.reason, f"the report says why nothing was done: {report}"
    live_objects(engine.store)
    undo_redo_newest(engine, session, "after gcs with nothing new")


# -- new checkpoints: only the new loose objects are packed ----------------------------


def test_a_gc_after_new_checkpoints_packs_only_the_new_loose_objects(
    tmp_path: Path, data_dir: Path
) -> None:
    root = big_repo(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    session = Session(engine, "s")
    for turn in range(8):
        session.turn(edits(turn))
    gc_mod.collect(engine, policy=KEEP_ALL)
    old = pack_inodes(engine.store)
    old_ids = set().union(*(pack_ids(engine.store, n[:-4]) for n in old if n.endswith(".idx")))

    for turn in range(8, 10):
        session.turn(edits(turn))
    new_loose = loose_ids(engine.store)
    assert new_loose and not new_loose & old_ids, "the new turns wrote new loose objects"
    counts = own_pack_counts(engine.store)
    assert all(
        c >= compaction.GEOMETRIC * (len(new_loose) + sum(counts[:i])) for i, c in enumerate(counts)
    ), f"the old packs {counts} are in proportion"
    report = gc_mod.collect(engine, policy=KEEP_ALL)

    now = pack_inodes(engine.store)
    assert {n: now.get(n) for n in old} == old, "every old pack file is left as it was"
    added = sorted(n[:-4] for n in set(now) - set(old) if n.endswith(".idx"))
    assert len(added) == 1, f"one new pack: {added}"
    assert pack_ids(engine.store, added[0]) == new_loose, "it holds exactly the new objects"
    assert not loose_ids(engine.store), "no loose object is left"
    assert report.packs_rewritten == 0 and report.objects_written == len(new_loose), report
    live_objects(engine.store)
    undo_redo_newest(engine, session, "after the gc of new checkpoints")


def test_small_packs_are_rolled_up_and_the_big_one_stays(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = big_repo(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    session = Session(engine, "s")
    biggest = max(
        (p for p in pack_inodes(engine.store) if p.endswith(".idx")),
        key=lambda p: len(pack_ids(engine.store, p[:-4])),
    )
    big = {n: i for n, i in pack_inodes(engine.store).items() if Path(n).stem == biggest[:-4]}
    assert len(pack_ids(engine.store, biggest[:-4])) >= BIG, "the first capture packed the files"
    monkeypatch.setattr(packwriter, "LOOSE_PACK_AT", 6)  # captures pack every few objects
    for turn in range(6):
        session.turn(edits(turn, count=2))
    small = {n: i for n, i in pack_inodes(engine.store).items() if n not in big}
    assert sum(n.endswith(".idx") for n in small) >= 3, f"captures left small packs: {small}"

    report = gc_mod.collect(engine, policy=KEEP_ALL)
    now = pack_inodes(engine.store)
    assert {n: now.get(n) for n in big} == big, "the big pack is left as it was"
    assert not set(small) & set(now), "every small pack is rolled up"
    assert sum(n.endswith(".idx") for n in now) == 2, f"into one new pack: {sorted(now)}"
    assert report.packs_rewritten == sum(n.endswith(".idx") for n in small), report
    live_objects(engine.store)
    undo_redo_newest(engine, session, "after rolling up")
    gc_mod.collect(engine, policy=KEEP_ALL)
    assert pack_inodes(engine.store) == now, "and the next gc leaves them all alone"


@pytest.mark.parametrize(
    ("counts", "new", "rolled"),
    [
        ([], 0, 0),  # nothing at all
        ([500], 0, 0),  # one pack stays
        ([100, 500], 0, 0),  # in proportion
        ([100, 150, 5000], 0, 2),  # the two small ones together
        ([100, 500], 60, 1),  # the new objects join the small pack ...
        ([100, 500], 300, 2),  # ... or both
    ],
)
def test_the_geometric_rule(counts: list[int], new: int, rolled: int) -> None:
    assert compaction._rolled(counts, new) == rolled


# -- retention: garbage is reclaimed once it is worth a rewrite ---------------------------


def test_dropped_checkpoints_bytes_are_reclaimed_once_garbage_passes_the_threshold(
    tmp_path: Path, data_dir: Path
) -> None:
    root = make_repo(tmp_path / "repo", {f"f{i}.txt": text(i) for i in range(8)})
    engine = open_engine(root, data_dir)
    heavy = random.Random(1).randbytes(200_000)  # incompressible: its bytes stay its bytes
    light = b"a few bytes only the 'light' session ever wrote\n"
    sessions = {name: Session(engine, name) for name in ("heavy", "light", "new")}
    sessions["heavy"].turn({"big.bin": heavy})
    sessions["heavy"].turn({"big.bin": None})
    sessions["light"].turn({"light.txt": light})
    sessions["light"].turn({"light.txt": None})
    sessions["new"].turn({"f0.txt": b"the newest session's edit\n"})
    gc_mod.collect(engine, policy=KEEP_ALL)
    packed = pack_inodes(engine.store)
    assert sum(n.endswith(".idx") for n in packed) == 1 and has_object(engine.store, heavy)

    # A little garbage: the records go at once, the bytes wait in the pack.
    age_session(engine.store, "light", days=40)
    report = gc_mod.collect(engine, policy=Policy(30, None, None))
    assert report.dropped.sessions == ["light"], report.dropped
    assert pack_inodes(engine.store) == packed, (
        f"less than {compaction.GARBAGE_SHARE:.0%} of the pack is garbage: it stays as it is"
    )
    assert has_object(engine.store, light), "so the dropped session's bytes are still there"
    undo_redo_newest(engine, sessions["new"], "after dropping a light session")

    # Much garbage: the pack is rewritten, and both sessions' bytes go.
    age_session(engine.store, "heavy", days=40)
    report = gc_mod.collect(engine, policy=Policy(30, None, None))
    assert report.dropped.sessions == ["heavy"], report.dropped
    assert not set(packed) & set(pack_inodes(engine.store)), "the garbage-heavy pack is gone"
    assert report.packs_rewritten == 1, report
    assert not has_object(engine.store, heavy), "the dropped checkpoints' bytes are reclaimed"
    assert not has_object(engine.store, light), "and the earlier garbage with them"
    assert report.freed >= len(heavy), f"about 200 KB freed: {report.freed}"
    live_objects(engine.store)
    undo_redo_newest(engine, sessions["new"], "after dropping a heavy session")


def test_compact_reclaims_any_garbage(tmp_path: Path, data_dir: Path) -> None:
    root = make_repo(tmp_path / "repo", {f"f{i}.txt": text(i) for i in range(8)})
    engine = open_engine(root, data_dir)
    marker = b"one line only the old session wrote\n"
    old, new = Session(engine, "old"), Session(engine, "new")
    old.turn({"notes.txt": marker})
    old.turn({"notes.txt": None})
    new.turn({"f1.txt": b"new\n"})
    gc_mod.collect(engine, policy=KEEP_ALL)
    age_session(engine.store, "old", days=40)
    report = gc_mod.collect(engine, policy=Policy(30, None, None), dry_run=True)
    assert report.freed == 0, f"a plain gc would leave the little garbage: {report}"
    report = gc_mod.collect(engine, policy=Policy(30, None, None), compact=True)
    assert report.dropped.sessions == ["old"] and report.packs_rewritten == 1, report
    assert not has_object(engine.store, marker), "compact frees even a little garbage"
    undo_redo_newest(engine, new, "after a compacting gc")


# -- a gc killed mid-way --------------------------------------------------------------

CHILD = r"""
import os, pathlib, signal, sys
from snapshotter.history import maintenance as gc
from snapshotter.engine import Engine
from snapshotter.history.retention import Policy

worktree, data_dir, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3])
engine = Engine.open(worktree, data_dir_path=data_dir)
count = 0

def killing(fn):
    def step(*args, **kwargs):
        global count
        count += 1
        if count == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return fn(*args, **kwargs)
    return step

os.replace = killing(os.replace)
pathlib.Path.unlink = killing(pathlib.Path.unlink)
pathlib.Path.rmdir = killing(pathlib.Path.rmdir)
gc.collect(engine, policy=Policy(30, None, None))
print("done", count, flush=True)
"""


def test_a_gc_killed_at_any_step_of_a_rewrite_loses_nothing(tmp_path: Path, data_dir: Path) -> None:
    root = make_repo(tmp_path / "repo", {f"f{i}.txt": text(i) for i in range(8)})
    engine = open_engine(root, data_dir)
    new = Session(engine, "new")
    finished = False
    kill_at = 1
    while not finished:
        # Each round: an old session to drop (a garbage-heavy pack) and new loose objects.
        old = Session(engine, f"old{kill_at}")
        old.turn({"big.bin": random.Random(kill_at).randbytes(50_000)})
        old.turn({"big.bin": None})
        gc_mod.collect(engine, policy=KEEP_ALL)
        age_session(engine.store, old.name, days=40)
        new.turn(edits(kill_at % 5, count=1) | {"f7.txt": text(kill_at)})
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(root), str(data_dir), str(kill_at)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode in (0, -signal.SIGKILL), done.stderr[-2000:]
        finished = done.returncode == 0
        fresh = open_engine(root, data_dir)
        live_objects(fresh.store)
        undo_redo_newest(fresh, new, f"after a gc killed before step {kill_at}")
        fresh.capture()
        kill_at += 1
    assert kill_at > 6, f"the gc took several steps, each killed once ({kill_at - 1})"
    report = gc_mod.collect(open_engine(root, data_dir), policy=Policy(30, None, None))
    assert not [
        n
        for n in os.listdir(objects_dir(engine.store) / "pack")
        if not packwriter.PACK_FILE.match(n)
    ], "the next gc leaves no leftover"
    assert not report.dropped.sessions, "every old session was dropped by the killed gcs"
    undo_redo_newest(open_engine(root, data_dir), new, "at the end")
