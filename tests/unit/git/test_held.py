"""snapshotter/git/held.py and ``ObjectDB.held``: a capture's new objects, held in
memory and written together at the block's end (one pack when there are enough),
seen by every read meanwhile and after, noted for the next settle, dropped on failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapshotter import durable
from snapshotter.git import held as held_module
from snapshotter.git import objects, trees
from snapshotter.git.held import MAX_PACKS, PACK_FROM
from snapshotter.git.kinds import BLOB, MODE_FILE, TREE
from snapshotter.git.objects import ObjectDB, ObjectError
from snapshotter.git.packs import object_id


@pytest.fixture
def db(tmp_path: Path) -> ObjectDB:
    objects.init_bare(tmp_path / "git")
    return ObjectDB(tmp_path / "git")


def _loose(db: ObjectDB) -> list[str]:
    top = db.git_dir / "objects"
    return [f"{d}/{f}" for d in os.listdir(top) if len(d) == 2 for f in os.listdir(top / d)]


def _packs(db: ObjectDB) -> list[str]:
    return sorted(os.listdir(db.git_dir / "objects" / "pack"))


def _write_turn(db: ObjectDB, count: int, turn: int = 0) -> tuple[dict[bytes, bytes], bytes]:
    """``count`` new blobs and the tree naming them, written through ``db``; (blobs, tree)."""
    blobs: dict[bytes, bytes] = {}
    for i in range(count):
        data = b"turn %d, file %d\n" % (turn, i)
        oid = objects.hash_bytes(data)
        assert not db.has(oid)
        db.write(BLOB, data, oid)
        blobs[oid] = data
    entries = {f"f{i}.txt": (MODE_FILE, oid) for i, oid in enumerate(blobs)}
    root, written, _ids = trees.build(entries)
    for tree_id, body in written:
        db.write(TREE, body, tree_id)
    return blobs, root


def test_enough_objects_become_one_pack_seen_by_the_same_open_repository(db: ObjectDB) -> None:
    db.has(bytes(20))  # libgit2 open, its pack list read before the pack exists
    with db.held() as held:
        blobs, root = _write_turn(db, PACK_FROM)
        # Meanwhile every read sees them, and nothing is on disk yet.
        oid, data = next(iter(blobs.items()))
        assert db.has(oid) and db.has(oid.hex())
        assert db.read(oid) == (BLOB, data) and db.blob(oid) == data
        assert db.header(oid) == (BLOB, len(data))
        assert set(db.tree_items(root)) == {b"f%d.txt" % i for i in range(PACK_FROM)}
        assert _loose(db) == [] and _packs(db) == []
    assert held.loose == 0, "none went loose"
    assert _loose(db) == [], "no loose file: one pack instead"
    assert len([p for p in _packs(db) if p.endswith(".idx")]) == 1
    # The repository opened before the pack finds it (libgit2 rescans on a miss) ...
    for oid, data in blobs.items():
        assert db.has(oid) and db.blob(oid) == data
    assert db.tree_items(root)[b"f0.txt"] == (MODE_FILE, objects.hash_bytes(b"turn 0, file 0\n"))
    # ... and so does a fresh one, from the pack alone.
    whole, damaged = objects.read_from_packs(db.git_dir / "objects", [*blobs, root])
    assert whole == {*blobs, root} and not damaged


def test_the_pack_is_noted_for_the_next_settle(db: ObjectDB) -> None:
    """The write order (durable.py): the records that will name these objects are
    written after a settle, which must sync the pack and its index."""
    durable.settle()
    with db.held():
        _write_turn(db, PACK_FROM)
    pack_dir = db.git_dir / "objects" / "pack"
    names = {str(pack_dir / name) for name in _packs(db)}
    assert len(names) == 2
    with durable._lock:
        noted = set(durable._files)
    assert names <= noted, f"pack files not noted for the next settle: {names - noted}"
    durable.settle()


def test_few_objects_go_loose_as_ever(db: ObjectDB) -> None:
    with db.held() as held:
        blobs, _root = _write_turn(db, 2)  # 2 blobs and their tree
    assert held.loose == 3
    assert len(_loose(db)) == 3 and _packs(db) == []
    assert all(db.blob(oid) == data for oid, data in blobs.items())


def test_past_max_packs_objects_go_loose(db: ObjectDB, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long session does not make every lookup search ever more packs: past the
    bound a capture writes loose objects (session_end's gc rolls the packs up)."""
    monkeypatch.setattr(held_module, "MAX_PACKS", 1)
    assert MAX_PACKS > 1
    with db.held():
        _write_turn(db, PACK_FROM)
    assert len(_packs(db)) == 2 and _loose(db) == []
    with db.held() as held:
        blobs, _root = _write_turn(db, PACK_FROM + 1, turn=1)
    assert held.loose == PACK_FROM + 2
    assert len(_packs(db)) == 2, "no second pack"
    assert all(db.blob(oid) == data for oid, data in blobs.items())


def test_a_failed_block_writes_nothing(db: ObjectDB) -> None:
    with pytest.raises(RuntimeError), db.held():
        _write_turn(db, PACK_FROM)
        raise RuntimeError("the capture failed")
    assert _loose(db) == [] and _packs(db) == []
    data = b"turn 0, file 0\n"
    oid = objects.hash_bytes(data)
    assert not db.has(oid)
    with pytest.raises(ObjectError):
        db.read(oid)
    # And writes after the block are written at once again.
    db.write(BLOB, data, oid)
    assert len(_loose(db)) == 1


@pytest.mark.parametrize("count", [0, PACK_FROM], ids=["loose", "packed"])
@pytest.mark.parametrize("kind", [BLOB, TREE], ids=["blob", "tree"])
def test_a_stored_object_is_never_written_again(db: ObjectDB, count: int, kind: int) -> None:
    """Whichever way the block ends, a stored object's file is left alone (libgit2
    would touch a file seeding hard-linked from the source repository, #12.4); and
    a stored blob is not copied into the pack (a racy file read again)."""
    data = trees.tree_bytes({b"f": (MODE_FILE, bytes(20))}) if kind == TREE else b"stored\n"
    oid = object_id(kind, data)
    db.put(kind, data, oid)
    (path,) = _loose(db)
    stored = db.git_dir / "objects" / path
    os.utime(stored, ns=(10**9, 10**9))
    with db.held() as held:
        db.put(kind, data, oid)
        for i in range(count):  # new ones beside it
            more = b"new %d\n" % i
            db.put(BLOB, more, objects.hash_bytes(more))
    assert stored.stat().st_mtime_ns == 10**9, "the stored object was written again"
    assert held.loose == 0, "nothing went loose: stored already, or packed"
    assert db.read(oid) == (kind, data)
    if kind == BLOB and count:
        whole, _damaged = objects.read_from_packs(db.git_dir / "objects", [oid])
        assert not whole, "a stored blob was copied into the pack"
