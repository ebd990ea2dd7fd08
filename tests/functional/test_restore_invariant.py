"""#12.1: no undo, redo or reset deletes or overwrites bytes the store does not hold.

The repro (the agent only ignores ``notes.txt``; or edits and ignores it) and
a hypothesis property test interleaving edits, ignore-rule changes, files
crossing the new-file size limit, undo, redo and reset: after every step,
every byte string that was in a file when a restore began is on disk or in a
tree the store keeps (a checkpoint, a pending span, a redo entry).

Examples: 30 in the default run, 300 with ``pytest -m slow``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pygit2
import pytest
from builders import fast_and_full, make_repo, write
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from snapshotter.engine import Engine
from snapshotter.errors import Conflict, NothingToDo
from snapshotter.history import undo
from snapshotter.history.recorder import Recorder
from snapshotter.history.state_file import load

SESSION = "s"
LIMIT = 64  # max_new_file_size: a few bytes more make a file "large"
POOL = ("a.txt", "b.txt", "d/c.txt")


class World:
    """One repository, its store and one session, driven in-process."""

    def __init__(self, root: Path, data: Path) -> None:
        self.root, self.data = root, data

    def engine(self) -> Engine:
        engine = Engine.open(self.root, data_dir_path=self.data, max_new_file_size=LIMIT)
        assert engine is not None
        return engine

    def turn(self, *edits: tuple[str, bytes | None]) -> None:
        Recorder(self.engine(), SESSION).turn_start()
        for rel, content in edits:
            put(self.root, rel, content)
        Recorder(self.engine(), SESSION).turn_end("end")

    def undo(self, force: bool = False) -> None:
        undo.undo_last(self.engine(), SESSION, force=force)

    def redo(self, force: bool = False) -> None:
        undo.redo(self.engine(), SESSION, force=force)

    def reset(self) -> None:
        undo.reset(self.engine(), SESSION, None, force=True)

    def contents(self) -> set[bytes]:
        """Every file's bytes in the worktree (outside .git)."""
        found = set()
        for dirpath, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d != ".git"]
            for name in files:
                found.add((Path(dirpath) / name).read_bytes())
        return found

    def kept(self) -> set[bytes]:
        """Raw ids of every blob below a tree the store keeps alive."""
        engine = self.engine()
        repo = engine.store.objects.repo
        blobs: set[bytes] = set()
        seen: set[str] = set()
        stack = list(load(engine.store).live_trees())
        while stack:
            oid = stack.pop()
            if oid in seen:
                continue
            seen.add(oid)
            obj = repo[oid]
            if isinstance(obj, pygit2.Tree):
                stack.extend(str(e.id) for e in obj)
            else:
                blobs.add(obj.id.raw)
        return blobs


def put(root: Path, rel: str, content: bytes | None) -> None:
    path = root / rel
    if content is None:
        path.unlink(missing_ok=True)
    else:
        write(root, rel, content)


def ignore(root: Path, rel: str, on: bool) -> None:
    path = root / ".gitignore"
    lines = path.read_text().splitlines() if path.exists() else []
    lines = [line for line in lines if line != f"/{rel}"] + ([f"/{rel}"] if on else [])
    path.write_text("".join(f"{line}\n" for line in lines))


def blob_id(data: bytes) -> bytes:
    return pygit2.hash(data).raw


# -- the repro -----------------------------------------------------------------------------


def test_a_file_the_agent_only_ignored_is_not_deleted_and_undo_keeps_it(
    tmp_path: Path, data_dir: Path
) -> None:
    root = make_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    world = World(root, data_dir)
    write(root, "notes.txt", "my notes\n")
    Recorder(world.engine(), SESSION).session_start()  # notes.txt is captured
    world.turn((".gitignore", b"notes.txt\n"))

    cp = load(world.engine().store).checkpoints[-1]
    files = {f.path: f.status for f in cp.files}
    assert files == {".gitignore": "added"}, (
        f"the turn only added .gitignore; notes.txt is still on disk, not deleted: {files}"
    )
    reasons = {s.path: s.reason for s in cp.skipped}
    assert "no longer captured" in reasons.get("notes.txt", ""), (
        f"notes.txt should be reported as no longer captured; skipped: {reasons}"
    )
    world.undo()  # no --force needed: nothing of the user's is in the way
    assert (root / "notes.txt").read_bytes() == b"my notes\n", "undo must leave notes.txt"
    assert not (root / ".gitignore").exists(), "undo removes the .gitignore the agent added"
    world.redo()
    assert (root / "notes.txt").read_bytes() == b"my notes\n", "redo must leave notes.txt"


def test_an_edited_then_ignored_file_survives_undo_and_comes_back_with_redo(
    tmp_path: Path, data_dir: Path
) -> None:
    root = make_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    world = World(root, data_dir)
    write(root, "notes.txt", "v1\n")
    Recorder(world.engine(), SESSION).session_start()
    world.turn(("notes.txt", b"v2 by the agent\n"))  # notes.txt modified, captured
    # The user now ignores notes.txt and goes on writing in it: no capture holds v3.
    write(root, ".gitignore", "notes.txt\n")
    write(root, "notes.txt", "v3 the user's\n")

    with pytest.raises(Conflict):
        world.undo()  # v3 is not what the turn left
    world.undo(force=True)
    assert (root / "notes.txt").read_bytes() == b"v1\n", "undo puts back the turn's before"
    world.redo()
    assert (root / "notes.txt").read_bytes() == b"v3 the user's\n", (
        "redo must bring back the user's bytes that undo overwrote (they were never captured)"
    )


# -- the property --------------------------------------------------------------------------

content = st.one_of(
    st.sampled_from([b"one\n", b"two\n", b"three\n"]),
    st.integers(1, 9).map(lambda n: b"large %d\n" % n + b"x" * (LIMIT + n)),
)
target = st.sampled_from(POOL)
action = st.one_of(
    st.tuples(st.just("write"), target, st.one_of(st.none(), content)),  # None: delete
    st.tuples(st.just("ignore"), target, st.booleans()),  # a .gitignore line added/removed
)
step = st.one_of(
    st.tuples(st.just("agent"), st.lists(action, min_size=1, max_size=3)),  # one turn
    st.tuples(st.just("user"), st.lists(action, min_size=1, max_size=3)),  # outside turns
    st.tuples(st.just("undo")),
    st.tuples(st.just("redo"), st.booleans()),  # with --force or not
    st.tuples(st.just("reset")),
)
# The two repros, always run first: the agent edits and ignores a file in
# one turn; the user ignores a captured file and edits it after the turn.
REPRO_AGENT = [
    ("agent", [("write", "b.txt", b"two\n"), ("ignore", "b.txt", True)]),
    ("undo",),
    ("redo", False),
]
REPRO_USER = [
    ("agent", [("write", "a.txt", b"one\n")]),
    ("user", [("ignore", "a.txt", True), ("write", "a.txt", b"two\n")]),
    ("undo",),
    ("redo", False),
]


def perform(root: Path, actions: list[tuple[str, str, object]]) -> None:
    for verb, rel, arg in actions:
        if verb == "write":
            put(root, rel, arg)  # type: ignore[arg-type]
        else:
            ignore(root, rel, bool(arg))


@pytest.mark.parametrize("examples", fast_and_full(30, 300))
def test_no_restore_ever_destroys_bytes_the_store_does_not_hold(
    examples: int, tmp_path: Path
) -> None:
    ran: list[int] = []

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(steps=st.lists(step, min_size=2, max_size=10))
    @example(steps=REPRO_AGENT)
    @example(steps=REPRO_USER)
    def run(steps: list[tuple[Any, ...]]) -> None:
        ran.append(len(steps))
        never_destroys(steps, tmp_path)

    run()
    print(f"\n[restore-invariant] {len(ran)} examples, {sum(ran)} steps")


def never_destroys(steps: list[tuple[Any, ...]], tmp_path: Path) -> None:
    base = Path(tempfile.mkdtemp(dir=tmp_path))
    try:
        root = make_repo(base / "repo", {"a.txt": "committed a\n"})
        world = World(root, base / "data")
        write(root, "b.txt", "untracked b\n")
        Recorder(world.engine(), SESSION).session_start()
        protected: set[bytes] = set()
        for i, s in enumerate(steps):
            kind = s[0]
            if kind in ("undo", "redo", "reset"):
                protected |= world.contents()
                with contextlib.suppress(NothingToDo, Conflict):
                    if kind == "undo":
                        world.undo(force=True)
                    elif kind == "redo":
                        world.redo(force=bool(s[1]))
                    else:
                        world.reset()
            elif kind == "agent":
                Recorder(world.engine(), SESSION).turn_start()
                perform(root, s[1])
                Recorder(world.engine(), SESSION).turn_end("end")
            else:
                perform(root, s[1])
            on_disk, kept = world.contents(), world.kept()
            lost = sorted(c for c in protected if c not in on_disk and blob_id(c) not in kept)
            # An edit may drop bytes (the user's delete, a new turn clearing redo); a
            # restore never may.
            assert not lost or kind not in ("undo", "redo", "reset"), (
                f"after step {i} {s} of {steps}: bytes a restore began with are gone: {lost}"
            )
            protected = {c for c in protected if c in on_disk or blob_id(c) in kept}
    finally:
        shutil.rmtree(base, ignore_errors=True)
