"""snapshotter/git/pack_headers.py: packed objects' type and size, as libgit2 reads them."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from snapshotter.git.kinds import BLOB
from snapshotter.git.pack_headers import UNKNOWN, header_value, read_headers
from snapshotter.git.packs import object_id, write_pack


def test_header_value_packs_type_and_size_in_one_int() -> None:
    assert header_value(BLOB, 0) == BLOB
    assert header_value(2, 10) >> 3 == 10 and header_value(2, 10) & 7 == 2


@pytest.mark.parametrize("map_max", [0, 1 << 30], ids=["pread", "mapped"])
def test_headers_of_libgit2s_pack_deltas_included(tmp_path: Path, map_max: int) -> None:
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    base = b"".join(b"line %d\n" % n for n in range(3000))
    ids = [repo.create_blob(base[: 20_000 + 7 * n] + b"end %d\n" % n) for n in range(8)]
    signature = pygit2.Signature("a", "a@b", 0, 0)
    builder = repo.TreeBuilder()
    builder.insert("f", ids[0], pygit2.enums.FileMode.BLOB)
    tree = builder.write()
    commit = repo.create_commit(None, signature, signature, "m", tree, [])
    out = tmp_path / "pack"
    out.mkdir()

    def add_all(builder: pygit2.PackBuilder) -> None:
        for oid in (*ids, tree, commit):
            builder.add(oid)

    repo.pack(str(out), add_all)
    headers = {bytes.fromhex(str(i)): UNKNOWN for i in (*ids, tree, commit)}
    absent = object_id(BLOB, b"not in any pack")
    headers[absent] = UNKNOWN
    read_headers(out, headers, map_max=map_max)
    for oid, value in headers.items():
        if oid == absent:
            assert value == UNKNOWN
            continue
        kind, size = repo.odb.read_header(pygit2.Oid(raw=oid))
        assert value == header_value(int(kind), size), oid.hex()


def test_only_unknown_headers_are_read(tmp_path: Path) -> None:
    data = b"hello\n"
    oid = object_id(BLOB, data)
    write_pack(tmp_path, [(oid, BLOB, data)])
    headers: dict[bytes, int] = {oid: UNKNOWN}
    read_headers(tmp_path, headers)
    assert headers == {oid: header_value(BLOB, len(data))}
    headers = {oid: 12345}
    read_headers(tmp_path, headers)
    assert headers == {oid: 12345}, "a known header is left alone"
    read_headers(tmp_path / "absent", headers)  # no such directory: nothing happens
