"""snapshotter/git/packs.py: packs written without libgit2, read back by libgit2."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from snapshotter.git import packs
from snapshotter.git.kinds import BLOB, TREE
from snapshotter.git.packs import object_id
from snapshotter.git.trees import tree_bytes


def objects_of(repo: pygit2.Repository) -> Path:
    return Path(repo.path) / "objects"


@pytest.mark.parametrize("level", [1, 0], ids=["compressed", "stored"])
def test_a_written_pack_holds_every_object_for_libgit2(tmp_path: Path, level: int) -> None:
    """Stored (level 0: how a first capture writes its trees) is a zlib stream too."""
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    blobs = [b"", b"one\n", b"x" * 100_000]
    objects = [(object_id(BLOB, data), BLOB, data) for data in blobs]
    tree = tree_bytes({b"a": (0o100644, objects[1][0])})
    objects.append((object_id(TREE, tree), TREE, tree))
    objects.append(objects[1])  # twice: written once
    pack_dir = objects_of(repo) / "pack"
    assert packs.write_pack(pack_dir, objects, level=level) == 4
    (pack,) = pack_dir.glob("*.pack")
    assert (pack.stat().st_size > 100_000) == (level == 0), "stored, or compressed"
    names = sorted(p.suffix for p in pack_dir.iterdir())
    assert names == [".idx", ".pack"], "no temp file left"
    for oid, kind, data in objects:
        found = repo[pygit2.Oid(raw=oid)]
        assert (found.type, found.read_raw()) == (kind, data)
    assert object_id(BLOB, b"one\n").hex() == str(repo.create_blob(b"one\n"))


def test_nothing_to_write_writes_nothing(tmp_path: Path) -> None:
    assert packs.write_pack(tmp_path, []) == 0
    assert list(tmp_path.iterdir()) == []


def test_copy_pack_copies_libgit2s_deltas_and_adds_loose_objects(tmp_path: Path) -> None:
    source = pygit2.init_repository(str(tmp_path / "src"), bare=True)
    base = b"".join(b"line %d\n" % n for n in range(2000))
    ids = [source.create_blob(base + b"edit %d\n" % n) for n in range(5)]
    loose = source.create_blob(b"only loose\n")
    out = tmp_path / "packed"
    out.mkdir()

    def add_all(builder: pygit2.PackBuilder) -> None:
        for oid in ids:
            builder.add(oid)

    source.pack(str(out), add_all)
    (pack,) = out.glob("*.pack")
    wanted = {bytes.fromhex(str(i)) for i in ids[1:]}  # ids[0] left out: a delta base maybe

    def read(oid: bytes) -> tuple[int, bytes]:
        found = source[pygit2.Oid(raw=oid)]
        return int(found.type), found.read_raw()

    target = pygit2.init_repository(str(tmp_path / "dst"), bare=True)
    pack_dir = objects_of(target) / "pack"
    loose_id = bytes.fromhex(str(loose))
    assert packs.copy_pack(pack_dir, [(pack, wanted)], [loose_id], read) == 5
    for oid in (*wanted, loose_id):
        assert target[pygit2.Oid(raw=oid)].read_raw() == source[pygit2.Oid(raw=oid)].read_raw()
    assert pygit2.Oid(raw=bytes.fromhex(str(ids[0]))) not in target


def test_clean_pack_dir_removes_what_killed_writes_left(tmp_path: Path) -> None:
    pack = "pack-" + "a" * 40
    for name in (f"{pack}.pack", f"{pack}.idx", f"{pack}.keep", "pack-" + "b" * 40 + ".pack"):
        (tmp_path / name).write_bytes(b"")
    (tmp_path / ".snapshotter-tmp-1.pack").write_bytes(b"")
    (tmp_path / "tmp_pack_x").write_bytes(b"")  # git's own temp
    assert packs.clean_pack_dir(tmp_path) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"{pack}.idx",
        f"{pack}.keep",
        f"{pack}.pack",
    ]
