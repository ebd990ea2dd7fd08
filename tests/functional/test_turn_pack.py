"""A served turn's new objects go into one pack (git/held.py), and nothing else changes:
the tree is a full walk's, every byte reads back from a store opened afresh, and
undo puts the files back from it; a 1-file turn stays loose."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import blob_at, edit_files, make_repo, open_engine

from snapshotter.engine import Engine
from snapshotter.store import watch
from snapshotter.store.resident import Resident

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or watch.filesystem_type(Path.cwd()) is None,
    reason="inotify is Linux-only",
)

FILES = {f"d{i}/sub/f{i}.txt": f"file {i}\n" for i in range(12)}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "r", FILES)


@pytest.fixture
def served(root: Path, data_dir: Path) -> Iterator[Engine]:
    """An engine as the hook server opens it (its watcher on), its baseline taken:
    its captures after an edit are the O(changes) kind, which hold their objects."""
    if watch.filesystem_type(root) not in watch.LOCAL_FILESYSTEMS:
        pytest.skip(f"{root} is not on a local filesystem: nothing watches it")
    with Resident() as resident:
        engine = open_engine(root, data_dir, resident=resident)
        engine.capture()
        yield engine


def _objects(engine: Engine) -> tuple[set[str], set[str]]:
    """(loose object paths, pack index names) in the store."""
    top = engine.store.root / "git" / "objects"
    loose = {f"{d}/{f}" for d in os.listdir(top) if len(d) == 2 for f in os.listdir(top / d)}
    return loose, {name for name in os.listdir(top / "pack") if name.endswith(".idx")}


def test_a_ten_file_turn_is_one_pack_read_back_whole(
    served: Engine, root: Path, data_dir: Path, tmp_path: Path
) -> None:
    loose, packs = _objects(served)
    edits = {f"d{i}/sub/f{i}.txt": f"turn {i}\n" for i in range(10)}
    edit_files(root, edits)
    tree = served.capture().tree
    loose_after, packs_after = _objects(served)
    assert loose_after == loose, "the turn wrote no loose object"
    assert len(packs_after - packs) == 1, "one pack: 10 blobs and the 21 trees above them"
    # The tree is what a full walk of the same files makes, in a store of its own.
    assert open_engine(root, tmp_path / "cold").capture().tree == tree
    # Every byte reads back from a store opened afresh (no state of this process).
    fresh = open_engine(root, data_dir)
    for rel, text in edits.items():
        assert blob_at(fresh, tree, rel) == text.encode()


def test_undo_of_a_packed_turn_puts_the_files_back(served: Engine, root: Path) -> None:
    edit_files(root, {f"d{i}/sub/f{i}.txt": f"turn {i}\n" for i in range(10)})
    turn = served.checkpoint()
    assert turn is not None and len(turn.files) == 10
    served.undo("cli")
    for i in range(10):
        assert (root / f"d{i}/sub/f{i}.txt").read_text() == f"file {i}\n"
    served.redo("cli")
    for i in range(10):
        assert (root / f"d{i}/sub/f{i}.txt").read_text() == f"turn {i}\n"


def test_a_one_file_turn_stays_loose(served: Engine, root: Path) -> None:
    loose, packs = _objects(served)
    edit_files(root, {"d0/sub/f0.txt": "one\n"})
    served.capture()
    loose_after, packs_after = _objects(served)
    assert packs_after == packs, (sorted(packs), sorted(packs_after))
    assert len(loose_after - loose) == 4, "the blob and the 3 trees above it"
