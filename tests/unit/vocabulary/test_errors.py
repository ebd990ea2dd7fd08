"""snapshotter/errors.py: every error carries its SPEC §7 exit code and a one-line message."""

from __future__ import annotations

import inspect

from snapshotter import errors


def _error_classes() -> list[type[errors.SnapshotterError]]:
    return [
        cls
        for _name, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, errors.SnapshotterError)
    ]


def test_every_error_has_an_exit_code_from_spec_section_7() -> None:
    allowed = {1, 2, 3, 4, 130}
    for cls in _error_classes():
        assert cls.exit_code in allowed, f"{cls.__name__}: exit code {cls.exit_code}"


def test_messages_name_what_failed_on_one_line() -> None:
    cases = [
        errors.NotAWorktree("/tmp/x"),
        errors.CaptureFailed("disk full"),
        errors.TooManyFiles(100),
        errors.WorktreeGone("/tmp/w", 3),
    ]
    for exc in cases:
        text = str(exc)
        assert text and "\n" not in text, f"{type(exc).__name__}: {text!r}"
    assert "/tmp/x" in str(cases[0])
    assert "--max-files" in str(cases[2])
    assert "recover" in str(cases[3])
