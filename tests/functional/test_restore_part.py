"""Part of a checkpoint back (`restore ID -- PATH`) and checkpoints by hand (issue 15).

The commands run through the CLI's `main` in this process; the hooks as real processes.
"""

from __future__ import annotations

import json
from pathlib import Path

from builders import run_cli_in_process as cli
from builders import turn, write


def test_restore_one_file_of_a_turn_and_redo_it(repo: Path) -> None:
    turn(repo, "s", {"src/app.py": "print('agent')\n", "src/util.py": "X = 2\n"})
    done = cli("restore", "1", "--", "src/app.py", cwd=repo)
    assert done.code == 0, done.err
    assert (repo / "src/app.py").read_text() == "print('hi')\n", "the chosen file is back"
    assert (repo / "src/util.py").read_text() == "X = 2\n", "the others are left alone"
    assert "redo" in done.out
    (cp,) = json.loads(cli("list", "--json", cwd=repo).out)
    assert not cp["undone"], "only part of it moved: the checkpoint stays active"
    redone = cli("redo", cwd=repo)
    assert redone.code == 0 and redone.out.startswith("redid checkpoint 1:"), redone
    assert (repo / "src/app.py").read_text() == "print('agent')\n", "redo puts it back"
    (cp,) = json.loads(cli("list", "--json", cwd=repo).out)
    assert not cp["undone"], "and the checkpoint is still active"


def test_a_directory_takes_its_files_and_paths_are_relative_to_here(repo: Path) -> None:
    turn(
        repo,
        "s",
        {"src/app.py": "print('agent')\n", "src/new.py": "N = 1\n", "README.md": "# agent\n"},
    )
    done = cli("restore", "1", "--json", "--", ".", cwd=repo / "src")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert (report["restored"], report["removed"]) == (["src/app.py"], ["src/new.py"])
    assert (repo / "README.md").read_text() == "# agent\n", "outside the directory: untouched"


def test_restore_refuses_later_edits_unless_forced_and_after_goes_forward(repo: Path) -> None:
    turn(repo, "s", {"src/app.py": "print('agent')\n"})
    write(repo, "src/app.py", "print('mine')\n")
    refused = cli("restore", "1", "src/app.py", cwd=repo)
    assert refused.code == 4 and "src/app.py" in refused.err, refused.err
    dry = cli("restore", "1", "--force", "--dry-run", "src/app.py", cwd=repo)
    assert dry.out.startswith("would restore checkpoint 1: 1 would restore"), dry.out
    assert "  would restore src/app.py" in dry.out, "each line says what would happen"
    assert cli("restore", "1", "--force", "src/app.py", cwd=repo).code == 0
    assert (repo / "src/app.py").read_text() == "print('hi')\n"
    forward = cli("restore", "1", "--after", "src/app.py", cwd=repo)
    assert forward.code == 0, forward.err
    assert (repo / "src/app.py").read_text() == "print('agent')\n", "--after: as it ended"
    assert cli("redo", cwd=repo).code == 0
    assert cli("redo", cwd=repo).code == 0
    assert (repo / "src/app.py").read_text() == "print('mine')\n", "the forced-over edit is kept"


def test_restore_errors_are_one_line(repo: Path, tmp_path: Path) -> None:
    turn(repo, "s", {"src/app.py": "print('agent')\n"})
    for args, code in (
        (["restore", "9", "src/app.py"], 1),
        (["restore", "1", "nope.txt"], 1),
        (["restore", "1", str(tmp_path)], 2),
        (["restore", "1"], 2),
    ):
        done = cli(*args, cwd=repo)
        assert done.code == code, (args, done.code, done.err)
        assert len(done.err.strip().splitlines()) == 1, done.err


def test_checkpoint_by_hand_is_undoable(repo: Path) -> None:
    first = cli("checkpoint", cwd=repo)
    assert first.code == 0 and "baseline" in first.err, "no message, no earlier snapshot"
    write(repo, "src/app.py", "print('by hand')\n")
    write(repo, "notes.txt", "n\n")
    done = cli("checkpoint", "-m", "try the new greeting\nwith details", cwd=repo)
    assert done.code == 0 and "try the new greeting" in done.out, done.err
    (cp,) = json.loads(cli("list", "--json", cwd=repo).out)
    assert cp["label"] == "try the new greeting" and cp["reason"] == "checkpoint"
    assert {f["path"] for f in cp["files"]} == {"src/app.py", "notes.txt"}
    assert cli("checkpoint", cwd=repo).code == 3, "nothing changed since: exit 3"
    assert cli("undo", cwd=repo).code == 0
    assert (repo / "src/app.py").read_text() == "print('hi')\n"
    assert not (repo / "notes.txt").exists()


def test_checkpoint_after_capture_starts_from_that_capture(repo: Path) -> None:
    assert cli("capture", cwd=repo).code == 0
    write(repo, "README.md", "# edited\n")
    done = cli("checkpoint", cwd=repo)
    assert done.code == 0, done.err
    assert cli("undo", cwd=repo).code == 0, "capture, edit, checkpoint, undo"
    assert (repo / "README.md").read_text() == "# demo\n"
