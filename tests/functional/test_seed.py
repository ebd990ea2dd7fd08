"""Seeding a capture from the source repository's index and objects (seed.py).

The oracle throughout: the same worktree captured with seeding disabled, by
reading and hashing every file, must give the same tree byte for byte. A
seeded store must also survive the source repository's own ``git gc``.
"""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pygit2
import pytest
from builders import blob_at, git, make_repo, open_engine, small_tmpfs, write
from builders import reachable as conftest_reachable

from snapshotter import durable
from snapshotter.engine import Engine
from snapshotter.git import index as gitindex
from snapshotter.git import loose
from snapshotter.git import packs as packwriter
from snapshotter.git.kinds import git_mode
from snapshotter.git.objects import ObjectDB
from snapshotter.git.pack_index import read_pack_index
from snapshotter.history import maintenance as gc_mod
from snapshotter.history import undo
from snapshotter.history.recorder import Recorder
from snapshotter.history.state_file import load
from snapshotter.store import blobs, object_links, seeded_blobs
from snapshotter.store import seeding as seed_mod
from snapshotter.store import stat_cache as manifest_io
from snapshotter.store.blobs import BULK_MIN_FILES
from snapshotter.store.shadow import Store
from snapshotter.store.skips import Skip
from snapshotter.store.walk import Stat

FILES = 80
assert FILES >= BULK_MIN_FILES, "enough stale files for seeding to be tried"


# -- helpers -------------------------------------------------------------------


def source_files(count: int = FILES) -> dict[str, str | bytes]:
    return {f"src/d{i % 7}/f{i}.txt": f"file {i}\n" * (i % 9 + 1) for i in range(count)}


def worktree_files(root: Path) -> Iterator[Path]:
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            yield Path(dirpath) / name


def index_file(root: Path) -> Path:
    return root / git(root, "rev-parse", "--git-path", "index").strip()


def age(root: Path, stamp_ns: int) -> None:
    """Set the mtime of every file newer than ``stamp_ns`` to it (older ones keep their ctime)."""
    for path in worktree_files(root):
        if os.lstat(path).st_mtime_ns > stamp_ns:
            os.utime(path, ns=(stamp_ns, stamp_ns), follow_symlinks=False)


def settle(root: Path) -> None:
    """Age files to a minute before the index and refresh it, so no entry is racy.

    git compares whole seconds and keeps the nanoseconds it first saw, so
    each file is aged once: a second ``utime`` could leave a stale ctime in
    the index, which seeding (exact to the nanosecond) would not trust.
    """
    index_s = os.stat(index_file(root)).st_mtime_ns // 10**9
    age(root, (index_s - 60) * 10**9)
    git(root, "update-index", "-q", "--refresh")


def committed(
    root: Path, extra: dict[str, str | bytes] | None = None, *, packed: bool = False
) -> Path:
    """A committed repository whose index vouches for every file (loose or packed objects)."""
    make_repo(root, {**source_files(), **(extra or {})})
    settle(root)
    if packed:
        git(root, "repack", "-adq")
        git(root, "prune-packed")
    return root


def hashed_tree(root: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The oracle: a first capture in a fresh store with seeding disabled."""
    with monkeypatch.context() as m:
        m.setattr(seed_mod, "seed", lambda *args, **kwargs: {})
        return open_engine(root, data_dir).capture().tree


def shared(store: Store) -> list[Path]:
    """Store object files with another name (the source's): what seeding linked."""
    objects = store.root / "git" / "objects"
    return sorted(p for p in objects.rglob("*") if p.is_file() and p.stat().st_nlink > 1)


def own_bytes(store: Store) -> int:
    objects = store.root / "git" / "objects"
    return sum(
        p.stat().st_size for p in objects.rglob("*") if p.is_file() and p.stat().st_nlink == 1
    )


def object_ids(store: Store) -> tuple[set[str], set[str]]:
    """(ids in object files shared with the source, ids in the store's own files).

    Loose objects by their name; packs by their index, shared when the
    ``.pack`` has another link.
    """
    objects = store.root / "git" / "objects"
    linked: set[str] = set()
    own: set[str] = set()
    for path in objects.rglob("*"):
        if path.parent.parent == objects and len(path.parent.name) == 2:
            ids, is_shared = {path.parent.name + path.name}, path.stat().st_nlink > 1
        elif path.parent.name == "pack" and path.suffix == ".idx":
            index = read_pack_index(path)
            assert index is not None, f"{path} is a pack index we read"
            ids = {oid.hex() for oid in index.names()}
            is_shared = path.with_suffix(".pack").stat().st_nlink > 1
        else:
            continue
        (linked if is_shared else own).update(ids)
    return linked, own


def stored(engine: Engine, tree: str) -> dict[str, str]:
    """Each file of the snapshot: "seeded" (its blob only in files shared with the
    source) or "hashed" (the store wrote the blob itself)."""
    linked, own = object_ids(engine.store)
    repo = pygit2.Repository(str(engine.store.root / "git"))
    found: dict[str, str] = {}
    stack: list[tuple[str, pygit2.Tree]] = [("", repo[tree].peel(pygit2.Tree))]
    while stack:
        prefix, node = stack.pop()
        for item in node:
            rel = f"{prefix}{item.name}"
            if isinstance(item, pygit2.Tree):
                stack.append((f"{rel}/", item))
                continue
            oid = str(item.id)
            assert oid in linked | own, f"{rel}: blob {oid} is in the store"
            found[rel] = "hashed" if oid in own else "seeded"
    return found


def stat_of(path: Path) -> Stat:
    st = os.lstat(path)
    mode = git_mode(st.st_mode)
    assert mode is not None
    return (mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def in_source(root: Path, content: bytes) -> bool:
    oid = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
    done = subprocess.run(
        ["git", "cat-file", "-e", oid], cwd=root, capture_output=True, check=False
    )
    return done.returncode == 0


def lie_in_index(root: Path, rel: str, oid: str) -> None:
    """Point ``rel``'s entry (v2 index) at another blob, keeping its stat data."""
    index = index_file(root)
    data = bytearray(index.read_bytes())
    assert data[4:8] == b"\0\0\0\2", "git wrote a v2 index"
    name = rel.encode()
    start = data.index(len(name).to_bytes(2, "big") + name + b"\0") - 60  # stat data, id
    data[start + 40 : start + 60] = bytes.fromhex(oid)
    data[-20:] = hashlib.sha1(bytes(data[:-20])).digest()
    index.write_bytes(bytes(data))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path a capture read and hashed (rather than seeded)."""
    seen: list[str] = []
    bulk, one = blobs.bulk, blobs.hash_path

    def spy_bulk(
        objects: ObjectDB, root: Path, stale: Sequence[tuple[str, Stat, object]]
    ) -> dict[str, bytes]:
        seen.extend(rel for rel, _st, _prior in stale)
        return bulk(objects, root, stale)

    def spy_hash(
        objects: ObjectDB, root: Path, rel: str, mode: int, skipped: dict[str, Skip]
    ) -> bytes | None:
        seen.append(rel)
        return one(objects, root, rel, mode, skipped)

    monkeypatch.setattr(blobs, "bulk", spy_bulk)
    monkeypatch.setattr(blobs, "hash_path", spy_hash)
    return seen


# -- seeding happens, and equals hashing ---------------------------------------


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_clean_committed_repo_is_seeded_by_hard_links(
    tmp_path: Path,
    data_dir: Path,
    reads: list[str],
    monkeypatch: pytest.MonkeyPatch,
    packed: bool,
) -> None:
    root = committed(tmp_path / "repo", packed=packed)
    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    assert reads == [], f"no file is read when the index vouches for all: {reads[:5]}"
    assert tree == git(root, "rev-parse", "HEAD^{tree}").strip(), "the snapshot is git's tree"

    source = root / ".git" / "objects"
    ours = engine.store.root / "git" / "objects"
    if packed:
        src_pack = next((source / "pack").glob("pack-*.pack"))
        linked = ours / "pack" / src_pack.name
        assert linked.stat().st_ino == src_pack.stat().st_ino, "the source pack is hard-linked"
        assert (ours / "pack" / src_pack.with_suffix(".idx").name).exists(), "with its index"
    else:
        oid = git(root, "rev-parse", "HEAD:src/d0/f0.txt").strip()
        linked = ours / oid[:2] / oid[2:]
        src_obj = source / oid[:2] / oid[2:]
        assert linked.stat().st_ino == src_obj.stat().st_ino, "the loose object is hard-linked"
    assert not (ours / "info" / "alternates").exists(), "never borrowed through alternates"
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch), "seeded == hashed"


def test_only_files_the_index_does_not_know_are_read(
    tmp_path: Path, data_dir: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = committed(tmp_path / "repo")
    write(root, "untracked.txt", "new\n")
    write(root, "src/d1/f1.txt", "edited since the commit\n")
    index_reads: list[str] = []  # each parse of the index's entries, paths or whole
    whole, paths = gitindex.IndexFile.entries, gitindex.IndexFile.modes

    def entries(self: gitindex.IndexFile) -> Iterator[gitindex.IndexEntry]:
        index_reads.append("entries")
        return whole(self)

    def modes(self: gitindex.IndexFile) -> list[tuple[bytes, int]]:
        index_reads.append("modes")
        return paths(self)

    monkeypatch.setattr(gitindex.IndexFile, "entries", entries)
    monkeypatch.setattr(gitindex.IndexFile, "modes", modes)
    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    assert sorted(reads) == ["src/d1/f1.txt", "untracked.txt"]
    assert blob_at(engine, tree, "src/d1/f1.txt") == b"edited since the commit\n"
    assert index_reads == ["entries"], "the walk's read of the index is seeding's too"
    assert getattr(gitindex._kept, "slot", None) is None, "and not kept past the capture"
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)


def test_linked_worktree_seeds_from_the_common_dir(
    tmp_path: Path, data_dir: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    main = committed(tmp_path / "repo")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt2"))
    wt2 = tmp_path / "wt2"
    settle(wt2)
    engine = open_engine(wt2, data_dir)
    tree = engine.capture().tree
    assert reads == [] and shared(engine.store), "seeded from the main repository's objects"
    assert tree == hashed_tree(wt2, tmp_path / "data2", monkeypatch)


# -- what is never trusted --------------------------------------------------------


def test_a_stat_mismatch_is_hashed_from_the_file(
    tmp_path: Path, data_dir: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = committed(tmp_path / "repo")
    target = root / "src/d0/f0.txt"
    before = os.stat(target)
    time.sleep(0.05)  # let the clock move, so the rewrite shows in ctime
    changed = bytes(b ^ 1 for b in target.read_bytes())  # same length, other bytes
    target.write_bytes(changed)
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(target)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    ), "size, mtime and inode still match"
    assert after.st_ctime_ns != before.st_ctime_ns, "only ctime tells"

    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    assert reads == ["src/d0/f0.txt"], "the one file whose ctime moved is read, no other"
    assert blob_at(engine, tree, "src/d0/f0.txt") == changed, "the snapshot holds the file"
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)


@pytest.mark.parametrize(
    ("field", "moved"),
    [
        (0, 0o100755),  # mode
        (1, 1),  # size
        (2, 1),  # mtime, by a nanosecond
        (2, 10**9),  # mtime, by a second
        (3, 1),  # ctime, by a nanosecond
        (3, 10**9),  # ctime, by a second
        (4, 1),  # inode
    ],
    ids=["mode", "size", "mtime-ns", "mtime-s", "ctime-ns", "ctime-s", "inode"],
)
def test_one_stat_field_off_is_never_trusted(tmp_path: Path, field: int, moved: int) -> None:
    """The index's stat data must match the file's in every field git compares, to the
    nanosecond (``candidates`` applies ``_matches``: one field off at a time)."""
    root = committed(tmp_path / "repo")
    index = index_file(root)
    entries = {e.path: e for e in gitindex.read_entries(index.read_bytes()) or []}
    exact = {rel: stat_of(root / rel) for rel in entries}
    found = seed_mod.candidates(index, exact, root)
    assert found is not None and found.trusted == {rel: e.oid for rel, e in entries.items()}
    assert all(seed_mod._matches(entries[rel], st) for rel, st in exact.items())
    rel = "src/d3/f3.txt"
    off = list(exact[rel])
    off[field] = moved if field == 0 else off[field] + moved
    stale = {**exact, rel: (off[0], off[1], off[2], off[3], off[4])}
    found = seed_mod.candidates(index, stale, root)
    assert found is not None
    assert rel not in found.trusted and rel not in found.racy, "hashed from the file"
    assert len(found.trusted) == len(entries) - 1, "only that entry is doubted"
    assert not seed_mod._matches(entries[rel], stale[rel])


def racy_setup(
    root: Path, tmp_path: Path, rel: str, nanoseconds: int = 500_000_000
) -> tuple[bytes, bytes, int]:
    """``rel``'s entry names another blob of the file's size, with the file's exact stat
    data (git's racy case: the file rewritten in the instant its entry was written).
    Returns (the file's bytes, the blob the entry names, the file's mtime)."""
    target = root / rel
    # Mid-second, in another second than git recorded (git compares whole
    # seconds, so only then does its refresh record the new nanoseconds).
    mtime = (os.stat(target).st_mtime_ns // 10**9 + 30) * 10**9 + nanoseconds
    os.utime(target, ns=(mtime, mtime))
    git(root, "update-index", "-q", "--refresh")
    actual = target.read_bytes()
    (tmp_path / "other").write_bytes(bytes(b ^ 1 for b in actual))
    other = git(root, "hash-object", "-w", "--no-filters", str(tmp_path / "other")).strip()
    lie_in_index(root, rel, other)
    return actual, bytes.fromhex(other), mtime


@pytest.mark.parametrize(
    ("index_after_ns", "trusted", "by_seconds"),
    [(-1, False, False), (0, False, False), (1, True, False), (10**9, True, True)],
    ids=["index-1ns-older", "index-same-instant", "index-1ns-newer", "index-1s-newer"],
)
def test_nanoseconds_decide_what_is_racy_on_one_filesystem(
    tmp_path: Path,
    data_dir: Path,
    reads: list[str],
    monkeypatch: pytest.MonkeyPatch,
    index_after_ns: int,
    trusted: bool,
    by_seconds: bool,
) -> None:
    """An entry is racily clean unless its mtime is older than the index's, to the
    nanosecond (git's USE_NSEC rule): a file rewritten in the instant the index
    was written, or after, is read, whatever its stat data says. Only the racy
    rule stands between such an index and a wrong blob."""
    root = committed(tmp_path / "repo")
    rel = "src/d2/f2.txt"
    actual, lie, mtime = racy_setup(root, tmp_path, rel)  # mid-second: whole seconds say racy
    index = index_file(root)
    os.utime(index, ns=(mtime + index_after_ns, mtime + index_after_ns))
    stale = {rel: stat_of(root / rel)}
    found = seed_mod.candidates(index, stale, root)
    assert found is not None
    assert found.trusted == ({rel: lie} if trusted else {}), "git's rule, in nanoseconds"
    assert found.racy == ({} if trusted else {rel: lie})
    seconds = seed_mod.candidates(index, stale)
    assert seconds is not None and seconds.trusted == ({rel: lie} if by_seconds else {})
    if trusted:
        return  # the index lies and git itself would believe it: nothing can tell
    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    assert reads == [rel], "the racy entry is read; the others are still seeded"
    assert blob_at(engine, tree, rel) == actual, "the snapshot holds the worktree's bytes"
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)


def test_a_file_stamped_on_a_whole_second_compares_whole_seconds(tmp_path: Path) -> None:
    """A filesystem that keeps no nanoseconds (a mount inside the worktree) stamps whole
    seconds: an index written later in that second does not make it older."""
    root = committed(tmp_path / "repo")
    rel = "src/d2/f2.txt"
    _actual, lie, mtime = racy_setup(root, tmp_path, rel, nanoseconds=0)
    index = index_file(root)
    os.utime(index, ns=(mtime + 500_000_000, mtime + 500_000_000))
    found = seed_mod.candidates(index, {rel: stat_of(root / rel)}, root)
    assert found is not None and found.trusted == {} and found.racy == {rel: lie}


def test_a_fresh_commit_trusts_every_entry_older_than_the_index(
    tmp_path: Path, data_dir: Path, reads: list[str]
) -> None:
    """Right after ``git add`` and ``git commit`` the index is written in the second the
    files were: only an entry as new as the index is read (issue 24.4)."""
    root = make_repo(tmp_path / "repo", source_files())
    index = index_file(root)
    # The last nanosecond of a second git has not seen (so its refresh records them).
    stamp = (os.stat(index).st_mtime_ns // 10**9 - 30) * 10**9 + 10**9 - 1
    newest = root / "src/d0/f0.txt"
    for path in worktree_files(root):
        os.utime(path, ns=(stamp - 10**6, stamp - 10**6))  # a millisecond before the index
    os.utime(newest, ns=(stamp, stamp))  # stamped in the index's own instant
    git(root, "update-index", "-q", "--refresh")
    os.utime(index, ns=(stamp, stamp))
    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    assert reads == [], "the newest entry was verified by hashing, not stored anew"
    assert len(shared(engine.store)) == FILES, "every object hard-linked"
    assert tree == git(root, "rev-parse", "HEAD^{tree}").strip()
    found = seed_mod.candidates(index, {p: stat_of(root / p) for p in source_files()}, root)
    assert found is not None and list(found.racy) == ["src/d0/f0.txt"], "hashed: only that one"
    assert len(found.trusted) == FILES - 1


def test_a_git_dir_on_another_filesystem_compares_whole_seconds(
    tmp_path: Path, data_dir: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files and index stamped by different filesystems: their nanoseconds do not
    compare (one may stamp whole seconds), so git's default rule decides."""
    with small_tmpfs(tmp_path / "other-fs", "size=16m") as mount:
        root = tmp_path / "repo"
        root.mkdir()
        git(root, "init", "-q", "-b", "main", f"--separate-git-dir={mount / 'git'}")
        for rel, content in source_files().items():
            write(root, rel, content)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
        settle(root)
        rel = "src/d2/f2.txt"
        actual, lie, mtime = racy_setup(root, tmp_path, rel)
        index = index_file(root)
        assert os.stat(index).st_dev != os.stat(root).st_dev, "two filesystems"
        later = mtime // 10**9 * 10**9 + 10**9 - 1
        os.utime(index, ns=(later, later))  # newer to the nanosecond, in the same second
        found = seed_mod.candidates(index, {rel: stat_of(root / rel)}, root)
        assert found is not None and found.trusted == {} and found.racy == {rel: lie}
        engine = open_engine(root, data_dir)
        tree = engine.capture().tree
        assert rel in reads, "(no object links across filesystems: every file is read)"
        assert blob_at(engine, tree, rel) == actual
        assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)


def test_a_fresh_commit_is_seeded_after_hashing_not_compressing(
    tmp_path: Path, data_dir: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after a clone or commit every entry is racily clean; verified, they seed."""
    root = make_repo(tmp_path / "repo", source_files())
    # Every file and the index in one second, as a clone leaves them (another
    # second than the commit's, so git's refresh records the new stat data).
    stamp = (os.stat(index_file(root)).st_mtime_ns // 10**9 - 5) * 10**9
    for path in worktree_files(root):
        os.utime(path, ns=(stamp, stamp))
    git(root, "update-index", "-q", "--refresh")
    os.utime(index_file(root), ns=(stamp, stamp))
    index_s = stamp // 10**9
    rel = "src/d3/f3.txt"
    target = root / rel
    st = os.stat(target)
    changed = bytes(b ^ 1 for b in target.read_bytes())  # same size, same mtime, other bytes
    target.write_bytes(changed)
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert os.stat(index_file(root)).st_mtime_ns // 10**9 == index_s
    everything = {p: stat_of(root / p) for p in source_files()}
    found = seed_mod.candidates(index_file(root), everything)
    assert found is not None
    assert found.trusted == {}, "all racily clean"
    assert len(found.racy) == FILES - 1, "all but the edit"

    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    assert reads == [rel], "only the file whose bytes differ from its entry is stored anew"
    assert len(shared(engine.store)) >= 60, "the verified entries' objects were hard-linked"
    assert blob_at(engine, tree, rel) == changed, "the snapshot holds the worktree's bytes"
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)


def test_flagged_entries_are_never_trusted(tmp_path: Path) -> None:
    root = committed(tmp_path / "repo")
    write(root, "new.txt", "intent to add\n")
    git(root, "add", "-N", "new.txt")
    settle(root)
    # Flags change no stat data: only the flags can keep these entries out.
    git(root, "update-index", "--skip-worktree", "src/d0/f0.txt")
    git(root, "update-index", "--assume-unchanged", "src/d1/f1.txt")
    index = root / ".git" / "index"
    entries = gitindex.read_entries(index.read_bytes())
    assert entries is not None
    by_path = {e.path: e for e in entries}
    assert by_path["new.txt"].intent_to_add and by_path["src/d0/f0.txt"].skip_worktree
    assert by_path["src/d1/f1.txt"].assume_valid
    plain = by_path["src/d2/f2.txt"]
    st = os.stat(root / plain.path)
    assert (plain.size, plain.ino, plain.mtime_s, plain.mtime_ns, plain.mode) == (
        st.st_size,
        st.st_ino & 0xFFFFFFFF,
        st.st_mtime_ns // 10**9,
        st.st_mtime_ns % 10**9,
        0o100644,
    ), "stat data as git recorded it"
    assert plain.oid.hex() == git(root, "rev-parse", f":{plain.path}").strip()

    stale = {str(p.relative_to(root)): stat_of(p) for p in worktree_files(root)}
    found = seed_mod.candidates(index, stale)
    assert found is not None
    trusted = found.trusted
    assert not {"new.txt", "src/d0/f0.txt", "src/d1/f1.txt"} & set(trusted)
    assert len(trusted) == FILES - 2, "every plain entry is trusted"

    git(root, "update-index", "--index-version", "4")
    v4 = gitindex.read_entries(index.read_bytes())
    assert v4 is not None and [(e.path, e.oid) for e in v4] == [(e.path, e.oid) for e in entries]
    git(root, "update-index", "--split-index")
    split = index.read_bytes()
    assert gitindex.read_entries(split) is None, "a split index needs its shared index"
    merged = gitindex.read_entries(split, git_dir=root / ".git")
    assert merged is not None and sorted(merged) == sorted(v4), "the same entries, split"


def test_a_split_index_is_seeded_from_both_of_its_files(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = committed(tmp_path / "repo")
    git(root, "config", "core.splitIndex", "true")
    git(root, "config", "splitIndex.maxPercentChange", "100")  # keep it split
    git(root, "update-index", "--split-index")
    write(root, "src/d1/f1.txt", "replaced in the split file\n")
    write(root, "added.txt", "only in the split file\n")
    git(root, "add", "src/d1/f1.txt", "added.txt")
    git(root, "rm", "-q", "src/d2/f2.txt")  # deleted from the shared entries
    data = index_file(root).read_bytes()
    assert b"link" in data and list((root / ".git").glob("sharedindex.*")), "the index is split"
    entries = gitindex.read_entries(data, git_dir=root / ".git")
    assert entries is not None
    listed = git(root, "ls-files", "-s").splitlines()
    assert [
        f"{e.mode:o} {e.oid.hex()} {e.stage}\t{e.path}"
        for e in sorted(entries, key=lambda e: e.path)
    ] == listed, "the entries git lists"

    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    how = stored(engine, tree)
    assert len(how) == FILES and set(how.values()) == {"seeded"}, "every file seeded"
    assert tree == git(root, "write-tree").strip(), "git's own tree of the index"
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)


# -- content conversion --------------------------------------------------------------


def test_gitattributes_text_auto_hashes_only_the_file_it_converted(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crlf = b"one\r\ntwo\r\n"
    root = committed(tmp_path / "repo", {".gitattributes": "* text=auto\n", "crlf.txt": crlf})
    assert git(root, "cat-file", "-s", "HEAD:crlf.txt").strip() == "8", "git normalised it"
    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    assert blob_at(engine, tree, "crlf.txt") == crlf, "the snapshot holds the file's bytes"
    how = stored(engine, tree)
    assert how.pop("crlf.txt") == "hashed", "its blob (LF) is shorter than the file"
    assert set(how.values()) == {"seeded"}, "every file git stored as it is was seeded"
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)


def test_an_untracked_gitattributes_hashes_only_the_paths_it_applies_to(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = committed(tmp_path / "repo")
    write(root, "src/d3/.gitattributes", "*.txt ident\n")
    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    how = stored(engine, tree)
    below = {rel for rel in how if rel.startswith("src/d3/")}
    assert len(below) > 5 and {how[rel] for rel in below} == {"hashed"}, (
        "an ident attribute may have changed what git stored: hashed"
    )
    assert {how[rel] for rel in set(how) - below} == {"seeded"}, "the others are seeded"
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)


def test_a_conversion_from_an_old_config_is_caught_by_the_blob_size(
    tmp_path: Path, data_dir: Path, reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    crlf = b"one\r\ntwo\r\n"
    root = make_repo(tmp_path / "repo", {**source_files(), "crlf.txt": crlf}, commit=False)
    age(root, time.time_ns() - 60 * 10**9)
    git(root, "-c", "core.autocrlf=true", "add", "-A")  # autocrlf on then, off now
    git(root, "commit", "-q", "-m", "initial")
    stale = {"crlf.txt": stat_of(root / "crlf.txt")}
    found = seed_mod.candidates(root / ".git" / "index", stale)
    assert found is not None and "crlf.txt" in found.trusted, "the stat data matches"

    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    assert reads == ["crlf.txt"], "the stat data matched, the blob's size did not"
    assert blob_at(engine, tree, "crlf.txt") == crlf
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)


# -- failures fall back to hashing -------------------------------------------------


def test_loose_objects_are_linked_with_the_header_of_the_file_linked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each loose object is opened once: that inode is linked and its header read, and
    the size check holds on that header (end-of-line conversion)."""
    root = committed(tmp_path / "repo")
    ids = {rel: bytes.fromhex(git(root, "rev-parse", f":{rel}").strip()) for rel in source_files()}
    store_git = tmp_path / "store"
    pygit2.init_repository(str(store_git), bare=True)
    source = root / ".git" / "objects"
    durable.settle()  # nothing noted by anything before
    linked = object_links.link_objects(source, store_git / "objects", set(ids.values()))
    assert linked.missing == set()
    fan_outs = {oid.hex()[:2] for oid in ids.values()}
    # git may not have synced them: each link, and its name, for the next settle.
    assert durable.pending() == len(set(ids.values())) + len(fan_outs) + 1
    for rel, oid in ids.items():
        name = f"{oid.hex()[:2]}/{oid.hex()[2:]}"
        assert (store_git / "objects" / name).stat().st_ino == (source / name).stat().st_ino
        assert linked.headers[oid] == (3, len(source_files()[rel])), "blob, its size"
    right = {rel: stat_of(root / rel) for rel in ids}
    wrong = {rel: (st[0], st[1] + 1, *st[2:]) for rel, st in right.items()}
    read_again: list[bytes] = []
    monkeypatch.setattr(loose, "read_header", lambda _d, oid: read_again.append(oid))
    assert seeded_blobs.present_as_blobs(store_git, dict(ids), right, linked.headers) == ids
    assert seeded_blobs.present_as_blobs(store_git, dict(ids), wrong, linked.headers) == {}
    assert read_again == [], "the headers read while linking are not read again"


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_link_failure_falls_back_to_hashing(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, packed: bool
) -> None:
    root = committed(tmp_path / "repo", packed=packed)

    def cross_device(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EXDEV, os.strerror(errno.EXDEV))

    monkeypatch.setattr(os, "link", cross_device)
    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    assert shared(engine.store) == [], "nothing could be linked"
    assert tree == hashed_tree(root, tmp_path / "data2", monkeypatch)
    assert len(reachable(engine.store, {tree})) > FILES, "every object reads back"


# -- the source's own gc -------------------------------------------------------------


@pytest.mark.parametrize("packed", [False, True], ids=["loose", "packed"])
def test_undo_survives_the_source_pruning_what_was_seeded(
    tmp_path: Path, data_dir: Path, packed: bool
) -> None:
    root = committed(tmp_path / "repo", packed=packed)
    originals = {str(p.relative_to(root)): p.read_bytes() for p in worktree_files(root)}
    edited = [f"src/d{i % 7}/f{i}.txt" for i in range(5)]
    engine = open_engine(root, data_dir)
    rec = Recorder(engine, "s")
    rec.session_start()
    rec.turn_start()
    assert shared(engine.store), "the first capture was seeded"
    for rel in edited:
        write(root, rel, f"v2 of {rel}\n")
    git(root, "commit", "-q", "-a", "--amend", "-m", "v2")  # v1 blobs: unreachable
    assert rec.turn_end("stop") is not None

    git(root, "reflog", "expire", "--expire=now", "--all")
    git(root, "gc", "-q", "--prune=now")
    assert not any(in_source(root, originals[rel]) for rel in edited), "v1 is gone from the source"
    assert shared(engine.store) == [], "the source dropped every name it shared with us"

    def assert_originals() -> None:
        now = {str(p.relative_to(root)): p.read_bytes() for p in worktree_files(root)}
        assert now == originals, "undo gives back the exact bytes"

    undo.undo_last(engine, "s")
    assert_originals()
    undo.redo(engine, "s")
    assert (root / edited[0]).read_bytes() == f"v2 of {edited[0]}\n".encode()
    gc_mod.collect_store(engine.store)
    undo.undo_last(open_engine(root, data_dir), "s")
    assert_originals()


def test_gc_keeps_shared_packs_as_they_are_until_the_source_drops_them(
    tmp_path: Path, data_dir: Path
) -> None:
    root = committed(tmp_path / "repo", packed=True)
    src_pack = next((root / ".git" / "objects" / "pack").glob("pack-*.pack"))
    src_ids = read_pack_index(src_pack.with_suffix(".idx"))
    assert src_ids is not None
    engine = open_engine(root, data_dir)
    rec = Recorder(engine, "s")
    rec.session_start()
    rec.turn_start()
    write(root, "src/d0/f0.txt", "an edit of our own\n")
    assert rec.turn_end("stop") is not None

    pack_dir = engine.store.root / "git" / "objects" / "pack"
    report = gc_mod.collect_store(engine.store)
    assert (pack_dir / src_pack.name).stat().st_ino == src_pack.stat().st_ino, "kept, not copied"
    own = [p for p in pack_dir.glob("pack-*.idx") if p.name != src_pack.with_suffix(".idx").name]
    assert own, "the store's own objects are packed"
    for idx in own:
        own_ids = read_pack_index(idx)
        assert own_ids is not None and not own_ids.names() & src_ids.names(), (
            "no shared object is copied into our packs"
        )
    assert report.bytes_after == own_bytes(engine.store), "only the store's own bytes count"
    assert report.bytes_after < src_pack.stat().st_size
    live = reachable(engine.store)

    # The source repacks (a new commit changes its pack): our name is the last one.
    write(root, "later.txt", "later\n")
    git(root, "add", "later.txt")
    git(root, "commit", "-q", "-m", "later")
    git(root, "gc", "-q", "--prune=now")
    assert not src_pack.exists() and (pack_dir / src_pack.name).stat().st_nlink == 1
    # Now the store's own pack, rewritten like any other once it holds garbage
    # (compact: any unreachable byte is enough; the source's commit is one).
    gc_mod.collect_store(engine.store, compact=True)
    assert not (pack_dir / src_pack.name).exists(), "a pack no longer shared is compacted"
    assert shared(engine.store) == []
    assert reachable(engine.store) == live, "every live object is still there"
    undo.undo_last(open_engine(root, data_dir), "s")
    assert (root / "src/d0/f0.txt").read_text() == source_files()["src/d0/f0.txt"]


def test_gc_leaves_shared_loose_objects_alone(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = committed(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    Recorder(engine, "s").session_start()
    before = {p: p.stat().st_ino for p in shared(engine.store)}
    assert len(before) == FILES, "every blob is a shared loose object"

    monkeypatch.setattr(packwriter, "LOOSE_PACK_AT", 1)  # one loose object of ours would do
    light = gc_mod.collect_store(engine.store, budget_s=30.0)
    assert light.objects_kept == 0, "the quick pass packs no shared object"
    assert {p: p.stat().st_ino for p in shared(engine.store)} == before, "nor deletes one"
    assert light.bytes_before == own_bytes(engine.store), "shared bytes are not counted"
    full = gc_mod.collect_store(engine.store)
    assert {p: p.stat().st_ino for p in shared(engine.store)} == before, "kept as they are"
    assert full.objects_kept == len(reachable(engine.store)), "all live objects are counted"


def reachable(store: Store, trees: set[str] | None = None) -> set[str]:
    """Every object below ``trees`` (default: all gc keeps); each must read back whole."""
    if trees is None:
        trees = load(store).live_trees() | {manifest_io.load(store.root / "manifest").tree or ""}
        trees.discard("")
    return conftest_reachable(store.root / "git", trees)


def test_gc_shares_again_what_the_source_packed_since(tmp_path: Path, data_dir: Path) -> None:
    """The source's ``gc --auto`` packs and prunes the loose objects we linked: ours are
    then the only copies, until gc links the pack that holds them and drops ours."""
    root = committed(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    assert len(shared(engine.store)) == FILES, "seeded: each loose object hard-linked"
    git(root, "repack", "-adq")
    git(root, "prune-packed")
    assert shared(engine.store) == [] and own_bytes(engine.store) > 0, "ours alone now"
    blob_bytes = own_bytes(engine.store)

    gc_mod.collect_store(engine.store)
    objects = engine.store.root / "git" / "objects"
    src_pack = next((root / ".git" / "objects" / "pack").glob("pack-*.pack"))
    assert (objects / "pack" / src_pack.name).stat().st_ino == src_pack.stat().st_ino, (
        "the source's new pack is linked"
    )
    assert not list(objects.glob("??/*")), "and our loose copies are gone"
    assert own_bytes(engine.store) < blob_bytes / 4, "the blobs cost the store nothing again"
    for path in (root / ".git" / "objects" / "pack").iterdir():
        path.unlink()  # the source drops its pack: our link keeps the bytes
    assert reachable(open_engine(root, data_dir).store, {tree}), "every object reads back"


def test_a_damaged_source_pack_is_not_linked_and_our_copies_stay(
    tmp_path: Path, data_dir: Path
) -> None:
    root = committed(tmp_path / "repo")
    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    git(root, "repack", "-adq")
    git(root, "prune-packed")
    objects = engine.store.root / "git" / "objects"
    ours = sorted(objects.glob("??/*"))
    assert len(ours) == FILES
    idx = next((root / ".git" / "objects" / "pack").glob("pack-*.idx"))
    tables = read_pack_index(idx, tables=True)
    assert tables is not None
    target = bytes.fromhex(ours[0].parent.name + ours[0].name)
    offset = next(at for at, oid, _crc in tables.entries() if oid == target)
    pack = idx.with_suffix(".pack")
    data = bytearray(pack.read_bytes())
    data[offset + 4] ^= 0xFF  # inside the entry's compressed body
    pack.chmod(0o644)
    pack.write_bytes(bytes(data))

    gc_mod.collect_store(engine.store)
    assert not list((objects / "pack").glob(f"{pack.stem}.*")), "the damaged pack is not linked"
    assert shared(engine.store) == [], "our copies stay ours (packed by gc)"
    assert reachable(open_engine(root, data_dir).store, {tree}), "every object reads back"


# -- the pack index reader ---------------------------------------------------------------


def test_pack_index_lists_what_git_says(tmp_path: Path) -> None:
    root = committed(tmp_path / "repo", packed=True)
    idx = next((root / ".git" / "objects" / "pack").glob("pack-*.idx"))
    index = read_pack_index(idx)
    assert index is not None
    shown = subprocess.run(
        ["git", "show-index"], stdin=idx.open("rb"), capture_output=True, check=True, text=True
    ).stdout
    names = {bytes.fromhex(line.split()[1]) for line in shown.splitlines()}
    assert index.names() == names and len(index) == len(names)
    tables = read_pack_index(idx, tables=True)
    assert tables is not None and [
        f"{offset} {oid.hex()} ({crc:08x})" for offset, oid, crc in tables.entries()
    ] == sorted(shown.splitlines(), key=lambda line: int(line.split()[0])), (
        "each object's offset and CRC as git shows them"
    )
    assert all(n in index for n in names)
    absent = {b"\0" * 20, b"\xff" * 20, hashlib.sha1(b"absent").digest()}
    assert not any(n in index for n in absent)
    few = set(list(names)[:3])
    assert index.find(few | absent) == few and index.find(names | absent) == names
    (tmp_path / "v1.idx").write_bytes(b"\0" * 2000)
    assert read_pack_index(tmp_path / "v1.idx") is None
