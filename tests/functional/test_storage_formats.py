"""The store's own file formats: packs, in-memory trees, the source-index reader.

Each is checked against git or libgit2 as the oracle, because a wrong byte
here would make snapshots unreadable long after they were taken.
"""

from __future__ import annotations

import random
from pathlib import Path

import pygit2
import pytest
from builders import event, git, hook_in_process, make_repo, write

from snapshotter.engine import Engine
from snapshotter.errors import TooManyFiles
from snapshotter.git import index as gitindex
from snapshotter.git import packs as packwriter
from snapshotter.git import tracked
from snapshotter.git import trees as treebuild
from snapshotter.git.kinds import BLOB, EMPTY_TREE
from snapshotter.history.undo import undo_last
from snapshotter.logfile import log_path


def test_written_pack_is_valid_for_git_and_libgit2(tmp_path: Path) -> None:
    pygit2.init_repository(str(tmp_path / "shadow.git"), bare=True)
    payloads = [b"", b"one\n", b"\x00\xff binary", b"x" * 70000]
    payloads += [b"n%d\n" % i for i in range(300)]
    objects = [(packwriter.object_id(BLOB, p), BLOB, p) for p in payloads]
    written = packwriter.write_pack(tmp_path / "shadow.git" / "objects" / "pack", objects + objects)
    assert written == len(payloads), "duplicates are written once"
    reopened = pygit2.Repository(str(tmp_path / "shadow.git"))
    for oid, _kind, data in objects:
        blob = reopened[pygit2.Oid(raw=oid)]
        assert isinstance(blob, pygit2.Blob) and blob.data == data, "blob reads back exactly"
        assert str(pygit2.Oid(raw=oid)) == str(pygit2.hash(data)), "ids match git's"
    fsck = git(tmp_path, "--git-dir", str(tmp_path / "shadow.git"), "fsck", "--full")
    assert "error" not in fsck.lower(), f"git fsck accepts the pack: {fsck[:200]}"
    leftovers = [
        p.name
        for p in (tmp_path / "shadow.git/objects/pack").iterdir()
        if not p.name.startswith("pack-")
    ]
    assert leftovers == [], f"no temp files stay behind: {leftovers}"


def test_empty_pack_writes_nothing(tmp_path: Path) -> None:
    pygit2.init_repository(str(tmp_path / "s.git"), bare=True)
    assert packwriter.write_pack(tmp_path / "s.git/objects/pack", []) == 0
    assert list((tmp_path / "s.git/objects/pack").iterdir()) == [], "no empty pack files"


def test_trees_built_in_memory_equal_libgit2s(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "s.git"), bare=True)
    blob = repo.create_blob(b"content\n").raw
    entries = {
        "a!": (0o100644, blob),
        "a-b": (0o100644, blob),
        "a.b": (0o100755, blob),
        "a/b": (0o100644, blob),
        "a/c/d/e": (0o120000, blob),
        "z/é.txt": (0o100644, blob),
        "b/a/b/a/b": (0o100644, blob),
    }
    root, trees, _ids = treebuild.build(entries)
    index = pygit2.Index()
    for path, (mode, oid) in entries.items():
        index.add(pygit2.IndexEntry(path, pygit2.Oid(raw=oid), pygit2.enums.FileMode(mode)))
    assert str(index.write_tree(repo)) == str(pygit2.Oid(raw=root)), "same root tree id as libgit2"
    assert len(trees) == 9, f"one tree per directory, got {len(trees)}"
    assert treebuild.build({})[0].hex() == "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "empty tree"


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_source_index_reader_matches_libgit2(tmp_path: Path, version: str) -> None:
    files = {f"d{i % 7}/sub{i % 3}/f{i}.txt": f"{i}\n" for i in range(120)}
    files["/".join(["long"] + ["n" * 200] * 3) + ".txt"] = "long path\n"
    files["ünï/çødé.txt"] = "unicode\n"
    root = make_repo(tmp_path / "r", files)
    git(root, "update-index", "--index-version", version)
    if version == "3":
        git(root, "update-index", "--skip-worktree", "d0/sub0/f0.txt")  # extended flags
    expected = {e.path: e.mode for e in pygit2.Index(str(root / ".git" / "index"))}
    parsed = gitindex.parse((root / ".git" / "index").read_bytes())
    assert parsed == expected, f"index v{version}: paths and modes as libgit2 reads them"


def test_source_index_cache_follows_the_index(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    cache = tmp_path / "cache"
    assert set(tracked.tracked_modes(root / ".git" / "index", cache) or {}) == {"a.txt"}
    assert cache.exists(), "the parsed index is cached"
    write(root, "b.txt", "b\n")
    git(root, "add", "b.txt")
    assert set(tracked.tracked_modes(root / ".git" / "index", cache) or {}) == {"a.txt", "b.txt"}


def test_bulk_first_capture_equals_git_tree_and_packs(tmp_path: Path, data_dir: Path) -> None:
    files = {f"pkg{i % 9}/m{i}.py": f"x = {i}\n" * (i % 5 + 1) for i in range(200)}
    root = make_repo(tmp_path / "r", files)
    engine = Engine.open(root, data_dir_path=data_dir)
    assert engine is not None
    tree = engine.capture().tree
    assert tree == git(root, "rev-parse", "HEAD^{tree}").strip(), "first capture = git's tree"
    objects = engine.store.root / "git" / "objects"
    # Hard links to the source's own loose objects (seeding) cost no disk.
    loose = [
        p
        for d in objects.iterdir()
        if len(d.name) == 2
        for p in d.iterdir()
        if p.stat().st_nlink == 1
    ]
    assert loose == [], f"a bulk capture writes packs, not loose objects: {loose[:3]}"
    write(root, "pkg0/m0.py", "changed\n")
    assert engine.capture().tree != tree, "a later edit is seen through the cached index"


def test_10_huge_root_is_refused_with_a_clear_message(tmp_path: Path, data_dir: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    for i in range(30):
        write(root, f"junk/{i}.txt", "j\n")
    engine = Engine.open(root, data_dir_path=data_dir, max_files=10)
    assert engine is not None
    with pytest.raises(TooManyFiles, match="more than 10 files"):
        engine.capture()
    code, _out, _err = hook_in_process(event("turn_start", root), data_dir, ["max_files=10"])
    assert code == 0, "the hook still exits 0"
    assert "more than 10 files" in log_path(data_dir).read_text(), "and logs why"


def test_undo_names_skipped_files(tmp_path: Path, data_dir: Path) -> None:
    from snapshotter.history.recorder import Recorder

    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    engine = Engine.open(root, data_dir_path=data_dir, max_new_file_size=10)
    assert engine is not None
    recorder = Recorder(engine, "s")
    recorder.turn_start()
    write(root, "big.bin", b"x" * 100)
    write(root, "a.txt", "changed\n")
    cp = recorder.turn_end("normal")
    assert cp is not None and [s.path for s in cp.skipped] == ["big.bin"], "skip recorded"
    report = undo_last(engine, "s")
    assert report.skipped == ["big.bin"], f"undo names what it cannot restore: {report}"
    assert (root / "big.bin").exists(), "and leaves it alone"


def test_incremental_trees_equal_a_full_build_through_random_changes() -> None:
    rng = random.Random(5)
    blobs = [bytes([i]) * 20 for i in range(5)]
    names = ["a", "b", "a.b", "a-b", "c", "é"]
    entries: dict[str, tuple[int, bytes]] = {}
    root, _trees, ids = treebuild.build(entries)
    for step in range(300):
        paths = set()
        for _ in range(rng.randint(1, 4)):
            path = "/".join(rng.choice(names) for _ in range(rng.randint(1, 4)))
            clash = [p for p in entries if p.startswith(path + "/") or path.startswith(p + "/")]
            if entries.get(path) is not None and rng.random() < 0.4:
                del entries[path]
            elif not clash:  # a path cannot be both a file and a directory
                entries[path] = (rng.choice([0o100644, 0o100755, 0o120000]), rng.choice(blobs))
            else:
                continue
            paths.add(path)
        root, _written, ids = treebuild.update(entries, ids, paths)
        full_root, _all, full_ids = treebuild.build(entries)
        assert (root, ids) == (full_root, full_ids), f"step {step}, changed {sorted(paths)}"


def test_tree_edits_equal_a_rebuild_through_random_changes(tmp_path: Path, data_dir: Path) -> None:
    """Store.edit_tree (undo's after-tree) against libgit2 building the whole tree."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    engine = Engine.open(root, data_dir_path=data_dir)
    assert engine is not None
    repo = engine.store.objects.repo
    blobs = [repo.create_blob(bytes([i]) * 10).raw for i in range(4)]
    rng = random.Random(9)
    names = ["a", "b", "c.d", "é"]

    def full_tree(entries: dict[str, tuple[int, bytes]]) -> str:
        index = pygit2.Index()
        for path, (mode, oid) in entries.items():
            index.add(pygit2.IndexEntry(path, pygit2.Oid(raw=oid), pygit2.enums.FileMode(mode)))
        return str(index.write_tree(repo))

    entries: dict[str, tuple[int, bytes]] = {}
    tree = full_tree(entries)
    for step in range(200):
        changes: dict[str, tuple[int, bytes] | None] = {}
        for _ in range(rng.randint(1, 4)):
            path = "/".join(rng.choice(names) for _ in range(rng.randint(1, 3)))
            if any(
                p != path and (p.startswith(path + "/") or path.startswith(p + "/"))
                for p in [*entries, *changes]
            ):
                continue  # a path cannot be both a file and a directory
            if path in entries and rng.random() < 0.5:
                changes[path] = None
                del entries[path]
            else:
                change = (rng.choice([0o100644, 0o100755, 0o120000]), rng.choice(blobs))
                changes[path] = entries[path] = change
        if rng.random() < 0.2:  # removing what is not there changes nothing
            changes["never/there"] = None
        tree = engine.store.edit_tree(tree, changes)
        assert tree == full_tree(entries), f"step {step}: {changes}"


def test_tree_edits_swap_files_and_directories(tmp_path: Path, data_dir: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    engine = Engine.open(root, data_dir_path=data_dir)
    assert engine is not None
    store, blob = engine.store, engine.store.objects.repo.create_blob(b"x\n").raw
    as_file = store.edit_tree(EMPTY_TREE, {"a": (0o100644, blob)})
    as_dir = store.edit_tree(as_file, {"a": None, "a/x": (0o100644, blob), "a/y": (0o100644, blob)})
    top = store.objects.repo[as_dir]
    assert isinstance(top, pygit2.Tree)
    as_dir_a = top["a"]
    assert isinstance(as_dir_a, pygit2.Tree), "'a' became a directory"
    assert sorted(str(e.name) for e in as_dir_a) == ["x", "y"]
    back = store.edit_tree(as_dir, {"a/x": None, "a/y": None, "a": (0o100644, blob)})
    assert back == as_file, "the directory became the file again"
    assert store.edit_tree(as_dir, {"a/x": None, "a/y": None}) == EMPTY_TREE, "no empty dirs"


def test_an_edit_to_what_is_there_keeps_the_tree_and_edits_are_remembered_exactly(
    tmp_path: Path, data_dir: Path
) -> None:
    """An edit that changes nothing writes nothing and gives back its base; the same
    edit again gives the same tree (remembered by base and changes, never by less),
    and a remembered tree that is gone from the store is made again."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    engine = Engine.open(root, data_dir_path=data_dir)
    assert engine is not None
    store = engine.store
    b = [store.objects.repo.create_blob(bytes([i]) * 3).raw for i in range(3)]
    tree = store.edit_tree(EMPTY_TREE, {"d/a": (0o100644, b[0]), "d/e/b": (0o100644, b[1])})
    objects_dir = store.root / "git" / "objects"
    loose = {p for p in objects_dir.glob("??/*")}
    same = {"d/a": (0o100644, b[0]), "d/e/b": (0o100644, b[1]), "never/there": None}
    assert store.edit_tree(tree, same) == tree
    assert {p for p in objects_dir.glob("??/*")} == loose, "no tree written"
    one = store.edit_tree(tree, {"d/a": (0o100644, b[1])})
    two = store.edit_tree(tree, {"d/a": (0o100755, b[1])})
    assert len({tree, one, two}) == 3
    assert store.edit_tree(tree, {"d/a": (0o100644, b[1])}) == one
    assert store.entry(two, "d/a") == (0o100755, b[1])
    assert store.entry(one, "d/a") == (0o100644, b[1])
    (objects_dir / one[:2] / one[2:]).unlink()  # as a gc that found it unreferenced
    assert not store.has(one)
    assert store.edit_tree(tree, {"d/a": (0o100644, b[1])}) == one and store.has(one)
