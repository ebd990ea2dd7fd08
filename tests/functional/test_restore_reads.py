"""store/restore.py reads each file it rewrites once to compare it (issue 24: a served
undo's fixed costs), and still flips an exec bit in place when only that differs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from builders import make_repo, open_engine, write

from snapshotter.git import objects
from snapshotter.store import restore as restore_mod


def test_a_file_to_rewrite_is_hashed_once_and_an_exec_flip_still_keeps_it(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {f"d{i}/f.txt": f"{i}\n" for i in range(3)}
    root = make_repo(tmp_path / "r", {**files, "run.sh": "#!/bin/sh\n"})
    os.chmod(root / "run.sh", 0o755)
    engine = open_engine(root, data_dir)
    before = engine.capture().tree
    for rel in files:
        write(root, rel, "edited\n")
    os.chmod(root / "run.sh", 0o644)
    kept = os.stat(root / "run.sh")
    hashed: list[str] = []
    real = objects.hash_file

    def counting(path: str | os.PathLike[str]) -> bytes:
        hashed.append(os.path.relpath(path, root))
        return real(path)

    monkeypatch.setattr(restore_mod, "hash_file", counting)
    done = restore_mod.restore(engine.store, before, [*files, "run.sh"])
    assert sorted(done.restored) == sorted([*files, "run.sh"])
    assert all((root / rel).read_text() == text for rel, text in files.items())
    assert sorted(hashed) == sorted([*files, "run.sh"]), "one read per file to compare"
    st = os.stat(root / "run.sh")
    assert st.st_mode & 0o111 and (st.st_ino, st.st_mtime_ns) == (kept.st_ino, kept.st_mtime_ns)
