"""snapshotter/git/trees.py: tree bytes as git writes them, whole, updated, or edited.

libgit2 is the oracle: the same entries must give the same tree ids.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pygit2
import pytest

from snapshotter.git import trees
from snapshotter.git.kinds import MODE_EXEC, MODE_FILE, MODE_LINK, MODE_TREE, TREE
from snapshotter.git.packs import object_id

Entries = dict[str, tuple[int, bytes]]


@pytest.fixture
def repo(tmp_path: Path) -> pygit2.Repository:
    return pygit2.init_repository(str(tmp_path / "r"), bare=True)


def blob(repo: pygit2.Repository, text: str) -> bytes:
    return bytes.fromhex(str(repo.create_blob(text.encode())))


def libgit2_tree(repo: pygit2.Repository, entries: Entries) -> str:
    index = pygit2.Index()
    for path, (mode, oid) in entries.items():
        index.add(pygit2.IndexEntry(path, pygit2.Oid(raw=oid), pygit2.enums.FileMode(mode)))
    return str(index.write_tree(repo))


def reader(repo: pygit2.Repository) -> Callable[[bytes], trees.Items]:
    """A stored tree's items, for ``trees.edit``."""

    def read(oid: bytes) -> trees.Items:
        tree = repo[pygit2.Oid(raw=oid)]
        assert isinstance(tree, pygit2.Tree)
        return {str(e.name).encode(): (e.filemode, bytes.fromhex(str(e.id))) for e in tree}

    return read


def sample(repo: pygit2.Repository) -> Entries:
    names = ["foo", "foo.c", "foo-bar/x", "foo/a", "foo/b/c", "a b", "é", "Z", "z/.hidden"]
    names.remove("foo")  # (a file and a directory cannot share a name)
    entries = {name: (MODE_FILE, blob(repo, name)) for name in names}
    entries["run.sh"] = (MODE_EXEC, blob(repo, "#!/bin/sh"))
    entries["link"] = (MODE_LINK, blob(repo, "foo.c"))
    return entries


def test_a_whole_build_gives_libgit2s_ids(repo: pygit2.Repository) -> None:
    entries = sample(repo)
    root, written, ids = trees.build(entries)
    assert root.hex() == libgit2_tree(repo, entries)
    assert set(ids) == {"", "foo", "foo/b", "foo-bar", "z"}
    for oid, data in written:
        assert object_id(TREE, data) == oid
        assert repo.odb.write(pygit2.enums.ObjectType.TREE, data).raw == oid


def names_in(body: bytes) -> list[bytes]:
    """The entry names of a tree body, in order (``<mode> <name>\\0<20-byte id>`` each)."""
    found = []
    while body:
        head, body = body.split(b"\0", 1)
        found.append(head.split(b" ", 1)[1])
        body = body[20:]
    return found


def test_entries_are_in_gits_order_directories_as_if_slashed() -> None:
    ids = bytes(20)
    items = {
        b"foo": (MODE_TREE, ids),
        b"foo.c": (MODE_FILE, ids),
        b"foo0": (MODE_FILE, ids),
        b"Foo": (MODE_FILE, ids),
    }
    assert names_in(trees.tree_bytes(items)) == [b"Foo", b"foo.c", b"foo", b"foo0"]
    assert trees.tree_bytes({b"a": (MODE_EXEC, b"\x01" * 20)}) == b"100755 a\0" + b"\x01" * 20
    assert trees.tree_bytes({b"d": (MODE_TREE, ids)}).startswith(b"40000 d\0"), "no leading 0"


def test_an_update_rehashes_only_the_way_to_the_root(repo: pygit2.Repository) -> None:
    entries = sample(repo)
    _root, _written, ids = trees.build(entries)
    changed = dict(entries)
    changed["foo/b/c"] = (MODE_FILE, blob(repo, "new"))
    changed["foo/b/d"] = (MODE_FILE, blob(repo, "added"))
    del changed["z/.hidden"]  # its directory is left empty, so gone
    root, written, new_ids = trees.update(changed, ids, ["foo/b/c", "foo/b/d", "z/.hidden"])
    assert root.hex() == libgit2_tree(repo, changed)
    assert {oid for oid, _ in written} == {new_ids[d] for d in ("", "foo", "foo/b")}
    assert "z" not in new_ids and new_ids["foo-bar"] == ids["foo-bar"]


def test_random_updates_equal_a_full_build(repo: pygit2.Repository) -> None:
    rng = random.Random(7)
    entries: Entries = {}
    ids: dict[str, bytes] = {}
    for step in range(30):
        paths = [f"{rng.choice('abc')}/{rng.choice('de')}/{rng.randrange(4)}" for _ in range(3)]
        for path in paths:
            if path in entries and rng.random() < 0.4:
                del entries[path]
            else:
                entries[path] = (MODE_FILE, blob(repo, f"{path} {step}"))
        if not entries:
            continue
        root, _written, ids = trees.update(entries, ids, paths)
        assert root == trees.build(entries)[0]


def test_an_edit_of_a_stored_tree_equals_a_build_of_the_result(repo: pygit2.Repository) -> None:
    entries = sample(repo)
    base = libgit2_tree(repo, entries)
    changes: dict[str, tuple[int, bytes] | None] = {
        "foo/b/c": None,  # the directory goes with its only file
        "foo/new/deep/x": (MODE_FILE, blob(repo, "x")),
        "foo.c": (MODE_EXEC, entries["foo.c"][1]),
        "absent": None,
        "z": None,  # a directory is no file: left alone
    }

    read = reader(repo)

    def write(data: bytes) -> bytes:
        return bytes.fromhex(str(repo.odb.write(pygit2.enums.ObjectType.TREE, data)))

    expected = dict(entries)
    del expected["foo/b/c"]
    expected["foo/new/deep/x"] = changes["foo/new/deep/x"]  # type: ignore[assignment]
    expected["foo.c"] = (MODE_EXEC, entries["foo.c"][1])
    assert trees.edit(base, changes, read, write) == libgit2_tree(repo, expected)


def test_editing_away_everything_gives_the_empty_tree(repo: pygit2.Repository) -> None:
    entries = {"d/only": (MODE_FILE, blob(repo, "o"))}
    base = libgit2_tree(repo, entries)

    read = reader(repo)
    found = trees.edit_ids(base, {"d/only": None}, read, lambda data: object_id(TREE, data))
    assert found == {"": None, "d": None}
    assert trees.edit(base, {"d/only": None}, read, lambda d: object_id(TREE, d)) == (
        "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    )


def test_an_edit_that_changes_nothing_writes_no_tree(repo: pygit2.Repository) -> None:
    entries = sample(repo)
    base = libgit2_tree(repo, entries)
    written: list[bytes] = []

    def write(data: bytes) -> bytes:
        written.append(data)
        return bytes.fromhex(str(repo.odb.write(pygit2.enums.ObjectType.TREE, data)))

    read = reader(repo)
    same = {"foo/b/c": entries["foo/b/c"], "a b": entries["a b"], "no/such": None}
    assert trees.edit(base, same, read, write) == base and written == []
    changed = {"foo/b/c": (MODE_EXEC, entries["foo/b/c"][1])}
    expected = {**entries, **changed}
    assert trees.edit(base, changed, read, write) == libgit2_tree(repo, expected)
    assert len(written) == 3, "foo/b, foo and the root: only the way to the change"
