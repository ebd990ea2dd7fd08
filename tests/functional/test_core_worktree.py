"""Repositories whose worktree is not the git dir's parent (issue 13 §18).

``core.worktree`` names the worktree; git works from the directory holding
the git dir (on the whole worktree), so we must too. Every error a user can
cause is one clear line, and a worktree whose path is not UTF-8 gets a store
with its exact worktree record. Real git, real ``snapshotter`` processes.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from builders import event, git, hook_ok, run_cli, write


def one_clear_line(done: subprocess.CompletedProcess[bytes]) -> str:
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 1, f"expected exit 1, got {done.returncode}: {err}"
    assert "Traceback" not in err and "internal error" not in err, err
    assert err.count("\n") == 1 and err.startswith("snapshotter: "), err
    return err


def split_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository in ``meta`` whose core.worktree is the sibling directory ``work``."""
    meta, work = tmp_path / "meta", tmp_path / "work"
    meta.mkdir()
    git(meta, "init", "-q", "-b", "main")
    git(meta, "config", "core.worktree", "../../work")  # relative to meta/.git, as git reads it
    write(work, "tracked.txt", "committed\n")
    write(work, "sub/inner.txt", "inner\n")
    write(work, ".gitignore", "*.log\n")
    write(work, "noise.log", "ignored\n")
    git(meta, "add", "-A")
    git(meta, "commit", "-q", "-m", "initial")
    return meta, work


def tree_paths(store_git: Path, tree: str) -> set[str]:
    import pygit2

    repo = pygit2.Repository(str(store_git))
    found: set[str] = set()
    stack: list[tuple[str, pygit2.Tree]] = [("", repo[tree].peel(pygit2.Tree))]
    while stack:
        prefix, obj = stack.pop()
        for entry in obj:
            assert entry.name is not None, f"a tree entry without a name under {prefix!r}"
            rel = prefix + entry.name
            if entry.type_str == "tree":
                stack.append((rel + "/", repo[entry.id].peel(pygit2.Tree)))
            else:
                found.add(rel)
    return found


def only_store(data_dir: Path) -> Path:
    stores = [p for p in (data_dir / "snapshot").iterdir() if p.is_dir()]
    assert len(stores) == 1, stores
    return stores[0]


def test_capture_from_the_git_dirs_directory_snapshots_core_worktree(
    tmp_path: Path, data_dir: Path
) -> None:
    meta, work = split_repo(tmp_path)
    tracked = set(git(meta, "ls-files").split())
    assert tracked == {".gitignore", "tracked.txt", "sub/inner.txt"}, "git works from meta"

    done = run_cli("capture", "-C", str(meta), data_dir=data_dir, text=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    tree = done.stdout.decode().strip()
    assert tree_paths(only_store(data_dir) / "git", tree) == tracked, (
        "the snapshot holds what git sees in core.worktree: tracked files, not ignored ones"
    )
    record = (only_store(data_dir) / "worktree").read_bytes()
    assert record == os.fsencode(work.resolve()) + b"\n", "the store belongs to the worktree"


def test_a_session_started_beside_the_git_dir_undoes_edits_in_core_worktree(
    tmp_path: Path, data_dir: Path
) -> None:
    meta, work = split_repo(tmp_path)
    hook_ok(event("session_start", meta, "s1"), data_dir)
    hook_ok(event("turn_start", meta, "s1"), data_dir)
    write(work, "tracked.txt", "agent\n")
    write(work, "sub/new.txt", "agent new\n")
    hook_ok(event("turn_end", meta, "s1", reason="done"), data_dir)

    listed = run_cli("list", "-C", str(meta), "--json", data_dir=data_dir, text=False)
    assert listed.returncode == 0, listed.stderr
    files = {f["path"]: f["status"] for f in json.loads(listed.stdout)[0]["files"]}
    assert files == {"tracked.txt": "modified", "sub/new.txt": "added"}, files

    undo = run_cli("undo", "-C", str(meta), data_dir=data_dir, text=False)
    assert undo.returncode == 0, undo.stderr.decode(errors="replace")
    assert (work / "tracked.txt").read_text() == "committed\n"
    assert not (work / "sub" / "new.txt").exists()


def test_core_worktree_naming_no_directory_is_one_clear_line(
    tmp_path: Path, data_dir: Path
) -> None:
    meta = tmp_path / "meta"
    meta.mkdir()
    git(meta, "init", "-q")
    git(meta, "config", "core.worktree", "../../gone")
    assert subprocess.run(["git", "status"], cwd=meta, capture_output=True).returncode != 0, (
        "git itself refuses this repository"
    )
    err = one_clear_line(run_cli("capture", "-C", str(meta), data_dir=data_dir, text=False))
    assert "core.worktree" in err and "not a directory" in err, err
    assert not (data_dir / "snapshot").exists() or not any((data_dir / "snapshot").iterdir()), (
        "no store is created for a repository we cannot snapshot"
    )


def test_a_worktree_whose_path_is_not_utf8_gets_a_store_with_its_exact_record(
    tmp_path: Path, data_dir: Path
) -> None:
    raw = os.fsencode(tmp_path) + b"/w\xff-latin\xe9"
    root = Path(os.fsdecode(raw))
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    write(root, "a.txt", "one\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")

    first = run_cli("capture", "-C", raw, data_dir=data_dir, text=False)
    assert first.returncode == 0, first.stderr.decode(errors="replace")
    store = only_store(data_dir)
    assert (store / "worktree").read_bytes() == raw + b"\n", "the record names the exact bytes"

    write(root, "a.txt", "two\n")
    second = run_cli("capture", "-C", raw, data_dir=data_dir, text=False)
    assert second.returncode == 0 and second.stdout != first.stdout, second.stderr

    outside = run_cli("capture", "-C", os.fsencode(tmp_path), data_dir=data_dir, text=False)
    err = one_clear_line(outside)
    assert "not inside a git worktree" in err, err


def test_discovery_never_opens_a_fifo_named_dot_git(tmp_path: Path, data_dir: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root, "sub/file.txt", "x\n")
    os.mkfifo(root / "sub" / ".git")  # git reads no gitfile from it and looks further up
    # Not a timing assertion: a hang (libgit2 reads the FIFO, issue 13 §9) just fails sooner.
    done = run_cli("capture", "-C", str(root / "sub"), data_dir=data_dir, timeout=60, text=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")


def test_a_bare_repository_is_not_a_worktree(tmp_path: Path, data_dir: Path) -> None:
    bare = tmp_path / "bare.git"
    bare.mkdir()
    git(bare, "init", "-q", "--bare")
    err = one_clear_line(run_cli("capture", "-C", str(bare), data_dir=data_dir, text=False))
    assert "not inside a git worktree" in err, err


def test_a_damaged_repository_config_is_named_in_one_line(tmp_path: Path, data_dir: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    (root / ".git" / "config").write_text("[core\nbare = false\n")
    assert subprocess.run(["git", "status"], cwd=root, capture_output=True).returncode != 0
    err = one_clear_line(run_cli("capture", "-C", str(root), data_dir=data_dir, text=False))
    assert "config" in err and "not inside a git worktree" not in err, err
