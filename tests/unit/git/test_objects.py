"""snapshotter/git/objects.py: the shadow store's objects through libgit2, in our types."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapshotter.git import objects, trees
from snapshotter.git.kinds import BLOB, EMPTY_TREE, MODE_EXEC, MODE_FILE, MODE_LINK, TREE
from snapshotter.git.objects import ObjectDB, ObjectError

Files = dict[str, bytes | tuple[int, bytes]]  # contents, or (mode, contents)


@pytest.fixture
def db(tmp_path: Path) -> ObjectDB:
    objects.init_bare(tmp_path / "git")
    return ObjectDB(tmp_path / "git")


def store_tree(db: ObjectDB, files: Files) -> str:
    """The hex id of a tree of ``files``, stored with its blobs."""
    entries: dict[str, tuple[int, bytes]] = {}
    for path, value in files.items():
        mode, data = value if isinstance(value, tuple) else (MODE_FILE, value)
        oid = objects.hash_bytes(data)
        db.write(BLOB, data, oid)
        entries[path] = (mode, oid)
    root, written, _ids = trees.build(entries)
    for tree_id, body in written:
        db.write(TREE, body, tree_id)
    return root.hex()


def test_hashes_are_gits_blob_ids(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"hello\n")
    expected = bytes.fromhex("ce013625030ba8dba906f756967f9e9ca394464a")  # git hash-object
    assert objects.hash_bytes(b"hello\n") == expected
    assert objects.hash_file(tmp_path / "f") == expected
    with pytest.raises(ObjectError, match="cannot read"):
        objects.hash_file(tmp_path / "absent")


def test_what_is_written_is_read_back(db: ObjectDB) -> None:
    data = b"contents\n"
    oid = objects.hash_bytes(data)
    assert not db.has(oid) and db.header(oid) is None
    db.write(BLOB, data, oid)
    assert db.has(oid) and db.has(oid.hex())
    assert not db.has("not hex") and not db.has(b"short")
    assert db.header(oid) == (BLOB, len(data)) and db.blob_size(oid) == len(data)
    found = list(db.headers([bytes(20), oid, b"short"]))
    assert found == [(oid, BLOB, len(data))], "the absent and the malformed left out"
    assert db.blob(oid) == data and db.read(oid) == (BLOB, data)
    with pytest.raises(ObjectError, match="missing"):
        db.blob(bytes(20))
    with pytest.raises(ObjectError, match="missing"):
        db.read(bytes(20))


def test_a_big_file_is_streamed_in_once(db: ObjectDB, tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 300_000)
    oid = db.write_file_streamed(str(tmp_path / "big"))
    assert oid == objects.hash_bytes(b"x" * 300_000) and db.blob_size(oid) == 300_000
    assert db.write_file_streamed(str(tmp_path / "big")) == oid


def test_entries_and_files_of_a_tree(db: ObjectDB) -> None:
    tree = store_tree(
        db, {"a": b"a", "d/e/f": b"f", "d/g": (MODE_EXEC, b"g"), "l": (MODE_LINK, b"a")}
    )
    entry = db.entry(tree, "d/g")
    assert entry == (MODE_EXEC, objects.hash_bytes(b"g"))
    assert db.entry(tree, "d") is None and db.entry(tree, "absent") is None
    assert db.files_under(tree, "d") == ["d/e/f", "d/g"]
    assert db.files_under(tree, "") == ["a", "d/e/f", "d/g", "l"]
    assert db.files_under(tree, "a") == [] and db.files_under(tree, "nope") == []
    assert set(db.tree_items(bytes.fromhex(tree))) == {b"a", b"d", b"l"}
    assert db.tree_items(bytes.fromhex(EMPTY_TREE)) == {}
    with pytest.raises(ObjectError, match="missing"):
        db.tree_items(bytes(20))


def test_reachable_names_every_tree_and_blob_below(db: ObjectDB) -> None:
    tree = store_tree(db, {"a": b"a", "d/b": b"b", "d/c": b"a"})
    sub = db.tree_items(bytes.fromhex(tree))[b"d"][1]
    everything = {bytes.fromhex(tree), sub, objects.hash_bytes(b"a"), objects.hash_bytes(b"b")}
    assert db.reachable([tree]) == everything
    assert db.reachable([tree], known={sub}) == {bytes.fromhex(tree), objects.hash_bytes(b"a")}
    with pytest.raises(ObjectError, match="not a tree id"):
        db.reachable(["xyz"])


def test_changed_reads_only_what_differs(db: ObjectDB) -> None:
    before = store_tree(db, {"same": b"s", "mod": b"1", "gone": b"g", "x": b"file", "d/k": b"k"})
    after = store_tree(
        db,
        {
            "same": b"s",
            "mod": b"2",
            "new": b"n",
            "x/inside": b"now a dir",
            "d/k": (MODE_EXEC, b"k"),
        },
    )
    assert sorted(db.changed(before, after)) == [
        ("d/k", "M"),  # the exec bit
        ("gone", "D"),
        ("mod", "M"),
        ("new", "A"),
        ("x", "D"),  # a file that became a directory
        ("x/inside", "A"),
    ]
    assert db.changed(before, before) == []
    assert sorted(db.changed(EMPTY_TREE, store_tree(db, {"a/b": b""}))) == [("a/b", "A")]


def test_patches_count_lines_and_sizes(db: ObjectDB) -> None:
    before = store_tree(db, {"t.txt": b"one\ntwo\n", "bin": b"\0\1\2"})
    after = store_tree(db, {"t.txt": b"one\n2\nthree\n", "bin": b"\0\1\2\3"})
    found = {p.delta.path: p for p in db.patches(before, after)}
    text = found["t.txt"]
    assert (text.delta.status, text.delta.binary, text.added, text.removed) == ("M", False, 2, 1)
    assert (text.old_size, text.new_size) == (8, 12)
    assert text.data.startswith(b"diff --git a/t.txt b/t.txt\n") and b"+three\n" in text.data
    assert found["bin"].delta.binary and b"Binary files" in found["bin"].data
    (added,) = db.patches(EMPTY_TREE, store_tree(db, {"n": b"x\n"}))
    assert (added.delta.status, added.added, added.old_size, added.new_size) == ("A", 1, 0, 2)


def test_a_missing_store_is_named(tmp_path: Path) -> None:
    with pytest.raises(ObjectError, match="cannot open the store"):
        ObjectDB(tmp_path / "absent").has(bytes(20))


def test_with_libgit2_loaded_has_asks_it_and_sees_packs_written_behind_it(
    db: ObjectDB, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a process that has loaded libgit2 (a served command, the hook server) ``has``
    asks it, which indexed the packs once, instead of listing and searching every pack
    index again per call (``loose.stored``); a pack or a loose object written since
    the store was opened is still seen, an absent one is not."""
    from snapshotter.git import loose, packs

    def never(*_args: object) -> bool:
        raise AssertionError("loose.stored called with libgit2 loaded")

    monkeypatch.setattr(loose, "stored", never)
    first = objects.hash_bytes(b"first\n")
    db.write(BLOB, b"first\n", first)
    assert db.has(first)  # the repository is open now
    packed = objects.hash_bytes(b"packed\n")
    assert not db.has(packed)
    packs.write_pack(db.git_dir / "objects" / "pack", [(packed, BLOB, b"packed\n")])
    assert db.has(packed) and db.has(packed.hex()), "a pack moved in behind libgit2's back"
    other = ObjectDB(db.git_dir)  # not yet opened: still libgit2, as pygit2 is loaded
    assert other.has(packed) and other.has(first) and not other.has(bytes(20))
