"""The stat cache's base on disk: written record by record, read back whole or not at all."""

from __future__ import annotations

import marshal
import zlib
from pathlib import Path

import pytest

from snapshotter.store import records, stat_cache


def tuples(n: int) -> dict[str, tuple[int, int, int, int, int, bytes]]:
    """Entries as versions before issue 24.5 held them: five fields, then the blob id."""
    return {
        f"d{i % 4}/f{i}.txt": (0o100644, i, i + 1, i + 2, i + 3, bytes([i % 256]) * 20)
        for i in range(n)
    }


def manifest(n: int) -> stat_cache.Manifest:
    entries = {rel: records.stat(*t[:5]) + t[5] for rel, t in tuples(n).items()}
    trees = {"": b"\x01" * 20, "d0": b"\x02" * 20}
    return stat_cache.Manifest("ab" * 20, entries, trees, 7)


def test_a_base_of_many_records_reads_back_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stat_cache, "CHUNK", 3)
    path = tmp_path / "manifest"
    written = manifest(10)
    stat_cache.save(path, written)
    raw = path.read_bytes()
    assert raw.startswith(b"snapshotter-manifest 2\n")
    found, at = [], len(b"snapshotter-manifest 2\n")
    while at < len(raw):  # each record: its length, then one marshal
        size = int.from_bytes(raw[at : at + 4], "little")
        found.append(marshal.loads(raw[at + 4 : at + 4 + size]))
        at += 4 + size
    head, chunks = found[0], found[1:]
    assert head["chunks"] == 4 and [len(c) for c in chunks] == [3, 3, 3, 1]
    assert head["version"] == 3 and all(type(v) is bytes for c in chunks for v in c.values())
    read = stat_cache.load(path)
    assert (read.tree, read.entries, read.trees, read.loose) == (
        written.tree,
        written.entries,
        written.trees,
        written.loose,
    )
    assert read.base_size == path.stat().st_size


def test_a_base_cut_short_costs_a_rehash_never_half_a_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stat_cache, "CHUNK", 3)
    path = tmp_path / "manifest"
    stat_cache.save(path, manifest(10))
    data = path.read_bytes()
    for cut in (len(data) - 1, len(data) // 2, 5):
        path.write_bytes(data[:cut])
        assert stat_cache.load(path).entries == {}, f"cut at {cut}"


def test_a_version_1_base_is_still_read(tmp_path: Path) -> None:
    """One marshal of everything, as versions before issue 16 wrote it."""
    old = manifest(5)
    path = tmp_path / "manifest"
    path.write_bytes(
        marshal.dumps(
            {"version": 1, "tree": old.tree, "entries": tuples(5), "trees": old.trees, "loose": 2}
        )
    )
    read = stat_cache.load(path)
    assert (read.tree, read.entries, read.loose) == (old.tree, old.entries, 2)


def test_a_version_2_base_and_its_log_are_still_read(tmp_path: Path) -> None:
    """Tuples, record by record, and a log of tuples (before issue 24.5): read as
    records, every field kept."""
    old = manifest(5)
    path = tmp_path / "manifest"
    token = b"t" * 16
    head = {"version": 2, "tree": old.tree, "chunks": 1, "trees": old.trees, "loose": 2}
    body = [marshal.dumps({**head, "log": token}), marshal.dumps(tuples(4))]
    path.write_bytes(
        b"snapshotter-manifest 2\n" + b"".join(len(b).to_bytes(4, "little") + b for b in body)
    )
    changed = (0o100755, 9, 10, 11, 12, b"\x09" * 20)
    payload = marshal.dumps(("cd" * 20, {"d0/f4.txt": changed}, ["d1/f1.txt"], {}, [], 3))
    stat_cache.log_path(path).write_bytes(
        b"snapshotter-manifest-log 1\n"
        + token
        + len(payload).to_bytes(4, "little")
        + zlib.crc32(payload).to_bytes(4, "little")
        + payload
    )
    read = stat_cache.load(path)
    expected = {rel: e for rel, e in old.entries.items() if rel not in ("d1/f1.txt", "d0/f4.txt")}
    expected["d0/f4.txt"] = records.stat(*changed[:5]) + changed[5]
    assert (read.tree, read.entries, read.loose) == ("cd" * 20, expected, 3)
    assert stat_cache.newest_tree(path) == "cd" * 20
