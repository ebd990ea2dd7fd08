"""The source repository's `.git` is only ever read (SPEC §2)."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import git, make_repo, snapshot_dir_bytes, write

from snapshotter.engine import Engine


def open_engine(directory: Path, data_dir: Path) -> Engine:
    engine = Engine.open(directory, data_dir_path=data_dir)
    assert engine is not None, f"Engine.open({directory}) should create a store"
    return engine


def dir_listing(path: Path) -> set[str]:
    """Every entry under ``path``, directories included (snapshot_dir_bytes only sees files)."""
    found = set()
    for dirpath, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            found.add(str((Path(dirpath) / name).relative_to(path)))
    return found


def test_source_git_is_byte_identical_after_captures_and_restores(
    tmp_path: Path, data_dir: Path
) -> None:
    lib = make_repo(tmp_path / "lib", {"lib.txt": "library\n"})
    root = make_repo(tmp_path / "main", {"README.md": "# demo\n", "src/app.py": "print(1)\n"})
    git(root, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "libs/sub")
    git(root, "commit", "-q", "-m", "submodule")
    make_repo(root / "nested", {"n.txt": "nested\n"})
    write(root, ".git/info/exclude", "*.excluded\n")
    git(root, "status", "--porcelain")  # let git refresh its own index before we look
    watched = [root / ".git", root / "nested" / ".git"]
    before = {str(p): snapshot_dir_bytes(p) for p in watched}
    before_dirs = {str(p): dir_listing(p) for p in watched}

    engine = open_engine(root, data_dir)
    first = engine.capture().tree
    write(root, "README.md", "# changed\n")
    write(root, "new.txt", "new\n")
    write(root, "x.excluded", "excluded\n")
    write(root, "libs/sub/lib.txt", "edited in the submodule\n")
    write(root, "nested/n.txt", "edited in the nested repo\n")
    os.chmod(root / "src/app.py", 0o755)
    second = engine.capture().tree
    paths = [c.path for c in engine.changes(first, second)]
    engine.diff(first, second)
    engine.plan_restore(first, paths)
    engine.restore(first, paths)
    engine.capture()
    engine.restore(second, paths)
    open_engine(root / "src", data_dir).capture()
    open_engine(root / "libs" / "sub", data_dir).capture()  # a submodule is its own worktree

    assert len(paths) == 5, f"fixture: five files should have changed; got {paths}"
    for p in watched:
        assert dir_listing(p) == before_dirs[str(p)], (
            f"no entry may be added to or removed from {p}"
        )
        assert snapshot_dir_bytes(p) == before[str(p)], f"every file in {p} must be byte-identical"
    modules = root / ".git" / "modules"
    assert modules.is_dir(), "fixture: the submodule's git dir lives in .git/modules"
    assert not (root / ".git" / "snapshot").exists(), "no store may be created inside .git"
