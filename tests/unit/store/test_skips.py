"""snapshotter/store/skips.py: a skip's kind is compared, its sentence is only shown."""

from __future__ import annotations

import pytest

from snapshotter.history.records import Mark
from snapshotter.store.capture import Capture
from snapshotter.store.skips import Skip, Why


def _capture(*skips: Skip) -> Capture:
    return Capture("0" * 40, {s.path: s for s in skips}, 1)


def test_each_kind_reads_as_a_sentence() -> None:
    assert Skip("a", Why.UNREADABLE, "Permission denied").reason == "unreadable: Permission denied"
    assert Skip("b", Why.TOO_LARGE, "2097152").reason == "new file larger than 2097152 bytes"
    assert Skip("c", Why.SPECIAL).reason == "not a regular file or symlink"
    assert all(Skip("d", why, "x").reason for why in Why)


@pytest.mark.parametrize(
    ("kept", "why"),
    [
        ("too_large", Why.TOO_LARGE),
        ("new file larger than 2097152 bytes", Why.TOO_LARGE),
        ("unreadable directory: Permission denied", Why.UNREADABLE_DIR),
        ("unreadable: Permission denied", Why.UNREADABLE),
        ("no longer captured: an ignore rule or the size limit leaves it out now", Why.LEFT),
        ("something else", None),
    ],
)
def test_a_mark_kept_by_an_older_version_is_read_as_its_kind(kept: str, why: Why | None) -> None:
    assert Why.of(kept) is why


def test_a_skip_still_there_is_no_new_skip_whatever_its_detail_says() -> None:
    before = Mark.of(_capture(Skip("big.bin", Why.TOO_LARGE, "2097152", 5_000_000, 7)), 1)
    later = _capture(Skip("big.bin", Why.TOO_LARGE, "4194304", 5_000_000, 7))
    assert before.new_skips(later) == []


def test_a_skip_kept_as_a_sentence_by_an_older_version_is_no_new_skip() -> None:
    old = Mark(
        tree="0" * 40, skips={"big.bin": ("new file larger than 2097152 bytes", 9, 7)}, next_id=1
    )
    assert old.new_skips(_capture(Skip("big.bin", Why.TOO_LARGE, "2097152", 9, 7))) == []


def test_a_skip_whose_file_changed_or_whose_kind_changed_is_new() -> None:
    before = Mark.of(_capture(Skip("f", Why.TOO_LARGE, "1", 9, 7)), 1)
    grown = before.new_skips(_capture(Skip("f", Why.TOO_LARGE, "1", 10, 8)))
    unreadable = before.new_skips(_capture(Skip("f", Why.UNREADABLE, "Permission denied", 9, 7)))
    assert [s.path for s in grown] == ["f"]
    assert [s.reason for s in unreadable] == ["unreadable: Permission denied"]
