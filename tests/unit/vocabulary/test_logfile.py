"""snapshotter/logfile.py: one line per failure, kept small, never an error of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from snapshotter import logfile


def test_a_message_is_one_stamped_line_in_a_private_directory(tmp_path: Path) -> None:
    logfile.append(tmp_path, "capture failed:\n  disk   full")
    path = logfile.log_path(tmp_path)
    assert path == tmp_path / "snapshot" / "hook.log"
    (line,) = path.read_text().splitlines()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ capture failed: disk full", line)
    assert path.parent.stat().st_mode & 0o777 == 0o700
    logfile.append(tmp_path, "second")
    assert path.read_text().splitlines()[1].endswith(" second")


def test_a_huge_message_is_cut(tmp_path: Path) -> None:
    logfile.append(tmp_path, "x" * 10_000)
    (line,) = logfile.log_path(tmp_path).read_text().splitlines()
    assert line.endswith(" " + "x" * 4000)


def test_a_full_log_is_rotated_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logfile, "MAX_LOG_BYTES", 100)
    logfile.append(tmp_path, "a" * 200)
    logfile.append(tmp_path, "fresh")
    path = logfile.log_path(tmp_path)
    assert path.read_text().endswith(" fresh\n") and "aaa" not in path.read_text()
    assert (path.parent / "hook.log.1").read_text().endswith("a" * 200 + "\n")


def test_an_unwritable_data_directory_raises_nothing(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_bytes(b"")
    logfile.append(not_a_dir, "lost, quietly")  # mkdir fails below a file
    assert not_a_dir.read_bytes() == b""
