"""#13.3: nothing in capture, diff, restore or gc recurses once per directory level.

Python's recursion limit is 1,000 frames: a checkpoint 1,100 directories deep
must still be captured, undone and redone (and collected), with no way back lost.
"""

from __future__ import annotations

import os
from pathlib import Path

from builders import make_repo

from snapshotter.engine import Engine
from snapshotter.history import maintenance as gc_mod
from snapshotter.history import undo
from snapshotter.history.recorder import Recorder
from snapshotter.history.state_file import load

DEPTH = 1_100


def deep_dir(root: Path, depth: int) -> Path:
    """``root/d/d/.../d`` made one level at a time, relative to an open directory
    (os.makedirs recurses, and full paths cost a walk from the root each)."""
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            fd, parent = os.open("d", os.O_RDONLY, dir_fd=fd), fd
            os.close(parent)
    finally:
        os.close(fd)
    return root.joinpath(*["d"] * depth)


def remove_deep(root: Path) -> None:
    """Bottom-up through open directories, without shutil.rmtree's recursion."""
    fds = [os.open(root, os.O_RDONLY)]
    try:
        while "d" in os.listdir(fds[-1]):
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        for depth in range(len(fds) - 1, 0, -1):
            for name in os.listdir(fds[depth]):
                os.unlink(name, dir_fd=fds[depth])
            os.rmdir("d", dir_fd=fds[depth - 1])
    finally:
        for fd in fds:
            os.close(fd)


def test_a_checkpoint_1100_directories_deep_is_captured_undone_and_redone(
    tmp_path: Path, data_dir: Path
) -> None:
    root = make_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    engine = Engine.open(root, data_dir_path=data_dir)
    assert engine is not None
    recorder = Recorder(engine, "s")
    try:
        recorder.turn_start()
        leaf = deep_dir(root, DEPTH)
        (leaf / "deep.txt").write_text("at the bottom\n")
        (root / "README.md").write_text("# changed\n")
        cp = recorder.turn_end("end")
        assert cp is not None, "the turn changed files: a checkpoint is recorded"
        deep_rel = "/".join(["d"] * DEPTH + ["deep.txt"])
        assert {f.path for f in cp.files} == {deep_rel, "README.md"}, (
            "the deep file and README.md are the turn's changes"
        )
        assert engine.diff(cp.before, cp.after), "the diff of the deep checkpoint is shown"

        undo.undo_last(engine, "s")
        assert not (root / "d").exists(), "undo removes the deep file and its empty directories"
        assert (root / "README.md").read_text() == "# demo\n"
        undo.redo(engine, "s")
        assert (leaf / "deep.txt").read_text() == "at the bottom\n", "redo brings it back"
        assert (root / "README.md").read_text() == "# changed\n"
        gc_mod.collect(engine)
        undo.undo_last(engine, "s")  # after gc the checkpoint's objects are all there
        assert not (root / "d").exists()
        assert not load(engine.store).restoring, "no restore is left half done"
    finally:
        remove_deep(root)
