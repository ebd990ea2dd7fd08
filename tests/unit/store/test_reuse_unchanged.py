"""snapshotter/store/capture.py's ``_reuse_unchanged``: which walked files are trusted
without a read (the no-change capture's compare, issue 24)."""

from __future__ import annotations

import pytest

from snapshotter.git.kinds import MODE_FILE
from snapshotter.store import records, stat_cache
from snapshotter.store.capture import _reuse_unchanged
from snapshotter.store.walk import ScanResult

OID = b"\x11" * 20


def compared(walked: records.Stat, prior: stat_cache.Entry) -> bool:
    """Whether ``walked`` (the walk's record of ``f``) is trusted against ``prior``."""
    old = stat_cache.Manifest(entries={"f": prior})
    entries, stale = _reuse_unchanged(old, ScanResult(entries={"f": walked}), drain=False)
    assert (("f" in entries), bool(stale)) in ((True, False), (False, True))
    return "f" in entries


def test_the_walks_handed_on_entry_is_trusted_when_the_cache_trusts_it() -> None:
    prior = stat_cache.entry((MODE_FILE, 5, 1_000, 2_000, 7), OID, racy=False)
    assert compared(prior, prior)  # (the very object: walk.py's ``reuse``)
    assert compared(records.stat(MODE_FILE, 5, 1_000, 2_000, 7), prior)


@pytest.mark.parametrize("same_object", [True, False])
def test_an_untrusted_entry_is_read_again_even_when_every_field_matches(same_object: bool) -> None:
    """A file whose real mtime is 0 matches an UNTRUSTED entry field for field: the
    walk hands the cache's entry on as it is, and it must still be read again."""
    prior = stat_cache.entry((MODE_FILE, 5, 0, 2_000, 7), OID, racy=False)
    assert not stat_cache.trusted(prior)
    walked = prior if same_object else records.stat(MODE_FILE, 5, 0, 2_000, 7)
    assert not compared(walked, prior)


def test_one_field_off_is_read_again() -> None:
    prior = stat_cache.entry((MODE_FILE, 5, 1_000, 2_000, 7), OID, racy=False)
    assert not compared(records.stat(MODE_FILE, 5, 1_000, 2_001, 7), prior)
