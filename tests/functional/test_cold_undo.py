"""Undo, redo, reset and restore with no hook server running read only the paths they
touch; ``list``, ``show`` and ``diff ID`` read none (issue 24.2).

A user runs these after the agent exited and its server idled out: a walk of
the tree would cost what the tree holds. What each process reads is traced
by a Python audit hook (``sys.addaudithook``, set before snapshotter is
imported): every directory listed and every file opened. A walk lists every
directory, so a listing of the untouched part of the tree, or an open of a
file in it, is the failure; the touched files' opens show the trace works.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from builders import event, hook_in_process_ok, run_cli, run_cli_in_process, write

from snapshotter.errors import Conflict

# Runs ``snapshotter`` as ``python -m snapshotter`` does, with an audit hook that
# logs the paths of every listing and open to $SNAPSHOTTER_TEST_READS.
TRACED = """
import os, runpy, sys
log = open(os.environ["SNAPSHOTTER_TEST_READS"], "a", buffering=1)
def seen(event, args):
    if event in ("open", "os.scandir", "os.listdir") and args and isinstance(args[0], (str, bytes)):
        log.write(event + " " + os.path.abspath(os.fsdecode(args[0])) + "\\n")
sys.addaudithook(seen)
runpy.run_module("snapshotter", run_name="__main__", alter_sys=True)
"""
UNTOUCHED = {f"other/d{d}/f{f}.txt": f"untouched {d}.{f}\n" for d in range(6) for f in range(5)}


def traced(root: Path, log: Path, *args: str) -> list[tuple[str, str]]:
    """``snapshotter ARGS`` in its own process, run in ``root``; it must exit 0.
    (event, worktree path) of each listing and open it made inside the worktree."""
    log.unlink(missing_ok=True)
    done = run_cli(
        *args,
        cwd=root,
        command=[sys.executable, "-P", "-c", TRACED],
        env={"SNAPSHOTTER_TEST_READS": str(log)},
    )
    assert done.returncode == 0, f"snapshotter {' '.join(args)}: {done.stderr}"
    top = str(root)
    found = []
    for line in log.read_text().splitlines():
        kind, _, path = line.partition(" ")
        if path == top or path.startswith(top + os.sep):
            found.append((kind, os.path.relpath(path, top)))
    return found


def _text(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def untouched_reads(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """What a walk would read: a listing anywhere in the worktree, an open in ``other``."""
    return [(k, p) for k, p in found if k != "open" or p.startswith("other" + os.sep)]


@pytest.fixture
def turned(repo: Path) -> Path:
    """``repo`` with an untouched subtree, and one agent turn (checkpoint 1) that edited
    src/app.py and added new.txt, recorded with no server (hooks in-process)."""
    for rel, text in UNTOUCHED.items():
        write(repo, rel, text)
    hook_in_process_ok(event("session_start", repo), None)
    hook_in_process_ok(event("turn_start", repo), None)
    write(repo, "src/app.py", "print('agent')\n")
    write(repo, "new.txt", "new\n")
    hook_in_process_ok(event("turn_end", repo), None)
    return repo


def test_cold_undo_redo_restore_and_reset_read_only_what_they_touch(
    turned: Path, tmp_path: Path
) -> None:
    root, log = turned, tmp_path / "reads.log"
    # A user's edit of an untouched file, never captured: no operation may change it.
    write(root, "other/d0/f0.txt", "the user's, after the turn\n")
    mine = {rel: (root / rel).read_bytes() for rel in UNTOUCHED}

    for args, app, new in (
        (["undo"], "print('hi')\n", None),
        (["redo"], "print('agent')\n", "new\n"),
        (["restore", "1", "--", "src/app.py"], "print('hi')\n", "new\n"),
        (["reset", "--original"], "print('hi')\n", None),
        (["redo"], "print('hi')\n", "new\n"),
    ):
        found = traced(root, log, *args)
        assert not untouched_reads(found), f"{args} walked the tree: {untouched_reads(found)}"
        assert ("open", os.path.join("src", "app.py")) in found, (
            f"{args}: the trace sees the touched file read ({found})"
        )
        assert (root / "src/app.py").read_text() == app, args
        assert _text(root / "new.txt") == new, args
        assert {rel: (root / rel).read_bytes() for rel in UNTOUCHED} == mine, (
            f"{args} changed a file it does not touch"
        )


def test_list_show_and_diff_of_checkpoints_read_no_worktree_file(
    turned: Path, tmp_path: Path
) -> None:
    root, log = turned, tmp_path / "reads.log"
    hook_in_process_ok(event("turn_start", root), None)
    write(root, "src/util.py", "X = 2\n")
    hook_in_process_ok(event("turn_end", root), None)
    for args in (["list", "--all"], ["show", "1"], ["diff", "1"], ["diff", "1..2"]):
        found = traced(root, log, *args)
        read = [(k, p) for k, p in found if not p.startswith(".git")]
        assert not read, f"{args} read the worktree: {read}"
    shown = json.loads(run_cli("show", "2", "--json", cwd=root).stdout)
    assert [f["path"] for f in shown["files"]] == ["src/util.py"]


def test_an_edit_after_the_turn_through_a_hard_link_is_refused_and_kept_for_redo(
    turned: Path, tmp_path: Path
) -> None:
    """The touched file's bytes are read now, never taken from a snapshot: written in
    place through another name (its size kept, its mtime put back), it is still the
    user's edit."""
    root = turned
    app = root / "src" / "app.py"
    outside = tmp_path / "outside-link"
    os.link(app, outside)
    st = app.stat()
    with open(outside, "r+b") as f:
        f.write(b"print('user')\n"[: st.st_size].ljust(st.st_size, b"#"))
    os.utime(app, ns=(st.st_atime_ns, st.st_mtime_ns))
    users = app.read_bytes()

    done = run_cli("undo", cwd=root)
    assert done.returncode == Conflict.exit_code, done.stderr
    assert "src/app.py" in done.stderr and app.read_bytes() == users
    assert run_cli("undo", "--force", cwd=root).returncode == 0
    assert app.read_text() == "print('hi')\n" and not (root / "new.txt").exists()
    assert run_cli("redo", cwd=root).returncode == 0
    assert app.read_bytes() == users, "redo brings back the user's bytes"
    assert (root / "new.txt").read_text() == "new\n"


def test_the_untouched_paths_are_as_the_newest_snapshot_has_them(turned: Path) -> None:
    """What the undo leaves is the newest snapshot (here a capture from the shell,
    newer than the session's) with the touched paths as restored: a checkpoint
    after it holds what changed since that snapshot, and only that."""
    root = turned
    write(root, "other/d1/f1.txt", "captured from the shell\n")
    assert run_cli_in_process("capture", cwd=root).code == 0
    write(root, "other/d2/f2.txt", "never captured\n")
    assert run_cli_in_process("undo", cwd=root).code == 0
    done = run_cli_in_process("checkpoint", "-m", "mine", "--json", cwd=root)
    assert done.code == 0, done.err
    assert [f["path"] for f in json.loads(done.out)["files"]] == ["other/d2/f2.txt"]
