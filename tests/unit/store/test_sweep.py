"""snapshotter/store/sweep.py: files without watches of their own, checked by stat alone
(issue 24.5): every file whose stat data moved is found, and only those."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from snapshotter.store import records, sweep

OLD = 1_600_000_000_000_000_000


def _tree(root: Path) -> tuple[dict[str, bytes], dict[str, list[str]]]:
    """Ten directories of twenty files, and their records as a capture keeps them."""
    entries: dict[str, bytes] = {}
    files: dict[str, list[str]] = {}
    for d in range(10):
        files[f"d{d}"] = []
        for i in range(20):
            rel = f"d{d}/f{i}.txt"
            (root / f"d{d}").mkdir(exist_ok=True)
            (root / rel).write_text(f"{d}/{i}\n")
            os.utime(root / rel, ns=(OLD, OLD))
            st = os.lstat(root / rel)
            entries[rel] = records.stat(0o100644, st.st_size, OLD, st.st_ctime_ns, st.st_ino)
            entries[rel] += bytes(20)
            files[f"d{d}"].append(rel)
    return entries, files


def test_every_file_whose_stat_data_moved_and_only_those(tmp_path: Path) -> None:
    entries, files = _tree(tmp_path)
    assert sweep.swept(str(tmp_path), entries, files, 0, None) == (set(), 10)
    (tmp_path / "outside").hardlink_to(tmp_path / "d3/f5.txt")  # a new link: its ctime
    with open(tmp_path / "outside", "a") as f:
        f.write("through another name\n")
    (tmp_path / "d1/f2.txt").unlink()
    shutil.rmtree(tmp_path / "d7")
    (tmp_path / "d9/f0.txt").rename(tmp_path / "d9/moved")  # replaced by another inode:
    shutil.copy2(tmp_path / "d9/moved", tmp_path / "d9/f0.txt")  # same bytes and mtime
    (tmp_path / "d4/f4.txt").unlink()
    (tmp_path / "d4/f4.txt").hardlink_to(tmp_path / "d9/moved")  # another file's inode
    found, _ = sweep.swept(str(tmp_path), entries, files, 0, None)
    assert found == {"d3/f5.txt", "d1/f2.txt", "d9/f0.txt", "d4/f4.txt", *files["d7"]}


def test_a_share_is_whole_directories_round_robin(tmp_path: Path) -> None:
    entries, files = _tree(tmp_path)
    with open(tmp_path / "d1/f0.txt", "a") as f:
        f.write("changed\n")
    assert sweep.swept(str(tmp_path), entries, files, 8, 30) == (set(), 10), "d8, d9"
    assert sweep.swept(str(tmp_path), entries, files, 10, 30) == ({"d1/f0.txt"}, 2)
