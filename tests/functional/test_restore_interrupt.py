"""#21.4: a full worktree disk, Ctrl-C or a kill in the middle of a restore.

A restore that cannot write a file (ENOSPC, EACCES, EIO) is one line naming
the path and the cause, exit 1, and is rolled back: the records say "not
undone" and the bytes are the agent's. When the rollback cannot finish
either, the records say so at once and the next command puts the bytes
back. Ctrl-C rolls back too (exit 130); a SIGKILL is finished by the next
command, which says so on stderr.

Faults are injected into a real ``snapshotter`` process the way
test_crash_injection.py does: ``os.replace`` wrapped, for renames into the
worktree only (``FAULTY_CLI``). The full disk is a real one: a small tmpfs
holding the worktree (root only).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from builders import (
    argv,
    event,
    hook_ok,
    interruptible,
    listed,
    make_repo,
    run_cli,
    small_tmpfs,
    turn,
    write,
)

# ``snapshotter`` (cli.main) with renames into the worktree ($RF_ROOT) wrapped.
# RF_FAIL="ERRNO:FROM[:UNTIL]": the renames numbered FROM..UNTIL (1-based) fail
# with ERRNO. RF_PAUSE="N:MARKER": after the Nth rename, touch MARKER and sleep
# (a signal finds it there, mid-restore, every time).
FAULTY = r"""
import os, sys, time
root = os.environ["RF_ROOT"] + os.sep
count = 0
real = os.replace

def replace(src, dst, *args, **kwargs):
    global count
    if not os.fspath(dst).startswith(root):
        return real(src, dst, *args, **kwargs)
    count += 1
    fail = os.environ.get("RF_FAIL")
    if fail:
        code, first, *last = map(int, fail.split(":"))
        if count >= first and (not last or count <= last[0]):
            raise OSError(code, os.strerror(code), os.fspath(dst))
    done = real(src, dst, *args, **kwargs)
    pause = os.environ.get("RF_PAUSE")
    if pause and count == int(pause.split(":")[0]):
        open(pause.split(":", 1)[1], "w").close()
        time.sleep(60)
    return done

os.replace = replace
from snapshotter.cli.main import main
main()
"""
FAULTY_CLI = (sys.executable, "-c", FAULTY)
SESSION = "s"


def files(root: Path) -> dict[str, bytes]:
    found = {}
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(dirpath) / name
            found[str(path.relative_to(root))] = path.read_bytes()
    return found


def agent_turn(root: Path, data: Path, edits: dict[str, bytes | None]) -> None:
    """One agent turn through real hook processes: writes, and deletions (None)."""
    hook_ok(event("session_start", root, SESSION), data)
    turn(root, SESSION, edits, data, process=True)


def undone(root: Path, data: Path) -> list[bool]:
    return [cp["undone"] for cp in listed(root, data) if cp.get("parent") is None]


def faulty(
    root: Path, data: Path, *args: str | Path, **env: str
) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, data_dir=data, command=FAULTY_CLI, env={"RF_ROOT": str(root), **env})


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1, f"one line on stderr, got {err!r}"
    assert "internal error" not in err and "Traceback" not in err, f"not a bug: {err!r}"
    return err


# -- (a) a real full disk ----------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "small", "size=8m") as mount:
        yield mount


def fill_but(disk: Path, spare: int) -> Path:
    """Fill ``disk`` until only about ``spare`` bytes are free; the filler to delete."""
    filler = disk / "filler"
    st = os.statvfs(disk)
    size = st.f_bavail * st.f_frsize - spare
    with open(filler, "wb") as f:
        while size > 0:
            chunk = min(size, 1 << 20)
            f.write(b"\0" * chunk)
            size -= chunk
    return filler


def test_undo_on_a_full_worktree_disk_rolls_back_and_says_so(
    tmp_path: Path, small_disk: Path, data_dir: Path
) -> None:
    big = os.urandom(1 << 20)
    root = make_repo(small_disk / "repo", {"a.txt": "a0\n", "big.bin": big})
    assert os.statvfs(root).f_blocks * os.statvfs(root).f_frsize <= 8 << 20, "a small disk"
    agent_turn(root, data_dir, {"a.txt": b"a1 by the agent\n", "big.bin": None})
    agents = files(root)
    filler = fill_but(small_disk, 64 << 10)  # a.txt fits, big.bin does not

    done = run_cli("undo", "-C", root, data_dir=data_dir)
    err = one_line(done)
    assert done.returncode == 1, f"a full worktree disk is exit 1; got {done.returncode}: {err}"
    assert "big.bin" in err and "No space left on device" in err, (
        f"the line names the path and the cause: {err!r}"
    )
    assert "nothing was undone" in err, f"the line says what state the worktree is in: {err!r}"
    print(f"\n[restore-interrupt] undo on a full worktree disk: {err}")
    assert files(root) == agents, "a.txt, already written, is rolled back"

    filler.unlink()
    assert undone(root, data_dir) == [False], "the checkpoint is not undone"
    assert files(root) == agents, "list changes nothing"
    done = run_cli("undo", "-C", root, data_dir=data_dir)
    assert done.returncode == 0 and not done.stderr, f"with space back undo works: {done.stderr}"
    assert (root / "big.bin").read_bytes() == big and (root / "a.txt").read_text() == "a0\n"
    assert undone(root, data_dir) == [True]


# -- (b) injected write errors -----------------------------------------------------------------


def three_file_turn(tmp_path: Path, data: Path) -> tuple[Path, dict[str, bytes]]:
    root = make_repo(tmp_path / "repo", {f"f{i}.txt": f"f{i} v0\n" for i in range(3)})
    agent_turn(root, data, {f"f{i}.txt": f"f{i} by the agent\n".encode() for i in range(3)})
    return root, files(root)


@pytest.mark.parametrize("code", [errno.EACCES, errno.EIO, errno.EROFS])
def test_a_write_error_mid_undo_rolls_back_what_was_written(
    tmp_path: Path, data_dir: Path, code: int
) -> None:
    root, agents = three_file_turn(tmp_path, data_dir)
    done = faulty(root, data_dir, "undo", "-C", root, RF_FAIL=f"{code}:2:2")  # f1.txt fails
    err = one_line(done)
    assert done.returncode == 1, f"exit 1, got {done.returncode}: {err}"
    assert "f1.txt" in err and os.strerror(code) in err, f"path and cause: {err!r}"
    assert "nothing was undone (the worktree is as before)" in err, err
    assert files(root) == agents, "f0.txt, written before the failure, is put back"
    assert undone(root, data_dir) == [False], "the records say: not undone"
    done = run_cli("undo", "-C", root, data_dir=data_dir)
    assert done.returncode == 0 and not done.stderr, f"undo works afterwards: {done.stderr}"
    assert all((root / f"f{i}.txt").read_text() == f"f{i} v0\n" for i in range(3))


def test_a_rollback_that_cannot_finish_is_finished_by_the_next_command(
    tmp_path: Path, data_dir: Path
) -> None:
    root, agents = three_file_turn(tmp_path, data_dir)
    # The first rename succeeds, every later one fails: the rollback of f0.txt too.
    done = faulty(root, data_dir, "undo", "-C", root, RF_FAIL=f"{errno.ENOSPC}:2")
    err = one_line(done)
    assert done.returncode == 1, err
    assert "f1.txt" in err and "No space left on device" in err, err
    assert "partly restored" in err and "free space" in err, err
    assert (root / "f0.txt").read_text() == "f0 v0\n", "f0.txt could not be put back yet"

    done = run_cli("list", "-C", root, "--json", data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    note = done.stderr.strip()
    assert note.startswith("snapshotter: rolled back an undo of checkpoint"), note
    assert "`snapshotter undo` tries again" in note, note
    assert [cp["undone"] for cp in json.loads(done.stdout) if cp["parent"] is None] == [False]
    assert files(root) == agents, "the next command put f0.txt back: bytes and records agree"
    again = run_cli("list", "-C", root, data_dir=data_dir)
    assert again.returncode == 0 and not again.stderr, f"nothing left to do: {again.stderr}"
    done = run_cli("undo", "-C", root, data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    assert all((root / f"f{i}.txt").read_text() == f"f{i} v0\n" for i in range(3))


# -- (c, d) Ctrl-C and SIGKILL in the middle ---------------------------------------------------

MANY = 60


def many_file_session(tmp_path: Path, data: Path) -> tuple[Path, dict[str, bytes]]:
    root = make_repo(tmp_path / "repo", {f"d{i % 4}/m{i}.txt": f"m{i} v0\n" for i in range(MANY)})
    agent_turn(root, data, {f"d{i % 4}/m{i}.txt": f"m{i} turn 1\n".encode() for i in range(MANY)})
    hook_ok(event("turn_start", root, SESSION), data)
    for i in range(0, MANY, 2):
        write(root, f"d{i % 4}/m{i}.txt", f"m{i} turn 2\n")
    hook_ok(event("turn_end", root, SESSION, reason="end"), data)
    return root, files(root)


def start_paused(root: Path, data: Path, marker: Path, *args: str | Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        argv(data, *args, command=FAULTY_CLI),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "RF_ROOT": str(root), "RF_PAUSE": f"10:{marker}"},
        preexec_fn=interruptible,  # Ctrl-C comes to it
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, f"it ended before its 10th write: {proc.communicate()}"
        assert time.monotonic() < deadline, "it never reached its 10th write"
        time.sleep(0.01)
    return proc


def test_ctrl_c_mid_reset_rolls_back_and_the_next_command_runs_nothing(
    tmp_path: Path, data_dir: Path
) -> None:
    root, agents = many_file_session(tmp_path, data_dir)
    marker = tmp_path / "paused"
    proc = start_paused(root, data_dir, marker, "reset", "--original", "-C", root)
    assert files(root) != agents, "ten files were written when Ctrl-C comes"
    proc.send_signal(signal.SIGINT)
    out, err_text = proc.communicate(timeout=60)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err_text)
    err = one_line(done)
    assert proc.returncode == 130, f"Ctrl-C is exit 130, got {proc.returncode}: {err}"
    assert "reset interrupted" in err and "nothing was reset" in err, err
    assert files(root) == agents, "what the reset had written is rolled back"

    done = run_cli("list", "-C", root, data_dir=data_dir)
    assert done.returncode == 0 and not done.stderr, f"list re-runs nothing: {done.stderr!r}"
    assert undone(root, data_dir) == [False, False], "nothing is undone"
    assert files(root) == agents, "the next commands leave the bytes alone"


def test_a_killed_undo_is_finished_by_the_next_list_which_says_so(
    tmp_path: Path, data_dir: Path
) -> None:
    root, _agents = many_file_session(tmp_path, data_dir)
    marker = tmp_path / "paused"
    proc = start_paused(root, data_dir, marker, "undo", "-C", root)
    proc.kill()
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    done = run_cli("list", "-C", root, data_dir=data_dir)
    assert done.returncode == 0, done.stderr
    note = done.stderr.strip()
    assert note == (
        f"snapshotter: finished an undo of checkpoint {listed(root, data_dir)[-1]['id']} "
        f"that was interrupted ({MANY // 2} files); `snapshotter redo` takes it back"
    ), note
    assert undone(root, data_dir) == [False, True]
    for i in range(0, MANY, 2):
        assert (root / f"d{i % 4}/m{i}.txt").read_text() == f"m{i} turn 1\n"
    again = run_cli("list", "-C", root, data_dir=data_dir)
    assert not again.stderr, f"said once: {again.stderr!r}"


def test_a_hook_logs_what_recovery_did_and_prints_nothing(tmp_path: Path, data_dir: Path) -> None:
    root, _agents = many_file_session(tmp_path, data_dir)
    marker = tmp_path / "paused"
    proc = start_paused(root, data_dir, marker, "undo", "-C", root)
    proc.kill()
    proc.communicate(timeout=60)
    hook_ok(event("turn_start", root, SESSION), data_dir)  # prints nothing, exits 0
    log = (data_dir / "snapshot" / "hook.log").read_text()
    assert "finished an undo of checkpoint" in log, f"hook.log says what it did: {log!r}"
    with contextlib.suppress(FileNotFoundError):
        marker.unlink()
