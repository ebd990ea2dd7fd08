"""The source repository's `.git` is only ever read (SPEC §2)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from builders import git, make_repo, open_engine, snapshot_dir_bytes, write

from snapshotter.history import maintenance as gc_mod
from snapshotter.history import undo
from snapshotter.history.recorder import Recorder


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


def git_dir_state(path: Path) -> dict[str, tuple[object, ...]]:
    """Name → (kind and mode, mtime, size, bytes or link target) of everything under ``path``.

    Hard-link counts and atimes are left out: seeding adds a name to a pack's
    inode (its nlink) and reading sets atimes; neither is a change to the file.
    """
    found: dict[str, tuple[object, ...]] = {}
    for dirpath, dirs, files in os.walk(path):
        for name in [*dirs, *files]:
            full = Path(dirpath) / name
            st = full.lstat()
            if stat.S_ISLNK(st.st_mode):
                body: object = os.readlink(full)
            elif stat.S_ISREG(st.st_mode):
                body = full.read_bytes()
            else:
                body = None
            mtime = None if stat.S_ISDIR(st.st_mode) else st.st_mtime_ns
            found[str(full.relative_to(path))] = (st.st_mode, mtime, st.st_size, body)
    return found


def test_seeded_source_packs_keep_their_mtimes_through_capture_undo_redo_and_gc(
    tmp_path: Path, data_dir: Path
) -> None:
    """#12.4: writing an object a hard-linked source pack holds must not touch that pack."""
    files: dict[str, str | bytes] = {f"pkg/m{i}.txt": f"module {i}\n" * 20 for i in range(80)}
    root = make_repo(tmp_path / "main", files)
    git(root, "repack", "-a", "-d", "-q")  # the objects in one pack, as after a git gc
    write(root, "late.txt", "a loose object\n")
    git(root, "add", "late.txt")
    git(root, "commit", "-q", "-m", "late")
    git(root, "status", "--porcelain")
    before = git_dir_state(root / ".git")

    engine = open_engine(root, data_dir)
    engine.capture()  # seeds: the source pack is hard-linked into the store
    packs = list((root / ".git" / "objects" / "pack").glob("*.pack"))
    assert packs and all(p.stat().st_nlink > 1 for p in packs), (
        "fixture: seeding should hard-link the source pack into the store"
    )
    recorder = Recorder(engine, "s")
    recorder.turn_start()
    write(root, "pkg/m1.txt", "edited\n")
    write(root, "pkg/m2.txt", "edited\n")
    (root / "late.txt").unlink()
    recorder.turn_end("end")
    # Back to the committed bytes: every blob and tree now written is in the source's pack.
    write(root, "pkg/m1.txt", "module 1\n" * 20)
    engine.capture()
    undo.undo_last(engine, "s", force=True)
    undo.redo(engine, "s", force=True)
    undo.undo_last(engine, "s", force=True)
    engine.capture()
    gc_mod.collect(engine)
    engine.capture()

    after = git_dir_state(root / ".git")
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    assert not changed, (
        "nothing under the source .git may change name, bytes, mode or mtime; changed: "
        + ", ".join(
            f"{p}: {before.get(p, 'absent')!s:.80} -> {after.get(p, 'absent')!s:.80}"
            for p in changed[:5]
        )
    )
