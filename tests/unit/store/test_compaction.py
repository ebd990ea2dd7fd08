"""snapshotter/store/compaction.py: whether session_end's bounded gc has anything to do."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from snapshotter.git.pack_index import encode_index, object_count
from snapshotter.git.packs import LOOSE_PACK_AT
from snapshotter.store import compaction


def oid(seed: str) -> bytes:
    return hashlib.sha1(seed.encode()).digest()


def loose(objects: Path, count: int, tag: str = "") -> list[Path]:
    """``count`` loose object files (their bytes do not matter to ``due``)."""
    made = []
    for i in range(count):
        name = oid(f"{tag}{i}").hex()
        path = objects / name[:2] / name[2:]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
        made.append(path)
    return made


def pack(objects: Path, count: int, tag: str) -> None:
    """A pack of ``count`` objects, as its index lists them."""
    pack_dir = objects / "pack"
    pack_dir.mkdir(parents=True, exist_ok=True)
    name = f"pack-{oid(tag).hex()}"
    records = {oid(f"{tag}{i}"): (12 + i) << 32 for i in range(count)}
    (pack_dir / f"{name}.idx").write_bytes(encode_index(records, oid(tag)))
    (pack_dir / f"{name}.pack").write_bytes(b"PACK")
    assert object_count(pack_dir / f"{name}.idx") == count


def test_a_store_with_few_loose_objects_and_packs_in_proportion_is_left_alone(
    tmp_path: Path,
) -> None:
    objects = tmp_path / "objects"
    assert not compaction.due(objects), "no objects directory: nothing to do"
    objects.mkdir()
    assert not compaction.due(objects)
    loose(objects, LOOSE_PACK_AT - 1)
    pack(objects, 1000, "big")
    pack(objects, 10, "small")
    assert not compaction.due(objects), "a few loose objects, and packs in proportion"


def test_enough_loose_objects_of_its_own_make_a_gc_due(tmp_path: Path) -> None:
    objects = tmp_path / "objects"
    made = loose(objects, LOOSE_PACK_AT)
    assert compaction.due(objects)
    source = tmp_path / "source"
    source.mkdir()
    for i, path in enumerate(made):  # the source repository holds them too (seeded)
        os.link(path, source / str(i))
    assert not compaction.due(objects), "shared loose objects cost the store nothing"


def test_packs_the_geometric_rule_rolls_up_make_a_gc_due(tmp_path: Path) -> None:
    objects = tmp_path / "objects"
    pack(objects, 100, "a")
    assert not compaction.due(objects)
    pack(objects, 100, "b")
    assert compaction.due(objects), "two packs of one size are rolled into one"


def test_a_killed_writes_temp_file_makes_a_gc_due(tmp_path: Path) -> None:
    objects = tmp_path / "objects"
    loose(objects, 3)
    assert not compaction.due(objects)
    (objects / "ab").mkdir(exist_ok=True)
    (objects / "ab" / "tmp_obj_XYZ").write_bytes(b"half")
    assert compaction.due(objects), "gc clears what a killed write left"
    (objects / "ab" / "tmp_obj_XYZ").unlink()
    (objects / "tmp_object_git2_abc").write_bytes(b"half")
    assert compaction.due(objects)
