"""Seeding a large first capture without holding the source whole (issue 16.5).

At 500k files a first capture peaked at 2.3 GB: libgit2 mapped the whole
1.7 GB source pack to read the headers of the seeded blobs, and the source
index was held as a list of 500k entries. Object headers are now read with
``pread`` (pack_headers.read_headers) and the index is parsed as it is iterated
(index.iter_split_entries). git and libgit2 are the oracles here.
"""

from __future__ import annotations

import mmap
import os
import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest
from builders import git, make_repo, write

from snapshotter.engine import Engine
from snapshotter.git import index as gitindex
from snapshotter.git import pack_headers
from snapshotter.git.objects import ObjectDB
from snapshotter.git.pack_index import read_pack_index
from snapshotter.store import object_links, seeded_blobs

FILES = 90


def similar_files(count: int = FILES) -> dict[str, str | bytes]:
    """Files alike enough for git to store most as deltas (long chains), some big."""
    rng = random.Random(7)
    words = [f"word{i}" for i in range(300)]
    body = " ".join(rng.choice(words) for _ in range(3000))
    files: dict[str, str | bytes] = {}
    for i in range(count):
        cut = rng.randrange(len(body) - 200)
        files[f"src/d{i % 5}/f{i}.txt"] = f"{i}\n{body[:cut]}{i}{body[cut:]}" * (1 + i % 3)
    files["bin/random.bin"] = rng.randbytes(70_000)  # stored whole, a long entry
    files["empty.txt"] = ""
    return files


def packed_repo(root: Path, *, ofs_delta: bool) -> Path:
    make_repo(root, similar_files())
    git(root, "config", "repack.useDeltaBaseOffset", "true" if ofs_delta else "false")
    git(root, "repack", "-adfq", "--depth=50", "--window=250")
    git(root, "prune-packed")
    return root


def read_headers(
    pack_dir: Path, wanted: set[bytes], map_max: int = 0
) -> dict[bytes, tuple[int, int]]:
    """pack_headers.read_headers as (type, size) per id found."""
    headers = dict.fromkeys(wanted, pack_headers.UNKNOWN)
    pack_headers.read_headers(pack_dir, headers, map_max=map_max)
    return {oid: (v & 7, v >> 3) for oid, v in headers.items() if v != pack_headers.UNKNOWN}


def libgit2_headers(root: Path, oids: set[bytes]) -> dict[bytes, tuple[int, int]]:
    repo = pygit2.Repository(str(root))
    found = {}
    for oid in oids:
        kind, size = repo.odb.read_header(pygit2.Oid(raw=oid))
        found[oid] = (int(kind), int(size))
    return found


def pack_entry_kinds(pack: Path) -> set[str]:
    """The entry types ``git verify-pack`` lists (deltas show a depth and a base)."""
    shown = git(pack.parent, "verify-pack", "-v", str(pack.with_suffix(".idx")))
    kinds = set()
    for line in shown.splitlines():
        fields = line.split()
        if len(fields) >= 5 and len(fields[0]) == 40:
            kinds.add("delta" if len(fields) >= 7 else fields[1])
    return kinds


MAPPED = pytest.mark.parametrize("map_max", [0, 1 << 30], ids=["pread", "mapped"])


@MAPPED
@pytest.mark.parametrize("ofs_delta", [True, False], ids=["ofs-delta", "ref-delta"])
def test_pack_headers_are_libgit2s(tmp_path: Path, ofs_delta: bool, map_max: int) -> None:
    root = packed_repo(tmp_path / "repo", ofs_delta=ofs_delta)
    pack_dir = root / ".git" / "objects" / "pack"
    (pack,) = pack_dir.glob("pack-*.pack")
    assert {"delta", "blob", "tree", "commit"} <= pack_entry_kinds(pack), "deltas of every kind"
    index = read_pack_index(pack.with_suffix(".idx"))
    assert index is not None
    names = index.names()
    absent = {b"\0" * 20, b"\x42" * 20}

    found = read_headers(pack_dir, names | absent, map_max)
    assert found == libgit2_headers(root, names), "type and size of every object, as libgit2"
    some = set(sorted(names)[::3])  # bases left out: their types found all the same
    assert read_headers(pack_dir, some, map_max) == libgit2_headers(root, some)


@MAPPED
def test_pack_headers_reads_a_few_far_apart_and_skips_what_it_cannot_read(
    tmp_path: Path, map_max: int
) -> None:
    root = packed_repo(tmp_path / "repo", ofs_delta=True)
    pack_dir = root / ".git" / "objects" / "pack"
    (idx,) = pack_dir.glob("pack-*.idx")
    index = read_pack_index(idx, tables=True)
    assert index is not None
    offsets = index.offsets()
    few = {index.name(0), index.name(len(index) // 2), index.name(len(index) - 1)}
    assert read_headers(pack_dir, few, map_max) == libgit2_headers(root, few)

    # A damaged entry is not reported (libgit2 is asked instead), never misread.
    victim = max(index.names(), key=lambda oid: offsets[index.position(oid) or 0])
    at = offsets[index.position(victim) or 0]
    pack = idx.with_suffix(".pack")
    os.chmod(pack, 0o644)
    with open(pack, "r+b") as f:
        f.seek(at)
        f.write(b"\x80" * 16)  # a size varint that never ends, then garbage
    assert read_headers(pack_dir, {victim}, map_max) == {}
    others = index.names() - {victim}
    assert read_headers(pack_dir, others, map_max) == libgit2_headers(root, others)


@pytest.mark.parametrize("packs", ["big", "small", "long history"])
def test_a_seeded_first_capture_reads_pack_headers_without_libgit2(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch, packs: str
) -> None:
    """Past seeded_blobs.MAP_MAX_BYTES a pack's headers are read with pread (libgit2 maps
    what it reads, 16.5); below it the pack is mapped (as fast, 16.1). libgit2 is asked
    for none (a first capture need not load it), unless the packs hold far more than
    is wanted (a long history): then its lookups are cheaper. Same snapshot."""
    big, sparse = packs == "big", packs == "long history"
    if big:
        monkeypatch.setattr(seeded_blobs, "MAP_MAX_BYTES", 0)
    if sparse:
        monkeypatch.setattr(seeded_blobs, "DENSE_OBJECTS", 0)
        monkeypatch.setattr(seeded_blobs, "DENSE_RATIO", 0)
    root = packed_repo(tmp_path / "repo", ofs_delta=True)
    index_s = os.stat(root / ".git" / "index").st_mtime_ns // 10**9
    for path in root.rglob("*"):
        if ".git" not in path.parts and path.is_file():
            os.utime(path, ns=((index_s - 60) * 10**9,) * 2)
    git(root, "update-index", "-q", "--refresh")
    asked: list[bytes] = []
    real = ObjectDB.headers

    def headers(self: ObjectDB, oids: Iterable[bytes]) -> Iterator[tuple[bytes, int, int]]:
        oids = list(oids)
        asked.extend(oids)
        return real(self, oids)

    mapped: list[int] = []
    real_map = mmap.mmap

    def mapping(fd: int, length: int, **kwargs: Any) -> mmap.mmap:
        mapped.append(os.fstat(fd).st_size)
        return real_map(fd, length, **kwargs)

    monkeypatch.setattr(ObjectDB, "headers", headers)
    monkeypatch.setattr(mmap, "mmap", mapping)
    engine = Engine.open(root, data_dir_path=data_dir)
    tree = engine.capture().tree
    assert tree == git(root, "write-tree").strip(), "git's own tree of the index"
    if sparse:
        assert asked and mapped == [], "a long history's headers are libgit2's to read"
    else:
        assert asked == [], "every seeded blob's header read from the linked pack"
    if big:
        assert mapped == [], "a big pack is read with pread, never mapped"
    elif not sparse:
        assert mapped, "a small pack is mapped"
    seeded = list((engine.store.root / "git" / "objects" / "pack").glob("pack-*.pack"))
    assert any(
        p.stat().st_ino == next(root.glob(".git/objects/pack/*.pack")).stat().st_ino for p in seeded
    ), "the source pack is linked"


def test_a_blob_of_another_size_is_not_seeded(tmp_path: Path, data_dir: Path) -> None:
    """The size check still holds for packed blobs (end-of-line conversion)."""
    root = packed_repo(tmp_path / "repo", ofs_delta=True)
    ids = {"src/d0/f0.txt": bytes.fromhex(git(root, "rev-parse", ":src/d0/f0.txt").strip())}
    store_git = tmp_path / "store"
    pygit2.init_repository(str(store_git), bare=True)
    linked = object_links.link_objects(
        root / ".git" / "objects", store_git / "objects", set(ids.values())
    )
    assert linked.missing == set() and linked.headers == {}, "packed: no loose header read"
    size = (root / "src/d0/f0.txt").stat().st_size
    right = {"src/d0/f0.txt": (0o100644, size, 1, 1, 1)}
    wrong = {"src/d0/f0.txt": (0o100644, size + 1, 1, 1, 1)}
    assert seeded_blobs.present_as_blobs(store_git, dict(ids), right, {}) == ids
    assert seeded_blobs.present_as_blobs(store_git, dict(ids), wrong, {}) == {}


# -- the index, parsed as iterated ------------------------------------------------


Row = tuple[object, ...]


def debug_listing(root: Path) -> list[Row]:
    """(path, "mode oid stage", ctime s, ns, mtime s, ns, dev, ino, size) per entry, from git."""
    lines = git(root, "ls-files", "-s", "--debug").splitlines()
    rows: list[Row] = []
    for k in range(0, len(lines), 6):  # the entry, then ctime, mtime, dev/ino, uid/gid, size
        meta, path = lines[k].split("\t", 1)
        ctime = lines[k + 1].split()[1].split(":")
        mtime = lines[k + 2].split()[1].split(":")
        dev_ino = lines[k + 3].split()
        size = lines[k + 5].split()[1]
        stamps = (int(ctime[0]), int(ctime[1]), int(mtime[0]), int(mtime[1]))
        rows.append((path, meta, *stamps, int(dev_ino[1]), int(dev_ino[3]), int(size)))
    return rows


def stat_data(e: gitindex.IndexEntry) -> tuple[int, ...]:
    return (e.ctime_s, e.ctime_ns, e.mtime_s, e.mtime_ns, e.dev, e.ino, e.size)


def listed(entries: list[gitindex.IndexEntry]) -> list[Row]:
    return [
        (e.path, f"{e.mode:o} {e.oid.hex()} {e.stage}", *stat_data(e))
        for e in sorted(entries, key=lambda e: (e.path, e.stage))
    ]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_the_index_iterated_is_what_git_lists(tmp_path: Path, version: int) -> None:
    root = tmp_path / "repo"
    make_repo(root, {**similar_files(30), "z/deep/er/name.txt": "x\n"})
    write(root, "intent.txt", "added with -N\n")
    git(root, "add", "-N", "intent.txt")  # an extended flag: index v3 at least
    git(root, "update-index", "--index-version", str(version))
    data = (root / ".git" / "index").read_bytes()
    found = gitindex.iter_split_entries(data)
    assert found is not None and found[1] is None
    entries = list(found[0])
    assert listed(entries) == debug_listing(root)
    assert gitindex.read_entries(data) == entries
    assert gitindex.parse(data) == {e.path: e.mode for e in entries}


def test_a_split_index_iterated_is_what_git_lists(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    make_repo(root, similar_files(30))
    git(root, "config", "splitIndex.maxPercentChange", "100")  # keep it split
    git(root, "update-index", "--split-index")
    write(root, "src/d1/f1.txt", "replaced in the split file\n")
    write(root, "added.txt", "only in the split file\n")
    git(root, "add", "src/d1/f1.txt", "added.txt")
    git(root, "rm", "-q", "src/d2/f2.txt")  # deleted from the shared entries
    data = (root / ".git" / "index").read_bytes()
    assert b"link" in data
    found = gitindex.iter_split_entries(data, git_dir=root / ".git")
    assert found is not None and found[1] is not None and found[1].name.startswith("sharedindex.")
    entries = list(found[0])
    assert listed(entries) == debug_listing(root)
    assert gitindex.iter_split_entries(data) is None, "a split index needs its shared index"
    found[1].write_bytes(found[1].read_bytes()[:-1] + b"!")  # a bad checksum
    assert gitindex.iter_split_entries(data, git_dir=root / ".git") is None
