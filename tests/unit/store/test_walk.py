"""snapshotter/store/walk.py: which paths of a worktree a snapshot holds, and which it skips.

The repository is built with pygit2 (no ``git`` process); the ignore rules'
own semantics are tests/unit/git/test_ignore.py's.
"""

from __future__ import annotations

import os
from pathlib import Path

import pygit2
import pytest

from snapshotter.errors import NotAProject, TooManyFiles
from snapshotter.git.kinds import MODE_EXEC, MODE_FILE, MODE_LINK
from snapshotter.git.worktree import Worktree, find_worktree
from snapshotter.store import records
from snapshotter.store.walk import scan

LIMIT = 100


def write(root: Path, rel: str, data: bytes = b"x") -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_bytes(data)


@pytest.fixture
def worktree(tmp_path: Path) -> Worktree:
    """Tracked: a.txt, logs/keep.log (ignored but tracked); the rest untracked."""
    root = tmp_path / "w"
    repo = pygit2.init_repository(str(root))
    write(root, ".gitignore", b"*.log\nbuild/\n")
    write(root, "a.txt", b"a" * (LIMIT * 2))  # tracked: kept whatever its size
    write(root, "logs/keep.log")
    write(root, "logs/other.log")
    write(root, "build/out.o")
    write(root, "src/new.py")
    write(root, "src/big.bin", b"b" * (LIMIT + 1))
    write(root, "tool.sh")
    (root / "tool.sh").chmod(0o755)
    (root / "link").symlink_to("a.txt")
    os.mkfifo(root / "pipe")
    for rel in (".gitignore", "a.txt", "logs/keep.log"):
        repo.index.add(rel)
    repo.index.write()
    return find_worktree(root)


def walk(worktree: Worktree, **options: object) -> tuple[dict[str, int], dict[str, str]]:
    """(path -> git mode, path -> why skipped) of one scan."""
    found = scan(worktree, previous=(), max_new_file_size=LIMIT, **options)  # type: ignore[arg-type]
    modes = {rel: records.mode(stat) for rel, stat in found.entries.items()}
    return modes, {rel: skip.reason for rel, skip in found.skipped.items()}


def test_a_snapshot_holds_what_git_would_see(worktree: Worktree) -> None:
    modes, skipped = walk(worktree)
    assert modes == {
        ".gitignore": MODE_FILE,
        "a.txt": MODE_FILE,
        "logs/keep.log": MODE_FILE,  # ignored, but tracked
        "src/new.py": MODE_FILE,
        "tool.sh": MODE_EXEC,
        "link": MODE_LINK,
    }
    assert skipped == {
        "src/big.bin": f"new file larger than {LIMIT} bytes",
        "pipe": "not a regular file or symlink",
    }


def test_the_stat_data_is_the_files(worktree: Worktree) -> None:
    found = scan(worktree, previous=(), max_new_file_size=LIMIT)
    st = os.lstat(worktree.root / "a.txt")
    assert records.fields(found.entries["a.txt"]) == (
        MODE_FILE,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_ino,
    )
    assert found.skipped["src/big.bin"].size == LIMIT + 1


def test_a_large_file_the_last_snapshot_held_stays(worktree: Worktree) -> None:
    found = scan(worktree, previous={"src/big.bin"}, max_new_file_size=LIMIT)
    assert "src/big.bin" in found.entries and "src/big.bin" not in found.skipped


def test_the_scope_and_excluded_directories_limit_the_walk(worktree: Worktree) -> None:
    scoped = Worktree(worktree.root, worktree.git_dir, worktree.common_dir, "src")
    modes, skipped = walk(scoped)
    assert set(modes) == {"src/new.py"} and set(skipped) == {"src/big.bin"}
    modes, _ = walk(worktree, excluded=frozenset({str(worktree.root / "src")}))
    assert not any(rel.startswith("src/") for rel in modes)


def test_a_nested_repository_has_its_own_rules(worktree: Worktree) -> None:
    nested = worktree.root / "vendor" / "lib"
    pygit2.init_repository(str(nested))
    write(nested, ".gitignore", b"*.txt\n")
    write(nested, "a.txt")
    write(nested, "b.log")  # ignored above, not in here
    found = scan(worktree, previous=(), max_new_file_size=LIMIT)
    assert found.nested == ["vendor/lib"]
    assert {"vendor/lib/b.log", "vendor/lib/.gitignore"} <= set(found.entries)
    assert "vendor/lib/a.txt" not in found.entries


def test_a_file_cap_stops_the_walk(worktree: Worktree) -> None:
    with pytest.raises(TooManyFiles):
        scan(worktree, previous=(), max_new_file_size=LIMIT, max_files=3)
    assert len(scan(worktree, previous=(), max_new_file_size=LIMIT, max_files=6).entries) == 6


def test_the_home_directory_is_refused_unless_a_cap_is_given(
    worktree: Worktree, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(worktree.root))
    with pytest.raises(NotAProject, match="home directory"):
        scan(worktree, previous=(), max_new_file_size=LIMIT)
    assert scan(worktree, previous=(), max_new_file_size=LIMIT, max_files=100).entries
    assert scan(worktree, previous=(), max_new_file_size=LIMIT, guard=False).entries


def test_on_dir_hears_of_every_directory_read(worktree: Worktree) -> None:
    heard: list[str] = []
    scan(worktree, previous=(), max_new_file_size=LIMIT, on_dir=heard.append)
    root = str(worktree.root)
    assert sorted(heard) == sorted([root, f"{root}/logs", f"{root}/src"])


def test_the_walk_remembers_the_ignored_paths_it_passed_by(worktree: Worktree) -> None:
    """#26.3: what an agent's `git clean -fdx` can delete that no capture holds."""
    found = scan(worktree, previous=(), max_new_file_size=LIMIT)
    assert found.ignored == {"logs/other.log", "build/"}, found.ignored


def test_keep_ignored_captures_chosen_ignored_files_up_to_a_size(worktree: Worktree) -> None:
    """#26.3: `git config snapshotter.keepIgnored` (off by default) keeps chosen ignored
    files and directories in the snapshot, each up to keepIgnoredMaxSize."""
    config = worktree.common_dir / "config"
    config.write_text(
        config.read_text() + '[snapshotter]\n\tkeepIgnored = "*.log, build/"\n'
        "\tkeepIgnoredMaxSize = 10\n"
    )
    write(worktree.root, "build/huge.o", b"h" * 11)
    modes, _skipped = walk(worktree)
    assert {"logs/other.log", "build/out.o"} <= modes.keys(), modes
    found = scan(worktree, previous=(), max_new_file_size=LIMIT)
    assert "build/huge.o" not in found.entries and found.ignored == {"build/huge.o"}, found.ignored


@pytest.mark.parametrize("field", [None, 0, 1, 2, 3, 4], ids=lambda f: f"field {f}")
def test_the_stat_caches_entry_is_kept_only_if_every_field_matches(
    worktree: Worktree, field: int | None
) -> None:
    """``reuse``: a file gets the cache's own record (trusted as unchanged by the capture)
    only when its mode, size, mtime, ctime and inode all match (issue 24.5)."""
    st = os.lstat(worktree.root / "a.txt")
    now = [MODE_FILE, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    if field is not None:
        now[field] += 1
    cached = records.stat(*now) + bytes(20)
    found = scan(worktree, previous=(), max_new_file_size=LIMIT, reuse={"a.txt": cached})
    assert (found.entries["a.txt"] is cached) == (field is None)
    assert records.fields(found.entries["a.txt"])[:5] == (
        MODE_FILE,
        st.st_size,
        st.st_mtime_ns,
        st.st_ctime_ns,
        st.st_ino,
    )
