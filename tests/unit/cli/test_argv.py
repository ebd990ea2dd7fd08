"""snapshotter/cli/argv.py: a leading ``--data-dir`` read before click runs."""

from __future__ import annotations

import pytest

from snapshotter.cli.argv import data_dir_option


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--data-dir", "/d", "hook", "-x"], ("/d", ["hook", "-x"])),
        (["--data-dir=/d=e", "list"], ("/d=e", ["list"])),
        (["--data-dir="], ("", [])),
        (["hook", "--data-dir", "/d"], (None, ["hook", "--data-dir", "/d"])),  # leading only
        (["--data-dir"], (None, ["--data-dir"])),  # no value: click will say so
        (["--data-directory", "/d"], (None, ["--data-directory", "/d"])),
        ([], (None, [])),
    ],
)
def test_a_leading_data_dir_option_is_split_off(
    args: list[str], expected: tuple[str | None, list[str]]
) -> None:
    assert data_dir_option(args) == expected


def test_the_arguments_given_are_not_changed() -> None:
    args = ["--data-dir", "/d", "hook"]
    _found, rest = data_dir_option(args)
    rest.append("more")
    assert args == ["--data-dir", "/d", "hook"]
