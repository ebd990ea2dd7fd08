"""snapshotter/git/kept_trees.py: trees parsed from their bytes, kept by tree id.

libgit2 is the oracle for parsing; what is kept must answer for the tree's
id and for no other, and only in a store that holds it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest

from snapshotter.git import kept_trees, objects, trees
from snapshotter.git.kinds import MODE_EXEC, MODE_FILE, MODE_LINK, MODE_TREE, TREE
from snapshotter.git.objects import ObjectDB, ObjectError
from snapshotter.git.packs import object_id
from unit.git.test_objects import store_tree


@pytest.fixture(autouse=True)
def nothing_kept() -> Iterator[None]:
    kept_trees.clear()
    yield
    kept_trees.clear()


def new_db(path: Path) -> ObjectDB:
    objects.init_bare(path)
    return ObjectDB(path)


def raw_tree(db: ObjectDB, entries: list[tuple[bytes, bytes, bytes]]) -> bytes:
    """A tree object written byte for byte as given: (mode digits, name, raw id)."""
    body = b"".join(mode + b" " + name + b"\0" + oid for mode, name, oid in entries)
    oid = object_id(TREE, body)
    db.write(TREE, body, oid)
    return oid


def test_parsing_matches_libgit2_on_awkward_names_and_ids(tmp_path: Path) -> None:
    db = new_db(tmp_path / "git")
    ids = [bytes([0] * 20), b" \0\n1" * 5, bytes(range(20)), bytes(range(235, 255))]
    entries = [
        (b"100644", b"a b", ids[0]),
        (b"100755", b"line\nbreak", ids[1]),
        (b"120000", b"\xff\xfe not utf-8", ids[2]),
        (b"40000", b"dir 100644 x", ids[3]),
        (b"160000", b"sub", ids[0]),
        (b"100664", b"legacy-group-writable", ids[1]),  # libgit2 reports it as 100644
        (b"100775", b"legacy-exec", ids[2]),  # ... and this as 100755
    ]
    tree = raw_tree(db, sorted(entries, key=lambda e: e[1] + (b"/" if e[0] == b"40000" else b"")))
    oracle = pygit2.Repository(str(tmp_path / "git"))[pygit2.Oid(raw=tree)]
    assert isinstance(oracle, pygit2.Tree)
    expected = {e.raw_name: (int(e.filemode), e.id.raw) for e in oracle}
    assert dict(db.tree_items(tree)) == expected
    assert expected[b"legacy-group-writable"][0] == MODE_FILE
    assert expected[b"legacy-exec"][0] == MODE_EXEC


def test_a_damaged_tree_is_an_error_not_a_guess() -> None:
    good = b"100644 a\0" + bytes(20)
    assert kept_trees.parse(good) == {b"a": (MODE_FILE, bytes(20))}
    for bad in (good[:-1], good + b"x", b"100644 \0" + bytes(20), b"1x0644 a\0" + bytes(20)):
        with pytest.raises(kept_trees.MalformedTree):
            kept_trees.parse(bad)


def test_what_is_kept_answers_for_its_id_only(tmp_path: Path) -> None:
    """Two versions of one directory: each read gives its own entries, never the other's
    (a cache keyed by path, or by anything but the id, fails here)."""
    db = new_db(tmp_path / "git")
    one = store_tree(db, {"d/f": b"one", "d/same": b"s", "top": b"t"})
    two = store_tree(db, {"d/f": b"two", "d/same": b"s", "top": b"t"})
    for _ in range(2):  # read, then kept
        assert db.entry(one, "d/f") == (MODE_FILE, objects.hash_bytes(b"one"))
        assert db.entry(two, "d/f") == (MODE_FILE, objects.hash_bytes(b"two"))
        assert db.changed(one, two) == [("d/f", "M")]
        assert db.changed(two, one) == [("d/f", "M")]
    edited = trees.edit(
        one,
        {"d/f": (MODE_LINK, objects.hash_bytes(b"two"))},
        db.tree_items,
        lambda data: blobs_put(db, data),
        db.keep_tree,
    )
    assert db.entry(edited, "d/f") == (MODE_LINK, objects.hash_bytes(b"two"))
    assert db.entry(one, "d/f") == (MODE_FILE, objects.hash_bytes(b"one"))  # not edited in place
    fresh = ObjectDB(tmp_path / "git")  # what was kept when written is what is stored
    kept_trees.clear()
    assert fresh.entry(edited, "d/f") == (MODE_LINK, objects.hash_bytes(b"two"))


def blobs_put(db: ObjectDB, data: bytes) -> bytes:
    oid = object_id(TREE, data)
    if not db.has(oid):
        db.write(TREE, data, oid)
    return oid


def test_a_kept_tree_is_missing_from_a_store_that_lacks_it(tmp_path: Path) -> None:
    """The cache is per process, the objects per store: a tree another store read is
    still reported missing here, and a store never edits from a tree it lacks."""
    ours, other = new_db(tmp_path / "ours"), new_db(tmp_path / "other")
    tree = store_tree(other, {"d/f": b"x"})
    assert other.tree_items(bytes.fromhex(tree))  # now kept
    with pytest.raises(ObjectError, match="missing"):
        ours.tree_items(bytes.fromhex(tree))
    assert ours.entry(tree, "d/f") is None
    with pytest.raises(ObjectError, match="missing"):
        trees.edit(tree, {"d/g": None}, ours.tree_items, lambda d: blobs_put(ours, d))


def test_kept_entries_are_read_only_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = new_db(tmp_path / "git")
    monkeypatch.setattr(kept_trees, "KEPT_ENTRIES", 3)
    first = bytes.fromhex(store_tree(db, {"a": b"1", "b": b"2"}))
    items = db.tree_items(first)
    with pytest.raises(TypeError):
        items[b"c"] = (MODE_FILE, bytes(20))  # type: ignore[index]
    assert kept_trees.get(first) is items
    second = bytes.fromhex(store_tree(db, {"c": b"3", "d": b"4"}))
    db.tree_items(second)
    assert kept_trees.get(first) is None and kept_trees.get(second) is not None  # 4 > 3
    big = bytes.fromhex(store_tree(db, {n: n.encode() for n in "wxyz"}))
    assert len(db.tree_items(big)) == 4 and kept_trees.get(big) is None  # over the bound
    assert kept_trees.get(second) is not None
    assert db.tree_items(bytes.fromhex(store_tree(db, {"t/u": b"5"})))[b"t"][0] == MODE_TREE
