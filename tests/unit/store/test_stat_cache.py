"""snapshotter/store/stat_cache.py: ``newest_tree`` names the tree ``load`` would,
without reading the entries (issue 24.2), and nothing when ``load`` would find none."""

from __future__ import annotations

from pathlib import Path

from snapshotter.store import records, stat_cache
from snapshotter.store.stat_cache import Delta, Manifest

TREE_A, TREE_B, TREE_C = "a" * 40, "b" * 40, "c" * 40


def _entries(n: int) -> dict[str, stat_cache.Entry]:
    return {f"d/f{i}": records.stat(0o100644, i, i, i, i) + bytes(20) for i in range(n)}


def _saved(tmp_path: Path, entries: int = 3) -> tuple[Path, Manifest]:
    path = tmp_path / "manifest"
    manifest = Manifest(TREE_A, _entries(entries), {"": bytes.fromhex(TREE_A)})
    stat_cache.save(path, manifest)
    return path, stat_cache.load(path)


def test_the_base_and_each_log_record_name_the_tree(tmp_path: Path) -> None:
    path, manifest = _saved(tmp_path, entries=2 * stat_cache.CHUNK + 5)  # three chunks
    assert stat_cache.newest_tree(path) == TREE_A == stat_cache.load(path).tree
    entry = records.stat(0o100644, 1, 1, 1, 1) + bytes(20)
    stat_cache.record(path, manifest, Delta(TREE_B, {"x": entry}))
    stat_cache.record(path, manifest, Delta(TREE_C, removed=["x"]))
    assert stat_cache.log_path(path).exists(), "the deltas went to the log"
    assert stat_cache.newest_tree(path) == TREE_C == stat_cache.load(path).tree


def test_a_torn_log_record_is_not_the_newest(tmp_path: Path) -> None:
    path, manifest = _saved(tmp_path)
    stat_cache.record(path, manifest, Delta(TREE_B))
    with open(stat_cache.log_path(path), "ab") as log:
        log.write(b"\x40\x00\x00\x00\x00\x00\x00\x00torn")  # a record cut short by a kill
    assert stat_cache.newest_tree(path) == TREE_B == stat_cache.load(path).tree


def test_no_tree_from_a_missing_or_cut_short_base(tmp_path: Path) -> None:
    assert stat_cache.newest_tree(tmp_path / "manifest") is None
    path, _ = _saved(tmp_path, entries=stat_cache.CHUNK + 1)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 10])
    assert stat_cache.load(path).tree is None
    assert stat_cache.newest_tree(path) is None
    path.write_bytes(b"garbage")
    assert stat_cache.newest_tree(path) is None
