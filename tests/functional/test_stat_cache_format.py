"""The stat cache's base on disk: written record by record, read back whole or not at all."""

from __future__ import annotations

import marshal
from pathlib import Path

import pytest

from snapshotter.store import stat_cache


def manifest(n: int) -> stat_cache.Manifest:
    entries = {
        f"d{i % 4}/f{i}.txt": (0o100644, i, i + 1, i + 2, i + 3, bytes([i % 256]) * 20)
        for i in range(n)
    }
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
    records, at = [], len(b"snapshotter-manifest 2\n")
    while at < len(raw):  # each record: its length, then one marshal
        size = int.from_bytes(raw[at : at + 4], "little")
        records.append(marshal.loads(raw[at + 4 : at + 4 + size]))
        at += 4 + size
    head, chunks = records[0], records[1:]
    assert head["chunks"] == 4 and [len(c) for c in chunks] == [3, 3, 3, 1]
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
            {"version": 1, "tree": old.tree, "entries": old.entries, "trees": old.trees, "loose": 2}
        )
    )
    read = stat_cache.load(path)
    assert (read.tree, read.entries, read.loose) == (old.tree, old.entries, 2)
