"""Split indexes (``core.splitIndex``): the shared index is read too (issue 13 §7).

With a split index most entries live in ``sharedindex.<id>``; the index file
holds only what changed since, plus bitmaps of the shared entries it deletes
and replaces. git is the oracle (``git ls-files -s``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import event, git, hook_ok, make_repo, run_cli, write

from snapshotter.git import tracked


def split_repo(root: Path) -> Path:
    """Committed files with a force-added ignored one, all in the shared index."""
    files: dict[str, str | bytes] = {f"src/m{i:02}.txt": f"module {i}\n" for i in range(40)}
    files[".gitignore"] = "vendor/\n"
    make_repo(root, files)
    write(root, "vendor/lib.txt", "vendored, force-added\n")
    git(root, "add", "-f", "vendor/lib.txt")
    git(root, "commit", "-q", "-m", "vendor")
    git(root, "config", "core.splitIndex", "true")
    git(root, "config", "splitIndex.maxPercentChange", "100")  # keep the split, never re-merge
    git(root, "update-index", "--split-index")
    return root


def oracle(root: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for line in git(root, "ls-files", "-s", "-z").split("\0"):
        if line:
            meta, path = line.split("\t", 1)
            found.setdefault(path, int(meta.split()[0], 8))
    return found


def shared_index_files(root: Path) -> list[Path]:
    return sorted((root / ".git").glob("sharedindex.*"))


def test_split_index_with_deletions_replacements_and_additions_matches_git(
    tmp_path: Path,
) -> None:
    root = split_repo(tmp_path / "repo")
    write(root, "src/m03.txt", "changed\n")
    (root / "src/m03.txt").chmod(0o755)
    git(root, "add", "src/m03.txt")  # a replaced shared entry (new mode too)
    git(root, "rm", "-q", "src/m10.txt", "src/m11.txt")  # deleted shared entries
    write(root, "src/new.txt", "new\n")
    write(root, "a-first.txt", "sorts before every shared entry\n")
    git(root, "add", "src/new.txt", "a-first.txt")  # entries only the split file has
    assert shared_index_files(root), "git wrote a shared index"
    index = root / ".git" / "index"
    assert b"link" in index.read_bytes(), "the index is split"

    expected = oracle(root)
    assert "vendor/lib.txt" in expected and "src/m10.txt" not in expected
    assert tracked.tracked_modes(index) == expected, "tracked paths and modes as git lists them"


@pytest.mark.parametrize("version", ["2", "3", "4"])
def test_every_index_version_of_a_split_index_matches_git(tmp_path: Path, version: str) -> None:
    root = split_repo(tmp_path / "repo")
    git(root, "update-index", "--index-version", version)
    git(root, "update-index", "--skip-worktree", "src/m05.txt")  # extended flags (v3+)
    write(root, "src/m20.txt", "edited\n")
    git(root, "add", "src/m20.txt")
    assert tracked.tracked_modes(root / ".git" / "index") == oracle(root)


def test_an_agents_overwrite_of_a_tracked_ignored_file_is_in_a_checkpoint(
    tmp_path: Path, data_dir: Path
) -> None:
    root = split_repo(tmp_path / "repo")
    write(root, "src/m01.txt", "user edit, staged\n")
    git(root, "add", "src/m01.txt")  # the index now holds only this; the rest is shared
    hook_ok(event("session_start", root, "s1"), data_dir)
    hook_ok(event("turn_start", root, "s1"), data_dir)
    write(root, "vendor/lib.txt", "agent overwrote it\n")
    hook_ok(event("turn_end", root, "s1", reason="done"), data_dir)

    listed = json.loads(
        run_cli("list", "-C", str(root), "--json", data_dir=data_dir, text=False).stdout
    )
    assert [f["path"] for cp in listed for f in cp["files"]] == ["vendor/lib.txt"], listed
    undo = run_cli("undo", "-C", str(root), data_dir=data_dir, text=False)
    assert undo.returncode == 0, undo.stderr.decode(errors="replace")
    assert (root / "vendor/lib.txt").read_text() == "vendored, force-added\n"
