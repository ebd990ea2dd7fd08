"""#13.6: a file that was on disk before the span, with the same bytes, was not added by it.

The agent only re-classifies the user's files: it edits .gitignore so the
ignored ``.env`` becomes visible, or ``git add``s the untracked 3 MB
``dataset.bin`` that was over the new-file size limit. Neither is the agent's
``added`` file, and undo must never delete them. A file the agent really
creates is still added, and still removed by undo.
"""

from __future__ import annotations

import time
from pathlib import Path

from builders import git, make_repo, open_engine, write

from snapshotter.history import undo
from snapshotter.history.recorder import Recorder

SECRET = b"API_KEY=the user's secret\n"
DATASET = bytes(range(256)) * (3 * 1024 * 1024 // 256)  # 3 MiB: over the 2 MiB limit


def settle_clock() -> None:
    """The user's files must be older than the span (their ctime before its start)."""
    time.sleep(0.2)


def test_a_file_made_visible_by_a_gitignore_edit_is_not_added_and_survives_undo(
    tmp_path: Path, data_dir: Path
) -> None:
    root = make_repo(tmp_path / "repo", {".gitignore": ".env\n", "README.md": "# demo\n"})
    write(root, ".env", SECRET)
    settle_clock()
    engine = open_engine(root, data_dir)
    recorder = Recorder(engine, "s")
    recorder.session_start()
    recorder.turn_start()
    write(root, ".gitignore", "# nothing ignored any more\n")
    write(root, "made.txt", "the agent's new file\n")
    cp = recorder.turn_end("end")
    assert cp is not None
    files = {f.path: f.status for f in cp.files}
    assert files == {".gitignore": "modified", "made.txt": "added"}, (
        f".env existed before the turn with the same bytes: not the agent's; got {files}"
    )
    undo.undo_last(engine, "s")
    assert (root / ".env").read_bytes() == SECRET, "undo must never delete the user's .env"
    assert not (root / "made.txt").exists(), "a file the agent created is still undone"
    assert (root / ".gitignore").read_text() == ".env\n"
    undo.redo(engine, "s")
    assert (root / ".env").read_bytes() == SECRET


def test_a_large_file_the_agent_only_git_adds_is_not_added_and_survives_undo(
    tmp_path: Path, data_dir: Path
) -> None:
    root = make_repo(tmp_path / "repo", {"README.md": "# demo\n"})
    write(root, "dataset.bin", DATASET)
    settle_clock()
    engine = open_engine(root, data_dir)
    recorder = Recorder(engine, "s")
    recorder.session_start()
    recorder.turn_start()
    git(root, "add", "dataset.bin")  # tracked now: captured whatever its size
    write(root, "README.md", "# demo, with data\n")
    cp = recorder.turn_end("end")
    assert cp is not None
    files = {f.path: f.status for f in cp.files}
    assert files == {"README.md": "modified"}, (
        f"dataset.bin existed before the turn with the same bytes: not added; got {files}"
    )
    undo.undo_last(engine, "s")
    assert (root / "dataset.bin").read_bytes() == DATASET, "undo must never delete dataset.bin"
    assert (root / "README.md").read_text() == "# demo\n"
    # The next turn must not lose it either (it was gone for good after it).
    recorder.turn_start()
    write(root, "README.md", "# again\n")
    recorder.turn_end("end")
    undo.undo_last(engine, "s")
    assert (root / "dataset.bin").read_bytes() == DATASET
