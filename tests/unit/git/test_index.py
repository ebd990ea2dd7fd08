"""snapshotter/git/index.py: the source repository's index file, versions 2 to 4 and split.

libgit2 writes version 2 (the pygit2 test); the other versions and the
split index are written here byte by byte from git's index-format.txt,
so each reading is checked without a ``git`` process.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pygit2
import pytest

from snapshotter.git import index as gitindex
from snapshotter.git.varint import encode_offset


class Raw(NamedTuple):
    path: bytes
    mode: int = 0o100644
    stage: int = 0
    extended: int = 0  # skip-worktree, intent-to-add (v3+)
    oid: bytes = bytes(range(20))
    size: int = 7


def entry_bytes(raw: Raw, version: int, previous: bytes) -> bytes:
    stat = struct.pack(">10I", 1, 2, 3, 4, 5, 6, raw.mode, 1000, 1000, raw.size)
    flags = min(len(raw.path), 0xFFF) | raw.stage << 12 | (0x4000 if raw.extended else 0)
    head = stat + raw.oid + struct.pack(">H", flags)
    if raw.extended:
        head += struct.pack(">H", raw.extended)
    if version == 4:
        pairs = enumerate(zip(previous, raw.path, strict=False))
        common = next((i for i, (a, b) in pairs if a != b), min(len(previous), len(raw.path)))
        return head + encode_offset(len(previous) - common) + raw.path[common:] + b"\0"
    length = (len(head) + len(raw.path) + 8) & ~7  # 1 to 8 NULs pad to a multiple of 8
    return (head + raw.path).ljust(length, b"\0")


def index_bytes(entries: list[Raw], version: int = 2, extensions: bytes = b"") -> bytes:
    body = b"DIRC" + struct.pack(">II", version, len(entries))
    previous = b""
    for raw in entries:
        body += entry_bytes(raw, version, previous)
        previous = raw.path
    body += extensions
    return body + hashlib.sha1(body).digest()


def ewah(bits: list[int], bit_count: int) -> bytes:
    """git's EWAH bitmap: one run-length word of no run and one literal word (< 64 bits)."""
    literal = sum(1 << b for b in bits)
    return struct.pack(">IIQQI", bit_count, 2, 1 << 33, literal, 0)


ENTRIES = [
    Raw(b"a.txt"),
    Raw(b"bin/run", mode=0o100755),
    Raw(b"bin/runner", mode=0o120000),
    Raw(b"caf\xe9.txt"),  # not UTF-8: os.fsdecode'd
    Raw(b"d/deep/x", extended=gitindex.SKIP_WORKTREE),
    Raw(b"d/deep/y", extended=gitindex.INTENT_TO_ADD),
    Raw(b"m", stage=2),
]
NAMES = [os.fsdecode(r.path) for r in ENTRIES]


@pytest.mark.parametrize("version", [3, 4])
def test_every_version_reads_every_entry_whole(version: int) -> None:
    found = gitindex.read_entries(index_bytes(ENTRIES, version))
    assert found is not None
    assert [e.path for e in found] == NAMES
    assert [e.mode for e in found] == [r.mode for r in ENTRIES]
    x, y, m = found[4], found[5], found[6]
    assert x.skip_worktree and not x.intent_to_add
    assert y.intent_to_add and not y.skip_worktree
    assert m.stage == 2 and found[0].stage == 0 and not found[0].assume_valid
    assert found[0][1:] == (1, 2, 3, 4, 5, 6, 0o100644, 1000, 1000, 7, bytes(range(20)), 5, 0)


@pytest.mark.parametrize("version", [2, 4])
def test_parse_gives_each_paths_mode(version: int) -> None:
    plain = [r for r in ENTRIES if not r.extended]  # (v2 has no extended flags)
    expected = {os.fsdecode(r.path): r.mode for r in plain}
    assert gitindex.parse(index_bytes(plain, version)) == expected


def test_libgit2s_index_reads_as_libgit2_reads_it(tmp_path: Path) -> None:
    root = tmp_path / "r"
    repo = pygit2.init_repository(str(root))
    for rel in ("a.txt", "dir/b.txt", "dir/sub/c.sh", "é.txt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
        repo.index.add(rel)
    (root / "dir/sub/c.sh").chmod(0o755)
    repo.index.add("dir/sub/c.sh")
    os.symlink("a.txt", root / "link")
    repo.index.add("link")
    repo.index.write()
    data = (root / ".git" / "index").read_bytes()
    theirs = {e.path: (e.mode, bytes.fromhex(str(e.id))) for e in repo.index}
    assert gitindex.parse(data) == {path: mode for path, (mode, _) in theirs.items()}
    entries = gitindex.read_entries(data)
    assert entries is not None
    assert {e.path: (e.mode, e.oid) for e in entries} == theirs
    assert next(e for e in entries if e.path == "a.txt").size == 5


def test_a_bad_checksum_or_version_is_not_trusted() -> None:
    good = index_bytes(ENTRIES[:2])
    flipped = good[:-1] + bytes([good[-1] ^ 1])
    assert gitindex.read_entries(flipped) is None
    assert gitindex.parse(flipped) == {"a.txt": 0o100644, "bin/run": 0o100755}, "not checked"
    assert gitindex.read_entries(good[:-20] + bytes(20)) is not None  # index.skipHash
    five = good[:4] + struct.pack(">I", 5) + good[8:]
    assert gitindex.parse(five) is None and gitindex.read_entries(five) is None
    assert gitindex.parse(b"NOPE" + good[4:]) is None
    assert gitindex.read_entries(good[:10]) is None


def test_a_sha256_index_has_32_byte_ids() -> None:
    wide = [r._replace(oid=bytes(range(32))) for r in ENTRIES[:3]]
    body = index_bytes(wide, 2)[:-20]
    data = body + hashlib.sha256(body).digest()
    found = gitindex.read_entries(data, oid_size=32)
    assert found is not None and [e.oid for e in found] == [bytes(range(32))] * 3
    modes = {"a.txt": 0o100644, "bin/run": 0o100755, "bin/runner": 0o120000}
    assert gitindex.parse(data, oid_size=32) == modes


def split(tmp_path: Path) -> bytes:
    """A split index: shared [a, b, c]; a deleted, b replaced (mode changed), d added."""
    shared = index_bytes([Raw(b"a"), Raw(b"b"), Raw(b"c")])
    shared_id = shared[-20:]
    (tmp_path / f"sharedindex.{shared_id.hex()}").write_bytes(shared)
    link = shared_id + ewah([0], 3) + ewah([1], 3)
    extension = b"link" + struct.pack(">I", len(link)) + link
    own = [Raw(b"", mode=0o100755), Raw(b"d")]  # a replacement keeps the shared name
    return index_bytes(own, 2, extension)


def test_a_split_index_is_merged_with_its_shared_index(tmp_path: Path) -> None:
    data = split(tmp_path)
    assert gitindex.parse(data, git_dir=tmp_path) == {
        "b": 0o100755,
        "c": 0o100644,
        "d": 0o100644,
    }
    entries = gitindex.read_entries(data, git_dir=tmp_path)
    assert entries is not None and [(e.path, e.mode) for e in entries] == [
        ("b", 0o100755),
        ("c", 0o100644),
        ("d", 0o100644),
    ]
    found = gitindex.iter_split_entries(data, git_dir=tmp_path)
    assert found is not None and found[1] is not None and found[1].parent == tmp_path


def test_a_split_index_without_its_shared_index_is_not_read(tmp_path: Path) -> None:
    data = split(tmp_path)
    assert gitindex.parse(data) is None and gitindex.read_entries(data) is None
    for shared in tmp_path.glob("sharedindex.*"):
        shared.write_bytes(shared.read_bytes()[:-1] + b"\0")  # its checksum broken
    assert gitindex.read_entries(data, git_dir=tmp_path) is None


def test_a_link_that_does_not_fit_its_shared_index_is_refused(tmp_path: Path) -> None:
    shared = index_bytes([Raw(b"a")])
    (tmp_path / f"sharedindex.{shared[-20:].hex()}").write_bytes(shared)
    link = shared[-20:] + ewah([5], 6) + ewah([], 6)  # deletes entry 5 of 1
    data = index_bytes([Raw(b"x")], 2, b"link" + struct.pack(">I", len(link)) + link)
    assert gitindex.read_entries(data, git_dir=tmp_path) is None


# -- one read for the walk and seeding (keep_entries) --------------------------


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many times an index's entries were read from its bytes (``IndexFile.entries``)."""
    reads: list[int] = []
    real = gitindex.IndexFile.entries

    def entries(self: gitindex.IndexFile) -> Iterator[gitindex.IndexEntry]:
        reads.append(self.count)
        return real(self)

    monkeypatch.setattr(gitindex.IndexFile, "entries", entries)
    yield reads
    gitindex.drop_entries()


@pytest.mark.parametrize("version", [2, 3, 4])
def test_entries_kept_by_parse_are_what_a_read_gives_once(kept: list[int], version: int) -> None:
    entries = [r for r in ENTRIES if version > 2 or not r.extended]
    data = index_bytes(entries, version)
    expected, modes = gitindex.read_entries(data), gitindex.parse(data)
    kept.clear()
    gitindex.keep_entries()
    assert gitindex.parse(data) == modes
    found = gitindex.iter_split_entries(data)
    assert found is not None and list(found[0]) == expected and found[1] is None
    assert kept == [len(entries)], "read once, by parse"
    assert gitindex.read_entries(data) == expected and len(kept) == 2, "then dropped"


def test_kept_entries_serve_only_the_same_bytes_checked(kept: list[int]) -> None:
    """An index git rewrote since the walk read it is read anew; a bad checksum is
    refused as ever; ids of another size are another index."""
    before, after = index_bytes(ENTRIES[:2]), index_bytes(ENTRIES[:3])
    gitindex.keep_entries()
    gitindex.parse(before)
    found = gitindex.iter_split_entries(after)
    assert found is not None and [e.path for e in found[0]] == NAMES[:3]
    gitindex.keep_entries()
    flipped = before[:-1] + bytes([before[-1] ^ 1])
    gitindex.parse(flipped)
    assert gitindex.iter_split_entries(flipped) is None
    gitindex.keep_entries()
    gitindex.parse(before)
    assert gitindex.read_entries(before, oid_size=32) is None


def test_a_split_or_big_index_is_not_kept(
    kept: list[int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitindex.keep_entries()
    gitindex.parse(split(tmp_path), git_dir=tmp_path)
    assert getattr(gitindex._kept, "slot", None) is None
    monkeypatch.setattr(gitindex, "KEEP_MAX", 1)
    gitindex.keep_entries()
    gitindex.parse(index_bytes(ENTRIES[:2]))
    assert getattr(gitindex._kept, "slot", None) is None, "past KEEP_MAX: read twice"
