"""snapshotter/cli/terminal.py: colour, width and pager, decided as git decides them.

Only what starts no pager is tested here (a pager is a process: the
functional tier's tests/functional/test_pager.py).
"""

from __future__ import annotations

import io

import pytest

from snapshotter.cli import terminal


class Tty(io.BytesIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("choice", "tty", "env", "expected"),
    [
        ("always", False, {"NO_COLOR": "1"}, True),  # asked for: NO_COLOR is for defaults
        ("never", True, {}, False),
        ("auto", True, {}, True),
        ("auto", False, {}, False),
        ("auto", True, {"NO_COLOR": "1"}, False),
        ("auto", True, {"NO_COLOR": ""}, True),  # set but empty: no-color.org says ignore
        ("auto", True, {"TERM": "dumb"}, False),
    ],
)
def test_use_color(
    choice: terminal.ColorChoice, tty: bool, env: dict[str, str], expected: bool
) -> None:
    stream = Tty() if tty else io.BytesIO()
    assert terminal.use_color(choice, stream, env) is expected


def test_columns_come_from_columns_else_80_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "123")
    assert terminal.columns(io.StringIO()) == 123
    for bad in ("0", "-5", "wide", ""):
        monkeypatch.setenv("COLUMNS", bad)
        assert terminal.columns(io.StringIO()) == 80, bad


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "less -FRX"),
        ({"PAGER": "more"}, "more"),
        ({"PAGER": "more", "SNAPSHOTTER_PAGER": " most -s "}, "most -s"),
        ({"PAGER": "more", "SNAPSHOTTER_PAGER": ""}, None),  # set empty: no pager at all
        ({"PAGER": "cat"}, None),
        ({"PAGER": "  "}, None),
    ],
)
def test_pager_command(env: dict[str, str], expected: str | None) -> None:
    assert terminal.pager_command(env) == expected


def test_off_a_terminal_emit_writes_the_bytes_themselves() -> None:
    out = io.BytesIO()
    terminal.emit(b"\x1b[31mred\x1b[m\n", stream=out)
    assert out.getvalue() == b"\x1b[31mred\x1b[m\n"


def test_a_reader_gone_early_reaches_main() -> None:
    """cli.main turns it into git's quiet exit 141 (#26.6), served or not."""

    class Closed(io.BytesIO):
        def write(self, _data: object) -> int:
            raise BrokenPipeError

    with pytest.raises(BrokenPipeError):
        terminal.emit(b"data", stream=Closed(), page=False)
