"""gc and retention (issue 7, SPEC §2, §4, §5): a gc never breaks a live undo.

Every test records real checkpoints with the Recorder, remembers the exact
worktree (bytes, modes, directories) before and after each one, runs a gc,
then undoes and redoes and compares the worktree with what it was.
"""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pygit2
import pytest
from builders import age_session, git, hook_input, keep_loose, make_repo, open_engine, write
from builders import reachable as conftest_reachable

from snapshotter.engine import Engine
from snapshotter.engine.maintenance import run_detached
from snapshotter.errors import NothingToDo, StoreError
from snapshotter.fileio import TEMP_PREFIX
from snapshotter.git import packs as packwriter
from snapshotter.git.pack_index import read_pack_index
from snapshotter.history import maintenance as gc_mod
from snapshotter.history import undo
from snapshotter.history.recorder import Recorder
from snapshotter.history.retention import Policy
from snapshotter.history.state_file import load
from snapshotter.hooks import detached_gc
from snapshotter.hooks.builtin import SnapshotBuiltin
from snapshotter.logfile import log_path
from snapshotter.store import compaction, object_files
from snapshotter.store.capture import Snapshot
from snapshotter.store.shadow import Store

KEEP_ALL = Policy(max_age_days=None, max_checkpoints=None, max_store_bytes=None)

# What is on disk: ("dir",) or ("file", executable?, bytes) per path, .git excluded.
Disk = dict[str, tuple[object, ...]]


@dataclass
class Step:
    """One top-level checkpoint and the exact worktree around it."""

    session: str
    checkpoint: int
    before: Disk
    after: Disk


# -- helpers -----------------------------------------------------------------


def disk_state(root: Path, skip: str | None = None) -> Disk:
    """Everything under ``root`` but ``.git`` (and paths under ``skip``, when given)."""
    found: Disk = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in [*dirs, *files]:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_dir():
                found[rel] = ("dir",)
            else:
                found[rel] = ("file", bool(os.lstat(full).st_mode & 0o100), full.read_bytes())
    return without(found, skip)


def without(disk: Disk, skip: str | None) -> Disk:
    if not skip:
        return disk
    return {p: k for p, k in disk.items() if p != skip and not p.startswith(f"{skip}/")}


def describe_diff(expected: Disk, actual: Disk) -> str:
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    differ = sorted(p for p in set(expected) & set(actual) if expected[p] != actual[p])
    return f"missing {missing[:5]}, unexpected {extra[:5]}, different {differ[:5]}"


def assert_disk(root: Path, expected: Disk, what: str, skip: str | None = None) -> None:
    actual, expected = disk_state(root, skip), without(expected, skip)
    assert actual == expected, f"{what}: worktree differs ({describe_diff(expected, actual)})"


def remove(root: Path, rel: str) -> None:
    """Delete a file and the directories it leaves empty, as ``git rm`` does.

    Git cannot record an empty directory, so an undo never brings one back;
    the worktrees here never hold one, which keeps the comparison exact.
    """
    path = root / rel
    path.unlink()
    for parent in path.parents:
        if parent == root or any(parent.iterdir()):
            break
        parent.rmdir()


def objects_dir(store: Store) -> Path:
    return store.root / "git" / "objects"


def loose_objects(store: Store) -> list[str]:
    objects = objects_dir(store)
    return sorted(
        f"{sub.name}/{p.name}"
        for sub in objects.iterdir()
        if len(sub.name) == 2 and sub.is_dir()
        for p in sub.iterdir()
        if len(p.name) == 38
    )


def pack_files(store: Store) -> list[str]:
    pack = objects_dir(store) / "pack"
    return sorted(p.name for p in pack.iterdir()) if pack.is_dir() else []


def dir_bytes(path: Path) -> int:
    return sum(
        os.lstat(os.path.join(d, f)).st_size for d, _dirs, files in os.walk(path) for f in files
    )


def store_files(store: Store) -> dict[str, bytes]:
    """Every file in the store with its bytes (the lock file's presence aside)."""
    found = {}
    for dirpath, _dirs, files in os.walk(store.root):
        for name in files:
            full = Path(dirpath) / name
            rel = str(full.relative_to(store.root))
            if rel != "lock":
                found[rel] = full.read_bytes()
    return found


def reachable(store: Store, trees: Iterable[str]) -> set[str]:
    return conftest_reachable(store.root / "git", trees)


def assert_live_objects_present(engine: Engine) -> set[str]:
    """Every tree the state needs, and everything under it, can be read."""
    return reachable(engine.store, load(engine.store).live_trees())


def assert_checkpoint_files(engine: Engine) -> None:
    """Each live checkpoint (tools included) still diffs in every file it recorded."""
    for cp in load(engine.store).checkpoints:
        paths = {f.path for f in engine.changes(cp.before, cp.after)}
        recorded = {f.path for f in cp.files}
        assert recorded <= paths, f"checkpoint {cp.id}: {recorded - paths} no longer diff"


def object_id(content: bytes) -> str:
    return str(pygit2.hash(content))


def has_object(store: Store, oid: str) -> bool:
    return oid in pygit2.Repository(str(store.root / "git")).odb


# Directories some tests fill by hand; the random agent leaves them alone.
HANDS_OFF = ("big/", "notes/", "side/")


class Agent:
    """Plays turns on a worktree: each turn adds, edits and deletes a few files."""

    def __init__(self, engine: Engine, seed: int) -> None:
        self.engine = engine
        self.root = engine.root
        self.rng = random.Random(seed)
        self.serial = 0
        self.recorders: dict[str, Recorder] = {}

    def recorder(self, session: str) -> Recorder:
        if session not in self.recorders:
            self.recorders[session] = Recorder(self.engine, session)
            self.recorders[session].session_start()
        return self.recorders[session]

    def text(self) -> str:
        self.serial += 1
        words = " ".join(f"w{self.rng.randrange(10_000)}" for _ in range(self.rng.randrange(3, 40)))
        return f"edit {self.serial}: {words}\n"

    def files(self) -> list[str]:
        found: list[str] = []
        for dirpath, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d != ".git"]
            rel = Path(dirpath).relative_to(self.root).as_posix()
            found.extend(f if rel == "." else f"{rel}/{f}" for f in files)
        return sorted(p for p in found if not p.startswith(HANDS_OFF))

    def edit(self) -> None:
        """One change: modify (most often), add in a nested directory, or delete."""
        files = self.files()
        roll = self.rng.random()
        if roll < 0.2 or len(files) < 5:
            rel = f"gen/d{self.rng.randrange(4)}/e{self.rng.randrange(3)}/n{self.serial}.txt"
            write(self.root, rel, self.text())
        elif roll < 0.3:
            remove(self.root, self.rng.choice(files))
        else:
            write(self.root, self.rng.choice(files), self.text())

    def turn(self, session: str, tools: int = 0, edits: int = 2) -> Step:
        rec = self.recorder(session)
        before = disk_state(self.root)
        rec.turn_start()
        for _ in range(edits):
            self.edit()
        for i in range(tools):
            tool_id = f"{session}-{self.serial}-{i}"
            rec.tool_start(tool_id, "edit_file")
            self.edit()
            assert rec.tool_end(tool_id, "edit_file") is not None, "a tool edit records"
        cp = rec.turn_end("stop")
        assert cp is not None, f"turn in {session} changed files but recorded nothing"
        return Step(session, cp.id, before, disk_state(self.root))

    def lone_tool(self, session: str) -> Step:
        """A tool call outside any turn: a top-level tool checkpoint."""
        rec = self.recorder(session)
        before = disk_state(self.root)
        rec.tool_start(f"lone-{self.serial}", "bash")
        self.edit()
        cp = rec.tool_end(f"lone-{self.serial}", "bash")
        assert cp is not None and cp.parent is None, "a lone tool call is a top-level checkpoint"
        return Step(session, cp.id, before, disk_state(self.root))


def undo_redo_exact(
    engine: Engine, steps: list[Step], *, complete: bool = True, skip: str | None = None
) -> None:
    """Undo every step newest first, then redo oldest first; the worktree must match.

    ``complete``: the steps are all the sessions' live top-level checkpoints,
    so afterwards there is nothing left to undo. ``skip``: a directory other
    sessions change, left out of the comparison.
    """
    for step in reversed(steps):
        report = undo.undo_last(engine, step.session)
        assert report.checkpoint == [step.checkpoint], (
            f"undo in {step.session} reverted {report.checkpoint}, expected {step.checkpoint}"
        )
        assert_disk(engine.root, step.before, f"after undoing checkpoint {step.checkpoint}", skip)
    for session in {s.session for s in steps} if complete else ():
        with pytest.raises(NothingToDo):
            undo.undo_last(engine, session)
    for step in steps:
        report = undo.redo(engine, step.session)
        assert report.checkpoint == [step.checkpoint], (
            f"redo in {step.session} re-applied {report.checkpoint}, expected {step.checkpoint}"
        )
        assert_disk(engine.root, step.after, f"after redoing checkpoint {step.checkpoint}", skip)


def small_repo(path: Path, files: int = 24) -> Path:
    return make_repo(
        path, {f"src/m{i // 8}/f{i}.txt": f"original {i}\n" * (i + 1) for i in range(files)}
    )


def checkpoint_ids(engine: Engine, session: str | None = None) -> list[int]:
    return [cp.id for cp in load(engine.store).checkpoints if session in (None, cp.session_id)]


def own_pack_counts(store: Store) -> list[int]:
    """Objects in each of the store's own packs (shared ones aside), smallest first."""
    counts = []
    for idx in (objects_dir(store) / "pack").glob("pack-*.idx"):
        index = read_pack_index(idx)
        assert index is not None, f"{idx.name}: unreadable index"
        if os.lstat(idx.with_suffix(".pack")).st_nlink == 1:
            counts.append(len(index))
    return sorted(counts)


def assert_packed(store: Store, what: str) -> None:
    """No loose object left, every pack whole, and the packs in proportion: each holds
    GEOMETRIC times the objects of all smaller ones together, so there are only a few."""
    assert loose_objects(store) == [], f"{what}: loose objects left: {loose_objects(store)[:5]}"
    packs = pack_files(store)
    stems = {name.rsplit(".", 1)[0] for name in packs}
    whole = all(f"{stem}.pack" in packs and f"{stem}.idx" in packs for stem in stems)
    assert stems and whole, f"{what}: expected packs with their indexes, found {packs}"
    assert all(n.endswith((".pack", ".idx", ".rev")) for n in packs), f"{what}: stray {packs}"
    counts = own_pack_counts(store)
    for i, count in enumerate(counts):
        assert count >= compaction.GEOMETRIC * sum(counts[:i]), (
            f"{what}: out of proportion {counts}"
        )


# -- many checkpoints, one gc ---------------------------------------------------


def test_every_live_checkpoint_undoes_and_redoes_exactly_after_gc(
    tmp_path: Path, data_dir: Path
) -> None:
    root = small_repo(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    agent = Agent(engine, seed=7)
    steps: list[Step] = []
    sessions = ("alpha", "beta", "gamma")
    for i in range(60):
        session = sessions[i % 3]
        steps.append(agent.turn(session, tools=1 if i % 4 == 0 else 0))
        if i % 15 == 7:
            steps.append(agent.lone_tool(session))
    state = load(engine.store)
    children = [cp for cp in state.checkpoints if cp.parent is not None]
    assert len(children) == 15, f"every 4th turn has a nested tool checkpoint: {len(children)}"
    idx = [n for n in pack_files(engine.store) if n.endswith(".idx")]
    assert loose_objects(engine.store) or len(idx) > 1, (
        "captures wrote loose objects or small packs before any gc"
    )

    report = gc_mod.collect(engine)  # the default policy keeps all of this
    assert report.dropped.sessions == [] and report.dropped.checkpoints == [], (
        f"the default policy must not drop recent checkpoints: {report.dropped}"
    )
    assert_packed(engine.store, "after gc")
    live = assert_live_objects_present(engine)
    assert report.objects_kept == len(live), (
        f"gc reported {report.objects_kept} objects kept; live checkpoints need {len(live)}"
    )
    assert report.bytes_after == dir_bytes(objects_dir(engine.store)), "bytes_after is the size"
    assert len(load(engine.store).checkpoints) == len(state.checkpoints), "no checkpoint lost"

    assert_checkpoint_files(engine)
    undo_redo_exact(open_engine(root, data_dir), steps)  # a fresh engine: a new process


def test_gc_keeps_what_a_pending_turn_and_the_redo_stack_need(
    tmp_path: Path, data_dir: Path
) -> None:
    """Trees no checkpoint names (a redo entry's, an open turn's start) survive gc."""
    root = small_repo(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    agent = Agent(engine, seed=3)
    first = agent.turn("s")
    # The user edits a file the turn changed, then force-undoes: the user's
    # version now lives only in the redo entry's tree.
    touched = sorted(
        p for p, k in first.after.items() if k != first.before.get(p) and k[0] == "file"
    )
    users = b"the user's own edit, recorded nowhere else\n"
    write(root, touched[0], users)
    with_user_edit = disk_state(root)
    undo.undo_last(engine, "s", force=True)
    for _ in range(2):
        gc_mod.collect(open_engine(root, data_dir), policy=KEEP_ALL)
        assert has_object(engine.store, object_id(users)), "the redo entry's tree lost a blob"
    assert_packed(engine.store, "after gc with a redo entry")
    undo.redo(engine, "s")
    assert_disk(root, with_user_edit, "redo after gc puts back the user's edit exactly")

    # An open turn: its start tree (with the user's pending.txt) is named by
    # nothing but the pending turn mark once later captures move on.
    rec = agent.recorder("s")
    start_text = b"typed by the user just before the turn\n"
    write(root, "pending.txt", start_text)
    rec.turn_start()
    turn_start_disk = disk_state(root)
    write(root, "pending.txt", "the agent's edit inside the open turn\n")
    rec.tool_start("t1", "edit_file")  # captures: the session's latest mark moves on
    rec.tool_end("t1", "edit_file")
    engine.capture()  # and so does the stat cache
    for _ in range(2):
        gc_mod.collect(open_engine(root, data_dir), policy=KEEP_ALL)
        assert has_object(engine.store, object_id(start_text)), "the open turn's start is gone"
    assert_packed(engine.store, "after gc with an open turn")
    turn_end_disk = disk_state(root)
    cp = rec.turn_end("stop")
    assert cp is not None, "the open turn records after gc"
    undo_redo_exact(engine, [Step("s", cp.id, turn_start_disk, turn_end_disk)], complete=False)


# -- dry run, age, count, size -------------------------------------------------


def test_dry_run_changes_nothing_but_reports_what_would_go(tmp_path: Path, data_dir: Path) -> None:
    root = small_repo(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    agent = Agent(engine, seed=11)
    for i in range(8):
        agent.turn("old", tools=1 if i == 2 else 0)
    for _ in range(2):
        agent.turn("new")
    age_session(engine.store, "old", days=40)
    before = store_files(engine.store)
    old_ids = checkpoint_ids(engine, "old")

    report = gc_mod.collect(engine, dry_run=True, policy=Policy(30, None, None))
    assert report.dropped.sessions == ["old"], f"dry run should name the old session: {report}"
    assert report.dropped.checkpoints == old_ids, "dry run should list every old checkpoint"
    assert report.reason.startswith("dry run"), f"a dry run says so: {report.reason!r}"
    assert store_files(engine.store) == before, "a dry run must not change a single store file"

    report = gc_mod.collect(engine, dry_run=True, policy=Policy(None, 3, None))
    new_ids = checkpoint_ids(engine, "new")
    top_old = [
        cp.id
        for cp in load(engine.store).checkpoints
        if cp.session_id == "old" and cp.parent is None
    ]
    assert report.dropped.sessions == [], "a count limit drops checkpoints, not sessions"
    assert set(report.dropped.checkpoints) >= set(top_old[:-3]), (
        f"all but the newest 3 turns of 'old' would go: {report.dropped.checkpoints}"
    )
    assert not set(report.dropped.checkpoints) & set(new_ids + top_old[-3:]), (
        "the newest 3 per session stay"
    )
    assert store_files(engine.store) == before, "a dry run must not change a single store file"

    # What the dry run announced is what the real run does.
    real = gc_mod.collect(engine, policy=Policy(None, 3, None))
    assert real.dropped.checkpoints == report.dropped.checkpoints, (
        f"real run dropped {real.dropped.checkpoints}, dry run said {report.dropped.checkpoints}"
    )


def session_with_marker(agent: Agent, session: str) -> tuple[list[Step], str]:
    """Three turns; the first adds a file only this session ever saw, the last deletes it."""
    marker = f"only {session} ever wrote this {random.Random(session).random()}\n".encode()
    rec = agent.recorder(session)
    steps = []
    before = disk_state(agent.root)
    rec.turn_start()
    write(agent.root, f"notes/{session}.txt", marker)
    cp = rec.turn_end("stop")
    assert cp is not None
    steps.append(Step(session, cp.id, before, disk_state(agent.root)))
    steps.append(agent.turn(session, tools=1))
    before = disk_state(agent.root)
    rec.turn_start()
    remove(agent.root, f"notes/{session}.txt")
    cp = rec.turn_end("stop")
    assert cp is not None
    steps.append(Step(session, cp.id, before, disk_state(agent.root)))
    return steps, object_id(marker)


def test_sessions_older_than_max_age_are_dropped_newest_kept(
    tmp_path: Path, data_dir: Path
) -> None:
    root = small_repo(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    agent = Agent(engine, seed=5)
    steps: dict[str, list[Step]] = {}
    markers: dict[str, str] = {}
    for session in ("old", "mid", "new"):
        steps[session], markers[session] = session_with_marker(agent, session)
    age_session(engine.store, "old", days=40)
    age_session(engine.store, "mid", days=10)
    old_ids = checkpoint_ids(engine, "old")

    report = gc_mod.collect(engine, policy=Policy(30, None, None))
    assert report.dropped.sessions == ["old"], f"only 'old' is over 30 days: {report.dropped}"
    assert report.dropped.checkpoints == old_ids, "all of old's checkpoints go with it"
    state = load(engine.store)
    assert "old" not in state.sessions, "the dropped session's pending state is gone"
    assert not checkpoint_ids(engine, "old"), "the dropped session's checkpoints are gone"
    assert not has_object(engine.store, markers["old"]), "its unique objects are freed"
    assert has_object(engine.store, markers["mid"]) and has_object(engine.store, markers["new"])
    with pytest.raises(NothingToDo):
        undo.undo_last(engine, "old")
    assert_live_objects_present(engine)

    # mid's objects are packed by now: compact frees them however few they are
    # (a plain gc waits until they are GARBAGE_SHARE of their pack, see test_gc_incremental).
    report = gc_mod.collect(engine, policy=Policy(5, None, None), compact=True)
    assert report.dropped.sessions == ["mid"], f"'mid' is 10 days old: {report.dropped}"
    assert "new" in load(engine.store).sessions, "the newest session stays"
    assert not has_object(engine.store, markers["mid"]), "mid's unique objects are freed"
    assert_packed(engine.store, "after age gc")
    undo_redo_exact(engine, steps["new"])


def test_max_checkpoints_keeps_newest_top_level_with_their_tools(
    tmp_path: Path, data_dir: Path
) -> None:
    root = small_repo(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    agent = Agent(engine, seed=9)
    steps = []
    for i in range(10):
        steps.append(agent.turn("busy", tools=2 if i in (2, 5, 8) else 0))
        if i == 6:
            steps.append(agent.lone_tool("busy"))
    quiet = [agent.turn("quiet") for _ in range(2)]
    state = load(engine.store)
    top = [cp.id for cp in state.checkpoints if cp.session_id == "busy" and cp.parent is None]
    assert len(top) == 11, f"10 turns and one lone tool are top-level: {top}"
    keep_top = top[-4:]
    expected_drop = sorted(
        cp.id
        for cp in state.checkpoints
        if cp.session_id == "busy" and (cp.id in top[:-4] or cp.parent in top[:-4])
    )
    expected_keep = sorted(
        cp.id
        for cp in state.checkpoints
        if cp.session_id == "busy" and (cp.id in keep_top or cp.parent in keep_top)
    )
    assert any(cp.parent in keep_top for cp in state.checkpoints), "a kept turn has tools"

    report = gc_mod.collect(engine, policy=Policy(None, 4, None))
    assert report.dropped.sessions == [], "a count limit never drops a session"
    assert sorted(report.dropped.checkpoints) == expected_drop, (
        f"dropped {report.dropped.checkpoints}, expected {expected_drop}"
    )
    after = load(engine.store)
    assert checkpoint_ids(engine, "busy") == expected_keep, "kept turns keep their tools"
    assert len(checkpoint_ids(engine, "quiet")) == 2, "the limit is per session"
    kept = {cp.id for cp in after.checkpoints}
    orphans = [cp.id for cp in after.checkpoints if cp.parent is not None and cp.parent not in kept]
    assert orphans == [], f"tool checkpoints outlived their turn: {orphans}"
    assert_packed(engine.store, "after count gc")
    assert_live_objects_present(engine)
    assert_checkpoint_files(engine)

    # The remaining checkpoints undo exactly; then there is nothing more to undo.
    undo_redo_exact(engine, [s for s in steps if s.checkpoint in keep_top] + quiet)


def session_with_big_file(agent: Agent, session: str, size: int) -> list[Step]:
    """A turn adds ``size`` random (incompressible) bytes, the next deletes them."""
    rec = agent.recorder(session)
    steps = []
    for content in (random.Random(session).randbytes(size), None):
        before = disk_state(agent.root)
        rec.turn_start()
        if content is None:
            remove(agent.root, f"big/{session}.bin")
        else:
            write(agent.root, f"big/{session}.bin", content)
        agent.edit()
        cp = rec.turn_end("stop")
        assert cp is not None
        steps.append(Step(session, cp.id, before, disk_state(agent.root)))
    return steps


def test_size_budget_drops_oldest_sessions_first_never_the_newest(
    tmp_path: Path, data_dir: Path
) -> None:
    big = 256 * 1024
    root = small_repo(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    agent = Agent(engine, seed=13)
    steps = {s: session_with_big_file(agent, s, big) for s in ("a", "b", "c", "d")}
    full = gc_mod.collect(engine, policy=KEEP_ALL)
    assert full.bytes_after > 4 * big, f"four sessions of {big} random bytes: {full.bytes_after}"

    budget = full.bytes_after - big - big // 2  # two sessions must go
    report = gc_mod.collect(engine, policy=Policy(None, None, budget))
    size = dir_bytes(objects_dir(engine.store))
    assert size <= budget, f"objects take {size} bytes after gc, over the budget of {budget}"
    assert report.bytes_after == size, "the report gives the real size"
    assert report.dropped.sessions == ["a", "b"], (
        f"the two oldest sessions go, oldest first: {report.dropped.sessions}"
    )
    assert set(load(engine.store).sessions) == {"c", "d"}, "the newer sessions stay"
    assert_packed(engine.store, "after size gc")
    undo_redo_exact(engine, steps["c"] + steps["d"])

    report = gc_mod.collect(engine, policy=Policy(None, None, 1))
    assert report.dropped.sessions == ["c"], f"all but the newest go: {report.dropped}"
    assert "newest" in report.reason, f"gc says why it stopped over budget: {report.reason!r}"
    assert set(load(engine.store).sessions) == {"d"}, "the newest session is never dropped"
    assert_live_objects_present(engine)
    undo_redo_exact(engine, steps["d"])


# -- idempotence and the source repository --------------------------------------


def test_gc_after_gc_with_no_changes_keeps_everything(tmp_path: Path, data_dir: Path) -> None:
    root = small_repo(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    agent = Agent(engine, seed=17)
    steps = [agent.turn(s, tools=i % 2) for i, s in enumerate(["x", "y"] * 5)]
    first = gc_mod.collect(engine)
    files = store_files(engine.store)
    live = assert_live_objects_present(engine)
    for round_ in range(2):
        again = gc_mod.collect(open_engine(root, data_dir))
        assert again.dropped.sessions == [] and again.dropped.checkpoints == [], (
            f"gc #{round_ + 2} dropped {again.dropped} with nothing changed"
        )
        assert again.objects_kept == first.objects_kept, "the same objects are kept"
        assert again.bytes_after == first.bytes_after, "the size does not move"
        assert store_files(engine.store) == files, "a second gc leaves every store file as it was"
        assert assert_live_objects_present(engine) == live
    undo_redo_exact(engine, steps)


def test_git_gc_prune_in_the_source_repo_does_not_break_undo(
    tmp_path: Path, data_dir: Path
) -> None:
    root = small_repo(tmp_path / "repo", files=80)  # enough files to seed the first capture
    v1 = b"notes, first version, committed and later pruned from the source\n"
    write(root, "notes/notes.txt", v1)
    git(root, "add", "notes/notes.txt")
    git(root, "commit", "-q", "-m", "notes")
    # Files older than the index: it vouches for them all, so the first capture
    # hard-links the source's objects instead of hashing the files.
    past = (os.stat(root / ".git" / "index").st_mtime_ns // 10**9 - 60) * 10**9
    for path in root.rglob("*.txt"):
        os.utime(path, ns=(past, past))
    git(root, "update-index", "-q", "--refresh")
    engine = open_engine(root, data_dir)
    agent = Agent(engine, seed=19)
    rec = agent.recorder("s")
    shared = [
        p for p in objects_dir(engine.store).rglob("*") if p.is_file() and p.stat().st_nlink > 1
    ]
    assert len(shared) > 64, "the first capture was seeded from the source's objects"
    steps = []
    for version in (b"notes v2\n", b"notes v3\n"):
        before = disk_state(root)
        rec.turn_start()
        write(root, "notes/notes.txt", version)
        agent.edit()
        cp = rec.turn_end("stop")
        assert cp is not None
        steps.append(Step("s", cp.id, before, disk_state(root)))
    steps.append(agent.turn("s"))

    # The user drops the commit that held v1 and prunes everything unreachable;
    # git's own gc repacks whatever is left.
    git(root, "reset", "-q", "--mixed", "HEAD~1")
    git(root, "reflog", "expire", "--expire=now", "--all")
    git(root, "gc", "-q", "--prune=now")
    gone = subprocess.run(
        ["git", "cat-file", "-e", object_id(v1)], cwd=root, capture_output=True, check=False
    )
    assert gone.returncode != 0, "the source repo must no longer have v1 (else this proves nothing)"
    alternates = objects_dir(engine.store) / "info" / "alternates"
    assert not alternates.exists(), "the store must never borrow the source's objects"

    undo_redo_exact(open_engine(root, data_dir), steps)
    gc_mod.collect(engine)
    undo_redo_exact(open_engine(root, data_dir), steps)
    for _ in steps:
        undo.undo_last(engine, "s")
    assert (root / "notes/notes.txt").read_bytes() == v1, "undo brings v1 back from our store"


# -- a gc killed mid-way -----------------------------------------------------------

CHILD = r"""
import os, pathlib, shutil, signal, sys
from snapshotter.history import maintenance as gc
from snapshotter.git import packs
from snapshotter.engine import Engine
from snapshotter.history.retention import Policy

worktree, data_dir, kill_at, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
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

# Every file-system step gc takes is a place to die.
os.replace = killing(os.replace)
os.rename = killing(os.rename)
shutil.rmtree = killing(shutil.rmtree)
pathlib.Path.unlink = killing(pathlib.Path.unlink)
pathlib.Path.rmdir = killing(pathlib.Path.rmdir)
pathlib.Path.mkdir = killing(pathlib.Path.mkdir)
print("ready", flush=True)
if mode == "quick":  # session_end's gc: pack the loose objects only
    packs.LOOSE_PACK_AT = 0
    gc.collect(engine, budget_s=60.0, policy=Policy(None, None, None))
else:  # a full gc; "size" with a budget that drops every session but the newest
    gc.collect(engine, policy=Policy(None, None, 1 if mode == "size" else None))
print("done", count, flush=True)
"""


def orphans(store: Store) -> list[str]:
    """What a killed gc can leave: scratch files, packs without an index, temp files."""
    objects = objects_dir(store)
    pack = objects / "pack"
    names = set(os.listdir(pack)) if pack.is_dir() else set()
    found = [f"pack/{SCRATCH}/{n}" for n in os.listdir(pack / SCRATCH)] if SCRATCH in names else []
    for name in names - {SCRATCH}:
        stem, _, ext = name.rpartition(".")
        if not name.startswith("pack-") or (ext == "pack" and f"{stem}.idx" not in names):
            found.append(f"pack/{name}")
    for dirpath, _dirs, files in os.walk(objects):
        found.extend(
            os.path.relpath(os.path.join(dirpath, f), objects) for f in files if f.startswith("tmp")
        )
    return sorted(found)


SCRATCH = object_files.SCRATCH


def plant_orphans(store: Store, tag: str) -> set[str]:
    """The leftovers of writes killed inside libgit2 (which no Python hook can reach)."""
    objects = objects_dir(store)
    fake = hashlib.sha1(tag.encode()).hexdigest()
    planted = {
        f"tmp_object_git2_{tag}": b"half a loose object",
        f"ab/tmp_object_git2_{tag}": b"half a loose object",
        f"pack/pack_git2_{tag}": b"PACK half written",
        f"pack/{SCRATCH}/pack-{fake}.pack": b"PACK moved half way",
        f"pack/pack-{fake}.pack": b"PACK whose index never arrived",
    }
    for rel, content in planted.items():
        write(objects, rel, content)
    assert set(planted) <= set(orphans(store)), "the planted leftovers look like leftovers"
    return set(planted)


def run_killed_gc(
    root: Path, data_dir: Path, kill_at: int, mode: str, delay: float | None = None
) -> int:
    """Run gc in a child; it kills itself before step ``kill_at`` or is killed after ``delay``."""
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), str(data_dir), str(kill_at), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready", "the gc child started"
    if delay is not None:
        try:
            child.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
    out, err = child.communicate(timeout=60)
    assert child.returncode in (0, -signal.SIGKILL), f"gc child failed: {err[-2000:]}"
    assert child.returncode != 0 or out.startswith("done"), f"gc child finished oddly: {out}"
    return child.returncode


def side_turn(agent: Agent, session: str) -> None:
    """An older session's turn, in side/ (which the main session never touches)."""
    rec = agent.recorder(session)
    rec.turn_start()
    write(agent.root, f"side/{session}.bin", random.Random(session).randbytes(8192))
    assert rec.turn_end("stop") is not None


def test_gc_killed_mid_way_leaves_a_usable_store_and_no_growing_leftovers(
    tmp_path: Path, data_dir: Path
) -> None:
    root = small_repo(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    agent = Agent(engine, seed=23)
    steps = [agent.turn("main", tools=1)]
    gc_mod.collect(engine, policy=KEEP_ALL)  # start from one pack, so old packs get replaced
    planted = plant_orphans(engine.store, "first")
    rng = random.Random(1)
    # Deaths before step k of gc (k spread over the whole run), in turn a
    # full gc, one with a size budget that drops the side sessions (repacking
    # after each) and session_end's quick one; then kills at random moments.
    plan: list[tuple[int, float | None]] = [(k, None) for k in (1, 3, 4, 6, 7, 8, 9, 11, 15, 24)]
    plan += [(0, rng.uniform(0.0, 0.3)) for _ in range(2)]
    killed = 0
    for i, (kill_at, delay) in enumerate(plan):
        side_turn(agent, f"side-{i}")
        steps.append(agent.turn("main", tools=i % 2))  # new loose objects every round
        rc = run_killed_gc(root, data_dir, kill_at, ("full", "size", "quick")[i % 3], delay)
        killed += rc != 0
        left = orphans(engine.store)
        lone = [n for n in left if n.startswith("pack/pack-")]
        assert len(left) <= 6 and len(lone) <= 2, (
            f"round {i} (killed before step {kill_at}): leftovers accumulate: {left}"
        )
        packs = [n for n in pack_files(engine.store) if n.endswith(".pack")]
        assert len(packs) <= 4, f"round {i}: packs pile up: {packs}"

        # A new process opens the store: everything live is readable, capture
        # works, and the newest checkpoint undoes and redoes exactly.
        fresh = open_engine(root, data_dir)
        assert_live_objects_present(fresh)
        assert_checkpoint_files(fresh)
        fresh.capture()
        undo_redo_exact(fresh, steps[-1:], complete=False, skip="side")
    assert killed >= 8, f"most rounds must really die mid-way ({killed} of {len(plan)} did)"
    stale = planted & set(orphans(engine.store))
    assert not stale, f"leftovers planted before round 0 outlived later gcs: {sorted(stale)}"

    plant_orphans(engine.store, "last")
    report = gc_mod.collect(open_engine(root, data_dir), policy=KEEP_ALL)
    assert orphans(engine.store) == [], f"the next gc cleans every leftover: {report}"
    assert_packed(engine.store, "after the clean gc")
    assert not (objects_dir(engine.store) / "pack" / SCRATCH).exists(), "no scratch dir left"
    undo_redo_exact(open_engine(root, data_dir), steps, complete=False, skip="side")


def test_temp_files_of_this_and_older_versions_go_when_the_store_opens(
    tmp_path: Path, data_dir: Path
) -> None:
    root = small_repo(tmp_path / "repo")
    store = open_engine(root, data_dir).store
    pack = objects_dir(store) / "pack"
    leftovers = [
        pack / f"{TEMP_PREFIX}0123abcd.pack",  # a pack this version was writing
        pack / "tmp_snapshotter_0123abcd.idx",  # ... and one an older version was
        store.root / f"{TEMP_PREFIX}state",  # an atomic write cut short
    ]
    for path in leftovers:
        path.write_bytes(b"half written")
    open_engine(root, data_dir)  # a new process opens the store, under its lock
    assert [p.name for p in leftovers if p.exists()] == [], "every leftover went"


# -- session_end ----------------------------------------------------------------------


def test_session_end_runs_a_bounded_gc(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = small_repo(tmp_path / "repo")
    builtin = SnapshotBuiltin(data_dir_path=data_dir)
    calls: list[dict[str, object]] = []

    def inline(data: Path, worktree: Path, *, budget_s: float, policy: Policy) -> None:
        """What the detached gc process runs, run here so its report can be read."""
        calls.append({"budget_s": budget_s})
        engine = open_engine(worktree, data)
        calls[-1]["report"] = engine.gc(budget_s=budget_s, policy=policy)

    monkeypatch.setattr(detached_gc, "start", inline)
    monkeypatch.setattr(Snapshot, "_pack_if_many", keep_loose)  # leave the packing to session_end
    builtin.handle(hook_input("session_start", root), [])
    steps = []
    for turn in range(10):  # enough loose objects (or packs) to be worth compacting
        before = disk_state(root)
        builtin.handle(hook_input("turn_start", root), [])
        for i in range(30):
            path = write(root, f"many/t{turn}/f{i:02}.txt", f"turn {turn} file {i}\n")
            # Not "racily clean": a file this fresh is hashed again by the next capture,
            # and three turns of those (>= 64 files) would go to a pack, not loose.
            old = time.time() - 5
            os.utime(path, (old, old))
        cp = builtin.handle(hook_input("turn_end", root), [])
        assert cp is not None, "the turn recorded"
        steps.append(Step("s", cp.id, before, disk_state(root)))
    before = disk_state(root)
    builtin.handle(hook_input("turn_start", root), [])
    write(root, "README.md", "changed in a turn the runtime never ended\n")
    engine = open_engine(root, data_dir)
    packs_before = [n for n in pack_files(engine.store) if n.endswith(".idx")]
    assert len(loose_objects(engine.store)) >= packwriter.LOOSE_PACK_AT, (
        "the session leaves enough loose objects to be worth packing"
    )
    assert calls == [], "no gc before session_end"

    last = builtin.handle(hook_input("session_end", root), [])
    assert last is not None and last.label == "interrupted", "session_end closes the open turn"
    steps.append(Step("s", last.id, before, disk_state(root)))
    assert len(calls) == 1, f"session_end runs gc once: {calls}"
    budget = calls[0]["budget_s"]
    assert isinstance(budget, float) and 0 < budget < 60, f"the gc is time-bounded: {budget}"
    assert loose_objects(engine.store) == [], "the bounded gc packed the loose objects"
    packs_after = [n for n in pack_files(engine.store) if n.endswith(".idx")]
    assert len(packs_after) <= len(packs_before) + 1, f"one pack at most: {packs_after}"
    assert_live_objects_present(engine)
    undo_redo_exact(engine, steps[-3:], complete=False)

    # A session_end with little to do defers the work (the next run picks it up):
    # it starts no gc process at all.
    before = disk_state(root)
    builtin.handle(hook_input("turn_start", root), [])
    write(root, "README.md", "one more change\n")
    cp = builtin.handle(hook_input("turn_end", root), [])
    assert cp is not None
    steps.append(Step("s", cp.id, before, disk_state(root)))
    builtin.handle(hook_input("session_end", root), [])
    assert len(calls) == 1, "no gc started for a few loose objects"
    idle = engine.gc(budget_s=30.0)
    assert idle.reason, f"and a bounded gc would indeed have done nothing: {idle}"
    assert loose_objects(engine.store), "deferred: the few loose objects are still there"

    # When retention drops checkpoints, the bounded gc rewrites the store to free them.
    builtin.handle(hook_input("session_end", root), ["max_checkpoints=3"])
    report = calls[-1]["report"]
    assert isinstance(report, gc_mod.GcReport), f"session_end reports a GcReport: {report!r}"
    assert len(report.dropped.checkpoints) == 9, f"12 checkpoints, 3 kept: {report.dropped}"
    assert_packed(engine.store, "after a bounded gc that dropped checkpoints")
    assert_live_objects_present(engine)
    undo_redo_exact(engine, steps[-3:])  # exactly the three kept, nothing else to undo


@pytest.mark.parametrize("failure", [StoreError("disk full"), PermissionError(13, "denied")])
def test_session_end_never_fails_when_gc_fails(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    root = small_repo(tmp_path / "repo")
    builtin = SnapshotBuiltin(data_dir_path=data_dir)
    builtin(hook_input("session_start", root), [])
    builtin(hook_input("turn_start", root), [])
    write(root, "src/m0/f0.txt", "edited, turn left open\n")

    def broken(*_args: object, **_kwargs: object) -> None:
        raise failure

    monkeypatch.setattr(object_files, "remove_orphans", broken)  # gc's first step on disk

    def inline(data: Path, worktree: Path, *, budget_s: float, policy: Policy) -> None:
        run_detached(data, str(worktree), budget_s, policy)

    monkeypatch.setattr(detached_gc, "start", inline)  # the detached process's body, here
    # A killed write's leftover: session_end has something for gc to clear.
    (objects_dir(open_engine(root, data_dir).store) / "tmp_obj_left").write_bytes(b"")
    assert builtin(hook_input("session_end", root), []) is None, "the event returns normally"
    engine = open_engine(root, data_dir)
    cps = load(engine.store).checkpoints
    assert [cp.label for cp in cps] == ["interrupted"], "the open turn was recorded before gc"
    assert log_path(data_dir).exists(), "the gc failure is logged"
    undo.undo_last(engine, "s")
    assert (root / "src/m0/f0.txt").read_text() == "original 0\n", "undo works after it"
