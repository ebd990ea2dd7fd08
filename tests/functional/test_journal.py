"""#13.1 / #13.4: a restore's journal, and the only temp files ever cleaned up.

A capture never deletes a file because of its name; the next open finishes a
journalled restore, removes exactly the temp names the journal lists, and
never writes over a file the user changed after the kill.
"""

from __future__ import annotations

from pathlib import Path

from builders import git, make_repo, open_engine, write

from snapshotter.history import undo
from snapshotter.history.recorder import Recorder
from snapshotter.history.records import Restoring
from snapshotter.history.state_file import load, save

LOOKALIKE = "notes/.snapshotter-tmp-0123456789ab"


def test_a_committed_file_named_like_a_restore_temp_file_is_never_deleted(
    tmp_path: Path, data_dir: Path
) -> None:
    root = make_repo(tmp_path / "repo", {LOOKALIKE: "the user's file\n", "README.md": "hi\n"})
    engine = open_engine(root, data_dir)
    tree = engine.capture().tree
    write(root, "notes/.snapshotter-tmp-ffffffffffff", "an untracked one\n")
    tree = engine.capture().tree
    open_engine(root, data_dir)  # the next open (any command) too
    assert (root / LOOKALIKE).read_text() == "the user's file\n", (
        "a capture deleted a committed file because of its name"
    )
    assert (root / "notes/.snapshotter-tmp-ffffffffffff").exists()
    assert engine.entry(tree, LOOKALIKE) is not None, "the file is captured like any other"
    assert git(root, "status", "--porcelain") == "?? notes/.snapshotter-tmp-ffffffffffff\n"


def test_the_next_open_finishes_a_journalled_restore_and_removes_only_its_temps(
    tmp_path: Path, data_dir: Path
) -> None:
    root = make_repo(tmp_path / "repo", {"a.txt": "a0\n", "b.txt": "b0\n", "c.txt": "c0\n"})
    engine = open_engine(root, data_dir)
    recorder = Recorder(engine, "s")
    recorder.turn_start()
    for name in ("a", "b", "c"):
        write(root, f"{name}.txt", f"{name}1 by the agent\n")
    cp = recorder.turn_end("end")
    assert cp is not None
    undo.undo_last(engine, "s")
    undo.redo(engine, "s")
    # As a kill would leave an undo: its outcome saved with the journal, only
    # a.txt restored, a temp file next to b.txt, and the user already at c.txt.
    undo.undo_last(engine, "s")
    undone = load(engine.store)
    write(root, "b.txt", "b1 by the agent\n")
    write(root, "c.txt", "c2 the user's, after the kill\n")
    temps = {
        "a.txt": ".snapshotter-tmp-aaaaaaaaaaaa",
        "b.txt": ".snapshotter-tmp-bbbbbbbbbbbb",
        "c.txt": ".snapshotter-tmp-cccccccccccc",
    }
    write(root, temps["b.txt"], "half a temp file")
    write(root, ".snapshotter-tmp-0123456789ab", "the user's look-alike\n")
    undone.restoring = Restoring(
        safety=undone.session("s").redo[-1].tree,
        steps=[(cp.before, ["a.txt", "b.txt", "c.txt"])],
        temps=temps,
    )
    save(engine.store, undone)

    open_engine(root, data_dir)  # any command: finishes the restore

    assert (root / "a.txt").read_text() == "a0\n" and (root / "b.txt").read_text() == "b0\n", (
        "the killed undo is finished: a.txt and b.txt as the checkpoint's before"
    )
    assert (root / "c.txt").read_text() == "c2 the user's, after the kill\n", (
        "a file the user changed after the kill is never written over"
    )
    assert not (root / temps["b.txt"]).exists(), "the journalled temp file is removed"
    assert (root / ".snapshotter-tmp-0123456789ab").exists(), "a look-alike name is not ours"
    assert load(engine.store).restoring is None, "the journal is closed"
