"""snapshotter/store/capture.py: what a capture is asked (``CaptureOptions``)."""

from __future__ import annotations

from pathlib import Path

from snapshotter.config import DEFAULT_MAX_FILES, DEFAULT_MAX_NEW_FILE_SIZE
from snapshotter.store.capture import CaptureOptions


def test_a_store_capture_leaves_out_the_stores_and_the_session_records(tmp_path: Path) -> None:
    data = tmp_path / "data"
    options = CaptureOptions.for_store(data / "snapshot" / "abc123", 10, 500)
    assert options.excluded == frozenset({str(data / "snapshot"), str(data / "sessions")})
    assert (options.max_new_file_size, options.max_files, options.guard) == (10, 500, True)


def test_the_defaults_are_the_documented_ones(tmp_path: Path) -> None:
    options = CaptureOptions()
    assert options.max_new_file_size == DEFAULT_MAX_NEW_FILE_SIZE == 2 * 1024 * 1024
    assert options.max_files is DEFAULT_MAX_FILES is None
    assert options.excluded == frozenset() and options.guard
    for_store = CaptureOptions.for_store(tmp_path / "d" / "snapshot" / "k")
    assert for_store.max_new_file_size == DEFAULT_MAX_NEW_FILE_SIZE
    assert for_store.max_files is None
