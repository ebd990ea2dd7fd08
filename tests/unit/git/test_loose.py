"""snapshotter/git/loose.py: loose objects' names, and their headers read without libgit2."""

from __future__ import annotations

import os
import stat
import zlib
from pathlib import Path

import pygit2

from snapshotter.git import loose
from snapshotter.git.kinds import BLOB, COMMIT, TREE
from snapshotter.git.packs import object_id


def repository(tmp_path: Path) -> tuple[pygit2.Repository, Path]:
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    return repo, Path(repo.path) / "objects"


def raw(oid: object) -> bytes:
    return bytes.fromhex(str(oid))


def test_a_loose_object_is_named_by_its_id(tmp_path: Path) -> None:
    repo, objects = repository(tmp_path)
    oid = raw(repo.create_blob(b"hello\n"))
    fan_out, name = loose.loose_name(oid)
    assert fan_out + name == oid.hex() and len(fan_out) == 2
    path = objects / fan_out / name
    assert path.is_file() and loose.loose_id(path) == oid


def test_loose_files_skips_packs_and_temp_files(tmp_path: Path) -> None:
    repo, objects = repository(tmp_path)
    ids = {raw(repo.create_blob(b"%d" % n)) for n in range(5)}
    fan_out = objects / loose.loose_name(next(iter(ids)))[0]
    (fan_out / "tmp_obj_abc").write_bytes(b"")  # a writer's temp file
    (objects / "pack" / ("0" * 38)).write_bytes(b"")  # not a fan-out directory
    assert {loose.loose_id(p) for p in loose.loose_files(objects)} == ids


def test_the_header_says_the_type_and_size(tmp_path: Path) -> None:
    repo, objects = repository(tmp_path)
    blob = repo.create_blob(b"x" * 1000)
    tree = repo.TreeBuilder().write()
    signature = pygit2.Signature("a", "a@b", 0, 0)
    commit = repo.create_commit(None, signature, signature, "m", tree, [])
    assert loose.read_header(str(objects), raw(blob)) == (BLOB, 1000)
    assert loose.read_header(str(objects), raw(tree)) == (TREE, 0)
    assert loose.read_header(str(objects), raw(commit)) == (COMMIT, len(repo[commit].read_raw()))


def test_what_is_not_a_loose_object_here_reads_as_none(tmp_path: Path) -> None:
    repo, objects = repository(tmp_path)
    assert loose.read_header(str(objects), bytes(20)) is None  # absent
    cases = {
        "11" * 20: b"not zlib at all",
        "22" * 20: zlib.compress(b"blob twelve\0"),  # the size is no number
        "33" * 20: zlib.compress(b"ghost 3\0abc"),  # no such type
        "44" * 20: zlib.compress(b"blob 3"),  # no NUL after the size
    }
    for hex_id, data in cases.items():
        (objects / hex_id[:2]).mkdir(exist_ok=True)
        (objects / hex_id[:2] / hex_id[2:]).write_bytes(data)
        assert loose.read_header(str(objects), bytes.fromhex(hex_id)) is None, data
    real = objects.joinpath(*loose.loose_name(raw(repo.create_blob(b"real"))))
    (objects / "55").mkdir()
    (objects / "55" / ("5" * 38)).symlink_to(real)
    assert loose.read_header(str(objects), bytes.fromhex("55" * 20)) is None, "never a link"


def test_stored_finds_loose_and_packed_objects_as_libgit2_does(tmp_path: Path) -> None:
    """``stored`` answers without libgit2 (issue 24: a no-change capture asks only
    whether its tree is still there), and never says yes where libgit2 says no."""
    repo, objects = repository(tmp_path)
    packed = [raw(repo.create_blob(f"packed {n}\n".encode())) for n in range(50)]
    assert repo.pack() == 50
    for oid in packed:
        (objects / oid.hex()[:2] / oid.hex()[2:]).unlink()  # only in the pack now
    loose_one = raw(repo.create_blob(b"loose\n"))
    absent = raw(pygit2.hash(b"never written\n"))
    for oid in [*packed, loose_one]:
        assert loose.stored(objects, oid), oid.hex()
        assert pygit2.Oid(raw=oid) in repo.odb
    assert not loose.stored(objects, absent)
    assert pygit2.Oid(raw=absent) not in repo.odb
    for pack in (objects / "pack").glob("*.pack"):
        pack.rename(pack.with_suffix(".gone"))
    # An index whose pack is gone: not here (``ObjectDB.has`` then asks libgit2).
    assert not loose.stored(objects, packed[0])
    assert loose.stored(objects, loose_one)


def test_a_written_object_is_the_one_libgit2_reads(tmp_path: Path) -> None:
    """``write`` makes a read-only loose object in git's format, fan-out included."""
    repo, objects = repository(tmp_path)
    for kind, data in ((BLOB, b"hello\n" * 1000), (BLOB, b""), (TREE, b"")):
        oid = object_id(kind, data)
        assert loose.write(str(objects), oid, kind, data) is True
        found = repo.odb.read(oid.hex())
        assert (int(found[0]), bytes(found[1])) == (kind, data)
        path = objects / oid.hex()[:2] / oid.hex()[2:]
        assert stat.S_IMODE(path.stat().st_mode) == 0o444
    assert not [p for p in objects.rglob("*") if p.name.startswith(loose.GIT_TEMP_PREFIX)]


def test_a_file_already_there_is_never_written_over(tmp_path: Path) -> None:
    """#12.4: the file under the object's name may be the source repository's own
    (hard-linked by seeding): ``write`` leaves it exactly as it was, whatever it holds."""
    _repo, objects = repository(tmp_path)
    data = b"the same bytes\n"
    oid = object_id(BLOB, data)
    fan_out, name = loose.loose_name(oid)
    (objects / fan_out).mkdir()
    theirs = objects / fan_out / name
    theirs.write_bytes(b"their file, not ours to touch")
    os.utime(theirs, ns=(10**9, 10**9))
    before = theirs.stat()
    assert loose.write(str(objects), oid, BLOB, data) is False
    after = theirs.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert theirs.read_bytes() == b"their file, not ours to touch"
    assert os.listdir(objects / fan_out) == [name], "no temp file left behind"
