"""snapshotter/history/labels.py: labels people can tell apart."""

from __future__ import annotations

from snapshotter.history import labels


def test_a_turn_is_labelled_with_the_first_line_of_its_prompt() -> None:
    assert labels.for_turn("\n  fix the bug  \nthen tests", "turn_end") == "fix the bug"


def test_a_turn_that_did_not_end_normally_says_so_first() -> None:
    assert labels.for_turn("fix it", "interrupted") == "interrupted: fix it"
    assert labels.for_turn(None, "interrupted") == "interrupted"
    assert labels.for_turn("", "") == "turn_end"


def test_long_lines_are_cut_with_an_ellipsis() -> None:
    label = labels.first_line("x" * 200)
    assert len(label) == labels.MAX_LABEL and label.endswith("…")
    assert labels.bounded("y" * (labels.MAX_RAW + 5)).endswith("…")
    assert labels.bounded("short") == "short"


def test_a_tool_is_labelled_by_the_paths_it_named_else_its_command() -> None:
    assert labels.for_tool("Edit", ["src/app.py"], None) == "Edit src/app.py"
    assert labels.for_tool("Edit", ["a", "b", "c"], None) == "Edit a (+2)"
    assert labels.for_tool("shell", [], "rm -rf build\necho done") == "shell: rm -rf build"
    assert labels.for_tool("Task", [], None) == "Task"
