"""SHA-256 repositories are protected like any other (issue 12 §2).

libgit2 cannot open a repository made by ``git init --object-format=sha256``,
so discovery, its config and its index (32-byte ids) are read by us; the
shadow store stays SHA-1 and nothing is seeded from the source. Real git,
the real CLI and real ``snapshotter hook`` processes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pygit2
from builders import event, git, run_cli, run_hook, write

from snapshotter.git import index as gitindex
from snapshotter.git import tracked
from snapshotter.logfile import log_path

# Enough files that a first capture takes the bulk path, which seeds from the source index.
MANY = 80


def sha256_repo(root: Path) -> Path:
    root.mkdir()
    git(root, "init", "-q", "-b", "main", "--object-format=sha256")
    for i in range(MANY):
        write(root, f"src/f{i:03}.txt", f"file {i}\n")
    write(root, ".gitignore", "build/\n")
    write(root, "build/keep.txt", "tracked although ignored\n")
    git(root, "add", "-A")
    git(root, "add", "-f", "build/keep.txt")
    git(root, "commit", "-q", "-m", "initial")
    assert git(root, "rev-parse", "--show-object-format").strip() == "sha256"
    return root


def blob_at(data_dir: Path, tree: str, rel: str) -> bytes:
    [store] = [p for p in (data_dir / "snapshot").iterdir() if p.is_dir()]
    repo = pygit2.Repository(str(store / "git"))
    obj = repo[tree].peel(pygit2.Tree)[rel]
    return repo[obj.id].peel(pygit2.Blob).data


def test_capture_reads_a_sha256_repository_and_its_index(tmp_path: Path, data_dir: Path) -> None:
    root = sha256_repo(tmp_path / "repo")
    done = run_cli("capture", "-C", str(root), data_dir=data_dir, text=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"not inside a git worktree" not in done.stderr
    tree = done.stdout.decode().strip()
    assert len(tree) == 40, "the shadow store is SHA-1 whatever the source uses"
    assert blob_at(data_dir, tree, "src/f007.txt") == b"file 7\n"
    assert blob_at(data_dir, tree, "build/keep.txt") == b"tracked although ignored\n", (
        "a tracked file under an ignored directory is captured: the SHA-256 index was read"
    )


def test_index_parser_reads_32_byte_ids_as_git_lists_them(tmp_path: Path) -> None:
    root = sha256_repo(tmp_path / "repo")
    git(root, "update-index", "--index-version", "4")
    for version in ("4", "2"):
        git(root, "update-index", "--index-version", version)
        modes = tracked.tracked_modes(root / ".git" / "index", oid_size=32)
        assert modes is not None and set(modes) == set(git(root, "ls-files").split()), version
        entries = gitindex.read_entries((root / ".git" / "index").read_bytes(), oid_size=32)
        assert entries is not None
        by_path = {e.path: e.oid.hex() for e in entries}
        oracle = git(root, "ls-files", "-s", "src/f001.txt").split()[1]
        assert by_path["src/f001.txt"] == oracle and len(oracle) == 64, version


def test_hooks_record_and_undo_in_a_sha256_repository(tmp_path: Path, data_dir: Path) -> None:
    root = sha256_repo(tmp_path / "repo")
    for name in ("session_start", "turn_start"):
        done = run_hook(event(name, root, "s1"), data_dir)
        assert done.returncode == 0 and not done.stderr, done.stderr
    write(root, "src/f001.txt", "agent edit\n")
    write(root, "build/keep.txt", "agent overwrote the ignored-but-tracked file\n")
    write(root, "notes.md", "agent added\n")
    done = run_hook(event("turn_end", root, "s1", reason="done"), data_dir)
    assert done.returncode == 0 and not done.stderr, done.stderr

    listed = run_cli("list", "-C", str(root), "--json", data_dir=data_dir, text=False)
    cps = json.loads(listed.stdout)
    assert len(cps) == 1, f"one turn checkpoint expected, got {cps}"
    assert {f["path"]: f["status"] for f in cps[0]["files"]} == {
        "src/f001.txt": "modified",
        "build/keep.txt": "modified",
        "notes.md": "added",
    }
    undo = run_cli("undo", "-C", str(root), data_dir=data_dir, text=False)
    assert undo.returncode == 0, undo.stderr.decode(errors="replace")
    assert (root / "src/f001.txt").read_text() == "file 1\n"
    assert (root / "build/keep.txt").read_text() == "tracked although ignored\n"
    assert not (root / "notes.md").exists()
    assert git(root, "status", "--porcelain") == "", "the worktree is back at the commit"


def test_an_object_format_we_cannot_read_is_one_clear_line_and_logged(
    tmp_path: Path, data_dir: Path
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "core.repositoryformatversion", "1")
    git(root, "config", "extensions.objectformat", "sha512")
    done = run_cli("capture", "-C", str(root), data_dir=data_dir, text=False)
    err = done.stderr.decode()
    assert done.returncode == 1 and err.count("\n") == 1, err
    assert "object format" in err and "not inside a git worktree" not in err, err

    ran = run_hook(event("session_start", root, "s"), data_dir)
    assert ran.returncode == 0 and b"object format" in ran.stderr, ran.stderr
    assert "object format" in log_path(data_dir).read_text(), "the hook's failure is logged"
