"""snapshotter/git/pack_index.py: a pack's v2 ``.idx``, written and read back.

libgit2 writes one too (``Repository.pack``): ours must read it, and write
the same bytes for the same objects.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from pathlib import Path

import pygit2
import pytest

from snapshotter.git import pack_index
from snapshotter.git.pack_index import encode_index, holds, offset_at, read_pack_index

PACK_SUM = bytes(range(20))


def oid(n: int) -> bytes:
    return hashlib.sha1(str(n).encode()).digest()


def written(tmp_path: Path, records: dict[bytes, int]) -> Path:
    path = tmp_path / "pack-x.idx"
    path.write_bytes(encode_index(records, PACK_SUM))
    return path


def test_what_is_written_reads_back(tmp_path: Path) -> None:
    records = {oid(n): (12 + 100 * n) << 32 | zlib.crc32(b"%d" % n) for n in range(300)}
    index = read_pack_index(written(tmp_path, records), tables=True)
    assert index is not None and len(index) == 300
    assert list(index.iter_names()) == sorted(records)
    assert index.entries() == sorted((r >> 32, o, r & 0xFFFFFFFF) for o, r in records.items())
    assert sorted(index.offsets()) == [12 + 100 * n for n in range(300)]
    for n in (0, 150, 299):
        position = index.position(oid(n))
        assert position is not None and index.name(position) == oid(n)
    assert oid(300) not in index and index.position(oid(0)[:19]) is None


def test_find_and_lacking_split_the_wanted_ids(tmp_path: Path) -> None:
    index = read_pack_index(written(tmp_path, {oid(n): n << 32 for n in range(50)}))
    assert index is not None
    few, many = {oid(1), oid(99)}, {oid(n) for n in range(0, 400, 2)}
    assert index.find(few) == {oid(1)} and index.lacking(few) == {oid(99)}
    assert index.lacking(many) == {oid(n) for n in range(50, 400, 2)}
    assert index.find(list(many)) == {oid(n) for n in range(0, 50, 2)}
    assert index.names() == {oid(n) for n in range(50)}


def test_offsets_past_2_gib_go_through_the_large_table(tmp_path: Path) -> None:
    records = {oid(1): 12 << 32, oid(2): (5 << 32) << 32 | 7, oid(3): (2**31) << 32}
    index = read_pack_index(written(tmp_path, records), tables=True)
    assert index is not None
    assert sorted(index.entries()) == sorted(
        [(12, oid(1), 0), (5 << 32, oid(2), 7), (2**31, oid(3), 0)]
    )


def test_an_empty_index_is_valid(tmp_path: Path) -> None:
    index = read_pack_index(written(tmp_path, {}), tables=True)
    assert index is not None and len(index) == 0 and index.entries() == []


def test_libgit2s_index_reads_and_is_written_back_byte_for_byte(tmp_path: Path) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    ids = {bytes.fromhex(str(repo.create_blob(b"blob %d\n" % n))) for n in range(40)}
    out = tmp_path / "packs"
    out.mkdir()
    assert repo.pack(str(out)) == 40
    (idx,) = out.glob("*.idx")
    index = read_pack_index(idx, tables=True)
    assert index is not None and index.names() == ids
    records = {oid: off << 32 | crc for off, oid, crc in index.entries()}
    theirs = idx.read_bytes()
    assert encode_index(records, theirs[-40:-20]) == theirs


def damaged(data: bytes) -> list[bytes]:
    fanout_end = 8 + 256 * 4
    wrong_order = bytearray(data)
    wrong_order[8:12] = struct.pack(">I", 9)  # more ids start with 0x00 than with <= 0xff
    past_large = bytearray(data)
    names_end = fanout_end + 20 * 2
    offsets_at = names_end + 4 * 2
    past_large[offsets_at : offsets_at + 4] = struct.pack(">I", 0x80000000)  # no table
    return [
        b"",
        b"\x00tOc" + data[4:],  # not the magic
        data[:4] + struct.pack(">I", 3) + data[8:],  # another version
        data[: fanout_end + 30],  # the names cut short
        bytes(wrong_order),
        data[:-41],  # the checksums cut short
        bytes(past_large),
    ]


@pytest.mark.parametrize("case", range(7))
def test_a_damaged_index_reads_as_none(tmp_path: Path, case: int) -> None:
    good = encode_index({oid(1): 1 << 32, oid(2): 2 << 32}, PACK_SUM)
    path = tmp_path / "x.idx"
    path.write_bytes(damaged(good)[case])
    tables = case >= 5  # the tables are only checked when read
    assert read_pack_index(path, tables=tables) is None
    path.write_bytes(good)
    assert read_pack_index(path, tables=tables) is not None


def test_a_missing_file_reads_as_none(tmp_path: Path) -> None:
    assert read_pack_index(tmp_path / "absent.idx") is None


def test_holds_searches_the_index_on_disk(tmp_path: Path) -> None:
    records = {oid(n): n << 32 for n in range(300)}
    path = written(tmp_path, records)
    index = read_pack_index(path)
    assert index is not None
    for n in range(600):  # half of them held
        assert holds(path, oid(n)) is (oid(n) in index), n
    assert not holds(path, b"short")
    path.write_bytes(path.read_bytes()[: 8 + 1024 + 20 * 100])  # cut short in the names
    assert not holds(path, max(records))
    path.write_bytes(b"not an index")
    assert not holds(path, oid(1))


def test_offset_at_reads_each_entrys_offset_large_ones_too(tmp_path: Path) -> None:
    records = {oid(n): (n * 1000 + (2**31 if n % 3 == 0 else 0)) << 32 for n in range(1, 200)}
    path = written(tmp_path, records)
    index = read_pack_index(path)
    assert index is not None
    for held in records:
        position = index.position(held)
        assert position is not None
        assert offset_at(path, len(index), position) == records[held] >> 32
    path.write_bytes(b"cut")
    assert offset_at(path, len(index), 5) is None


def test_find_keeps_a_bounded_number_of_indexes(tmp_path: Path) -> None:
    """A long-lived process sees gc replace packs: the names it keeps stay bounded."""
    for n in range(100):
        folder = tmp_path / str(n)
        folder.mkdir()
        path = written(folder, {oid(n): 12 << 32})
        assert pack_index.find(path, oid(n)) == (1, 0)
        assert pack_index.find(path, oid(n + 1)) is None
    assert len(pack_index._kept) <= pack_index._KEPT_MAX
