"""snapshotter/progress.py: a count on stderr only when a person is watching."""

from __future__ import annotations

import io

import pytest

from snapshotter import progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_nothing_is_written_when_the_stream_is_not_a_terminal() -> None:
    stream = io.StringIO()
    with progress.shown_on_terminal(stream):
        progress.tick(1000)
    assert stream.getvalue() == ""


def test_a_long_count_is_drawn_and_closed_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNAPSHOTTER_PROGRESS_AFTER_S", "0")
    monkeypatch.setattr(progress, "REDRAW_S", 0.0)
    stream = _Terminal()
    with progress.shown_on_terminal(stream):
        progress.tick(3)
        progress.tick(2)
    assert stream.getvalue().endswith("\r5 files, done.\n")


def test_a_short_command_stays_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SNAPSHOTTER_PROGRESS_AFTER_S", "3600")
    stream = _Terminal()
    with progress.shown_on_terminal(stream):
        progress.tick(10)
    assert stream.getvalue() == ""
    progress.tick(1)  # outside the block: nobody counts, nothing breaks


def test_nothing_is_drawn_while_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full-screen view (rewind) owns the terminal: its captures count nothing there."""
    monkeypatch.setenv("SNAPSHOTTER_PROGRESS_AFTER_S", "0")
    monkeypatch.setattr(progress, "REDRAW_S", 0.0)
    stream = _Terminal()
    with progress.shown_on_terminal(stream):
        with progress.hidden():
            progress.tick(7)
        assert stream.getvalue() == "", "no count drawn over the view"
        progress.tick(1)
    assert stream.getvalue().endswith("\r1 files, done.\n"), "the count comes back after it"
