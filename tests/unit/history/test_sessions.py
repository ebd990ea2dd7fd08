"""snapshotter/history/sessions.py: a session works where its first event said."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from snapshotter.history import sessions


def test_the_first_claim_wins(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first, second = tmp_path / "repo", tmp_path / "repo" / "src"
    second.mkdir(parents=True)
    assert sessions.claim(data, "alpha", str(first)) == str(first)
    assert sessions.claim(data, "alpha", str(second)) == str(first), "a later cd changes nothing"
    assert sessions.kept_dir(data, "alpha") == str(first)
    assert sessions.claim(data, "beta", str(second)) == str(second), "another session's own"
    records = os.listdir(sessions.folder(data))
    assert len(records) == 2 and all(r.endswith(".json") for r in records), "no temp left"
    assert not any("alpha" in r or "beta" in r for r in records), "ids are never parts of a path"


def test_a_directory_gone_is_still_recorded_but_not_kept(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    sessions.claim(tmp_path, "s", str(gone))
    gone.rmdir()
    assert sessions.kept_dir(tmp_path, "s") is None
    assert sessions.recorded_dir(tmp_path, "s") == str(gone)
    assert sessions.recorded_dir(tmp_path, "never seen") is None


def test_a_record_of_another_session_is_not_read(tmp_path: Path) -> None:
    sessions.claim(tmp_path, "s", str(tmp_path))
    (record,) = sessions.folder(tmp_path).iterdir()
    record.write_text(json.dumps({"session_id": "collision", "dir": str(tmp_path)}))
    assert sessions.recorded_dir(tmp_path, "s") is None
    record.write_text("{damaged")
    assert sessions.recorded_dir(tmp_path, "s") is None


def test_an_unwritable_data_directory_still_answers(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_bytes(b"")
    assert sessions.claim(not_a_dir, "s", "/somewhere") == "/somewhere"
    assert sessions.first_stop(not_a_dir, "s") is True, "said again rather than never"


def test_first_dir_prefers_the_runtimes_project(tmp_path: Path) -> None:
    assert sessions.first_dir("/cwd", str(tmp_path)) == str(tmp_path)
    assert sessions.first_dir("/cwd", str(tmp_path / "absent")) == "/cwd"
    assert sessions.first_dir("/cwd", None) == "/cwd"


def test_a_stop_is_said_once_per_session(tmp_path: Path) -> None:
    sessions.claim(tmp_path, "s", str(tmp_path))
    assert sessions.first_stop(tmp_path, "s") is True
    assert sessions.first_stop(tmp_path, "s") is False
    assert sessions.first_stop(tmp_path, "t") is True


def test_records_not_seen_lately_are_forgotten(tmp_path: Path) -> None:
    for name in ("old", "new"):
        sessions.claim(tmp_path, name, str(tmp_path))
    now = time.time()
    old = next(p for p in sessions.folder(tmp_path).iterdir() if p.read_text().count('"old"'))
    os.utime(old, (now - 1000, now - 1000))
    assert sessions.forget_older_than(tmp_path, 500, now) == 1
    assert sessions.recorded_dir(tmp_path, "old") is None
    assert sessions.recorded_dir(tmp_path, "new") == str(tmp_path)
    assert sessions.forget_older_than(tmp_path / "absent", 0, now) == 0


def test_reading_a_record_counts_as_seeing_the_session(tmp_path: Path) -> None:
    sessions.claim(tmp_path, "s", str(tmp_path))
    (record,) = sessions.folder(tmp_path).iterdir()
    os.utime(record, (1, 1))
    sessions.kept_dir(tmp_path, "s")
    assert record.stat().st_mtime > 1
