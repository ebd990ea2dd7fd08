"""snapshotter/store/changes.py: what changed between two recorded trees, as data."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from snapshotter.git import objects, trees
from snapshotter.git.kinds import BLOB, MODE_EXEC, MODE_FILE, MODE_LINK, TREE
from snapshotter.git.objects import ObjectDB
from snapshotter.store import changes
from snapshotter.store.shadow import Store

Files = dict[str, bytes | tuple[int, bytes]]


@pytest.fixture
def db(tmp_path: Path) -> ObjectDB:
    objects.init_bare(tmp_path / "git")
    return ObjectDB(tmp_path / "git")


def store_of(db: ObjectDB) -> Store:
    """What these functions use of a Store: its objects."""
    return cast(Store, SimpleNamespace(objects=db))


def tree(db: ObjectDB, files: Files) -> str:
    entries: dict[str, tuple[int, bytes]] = {}
    for path, value in files.items():
        mode, data = value if isinstance(value, tuple) else (MODE_FILE, value)
        oid = objects.hash_bytes(data)
        db.write(BLOB, data, oid)
        entries[path] = (mode, oid)
    root, written, _ = trees.build(entries)
    for tree_id, body in written:
        db.write(TREE, body, tree_id)
    return root.hex()


def test_statuses_are_sorted_and_scoped(db: ObjectDB) -> None:
    before = tree(db, {"b": b"1", "a/x": b"x", "gone": b"g", "run": b"r"})
    after = tree(db, {"b": b"2", "a/x": b"x", "new": b"n", "run": (MODE_EXEC, b"r")})
    store = store_of(db)
    assert changes.statuses(store, before, after) == [
        ("b", "modified"),
        ("gone", "deleted"),
        ("new", "added"),
        ("run", "modified"),
    ]
    assert changes.statuses(store, before, after, lambda p: p < "h") == [
        ("b", "modified"),
        ("gone", "deleted"),
    ]
    assert changes.statuses(store, before, before) == []
    found = changes.changes(store, before, after, lambda p: p == "new")
    assert [(c.path, c.status) for c in found] == [("new", "added")]


def test_a_type_change_is_one_modified_file_with_both_patches(db: ObjectDB) -> None:
    before = tree(db, {"p": b"text\n", "t": b"one\n"})
    after = tree(db, {"p": (MODE_LINK, b"target"), "t": b"one\ntwo\n"})
    store = store_of(db)
    assert changes.statuses(store, before, after) == [("p", "modified"), ("t", "modified")]
    diffs = {d.path: d for d in changes.file_diffs(store, before, after)}
    p = diffs["p"]
    assert (p.status, p.binary, p.added, p.removed) == ("modified", False, 1, 1)
    assert (p.old_size, p.new_size) == (5, 6) and len(p.patches) == 2
    t = diffs["t"]
    assert (t.status, t.added, t.removed, t.old_size, t.new_size) == ("modified", 1, 0, 4, 8)


def test_sizes_are_none_where_the_file_does_not_exist(db: ObjectDB) -> None:
    before = tree(db, {"old": b"12345"})
    after = tree(db, {"new": b"\0binary\0"})
    diffs = {d.path: d for d in changes.file_diffs(store_of(db), before, after)}
    assert (diffs["old"].status, diffs["old"].old_size, diffs["old"].new_size) == (
        "deleted",
        5,
        None,
    )
    new = diffs["new"]
    assert (new.status, new.binary, new.old_size, new.new_size) == ("added", True, None, 8)


def test_diff_text_is_the_patches_of_the_paths_asked(db: ObjectDB) -> None:
    before = tree(db, {"a": b"a\n", "b": b"b\n"})
    after = tree(db, {"a": b"A\n", "b": b"B\n"})
    text = changes.diff_text(store_of(db), before, after, ["b"])
    assert text.startswith("diff --git a/b b/b\n") and "-b\n+B\n" in text and "a/a" not in text
    assert "diff --git a/a b/a" in changes.diff_text(store_of(db), before, after)
