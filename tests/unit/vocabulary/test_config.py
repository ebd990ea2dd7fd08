"""snapshotter/config.py: sizes as people write them, and where data lives."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapshotter import config
from snapshotter.errors import BadInput


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2097152", 2097152),
        ("512KiB", 512 * 1024),
        ("4MiB", 4 * 1024**2),
        ("1.5MB", 1_500_000),
        (" 2 gib ", 2 * 1024**3),
        ("0", 0),
        (7, 7),
    ],
)
def test_parse_size_reads_what_people_write(text: str | int, expected: int) -> None:
    assert config.parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "MiB", "4 parsecs", "-1", "1e3", -5])
def test_parse_size_refuses_anything_else_with_the_units_named(text: str | int) -> None:
    with pytest.raises(BadInput, match="size"):
        config.parse_size(text)


@pytest.mark.parametrize("n", [0, 1, 1023, 1024, 2 * 1024**2, 3 * 1024**3, 1024**2 + 1])
def test_format_size_is_read_back_by_parse_size(n: int) -> None:
    assert config.parse_size(config.format_size(n)) == n


def test_format_size_names_the_largest_whole_unit() -> None:
    assert config.format_size(config.DEFAULT_MAX_NEW_FILE_SIZE) == "2MiB"
    assert config.format_size(1536) == "1536B"


def test_data_dir_prefers_the_option_then_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SNAPSHOTTER_DATA_DIR", str(tmp_path / "env"))
    assert config.data_dir(tmp_path / "opt") == (tmp_path / "opt").resolve()
    assert config.data_dir() == (tmp_path / "env").resolve()


def test_private_dir_closes_an_existing_open_directory(tmp_path: Path) -> None:
    made = tmp_path / "a" / "b"
    assert config.private_dir(made) is False
    assert made.stat().st_mode & 0o777 == 0o700
    made.chmod(0o755)
    assert config.private_dir(made) is True
    assert made.stat().st_mode & 0o777 == 0o700
