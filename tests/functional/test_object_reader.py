"""git/object_reader.py: objects read without libgit2 are exactly libgit2's.

Every object of real repositories written by the git CLI (loose; packed with
offset deltas by ``git gc --aggressive``; repacked with reference deltas) is
read both ways and compared; a damaged object is refused, never returned.
"""

from __future__ import annotations

import os
import random
import zlib
from pathlib import Path

import pygit2
import pytest
from builders import git, make_repo, write

from snapshotter.git import object_reader, pack_index
from snapshotter.git.objects import _hash_file_by_hand


def _history(root: Path) -> None:
    """Commits of files that change a little each time (deltas), some over 4 KB."""
    rng = random.Random(7)
    lines = [f"line {i} {rng.random()}\n" for i in range(3000)]
    for round_ in range(6):
        for n in range(4):
            rng.shuffle(lines[:50])
            write(root, f"d{n}/big{n}.txt", "".join(lines[: 500 + 400 * n]) + f"r{round_}\n")
            write(root, f"small{n}.txt", f"small {n} {round_}\n" * (n + 1))
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"round {round_}")


def _all_ids(root: Path) -> list[bytes]:
    listed = git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
    return [bytes.fromhex(line) for line in listed.split()]


def _same_as_libgit2(root: Path) -> int:
    """Compare every object both ways; how many were read."""
    objects = root / ".git" / "objects"
    odb = pygit2.Repository(str(root)).odb
    ids = _all_ids(root)
    for oid in ids:
        kind, data = odb.read(oid.hex())
        assert object_reader.read(objects, oid) == (int(kind), bytes(data)), oid.hex()
    return len(ids)


def _deltas(root: Path) -> int:
    """How many entries of the repository's packs are deltas (git verify-pack)."""
    packs = sorted((root / ".git" / "objects" / "pack").glob("*.idx"))
    assert packs, "packed"
    shown = git(root, "verify-pack", "-v", *map(str, packs))
    return sum(1 for line in shown.splitlines() if len(line.split()) == 7)


def test_loose_objects_read_as_libgit2_reads_them(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    _history(root)
    assert not list((root / ".git" / "objects" / "pack").glob("*.pack")), "all loose"
    assert _same_as_libgit2(root) > 50


@pytest.mark.parametrize("offsets", [True, False], ids=["ofs-delta", "ref-delta"])
def test_packed_objects_and_their_deltas_read_as_libgit2_reads_them(
    tmp_path: Path, offsets: bool
) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    _history(root)
    git(root, "-c", f"repack.useDeltaBaseOffset={str(offsets).lower()}", "repack", "-adfq")
    git(root, "prune-packed")
    assert _deltas(root) > 20, "the pack holds deltas"
    assert _same_as_libgit2(root) > 50


def test_a_missing_object_is_none_and_a_damaged_one_is_refused(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {"a.txt": "a\n", "b.txt": "b\n"})
    objects = root / ".git" / "objects"
    assert object_reader.read(objects, bytes(range(20))) is None
    blob = bytes.fromhex(git(root, "rev-parse", "HEAD:a.txt").strip())
    path = objects / blob.hex()[:2] / blob.hex()[2:]
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"blob 2\0x\n"))  # well formed, other bytes
    with pytest.raises(object_reader.Unreadable, match="does not match"):
        object_reader.read(objects, blob)
    path.write_bytes(b"not zlib")
    with pytest.raises(object_reader.Unreadable):
        object_reader.read(objects, blob)


def test_a_damaged_pack_entry_is_refused(tmp_path: Path) -> None:
    """Bytes flipped all over a pack: each object is refused or read as it was."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    _history(root)
    git(root, "repack", "-adq")
    git(root, "prune-packed")
    objects = root / ".git" / "objects"
    pack = next((objects / "pack").glob("*.pack"))
    whole = {oid: object_reader.read(objects, oid) for oid in _all_ids(root)}
    pack.chmod(0o644)
    data = bytearray(pack.read_bytes())
    for at in range(100, len(data) - 20, 97):
        data[at] ^= 0x55
    pack.write_bytes(bytes(data))
    refused = 0
    for oid, before in whole.items():
        try:
            found = object_reader.read(objects, oid)
        except object_reader.Unreadable:
            refused += 1
            continue
        assert found == before, f"{oid.hex()} read from a damaged pack as other bytes"
    assert refused > len(whole) // 2


@pytest.mark.parametrize("size", [0, 5, 3 << 20])
def test_a_file_hashed_by_hand_has_libgit2s_id(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f"
    path.write_bytes(random.Random(size).randbytes(size))
    assert _hash_file_by_hand(str(path)) == pygit2.hashfile(str(path)).raw


def test_a_delta_copies_64k_where_it_names_no_size() -> None:
    """Git's delta format: a copy with no size bytes copies 0x10000 bytes; op 0 is
    reserved; a base of another size is refused (the cases git's own packs rarely show)."""
    base = bytes(range(256)) * 300  # 76,800 bytes
    head = bytes([0x80 | (len(base) & 0x7F), len(base) >> 7 & 0x7F | 0x80, len(base) >> 14])
    size = 0x10000 + 3
    delta = head + bytes([0x80 | (size & 0x7F), size >> 7 & 0x7F | 0x80, size >> 14])
    delta += bytes([0x80 | 0x01, 0x10]) + bytes([3]) + b"end"  # copy 64k from 16, insert 3
    assert object_reader._apply(base, delta) == base[16 : 16 + 0x10000] + b"end"
    with pytest.raises(ValueError, match="reserved"):
        object_reader._apply(base, delta[:6] + b"\0")
    with pytest.raises(ValueError, match="another size"):
        object_reader._apply(base[1:], delta)


def test_objects_spread_over_packs_read_as_libgit2_reads_them(tmp_path: Path) -> None:
    """Packs added one by one (a store gets one a turn), then all replaced by one:
    the names each index had, kept by the reader, follow the files."""
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    for n in range(3):
        write(root, f"f{n}.txt", f"file {n}\n" * 50)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"c{n}")
        git(root, "repack", "-dq")  # the new loose objects as one more pack
    assert len(list((root / ".git" / "objects" / "pack").glob("*.idx"))) == 3
    assert _same_as_libgit2(root) > 10
    git(root, "repack", "-adfq")
    assert len(list((root / ".git" / "objects" / "pack").glob("*.idx"))) == 1
    assert _same_as_libgit2(root) > 10


def test_a_big_pack_index_is_searched_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where an index is too big to keep its names (the source's), the same objects."""
    monkeypatch.setattr(pack_index, "KEEP_NAMES_UP_TO", 0)
    root = make_repo(tmp_path / "r", {"a.txt": "a\n"})
    _history(root)
    git(root, "repack", "-adq")
    git(root, "prune-packed")
    assert _same_as_libgit2(root) > 50


def test_a_file_that_grows_while_hashed_gets_libgit2s_id_of_its_first_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hashed as libgit2 hashes: the size fstat gave, that many bytes (an agent writing
    during an undo makes it "changed", never an error of its own)."""
    path = tmp_path / "f"
    path.write_bytes(b"0123456789")
    real_fstat = os.fstat
    monkeypatch.setattr(os, "fstat", lambda fd: _shrunk(real_fstat(fd), 4))
    assert _hash_file_by_hand(str(path)) == pygit2.hash(b"0123").raw


def _shrunk(st: os.stat_result, size: int) -> os.stat_result:
    values = list(st)
    values[6] = size  # st_size: as fstat saw the file before it grew
    return os.stat_result(values)
