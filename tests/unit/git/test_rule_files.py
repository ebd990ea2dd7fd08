"""snapshotter/git/rule_files.py: which pattern files are read, and how lines are cut."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapshotter.git import rule_files
from snapshotter.git.rule_files import parse_lines


@pytest.mark.parametrize(
    ("data", "lines"),
    [
        (b"a\nb", [b"a", b"b"]),  # the last line needs no newline
        (b"\xef\xbb\xbfa\n", [b"a"]),  # a UTF-8 BOM is skipped
        (b"a\xef\xbb\xbf\n", [b"a\xef\xbb\xbf"]),  # only at the start
        (b"a\r\nb\r\r\n", [b"a", b"b\r"]),  # one \r before the newline goes
        (b"\n\n# comment\n\\#not\n #x\n", [b"\\#not", b" #x"]),
        (b"a  \nb\\ \nc\\  \nd\t\ne \t \n", [b"a", b"b\\ ", b"c\\ ", b"d\t", b"e \t"]),
        (b"trail\\\n", [b"trail\\"]),
        (b"ab\0cd\n", [b"ab"]),  # C strings: a NUL ends the line
        (b"   \n", [b""]),  # git adds it, and an empty pattern never matches
    ],
)
def test_lines_are_cut_as_git_cuts_them(data: bytes, lines: list[bytes]) -> None:
    assert parse_lines(data) == lines


def test_a_regular_file_is_read_and_a_missing_one_is_not_opened(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_bytes(b"*.log\n# c\nbuild/\n")
    assert rule_files.read_rule_file(tmp_path / ".gitignore") == (b"*.log\n# c\nbuild/\n", True)
    assert rule_files.read_lines(tmp_path / ".gitignore") == [b"*.log", b"build/"]
    assert rule_files.read_rule_file(tmp_path / "absent") == (None, False)
    assert rule_files.read_lines(tmp_path / "absent") is None


def test_a_link_is_followed_unless_the_file_lies_in_the_worktree(tmp_path: Path) -> None:
    (tmp_path / "target").write_bytes(b"x\n")
    (tmp_path / ".gitignore").symlink_to("target")
    assert rule_files.read_rule_file(tmp_path / ".gitignore") == (b"x\n", True)
    # git >= 2.32 refuses a .gitignore that is a link: not opened, so it falls back
    assert rule_files.read_rule_file(tmp_path / ".gitignore", nofollow=True) == (None, False)


def test_a_fifo_or_a_directory_is_opened_but_never_read(tmp_path: Path, no_hang: None) -> None:
    os.mkfifo(tmp_path / ".gitignore")
    assert rule_files.read_rule_file(tmp_path / ".gitignore", nofollow=True) == (None, True)
    assert rule_files.read_rule_file(tmp_path) == (None, True)


def test_a_file_over_gits_limit_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "big").write_bytes(b"a\n" * 10)
    monkeypatch.setattr(rule_files, "MAX_RULE_FILE_BYTES", 19)
    assert rule_files.read_rule_file(tmp_path / "big") == (None, True)
    monkeypatch.setattr(rule_files, "MAX_RULE_FILE_BYTES", 20)
    assert rule_files.read_lines(tmp_path / "big") == [b"a"] * 10
