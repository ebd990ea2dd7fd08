"""Issue 28.4: a record naming objects a crash took is said in one line; the rest works.

The crash is what a power cut did to a store before issue 28 (and still can
where a disk lies about its flushes): state.json and the stat cache reached
the disk, the newest checkpoint's objects did not. Here those objects are
deleted from the store, leaving everything else as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

from builders import (
    edit_files,
    event,
    hook_in_process_ok,
    reachable,
    run_cli_in_process,
    store_root,
)


def _turn(root: Path, data_dir: Path, files: dict[str, str | None]) -> None:
    """An agent's turn through the hook entry point, in process: start, edits, end."""
    hook_in_process_ok(event("turn_start", root), data_dir)
    edit_files(root, files)
    hook_in_process_ok(event("turn_end", root), data_dir)


def _lose_newest(data_dir: Path) -> None:
    """Delete what only the newest checkpoint's snapshot and the open turn's start hold,
    as a power cut would."""
    state = json.loads((store_root(data_dir) / "state.json").read_bytes())
    newest, older = state["checkpoints"][-1], state["checkpoints"][:-1]
    git_dir = store_root(data_dir) / "git"
    kept = reachable(git_dir, [t for cp in older for t in (cp["before"], cp["after"])])
    opened = state["sessions"]["s"]["turn"]["tree"]
    lost = reachable(git_dir, [newest["after"], opened]) - kept
    assert lost, "the newest checkpoint holds objects of its own"
    for oid in lost:
        path = git_dir / "objects" / oid[:2] / oid[2:]
        assert path.exists(), f"{oid} is loose (a capture this small packs nothing)"
        path.unlink()


def test_a_lost_checkpoint_is_named_and_the_others_undo(repo: Path, data_dir: Path) -> None:
    _turn(repo, data_dir, {"README.md": "# one\n"})
    _turn(repo, data_dir, {"src/app.py": "print('two')\n", "src/new.py": "NEW = 2\n"})
    edit_files(repo, {"src/app.py": "print('three')\n"})  # the worktree moved on
    hook_in_process_ok(event("turn_start", repo), data_dir)  # opened on what is lost next
    _lose_newest(data_dir)
    edit_files(repo, {"docs/a.md": "a\n"})  # and on: no capture can make the lost trees again

    listed = run_cli_in_process("list", cwd=repo)
    assert listed.code == 0 and listed.out.count("turn") >= 2, listed
    for args in (["undo"], ["diff"], ["restore", "2", "--", "src/app.py"]):
        done = run_cli_in_process(*args, cwd=repo)
        assert done.code == 1, (args, done)
        done.one_line_error("missing from the store")
    assert "checkpoint 2" in run_cli_in_process("undo", cwd=repo).err
    assert (repo / "src/app.py").read_text() == "print('three')\n"  # nothing was touched

    # Recording goes on: the open turn, whose start was lost, ends quietly (what it
    # changed is the new baseline), and the next turn is a checkpoint again.
    assert hook_in_process_ok(event("turn_end", repo), data_dir) == ""
    assert json.loads((store_root(data_dir) / "state.json").read_bytes())["next_id"] == 3
    _turn(repo, data_dir, {"docs/a.md": "b\n"})
    assert run_cli_in_process("undo", cwd=repo).code == 0  # that turn
    assert (repo / "docs/a.md").read_text() == "a\n"

    # The lost checkpoint itself: its files come back from the snapshot before it,
    # which survived, once --force says edits since it need not be told apart.
    forced = run_cli_in_process("undo", "--force", cwd=repo)
    assert forced.code == 0, forced
    assert (repo / "src/app.py").read_text() == "print('hi')\n"
    assert not (repo / "src/new.py").exists()
    assert run_cli_in_process("undo", cwd=repo).code == 0  # the first turn
    assert (repo / "README.md").read_text() == "# demo\n"
    assert run_cli_in_process("redo", cwd=repo).code == 0
    assert (repo / "README.md").read_text() == "# one\n"
