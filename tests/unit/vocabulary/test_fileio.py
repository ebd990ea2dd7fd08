"""snapshotter/fileio.py: atomic writes, temp names, reads that never block, real parents."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from snapshotter import fileio


def test_temp_names_are_fresh_and_recognised_with_the_old_prefix_too() -> None:
    first, second = fileio.temp_name(), fileio.temp_name()
    assert first != second
    assert first.startswith(fileio.TEMP_PREFIX) and fileio.is_temp(first)
    assert fileio.is_temp("tmp_snapshotter_pack_1")  # an earlier version's pack temp
    assert not fileio.is_temp("state.json")
    assert not fileio.is_temp("x" + first)


def test_write_atomic_replaces_the_file_whole_from_pieces(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old contents")
    assert fileio.write_atomic(target, iter([b"ab", b"", b"cde"])) == 5
    assert target.read_bytes() == b"abcde"
    assert fileio.write_atomic(target, b"xyz", durable=True) == 3
    assert target.read_bytes() == b"xyz"
    assert os.listdir(tmp_path) == ["f"], "no temp file is left beside it"


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"kept")

    def pieces() -> Iterator[bytes]:
        yield b"half"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        fileio.write_atomic(target, pieces())
    assert target.read_bytes() == b"kept"
    assert os.listdir(tmp_path) == ["f"]


def test_remove_leftovers_deletes_temp_files_and_directories_only(tmp_path: Path) -> None:
    (tmp_path / fileio.temp_name()).write_bytes(b"")
    pack_work = tmp_path / "tmp_snapshotter_pack"
    (pack_work / "inner").mkdir(parents=True)
    (pack_work / "inner" / "x").write_bytes(b"")
    (tmp_path / "keep.json").write_bytes(b"{}")
    assert fileio.remove_leftovers(tmp_path) == 2
    assert os.listdir(tmp_path) == ["keep.json"]


def test_remove_leftovers_takes_its_own_rule_and_a_missing_directory(tmp_path: Path) -> None:
    for name in ("a.lock", "b.lock", "c.txt"):
        (tmp_path / name).write_bytes(b"")
    assert fileio.remove_leftovers(tmp_path, lambda name: name.endswith(".lock")) == 2
    assert os.listdir(tmp_path) == ["c.txt"]
    assert fileio.remove_leftovers(tmp_path / "absent") == 0


def test_read_regular_reads_a_file_whole_up_to_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100_000)
    assert fileio.read_regular(path) == b"x" * 100_000
    assert fileio.read_regular(path, max_size=100_000) == b"x" * 100_000
    assert fileio.read_regular(path, max_size=99_999) is None
    with pytest.raises(FileNotFoundError):
        fileio.read_regular(tmp_path / "absent")


def test_read_regular_refuses_a_link_unless_asked_to_follow(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"through the link")
    (tmp_path / "link").symlink_to("real")
    with pytest.raises(OSError):
        fileio.read_regular(tmp_path / "link")
    assert fileio.read_regular(tmp_path / "link", follow_symlinks=True) == b"through the link"


def test_read_regular_never_reads_a_fifo_or_a_directory(tmp_path: Path, no_hang: None) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: a blocking open or read would wait for ever
    assert fileio.read_regular(fifo) is None
    assert fileio.read_regular(tmp_path) is None


def test_real_parents_refuses_a_link_or_a_file_on_the_way(tmp_path: Path) -> None:
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / "e" / "f").write_bytes(b"f")
    (tmp_path / "link").symlink_to("d")
    (tmp_path / "file").write_bytes(b"")
    assert fileio.real_parents(tmp_path, "d/e/f")
    assert fileio.real_parents(tmp_path, "top-level-needs-no-parent")
    assert not fileio.real_parents(tmp_path, "link/e/f")
    assert not fileio.real_parents(tmp_path, "file/x")
    assert not fileio.real_parents(tmp_path, "absent/x")


def test_lstat_within_sees_only_what_real_directories_lead_to(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_bytes(b"12345")
    (tmp_path / "d" / "l").symlink_to("f")
    (tmp_path / "link").symlink_to("d")
    found = fileio.lstat_within(tmp_path, "d/f")
    assert found is not None and found.st_size == 5
    link = fileio.lstat_within(tmp_path, "d/l")
    assert link is not None and link.st_size == 1, "the link itself, not its target"
    assert fileio.lstat_within(tmp_path, "link/f") is None
    assert fileio.lstat_within(tmp_path, "d/absent") is None
