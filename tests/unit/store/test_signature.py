"""snapshotter/store/signature.py: the stat data that says a file is unchanged."""

from __future__ import annotations

import os
from pathlib import Path

from snapshotter.store.signature import Signature


def test_a_signature_is_size_mtime_ctime_and_inode(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"12345")
    os.utime(path, ns=(7, 7))  # an mtime apart from the ctime: each in its place
    st = os.stat(path)
    found = Signature.of(st)
    assert found == (5, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    assert (found.size, found.ino) == (5, st.st_ino)
    assert type(found) is Signature
    walk_stat = (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    assert found == walk_stat[1:], "equal to the walk's stat data after the mode"
    assert Signature.at(path) == found


def test_any_write_replace_or_new_link_moves_it(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"a")
    before = Signature.at(path)
    os.utime(path, ns=(1, 1))
    assert Signature.at(path) != before
    before = Signature.at(path)
    replacement = tmp_path / "g"
    replacement.write_bytes(b"a")
    os.utime(replacement, ns=(1, 1))
    os.replace(replacement, path)
    assert Signature.at(path) != before, "same size and mtime, another inode"
    before = Signature.at(path)
    os.link(path, tmp_path / "h")
    after = Signature.at(path)
    assert after is not None and before is not None
    assert after.ctime_ns >= before.ctime_ns and after[:2] == before[:2]


def test_a_link_is_signed_itself_unless_followed(tmp_path: Path) -> None:
    (tmp_path / "target").write_bytes(b"123456789")
    (tmp_path / "link").symlink_to("target")
    own = Signature.at(tmp_path / "link")
    assert own is not None and own.size == len("target")
    assert Signature.at(tmp_path / "link", follow=True) == Signature.at(tmp_path / "target")
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        assert Signature.at("target", dir_fd=fd) == Signature.at(tmp_path / "target")
    finally:
        os.close(fd)


def test_an_absent_path_has_none(tmp_path: Path) -> None:
    assert Signature.at(tmp_path / "absent") is None
    (tmp_path / "dangling").symlink_to("absent")
    assert Signature.at(tmp_path / "dangling", follow=True) is None
    assert Signature.at(tmp_path / "dangling") is not None
