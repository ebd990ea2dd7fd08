"""changes() statuses and diff() text between two captured trees (SPEC §4 `files`, §7 `diff`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pygit2
from builders import open_engine, write

from snapshotter.cli.diff_render import stat_text
from snapshotter.engine import Engine
from snapshotter.git.kinds import EMPTY_TREE


def statuses(engine: Engine, before: str, after: str | None = None) -> dict[str, str]:
    return {c.path: c.status for c in engine.changes(before, after)}


def test_added_modified_deleted(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    write(repo, "src/app.py", "print('changed')\n")
    write(repo, "docs/new.md", "new\n")
    os.unlink(repo / "src" / "util.py")
    after = engine.capture().tree

    found = statuses(engine, before, after)

    assert found == {
        "src/app.py": "modified",
        "docs/new.md": "added",
        "src/util.py": "deleted",
    }, f"each change should carry its status; got {found}"


def test_changes_are_sorted_by_path(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    for rel in ("z.txt", "a.txt", "m/x.txt", "B.txt"):
        write(repo, rel, rel)

    paths = [c.path for c in engine.changes(before)]

    assert paths == sorted(paths), f"changes should be sorted by path; got {paths}"


def test_no_change_means_no_changes(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree

    assert engine.changes(before) == [], "an untouched worktree has no changes"
    assert engine.changes(before, before) == [], "a tree compared with itself has no changes"


def test_changes_without_after_captures_now(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    write(repo, "README.md", "# edited\n")

    assert statuses(engine, before) == {"README.md": "modified"}, (
        "changes(before) should compare with a fresh capture of the worktree"
    )


def test_exec_bit_only_change_is_modified(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    os.chmod(repo / "src" / "app.py", 0o755)

    assert statuses(engine, before) == {"src/app.py": "modified"}, (
        "a chmod +x alone should be one `modified` change"
    )


def test_symlink_target_change_is_modified(repo: Path, data_dir: Path) -> None:
    os.symlink("src/app.py", repo / "link")
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    os.unlink(repo / "link")
    os.symlink("src/util.py", repo / "link")

    assert statuses(engine, before) == {"link": "modified"}, (
        "a new symlink target should be one `modified` change"
    )


def test_file_to_symlink_and_back_is_modified(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    os.unlink(repo / "README.md")
    os.symlink("src/app.py", repo / "README.md")
    middle = engine.capture().tree

    assert statuses(engine, before, middle) == {"README.md": "modified"}, (
        "a file replaced by a symlink should be a single `modified` change"
    )
    assert statuses(engine, middle, before) == {"README.md": "modified"}, (
        "a symlink replaced by a file should be a single `modified` change"
    )


def test_directory_to_file_lists_each_path(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    for name in ("app.py", "util.py"):
        os.unlink(repo / "src" / name)
    os.rmdir(repo / "src")
    write(repo, "src", "now a file\n")

    found = statuses(engine, before)

    assert found == {"src": "added", "src/app.py": "deleted", "src/util.py": "deleted"}, (
        f"a directory replaced by a file is the file added and its children deleted; got {found}"
    )


def test_changes_from_empty_tree(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    tree = engine.capture().tree

    found = statuses(engine, EMPTY_TREE, tree)

    assert found == {"README.md": "added", "src/app.py": "added", "src/util.py": "added"}, (
        f"everything is added relative to the empty tree; got {found}"
    )


def test_diff_is_unified_text(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    write(repo, "src/app.py", "print('bye')\n")
    write(repo, "added.txt", "brand new\n")
    after = engine.capture().tree

    text = engine.diff(before, after)

    for expected in (
        "--- a/src/app.py",
        "+++ b/src/app.py",
        "-print('hi')",
        "+print('bye')",
        "+++ b/added.txt",
        "+brand new",
    ):
        assert expected in text, f"the unified diff should contain {expected!r}; got:\n{text}"


def test_diff_limited_to_paths(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    write(repo, "src/app.py", "print('bye')\n")
    write(repo, "README.md", "# other\n")
    after = engine.capture().tree

    text = engine.diff(before, after, ["README.md"])

    assert "README.md" in text, "the requested path should be in the diff"
    assert "src/app.py" not in text, f"paths not asked for should be left out; got:\n{text}"


def test_diff_of_binary_file_names_it(repo: Path, data_dir: Path) -> None:
    write(repo, "image.bin", b"\x89PNG\0\0MARKER-OLD\xff" * 20)
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    write(repo, "image.bin", b"\x89PNG\0\0MARKER-NEW\xfe" * 20)
    after = engine.capture().tree

    text = engine.diff(before, after)

    assert "Binary files" in text and "differ" in text, (
        f"a binary change should read 'Binary files ... differ'; got:\n{text}"
    )
    assert "MARKER" not in text and "\0" not in text, (
        "binary bytes must not be dumped into the diff"
    )


def test_diff_of_mode_and_symlink_changes(repo: Path, data_dir: Path) -> None:
    os.symlink("src/app.py", repo / "link")
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    os.chmod(repo / "src" / "util.py", 0o755)
    os.unlink(repo / "link")
    os.symlink("src/util.py", repo / "link")
    after = engine.capture().tree

    text = engine.diff(before, after)

    assert "new mode 100755" in text, f"an exec-bit flip should show in the diff; got:\n{text}"
    assert "-src/app.py" in text and "+src/util.py" in text, (
        f"a symlink retarget should diff its target text; got:\n{text}"
    )


def test_diff_stat_counts_lines(repo: Path, data_dir: Path) -> None:
    engine = open_engine(repo, data_dir)
    before = engine.capture().tree
    write(repo, "src/app.py", "print('bye')\nprint('again')\n")
    after = engine.capture().tree

    stat = stat_text(engine.file_diffs(before, after)).decode()

    assert "src/app.py" in stat, f"the changed file should be listed; got:\n{stat}"
    summary = re.search(
        r"(\d+) files? changed, (\d+) insertions?\(\+\), (\d+) deletions?\(-\)", stat
    )
    assert summary is not None and summary.groups() == ("1", "2", "1"), (
        f"the summary should count one file, two insertions and one deletion; got:\n{stat}"
    )


def test_changes_agree_with_libgit2s_tree_diff_through_random_edits(
    repo: Path, data_dir: Path
) -> None:
    """changes() reads only the subtrees that differ (16.3): the same answer as libgit2's
    full tree diff, through adds, deletes, mode flips, symlinks and file ↔ directory swaps."""
    import random
    import shutil

    engine = open_engine(repo, data_dir)
    repository = engine.store.objects.repo  # the oracle: libgit2's own tree diff
    letters = {"A": "added", "D": "deleted", "M": "modified", "T": "modified"}
    rng = random.Random(7)
    trees = [engine.capture().tree]
    for step in range(30):
        files = sorted(
            p for p in repo.rglob("*") if ".git" not in p.parts and (p.is_file() or p.is_symlink())
        )
        kind = rng.choice(["new", "edit", "delete", "chmod", "link", "to_dir", "rmdir", "deep"])
        target = rng.choice(files) if files else repo / "x.txt"
        if kind == "new":
            write(repo, f"d{rng.randrange(3)}/n{step}.txt", f"{step}\n")
        elif kind == "edit" and target.is_file() and not target.is_symlink():
            target.write_text(f"edited {step}\n")
        elif kind == "delete":
            target.unlink(missing_ok=True)
        elif kind == "chmod" and target.is_file() and not target.is_symlink():
            target.chmod(target.stat().st_mode ^ 0o111)
        elif kind == "link":
            target.unlink(missing_ok=True)
            os.symlink(f"elsewhere-{step}", target)
        elif kind == "to_dir":
            target.unlink(missing_ok=True)
            write(repo, f"{target.relative_to(repo)}/inside.txt", "now a directory\n")
        elif kind == "rmdir":
            top = next((d for d in sorted(repo.iterdir()) if d.is_dir() and d.name != ".git"), None)
            if top is not None:
                shutil.rmtree(top)
        else:
            write(repo, f"a/b/c/d{step}/e.txt", "deep\n")
        trees.append(engine.capture().tree)
    for _ in range(40):
        before, after = rng.sample(trees, 2)
        expected: dict[str, str] = {}
        old, new = repository[before], repository[after]
        assert isinstance(old, pygit2.Tree) and isinstance(new, pygit2.Tree)
        diff = old.diff_to_tree(new)
        for d in diff.deltas:
            path = d.new_file.path or d.old_file.path
            expected[path] = "modified" if path in expected else letters[d.status_char()]
        assert statuses(engine, before, after) == expected, (before, after)
