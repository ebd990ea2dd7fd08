"""A first capture without libgit2 (issue 24.4): the store initialised, seeded blobs'
headers read and new objects written in Python, and what it wrote is what git reads.

pygit2's import is ~50 ms of a first capture's ~350 ms at 10k files. These tests
run the real console script's entry in a fresh interpreter and ask git itself
(the oracle) about the store it left.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from builders import cli_probe, git, make_repo, write

from snapshotter.engine import Engine
from snapshotter.store import blobs


def captured(tmp_path: Path, root: Path, data_dir: Path) -> tuple[str, list[str]]:
    """(the tree id printed, the modules loaded) of one `snapshotter capture` process."""
    found = cli_probe(tmp_path, root, "--data-dir", str(data_dir), "capture")
    modules = found["modules"]
    assert isinstance(modules, list)
    return str(found["out"]).split()[0], modules


def settled_repo(root: Path, count: int) -> Path:
    """``count`` committed files (enough to seed), each older than the index: not racy."""
    make_repo(root, {f"src/d{n % 7}/f{n}.txt": f"file {n}\n" * (n + 1) for n in range(count)})
    index_s = os.stat(root / ".git" / "index").st_mtime_ns // 10**9
    for path in root.rglob("*"):
        if ".git" not in path.parts and path.is_file():
            os.utime(path, ns=((index_s - 60) * 10**9,) * 2)
    git(root, "update-index", "-q", "--refresh")
    return root


def test_a_first_capture_loads_no_pygit2_and_git_reads_its_store(
    tmp_path: Path, data_dir: Path
) -> None:
    root = settled_repo(tmp_path / "r", blobs.BULK_MIN_FILES + 6)
    git(root, "repack", "-adq")  # the seeded blobs come from a linked pack...
    write(root, "src/d1/loose.txt", "committed, loose\n")  # ...and a loose object
    git(root, "add", "src/d1/loose.txt")
    git(root, "commit", "-qm", "one more")
    write(root, "notes.txt", "untracked: our own blob\n")
    os.symlink("notes.txt", root / "link")
    tree, modules = captured(tmp_path, root, data_dir)
    assert not [m for m in modules if m == "pygit2" or m.startswith("pygit2.")], (
        "a first capture loaded pygit2"
    )

    engine = Engine.open(root, data_dir_path=data_dir, create=False)
    assert engine is not None
    store = engine.store.root / "git"
    assert git(store, "rev-parse", "--is-bare-repository").strip() == "true"
    git(store, "fsck", "--full", "--strict")  # every object, loose and packed, whole
    listed = git(store, "ls-tree", "-r", tree).splitlines()
    ours = {line.split("\t")[1]: line.split()[2] for line in listed}
    tracked = {
        line.split("\t")[1]: line.split()[1] for line in git(root, "ls-files", "-s").splitlines()
    }
    assert {p: ours[p] for p in tracked} == tracked, "the source's blob ids"
    pack = next((root / ".git" / "objects" / "pack").glob("*.pack"))
    assert (store / "objects" / "pack" / pack.name).stat().st_ino == pack.stat().st_ino
    oid = tracked["src/d1/loose.txt"]
    path = Path("objects", oid[:2], oid[2:])
    assert (store / path).stat().st_ino == (root / ".git" / path).stat().st_ino, "seeded"
    assert ours["notes.txt"] == git(root, "hash-object", "notes.txt").strip()
    assert git(store, "cat-file", "-p", ours["link"]) == "notes.txt"
    assert git(store, "cat-file", "-p", ours["notes.txt"]) == "untracked: our own blob\n"
    own = store / "objects" / ours["notes.txt"][:2] / ours["notes.txt"][2:]
    assert stat.S_IMODE(own.stat().st_mode) == 0o444, "a loose object is read-only, as git's"
    assert set(ours) == {*tracked, "notes.txt", "link"}

    # A later capture of an edit writes its blob and trees loose, without libgit2 too.
    write(root, "src/d2/f2.txt", "edited\n")
    again, modules = captured(tmp_path, root, data_dir)
    assert "pygit2" not in modules, "a capture of one edit loaded pygit2"
    git(store, "fsck", "--full", "--strict")
    assert git(store, "cat-file", "-p", f"{again}:src/d2/f2.txt") == "edited\n"
    assert git(store, "rev-parse", f"{again}:src/d1") == git(store, "rev-parse", f"{tree}:src/d1")


def test_a_source_object_already_in_the_store_is_never_written_over(
    tmp_path: Path, data_dir: Path
) -> None:
    """#12.4: a loose object seeding linked is the source's own file. A later capture
    whose file has those bytes finds it there and leaves it alone (same inode, same
    mtime), and git still reads it."""
    root = settled_repo(tmp_path / "r", blobs.BULK_MIN_FILES + 2)  # loose: never repacked
    first, _modules = captured(tmp_path, root, data_dir)
    rel = "src/d0/f0.txt"
    oid = git(root, "rev-parse", f":{rel}").strip()
    source = root / ".git" / "objects" / oid[:2] / oid[2:]
    before = source.stat()
    engine = Engine.open(root, data_dir_path=data_dir, create=False)
    assert engine is not None
    linked = engine.store.root / "git" / "objects" / oid[:2] / oid[2:]
    assert linked.stat().st_ino == before.st_ino, "seeding linked the source's loose object"
    write(root, "copy.txt", (root / rel).read_bytes())  # the same bytes, a new path
    second, _modules = captured(tmp_path, root, data_dir)
    assert second != first
    after = source.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_nlink) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_nlink,
    ), "the source's object file was touched"
    assert git(root, "cat-file", "-p", oid) == (root / rel).read_text()
