"""snapshotter/cli/output.py: the text people read, and the one JSON document."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import pytest

from snapshotter.checkpoints import Restoration
from snapshotter.cli import output
from snapshotter.models import Checkpoint, FileChange, SkippedFile


def checkpoint(id: int, **fields: object) -> Checkpoint:
    values: dict[str, object] = {
        "id": id,
        "session_id": "s",
        "kind": "turn",
        "label": f"turn {id}",
        "before": "a" * 40,
        "after": "b" * 40,
        "files": [FileChange(path="f", status="modified")],
        "created_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
    }
    values.update(fields)
    return Checkpoint.model_validate(values)


@pytest.mark.parametrize(
    ("seconds", "said"),
    [
        (-5, "just now"),
        (9, "just now"),
        (42, "42 s ago"),
        (60, "1 min ago"),
        (3599, "59 min ago"),
        (7200, "2 h ago"),
        (86400, "1 day ago"),
        (3 * 86400 + 5, "3 days ago"),
    ],
)
def test_age(seconds: int, said: str) -> None:
    assert output.age(timedelta(seconds=seconds)) == said


@pytest.mark.parametrize(
    ("n", "said"),
    [
        (0, "0 bytes"),
        (1023, "1023 bytes"),
        (1536, "1.5 KiB"),
        (5 * 1024**2, "5.0 MiB"),
        (3 * 1024**4, "3072.0 GiB"),
    ],
)
def test_human_size(n: int, said: str) -> None:
    assert output.human_size(n) == said


def test_counts_and_time_stamps() -> None:
    files = [
        FileChange(path="a", status="added"),
        FileChange(path="b", status="added"),
        FileChange(path="c", status="deleted"),
    ]
    assert output.counts(checkpoint(1, files=files)) == "+2 ~0 -1"
    assert output.parse_time("2026-01-02T03:04:05.000006Z") == datetime(
        2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC
    )


def test_the_list_shows_ids_in_order_each_tool_above_its_turn(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cps = [
        checkpoint(1, kind="tool", parent=2, label="Edit f"),
        checkpoint(2, label="x" * 50),
        checkpoint(3, undone=True, files=[], skipped=[SkippedFile(path="big", reason="too large")]),
        checkpoint(4, files=[]),
    ]
    output.checkpoints(cps, session="s", others=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "session s; 2 other sessions here (`snapshotter list --all`)"
    assert lines[1].split() == ["ID", "WHEN", "KIND", "WHAT", "FILES"]
    assert lines[2].startswith("    1  ") and "├ tool  Edit f" in lines[2], "#26.4: ids in order"
    assert lines[3].startswith("    2  ") and "x" * 35 + "…  +0 ~1 -0" in lines[3]
    assert lines[4].endswith("+0 ~0 -0  ! 1 skipped  (undone)")
    assert lines[5].endswith("+0 ~0 -0  (no net change)")
    assert lines[6].startswith("! skipped files are not in the snapshot")


def test_an_empty_list_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    output.checkpoints([], session="s", others=1)
    assert capsys.readouterr().out == (
        "session s; 1 other session here (`snapshotter list --all`)\nno checkpoints\n"
    )


def test_a_report_says_what_was_done_or_would_be(capsys: pytest.CaptureFixture[str]) -> None:
    report = Restoration(checkpoint=[3, 4], restored=["a"], removed=["b"], skipped=["c"])
    output.report("undid", report, as_json=False)
    assert capsys.readouterr().out.splitlines() == [
        "undid checkpoints 3, 4: 1 restored, 1 removed",
        "  restored a",
        "  removed  b",
        "  ! left alone c (skipped when recorded: not in the snapshot)",
        "run `snapshotter redo` to put it back",
    ]
    output.report("redid", dataclasses.replace(report, dry_run=True), as_json=False)
    assert capsys.readouterr().out.splitlines()[0] == (
        "would redo checkpoints 3, 4: 1 would restore, 1 would remove"
    )
    output.report("reset", report, as_json=True)
    assert json.loads(capsys.readouterr().out)["checkpoint"] == [3, 4]


def test_ascii_stand_ins(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("NESTED", "ARROW", "ELLIPSIS"):
        monkeypatch.setattr(output, name, getattr(output, name))  # restored after the test
    output.use_ascii()
    output.checkpoints([checkpoint(1, kind="tool", parent=2), checkpoint(2, label="y" * 40)])
    text = capsys.readouterr().out
    assert "+ tool" in text and "y" * 35 + "..." in text
    assert text.isascii()


# -- issue 26.4: readable output ---------------------------------------------------------


def test_what_widens_to_the_terminal_and_colour_is_as_git_has_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    long = "refactor the parser so that every token keeps its source position"
    output.checkpoints([checkpoint(7, label=long)], session="s", columns=160)
    wide = capsys.readouterr().out
    assert long in wide, f"a 160-column terminal shows the whole label: {wide}"
    output.checkpoints([checkpoint(7, label=long)], session="s")
    assert long not in capsys.readouterr().out, "80 columns (and pipes): cut at 36"
    output.checkpoints([checkpoint(7, undone=True)], session="s", color=True)
    coloured = capsys.readouterr().out
    assert "\x1b[33m    7\x1b[0m" in coloured, f"ids yellow, as git log's: {coloured!r}"
    assert "\x1b[2m(undone)" in coloured, coloured


def test_a_failed_tool_and_a_save_point_are_marked(capsys: pytest.CaptureFixture[str]) -> None:
    cps = [
        checkpoint(1, kind="tool", reason="failed", label="Bash make"),
        checkpoint(2, reason="checkpoint", label="before", files=[]),
    ]
    output.checkpoints(cps, session="s")
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].endswith("(failed)"), lines
    assert " mark " in lines[3] and lines[3].endswith("(save point)"), lines


def test_show_gives_the_local_time_and_the_whole_prompt(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        prompt = "fix the login bug\nand add a test for it\nthen run the suite"
        output.checkpoint_detail(
            checkpoint(
                3, prompt=prompt, label="fix the login bug", created_at="2026-01-02T03:04:05Z"
            )
        )
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    text = capsys.readouterr().out
    assert "2026-01-02 12:04:05 +0900" in text, f"local time, not UTC: {text}"
    assert "and add a test for it\n" in text and "then run the suite" in text, text


def test_a_long_restore_is_summarised_unless_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    many = Restoration(checkpoint=[5], restored=[f"f{i:03}" for i in range(950)], removed=[])
    output.report("undid", many, as_json=False)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "undid checkpoint 5: 950 restored, 0 removed"
    assert lines[-2] == "  … and 941 more (--verbose lists them all)", lines[-3:]
    assert len(lines) == 12, "one line, nine files, the rest counted, the redo hint"
    output.report("undid", many, as_json=False, verbose=True)
    assert len(capsys.readouterr().out.splitlines()) == 952


def test_a_redo_of_forced_edits_names_no_empty_checkpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    output.report("redid", Restoration(checkpoint=[], restored=["a"], removed=[]), False)
    assert capsys.readouterr().out.splitlines()[0] == "redid your edits: 1 restored, 0 removed"
