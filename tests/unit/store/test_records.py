"""snapshotter/store/records.py: one packed record a path (issue 24.5), and every field
of it still decides "unchanged": mode, size, mtime, ctime, inode, and the blob id kept."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapshotter.store import records, stat_cache

# Values past 32 bits, a negative mtime (before 1970), the largest inode.
FIELDS = (0o100755, 5 << 33, -(7 << 40), 9 << 50, 2**64 - 1)
OID = bytes(range(20))


def test_a_record_keeps_every_field_and_the_blob_id() -> None:
    entry = stat_cache.entry(FIELDS, OID, racy=False)
    assert records.fields(entry) == FIELDS
    assert records.oid(entry) == OID
    assert records.mode(entry) == FIELDS[0] and records.mtime(entry) == FIELDS[2]
    assert records.mode_and_id(entry) == (FIELDS[0], OID)
    assert records.oid(stat_cache.entry(FIELDS, bytes(32), racy=False)) == bytes(32), "sha256"


@pytest.mark.parametrize("field", range(5), ids=["mode", "size", "mtime", "ctime", "inode"])
def test_a_file_is_unchanged_only_if_every_field_is(field: int) -> None:
    """Drop any field from the comparison and this fails."""
    cached = stat_cache.entry(FIELDS, OID, racy=False)
    assert stat_cache.unchanged(cached, records.stat(*FIELDS))
    for delta in (1, -1):
        moved = list(FIELDS)
        moved[field] += delta if moved[field] + delta < 2**64 else -2
        assert not stat_cache.unchanged(cached, records.stat(*moved)), (field, delta)


def test_a_racy_entry_is_never_unchanged() -> None:
    racy = stat_cache.entry(FIELDS, OID, racy=True)
    assert not stat_cache.trusted(racy) and records.mtime(racy) == stat_cache.UNTRUSTED
    assert records.fields(racy)[:2] == FIELDS[:2] and records.fields(racy)[3:] == FIELDS[3:]
    assert not stat_cache.unchanged(racy, records.stat(*FIELDS))
    assert not stat_cache.unchanged(None, records.stat(*FIELDS))


def test_a_signature_is_the_files_stat_data(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x")
    st = os.lstat(path)
    record = records.stat(0o100644, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    assert records.signature(record) == records.signature_of(st) == records.signature_at(str(path))
    path.write_bytes(b"xy")
    assert records.signature_at(str(path)) != records.signature(record)
    assert records.signature_at(str(tmp_path / "gone")) is None


def test_an_older_formats_tuple_packs_to_the_same_record() -> None:
    assert records.from_tuple((*FIELDS, OID)) == stat_cache.entry(FIELDS, OID, racy=False)
    with pytest.raises(ValueError):
        records.from_tuple((1, 2, 3))


def test_unpacked_is_fields_with_shared_objects() -> None:
    st = records.stat(0o100644, 3, 10**18, 10**18, 7)
    mode, size, mtime, ctime, ino = records.unpacked(st)
    assert (mode, size, mtime, ctime, ino) == records.fields(st)
    assert mode is records.unpacked(records.stat(0o100644, 1, 1, 2, 3))[0], "one int a mode"
    assert ctime is mtime
    assert records.unpacked(records.stat(*FIELDS)) == FIELDS
