"""The failures users of other undo tools hit, one test each (issue 6).

Each test is named after its numbered failure mode and is built so that a
naive implementation (a lock file created with O_EXCL, ``git add`` whose
errors are ignored, a whole-tree checkout, ``open(root / path, "w")``...)
would fail it. #10 (a huge root) lives elsewhere; #11 (crash injection) is in
test_crash_injection.py and #14 (hook fuzzing) in test_fuzz_hook.py.

Permissions: the suite may run as root, where chmod does not stop reads or
writes. Where a test needs real permission semantics it runs the hook in a
user namespace as an unprivileged uid (``unshare --user --map-user``), and
falls back to an in-process simulation (monkeypatched I/O) when that is
unavailable.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import functools
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pygit2
import pytest
from builders import (
    Run,
    edit_files,
    event,
    files_of,
    git,
    hook_in_process_ok,
    load_state,
    make_repo,
    open_engine,
    run_cli,
    run_cli_in_process,
    run_hook,
    snapshot_dir_bytes,
    store_root,
    write,
)

from snapshotter import fileio
from snapshotter.engine import Engine
from snapshotter.git import loose
from snapshotter.logfile import log_path

HOOK_TIMEOUT_S = 20.0  # generous: a hook that waits on a stale lock would blow through it
SESSION = "sess-1"


# -- helpers -------------------------------------------------------------------------------


def hook_proc(
    data_dir: Path,
    sent: dict[str, Any],
    *,
    prefix: tuple[str, ...] = (),
    preexec: Callable[[], None] | None = None,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[bytes]:
    """``snapshotter hook`` as the agent runs it: a fresh process, JSON on stdin.

    Handled in that process (no resident server), so its limits and uid apply.
    """
    return run_hook(
        sent,
        data_dir,
        prefix=prefix,
        preexec=preexec,
        timeout=timeout,
        env={"SNAPSHOTTER_HOOK_SERVER": "0"},
    )


def cli_proc(
    data_dir: Path, *args: str, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, data_dir=data_dir, prefix=prefix, env={"SNAPSHOTTER_HOOK_SERVER": "0"})


def hook(data_dir: Path, root: Path, name: str, session: str = SESSION, **fields: Any) -> str:
    """One event through the real hook entry point, in-process; returns its stderr."""
    return hook_in_process_ok(event(name, root, session, **fields), data_dir)


def cli(data_dir: Path, *args: str | Path) -> Run:
    """``snapshotter --data-dir DIR ARGS`` through ``cli.main``, in-process."""
    return run_cli_in_process(*args, data_dir=data_dir)


Edits = dict[str, str | bytes | None]


def turn(
    data_dir: Path, root: Path, edits: Edits | Callable[[], object], session: str = SESSION
) -> None:
    """One agent turn through the hook: turn_start, the edits, turn_end; quietly."""
    assert hook(data_dir, root, "turn_start", session) == ""
    edits() if callable(edits) else edit_files(root, edits)
    err = hook(data_dir, root, "turn_end", session, reason="normal")
    assert err == "", f"turn_end reported a failure: {err}"


def checkpoints(data_dir: Path, session: str | None = None) -> list[dict[str, Any]]:
    return [
        cp
        for cp in load_state(data_dir)["checkpoints"]
        if session is None or cp["session_id"] == session
    ]


def disk(root: Path) -> dict[str, tuple[Any, ...]]:
    """Every file and link under ``root`` (no ``.git`` anywhere) with its bytes or target."""
    found: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if os.path.islink(full):
                found[rel] = ("link", os.readlink(full))
            else:
                found[rel] = ("file", os.lstat(full).st_mode & 0o111 != 0, Path(full).read_bytes())
    return found


def stats(root: Path) -> dict[str, tuple[int, int]]:
    """(mtime_ns, inode) of every file: a rewrite changes one or the other."""
    found = {}
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in files:
            st = os.lstat(os.path.join(dirpath, name))
            rel = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
            found[rel] = (st.st_mtime_ns, st.st_ino)
    return found


def listing(root: Path) -> dict[str, tuple[int, int]]:
    """Every entry under ``root`` with (size, mtime_ns): to prove nothing was written there."""
    found = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            found[os.path.relpath(full, root)] = (st.st_size, st.st_mtime_ns)
    return found


def tree_entries(engine: Engine, tree: str) -> dict[str, tuple[int, bytes]]:
    """Every blob of ``tree`` by path, with its mode and content (walks the objects)."""
    repo = engine.store.objects.repo
    found: dict[str, tuple[int, bytes]] = {}
    stack: list[tuple[str, pygit2.Oid]] = [("", pygit2.Oid(hex=tree))]
    while stack:
        prefix, oid = stack.pop()
        obj = repo[oid]
        assert isinstance(obj, pygit2.Tree)
        for entry in obj:
            rel = f"{prefix}{entry.name}"
            if entry.filemode == pygit2.enums.FileMode.TREE:
                stack.append((rel + "/", entry.id))
            else:
                blob = repo[entry.id]
                assert isinstance(blob, pygit2.Blob)
                found[rel] = (int(entry.filemode), blob.data)
    return found


def temp_leftovers(*dirs: Path) -> list[str]:
    found = []
    for base in dirs:
        for dirpath, _dirs, files in os.walk(base):
            found += [
                os.path.join(dirpath, n)
                for n in files
                if n.startswith(fileio.TEMP_PREFIX) or n == "index.lock" or n.startswith("tmp_")
            ]
    return found


@functools.cache
def unprivileged_prefix() -> tuple[str, ...] | None:
    """A command prefix under which file permissions really apply, or None.

    Not root: nothing needed. Root: a user namespace that maps us to uid 1000
    (our files then belong to that uid, and it has no capabilities), if the
    kernel allows it. ``SNAPSHOTTER_TEST_NO_UNSHARE=1`` forces the fallback.
    """
    if os.geteuid() != 0:
        return ()
    if os.environ.get("SNAPSHOTTER_TEST_NO_UNSHARE") or not shutil.which("unshare"):
        return None
    prefix = ("unshare", "--user", "--map-user=1000")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe"
        probe.write_text("secret")
        probe.chmod(0)
        try:
            done = subprocess.run(
                [*prefix, "cat", str(probe)], capture_output=True, check=False, timeout=30
            )
        except (OSError, subprocess.SubprocessError):
            return None
        probe.chmod(0o600)
    return prefix if done.returncode != 0 and b"ermission" in done.stderr else None


def figure(text: str) -> None:
    """Figures the issue's closing note reports (shown with ``pytest -s``)."""
    print(f"\n[reliability] {text}")


# -- 1 ---------------------------------------------------------------------------------------

LOCK_HOLDER = """
import os, sys, time
from pathlib import Path
from snapshotter.engine import Engine
from snapshotter.fileio import TEMP_PREFIX
engine = Engine.open(sys.argv[1], data_dir_path=sys.argv[2])
engine.store.locked().acquire()                       # our lock, never released
root = engine.store.root
(root / "index.lock").write_text("a shadow index write cut short")
(root / (TEMP_PREFIX + "state")).write_text('{"version": 1, "checkpo')
Path(sys.argv[1], ".git", "index.lock").write_text("a `git add` killed mid-way")
print(root, flush=True)
time.sleep(600)
"""


def test_01_stale_lock_recovered_within_a_second(repo: Path, data_dir: Path) -> None:
    """A SIGKILLed lock holder (our flock, the shadow's index.lock, the source repo's
    index.lock) never blocks the next hook: it records within a generous timeout."""
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCK_HOLDER, str(repo), str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None
        line = holder.stdout.readline().decode().strip()
        assert line, f"the lock holder did not start: {holder.communicate()[1]!r}"
        root = Path(line)
        holder.send_signal(signal.SIGKILL)  # no cleanup, no unlock, no atexit
        holder.wait(timeout=60)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    stale = sorted(
        p.name
        for p in root.iterdir()
        if p.name in ("lock", "index.lock") or p.name.startswith(fileio.TEMP_PREFIX)
    )
    assert len(stale) == 3, f"the killed holder should have left its debris: {stale}"
    source_lock = repo / ".git" / "index.lock"

    # The next events, each a fresh process like an agent's, with a timeout
    # far below any lock-wait a naive O_EXCL lock file would need (forever).
    recovered = 0
    for name in ("turn_start", "turn_end"):
        if name == "turn_end":
            write(repo, "src/app.py", "print('after the kill')\n")
        started = time.monotonic()
        try:
            proc = hook_proc(
                data_dir, event(name, repo, SESSION, reason="normal"), timeout=HOOK_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"{name} still blocked by the dead holder's locks after {HOOK_TIMEOUT_S}s")
        elapsed = time.monotonic() - started
        assert proc.returncode == 0 and proc.stderr == b"", (
            f"{name} after a killed lock holder: exit {proc.returncode}, {proc.stderr!r}"
        )
        recovered += 1
        figure(
            f"#1 {name} after a SIGKILLed lock holder finished in {elapsed:.2f}s "
            f"(process start included; timeout {HOOK_TIMEOUT_S:.0f}s)"
        )
    cps = checkpoints(data_dir)
    assert [files_of(cp) for cp in cps] == [{"src/app.py": "modified"}], (
        f"the turn after the kill must be recorded normally: {cps}"
    )
    leftovers = sorted(
        p.name
        for p in root.iterdir()
        if p.name == "index.lock" or p.name.startswith(fileio.TEMP_PREFIX)
    )
    assert leftovers == [], f"the dead holder's index.lock and temp file are cleared: {leftovers}"
    assert source_lock.read_text() == "a `git add` killed mid-way", (
        "the source repository's index.lock belongs to the user's git: it must neither "
        "block a capture nor be deleted"
    )
    figure(
        f"#1 3 stale items recovered (our flock, the shadow index.lock, a temp state "
        f"file); {recovered} events went through; the source index.lock did not block "
        "and was left alone"
    )


# -- 2 ---------------------------------------------------------------------------------------


def test_02_failed_capture_records_nothing_and_says_why(
    repo: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A capture that fails half-way (one blob cannot be written) yields no tree:
    no checkpoint, no stale stat cache, a reason in stderr and hook.log; a later
    undo therefore never writes stale content over newer work."""
    turn(data_dir, repo, {"README.md": "# turn 1\n"})
    assert hook(data_dir, repo, "turn_start") == ""
    store = store_root(data_dir)
    state_before = (store / "state.json").read_bytes()
    manifest_before = (store / "manifest").read_bytes()

    # The agent's work: a.py is hashed fine, then new.txt fails (I/O error).
    write(repo, "src/app.py", "print('newer work')\n")
    write(repo, "src/new.txt", "brand new\n")
    real = loose.write  # the store reads the bytes and writes the loose objects

    def failing(objects: str, oid: bytes, kind: int, data: bytes) -> bool:
        if data == b"brand new\n":
            raise OSError(errno.EIO, "Input/output error")
        return real(objects, oid, kind, data)

    monkeypatch.setattr(loose, "write", failing)
    err = hook(data_dir, repo, "turn_end", reason="normal")
    assert "capture failed" in err and "Input/output error" in err, (
        f"the hook must say why nothing was recorded: {err!r}"
    )
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "Input/output error" in log_path(data_dir).read_text(), "and log it"
    assert (store / "state.json").read_bytes() == state_before, (
        "a failed capture must record nothing (no checkpoint, pending turn kept as it was)"
    )
    assert (store / "manifest").read_bytes() == manifest_before, (
        "a failed capture must not leave a half-updated stat cache"
    )
    run = cli(data_dir, "capture", "-C", repo)
    assert run.code == 1 and run.out == "", f"capture must fail without a tree id: {run}"
    assert "capture failed" in run.err and len(run.err.strip().splitlines()) == 1, run.err

    # Only turn 1 exists, and it does not touch the new work: undoing it must
    # never put stale content over src/app.py or drop src/new.txt.
    monkeypatch.setattr(loose, "write", real)
    assert [files_of(cp) for cp in checkpoints(data_dir)] == [{"README.md": "modified"}]

    # The fault gone, the same pending turn records everything, with today's content.
    assert hook(data_dir, repo, "turn_end", reason="normal") == ""
    cps = checkpoints(data_dir)
    assert files_of(cps[-1]) == {"src/app.py": "modified", "src/new.txt": "added"}, cps[-1]
    engine = open_engine(repo, data_dir)
    after = tree_entries(engine, cps[-1]["after"])
    assert after["src/app.py"][1] == b"print('newer work')\n"
    assert after["src/new.txt"][1] == b"brand new\n"
    assert cli(data_dir, "undo", "-C", repo).code == 0
    assert (repo / "src/app.py").read_text() == "print('hi')\n"
    assert not (repo / "src/new.txt").exists()
    assert (repo / "README.md").read_text() == "# turn 1\n", "turn 1 is not undone with it"


# -- 3 ---------------------------------------------------------------------------------------

OLD_NS = 1_000_000_000_000_000_000  # 2001: any rewrite shows


def test_03_restore_touches_only_differing_files_of_this_session(
    tmp_path: Path, data_dir: Path
) -> None:
    """Undo/redo/reset rewrite only the session's checkpoint files whose content
    differs: 300 other files keep mtime and inode; another session's edit,
    untracked and ignored files survive (no whole-tree checkout, no git clean)."""
    files = {f"pkg{i % 10}/mod{i}.py": f"VALUE = {i}\n" for i in range(300)}
    files[".gitignore"] = "build/\n*.log\n"
    root = make_repo(tmp_path / "big", files)
    write(root, "build/out.bin", b"\x00ignored build output")
    write(root, "debug.log", "ignored log\n")
    write(root, "notes.txt", "untracked user notes\n")
    for dirpath, _dirs, names in os.walk(root):
        if ".git" not in Path(dirpath).parts:
            for name in names:
                os.utime(os.path.join(dirpath, name), ns=(OLD_NS, OLD_NS))

    a, b = "sess-A", "sess-B"
    turn(
        data_dir,
        root,
        {"pkg1/mod1.py": "VALUE = 'A1'\n", "pkg2/mod2.py": None, "pkg3/new.py": "NEW = 1\n"},
        session=a,
    )
    # Turn 2 edits mod4 and then puts mod5 back exactly: after reset, mod5
    # already matches, so it must not be rewritten.
    turn(
        data_dir,
        root,
        {"pkg4/mod4.py": "VALUE = 'A2'\n", "pkg5/mod5.py": "VALUE = 'tmp'\n"},
        session=a,
    )
    turn(data_dir, root, {"pkg5/mod5.py": "VALUE = 5\n"}, session=a)
    turn(data_dir, root, {"pkg6/mod6.py": "VALUE = 'B'\n"}, session=b)
    write(root, "scratch.txt", "user file made after the agent's turns\n")
    write(root, "build/later.bin", b"more ignored output")
    os.utime(root / "pkg5/mod5.py", ns=(OLD_NS, OLD_NS))

    mine = {"pkg1/mod1.py", "pkg2/mod2.py", "pkg3/new.py", "pkg4/mod4.py"}
    before = stats(root)
    content = disk(root)
    run = cli(data_dir, "reset", "--original", "-C", root, "--session", a, "--json")
    assert run.code == 0, run.err
    report = json.loads(run.out)
    assert set(report["restored"]) | set(report["removed"]) == mine, (
        f"only the files that differ are written (mod5 already matches): {report}"
    )
    after = stats(root)
    touched = {rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel)}
    assert touched == mine, f"files outside the session's changes were rewritten: {touched - mine}"
    now = disk(root)
    assert now["pkg6/mod6.py"] == content["pkg6/mod6.py"], "session B's edit survives A's reset"
    for rel in ("scratch.txt", "notes.txt", "build/out.bin", "build/later.bin", "debug.log"):
        assert now[rel] == content[rel], f"{rel} (untracked or ignored) must survive"
    assert now["pkg2/mod2.py"][2] == b"VALUE = 2\n" and "pkg3/new.py" not in now

    before = stats(root)
    assert cli(data_dir, "redo", "-C", root, "--session", a).code == 0
    after = stats(root)
    touched = {rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel)}
    assert touched == mine, f"redo rewrote more than the reset reverted: {touched ^ mine}"
    assert disk(root) == content, "redo puts back exactly the state before the reset"


# -- 4 ---------------------------------------------------------------------------------------


def test_04_undo_refuses_users_later_edits_exit_4_and_redo_recovers(
    repo: Path, data_dir: Path
) -> None:
    """The user's edits after the agent's turn are never reverted silently: exit
    4 naming them (nothing at all changed); --force goes ahead; redo brings the
    user's bytes back. A file the store could not capture (a new 3 MiB file
    where the agent deleted one) is refused too: redo could never restore it."""
    git(repo, "rm", "-q", "--cached", "src/util.py")  # untracked: big new files are skipped
    turn(
        data_dir,
        repo,
        {
            "src/app.py": "print('agent')\n",
            "README.md": "# agent\n",
            "src/util.py": None,
            "agent-new.txt": "by the agent\n",
        },
    )
    write(repo, "src/app.py", "print('agent')\nprint('user edit after the turn')\n")
    write(repo, "agent-new.txt", "by the agent, then edited by the user\n")
    content = disk(repo)

    run = cli(data_dir, "undo", "-C", repo)
    assert run.code == 4, f"undo over later user edits must refuse with exit 4: {run}"
    assert "src/app.py" in run.err and "agent-new.txt" in run.err, run.err
    assert "README.md" not in run.err, "only the files that changed since are named"
    assert disk(repo) == content, "a refused undo changes nothing, not even the unchanged files"
    assert not checkpoints(data_dir)[0]["undone"]

    run = cli(data_dir, "undo", "-C", repo, "--force")
    assert run.code == 0, run.err
    assert (repo / "src/app.py").read_text() == "print('hi')\n"
    assert (repo / "README.md").read_text() == "# demo\n"
    assert (repo / "src/util.py").read_text() == "X = 1\n" and not (repo / "agent-new.txt").exists()
    assert cli(data_dir, "redo", "-C", repo).code == 0
    assert disk(repo) == content, "redo after a forced undo restores the user's edits exactly"

    # A file the store never captured, at a path the undo would write.
    turn(data_dir, repo, {"src/util.py": "X = 2\n"})
    turn(data_dir, repo, {"src/util.py": None})
    big = os.urandom(3 * 1024 * 1024)
    write(repo, "src/util.py", big)  # the user's new 3 MiB file: over the new-file limit
    run = cli(data_dir, "undo", "-C", repo)
    assert (repo / "src/util.py").read_bytes() == big, (
        "undo overwrote a file it never captured (redo could not bring it back)"
    )
    assert run.code == 4 and "src/util.py" in run.err, f"it must refuse and say why: {run}"


# -- 5 ---------------------------------------------------------------------------------------


def test_05_undo_in_one_session_never_reverts_another_sessions_files(
    repo: Path, data_dir: Path
) -> None:
    """Two agents on one worktree: each undo/reset reverts only its own session's
    files; a file both edited in turn is never reverted over the other's edit."""
    a, b = "agent-A", "agent-B"
    write(repo, "shared.txt", "base\n")
    hook(data_dir, repo, "session_start", a)
    hook(data_dir, repo, "session_start", b)
    # A's long turn; B's whole turn happens inside it, with tool calls on both sides.
    assert hook(data_dir, repo, "turn_start", a) == ""
    hook(data_dir, repo, "pre_tool_use", a, tool_name="write", tool_use_id="a1")
    write(repo, "a1.txt", "A's first file\n")
    hook(data_dir, repo, "post_tool_use", a, tool_name="write", tool_use_id="a1")
    turn(data_dir, repo, {"b.txt": "B's file\n", "src/util.py": "X = 'B'\n"}, session=b)
    hook(data_dir, repo, "pre_tool_use", a, tool_name="write", tool_use_id="a2")
    write(repo, "a2.txt", "A's second file\n")
    write(repo, "shared.txt", "edited by A\n")
    hook(data_dir, repo, "post_tool_use", a, tool_name="write", tool_use_id="a2")
    assert hook(data_dir, repo, "turn_end", a, reason="normal") == ""
    # Then B edits the file A edited.
    turn(data_dir, repo, {"shared.txt": "edited by A, then by B\n"}, session=b)

    mine = {s: {p for cp in checkpoints(data_dir, s) for p in files_of(cp)} for s in (a, b)}
    assert mine[a] == {"a1.txt", "a2.txt", "shared.txt"}, mine
    assert mine[b] == {"b.txt", "src/util.py", "shared.txt"}, mine

    # A's undo would revert shared.txt, which B changed since: refused, B's work kept.
    run = cli(data_dir, "undo", "-C", repo, "--session", a)
    assert run.code == 4 and "shared.txt" in run.err, run
    assert (repo / "shared.txt").read_text() == "edited by A, then by B\n"

    # B resets everything it did; A's files are untouched.
    b_before = disk(repo)
    assert cli(data_dir, "reset", "--original", "-C", repo, "--session", b).code == 0
    now = disk(repo)
    assert not (repo / "b.txt").exists() and (repo / "src/util.py").read_text() == "X = 1\n"
    assert (repo / "shared.txt").read_text() == "edited by A\n", "B's reset reverts B's edit only"
    for rel in ("a1.txt", "a2.txt"):
        assert now[rel] == b_before[rel], f"B's reset touched A's {rel}"

    # Now A's undo is possible and reverts A's files only.
    assert cli(data_dir, "undo", "-C", repo, "--session", a).code == 0
    assert not (repo / "a1.txt").exists() and not (repo / "a2.txt").exists()
    assert (repo / "shared.txt").read_text() == "base\n"
    assert not (repo / "b.txt").exists(), "A's undo must not bring back what B reset"
    # B's redo would put its shared.txt back over A's undo: refused too.
    run = cli(data_dir, "redo", "-C", repo, "--session", b)
    assert run.code == 4 and "shared.txt" in run.err, run
    assert cli(data_dir, "redo", "-C", repo, "--session", b, "--force").code == 0
    assert (repo / "b.txt").read_text() == "B's file\n"
    assert not (repo / "a1.txt").exists(), "B's redo must not redo A's files"


# -- 6 ---------------------------------------------------------------------------------------


def test_06_directory_replaced_by_symlink_keeps_capturing(tmp_path: Path, data_dir: Path) -> None:
    """A tracked directory replaced by a symlink (inside or outside the worktree):
    every later capture still works, the link is stored as a link (never
    followed), and undo brings the directory back without touching the target."""
    root = make_repo(
        tmp_path / "repo",
        {
            "lib/a.py": "A = 1\n",
            "lib/sub/b.py": "B = 1\n",
            "docs/index.md": "# docs\n",
            "main.py": "main\n",
        },
    )
    outside = tmp_path / "outside"
    for i in range(50):
        write(outside, f"f{i}.txt", f"outside {i}\n")
    outside_before = snapshot_dir_bytes(outside)

    def lib_to_outside() -> None:
        shutil.rmtree(root / "lib")
        os.symlink(outside, root / "lib")

    def docs_to_lib() -> None:
        shutil.rmtree(root / "docs")
        os.symlink("lib", root / "docs")

    turn(data_dir, root, lib_to_outside)
    turn(data_dir, root, docs_to_lib)
    for i in range(3):  # every later capture keeps working
        turn(data_dir, root, {"main.py": f"main {i}\n"})
    run = cli(data_dir, "capture", "-C", root)
    assert run.code == 0 and len(run.out.strip()) == 40, run

    cps = checkpoints(data_dir)
    assert len(cps) == 5, f"each turn recorded: {[files_of(cp) for cp in cps]}"
    assert files_of(cps[0]) == {"lib": "added", "lib/a.py": "deleted", "lib/sub/b.py": "deleted"}
    engine = open_engine(root, data_dir)
    tree = tree_entries(engine, cps[-1]["after"])
    assert tree["lib"] == (0o120000, os.fsencode(str(outside))), "stored as a link"
    assert tree["docs"] == (0o120000, b"lib")
    assert not any(p.startswith(("lib/", "docs/")) for p in tree), "links are never followed"

    assert cli(data_dir, "reset", "--original", "-C", root).code == 0
    assert (root / "lib").is_dir() and not (root / "lib").is_symlink()
    assert (root / "docs").is_dir() and not (root / "docs").is_symlink()
    assert (root / "lib/sub/b.py").read_text() == "B = 1\n"
    assert (root / "docs/index.md").read_text() == "# docs\n"
    assert snapshot_dir_bytes(outside) == outside_before, "the link's target was written through"
    assert sorted(os.listdir(outside)) == sorted(f"f{i}.txt" for i in range(50))
    turn(data_dir, root, {"lib/c.py": "C = 1\n"})  # and capturing goes on after the undo
    assert files_of(checkpoints(data_dir)[-1]) == {"lib/c.py": "added"}


# -- 7 ---------------------------------------------------------------------------------------


def test_07_nested_repository_without_commit_is_captured(tmp_path: Path, data_dir: Path) -> None:
    """Nested repositories with no commit (empty, staged-only), a broken ``.git``
    file and an empty ``.git`` dir never make capture fail; their files are
    captured and undone like any others; their ``.git`` is never touched."""
    root = make_repo(tmp_path / "repo", {"top.txt": "top\n"})
    fresh = make_repo(root / "vendor/fresh", commit=False)
    write(fresh, "main.py", "fresh\n")
    staged = make_repo(root / "vendor/staged", commit=False)
    write(staged, "lib.py", "staged\n")
    git(staged, "add", "lib.py")
    write(root, "vendor/broken/.git", "gitdir: /nonexistent/path/to/git\n")
    write(root, "vendor/broken/code.py", "broken\n")
    write(root, "vendor/garbage/.git", b"\x00\xffnot a gitdir file")
    write(root, "vendor/garbage/code.py", "garbage\n")
    (root / "vendor/emptygit/.git").mkdir(parents=True)
    write(root, "vendor/emptygit/code.py", "emptygit\n")
    nested_gits = {
        p: snapshot_dir_bytes(root / p / ".git")
        for p in ("vendor/fresh", "vendor/staged", "vendor/emptygit")
    }
    # The top-level worktree has no commit either.
    bare_root = make_repo(tmp_path / "uncommitted", commit=False)
    write(bare_root, "draft.md", "draft\n")

    edits: Edits = {
        f"vendor/{d}/{f}": f"edited {d}\n"
        for d, f in (
            ("fresh", "main.py"),
            ("staged", "lib.py"),
            ("broken", "code.py"),
            ("garbage", "code.py"),
            ("emptygit", "code.py"),
        )
    }
    edits["vendor/fresh/added.py"] = "added inside a repo with no commit\n"
    original = disk(root)
    turn(data_dir, root, edits)
    cps = checkpoints(data_dir)
    assert len(cps) == 1 and set(files_of(cps[0])) == set(edits), cps
    engine = open_engine(root, data_dir)
    tree = tree_entries(engine, cps[0]["after"])
    assert not [p for p in tree if ".git/" in p or p.endswith("/.git")], sorted(tree)
    assert cli(data_dir, "undo", "-C", root).code == 0
    assert disk(root) == original, "undo restores the nested repositories' files exactly"
    for rel, before in nested_gits.items():
        assert snapshot_dir_bytes(root / rel / ".git") == before, f"{rel}/.git was touched"
    assert (root / "vendor/broken/.git").read_text() == "gitdir: /nonexistent/path/to/git\n"

    other = data_dir.parent / "data-uncommitted"
    turn(other, bare_root, {"draft.md": "draft 2\n", "more.md": "more\n"})
    assert [files_of(cp) for cp in checkpoints(other)] == [
        {"draft.md": "modified", "more.md": "added"}
    ], "a worktree with no commit at all records (nothing is tracked yet)"


# -- 8 ---------------------------------------------------------------------------------------

NFC = unicodedata.normalize("NFC", "caf\u00e9.txt")
NFD = unicodedata.normalize("NFD", "caf\u00e9.txt")
ODD_NAMES = [
    "-rf",
    "--force",
    "-",
    "a b c.txt",
    "tab\tname",
    "new\nline",
    "carriage\rreturn",
    "ünïcödé.txt",
    "日本語/ファイル.txt",
    "emoji 🎉.md",
    "quote\"s 'and' `ticks`",
    "back\\slash",
    "*?[glob].txt",
    "#hash",
    "!bang",
    "trailing space ",
    " leading space",
    "semi;colon&amp|pipe$(x)",
    "%20percent",
    "dir with space/-nested/-file",
    "~tilde",
    "colon:name",
    "\u202eright-to-left.txt",
    "zero\u200bwidth",
    "x" * 200,
    NFC,
    NFD,
]


def test_08_odd_file_names_survive_capture_undo_redo(tmp_path: Path, data_dir: Path) -> None:
    """Unicode (NFC and NFD side by side), spaces, leading dashes, tabs, newlines:
    captured, listed, undone and redone byte for byte."""
    half = len(ODD_NAMES) // 2
    root = make_repo(
        tmp_path / "repo", {name: f"original {i}\n" for i, name in enumerate(ODD_NAMES[:half])}
    )
    for i, name in enumerate(ODD_NAMES[half:]):
        write(root, name, f"untracked original {i}\n")
    original = disk(root)
    assert NFC in original and NFD in original, "the file system keeps both normal forms"

    edits: Edits = {}
    for i, name in enumerate(ODD_NAMES):
        edits[name] = None if i % 5 == 0 else f"edited {i}\n".encode()
    edits.update({f"new-{i} {name}": f"new {i}\n" for i, name in enumerate(ODD_NAMES[:6])})
    edits["-new dir/\t-x"] = "new in a dashed dir\n"
    turn(data_dir, root, edits)
    edited = disk(root)
    cps = checkpoints(data_dir)
    recorded = set(files_of(cps[0]))
    assert recorded == set(edits), (
        f"missing: {set(edits) - recorded}, extra: {recorded - set(edits)}"
    )
    for args in (("show", "1", "--json"), ("diff", "1"), ("diff", "1", "--stat"), ("list",)):
        run = cli(data_dir, *args, "-C", str(root))
        assert run.code == 0 and "Traceback" not in run.err, (args, run)

    run = cli(data_dir, "undo", "-C", root / "dir with space", "--json")
    assert run.code == 0, run.err
    assert disk(root) == original, "undo restores every odd name exactly"
    assert cli(data_dir, "redo", "-C", root).code == 0
    assert disk(root) == edited, "redo re-applies every odd name exactly"
    assert cli(data_dir, "reset", "--original", "-C", root).code == 0
    assert disk(root) == original


# -- 9 ---------------------------------------------------------------------------------------


def test_09_data_dir_inside_worktree_is_never_snapshotted(tmp_path: Path, repo: Path) -> None:
    """The store inside the worktree (not ignored, reached directly or through a
    symlink): never captured, never in a checkpoint, never removed by undo."""
    inside = repo / "agent-data"
    for i in range(3):
        turn(inside, repo, {"src/app.py": f"print({i})\n", f"work/{i}.txt": f"{i}\n"})
    proc = hook_proc(inside, event("turn_start", repo, SESSION))
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    write(repo, "src/util.py", "X = 'via a subprocess, from src/'\n")
    proc = hook_proc(inside, event("turn_end", repo / "src", SESSION, reason="normal"))
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr

    engine = open_engine(repo, inside)
    cps = checkpoints(inside)
    assert len(cps) == 4, [files_of(cp) for cp in cps]
    for cp in cps:
        for tree in (cp["before"], cp["after"]):
            leaked = [p for p in tree_entries(engine, tree) if p.startswith("agent-data")]
            assert not leaked, f"the store captured itself: {leaked[:5]}"
        assert not [p for p in files_of(cp) if p.startswith("agent-data")]
    sizes = [len(tree_entries(engine, cp["after"])) for cp in cps]
    assert max(sizes) - min(sizes) <= 4, f"trees grow with the store: {sizes}"

    assert cli(inside, "reset", "--original", "-C", repo).code == 0
    assert (store_root(inside) / "state.json").is_file(), "undo must not delete the store"
    assert len(checkpoints(inside)) == 4 and cli(inside, "redo", "-C", repo).code == 0

    # Through a symlink outside the worktree pointing at a data dir inside it.
    link = tmp_path / "data-link"
    os.symlink(repo / "linked-data", link)
    turn(link, repo, {"src/util.py": "X = 'linked'\n"}, session="s-link")
    linked = open_engine(repo, link)
    (cp,) = checkpoints(link)
    assert not [p for p in tree_entries(linked, cp["after"]) if p.startswith("linked-data")], (
        "a data dir reached through a symlink is still recognised as inside"
    )


# -- 12 --------------------------------------------------------------------------------------


def _limit_file_size(limit: int) -> Callable[[], None]:
    def preexec() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of death
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return preexec


def _store_files(store: Path) -> dict[str, bytes]:
    return {
        name: (store / name).read_bytes()
        for name in ("state.json", "manifest", "index")
        if (store / name).exists()
    }


def test_12_disk_full_or_read_only_data_dir_never_fails_the_hook(
    tmp_path: Path, repo: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No space (a real kernel limit on file size, then ENOSPC on the state's
    rename) or a read-only data dir: the hook exits 0 with one line on stderr,
    nothing is half-written, and once space is back the pending turn records."""
    turn(data_dir, repo, {"README.md": "# first\n"})
    assert hook(data_dir, repo, "turn_start") == ""
    store = store_root(data_dir)
    write(repo, "data.bin", os.urandom(512 * 1024))
    write(repo, "src/app.py", "print('work during a full disk')\n")
    saved = _store_files(store)
    cases = 0

    # (a) The disk fills up: no file may grow past 16 KiB (blobs, index, state).
    proc = hook_proc(
        data_dir,
        event("turn_end", repo, SESSION, reason="normal"),
        preexec=_limit_file_size(16 * 1024),
    )
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0 and "Traceback" not in err, f"exit {proc.returncode}: {err}"
    assert err.strip() and len(err.strip().splitlines()) == 1, f"one line on stderr: {err!r}"
    assert _store_files(store) == saved, f"state, stat cache and index were changed: {err}"
    assert temp_leftovers(store) == [], temp_leftovers(store)
    cases += 1

    # (b) ENOSPC at the very end: the state's rename fails.
    real_replace = os.replace

    def no_space(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if str(dst).startswith(str(data_dir)) and str(dst).endswith("state.json"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))
        real_replace(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", no_space)
    err = hook(data_dir, repo, "turn_end", reason="normal")
    monkeypatch.setattr(os, "replace", real_replace)
    assert "No space left on device" in err and "Traceback" not in err, err
    assert (store / "state.json").read_bytes() == saved["state.json"]
    assert temp_leftovers(store) == [], f"the state's temp file is removed: {temp_leftovers(store)}"
    cases += 1

    # (c) A read-only data dir, for real where the kernel lets us drop privileges.
    prefix = unprivileged_prefix()
    saved = _store_files(store)  # (b) updated the stat cache: a whole, valid one
    if prefix is not None:
        for path in [store, *store.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
        try:
            proc = hook_proc(
                data_dir, event("turn_end", repo, SESSION, reason="normal"), prefix=prefix
            )
        finally:
            for path in [store, *store.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)
        err = proc.stderr.decode(errors="replace")
        assert proc.returncode == 0 and "Traceback" not in err, f"exit {proc.returncode}: {err}"
        assert err.strip(), "a read-only data dir is reported"
        assert _store_files(store) == saved
        cases += 1
    # (d) A data dir that cannot exist: its parent is a regular file.
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    proc = hook_proc(blocker / "data", event("turn_start", repo, SESSION))
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 0 and "Traceback" not in err and err.strip(), err
    assert blocker.read_text() == "not a directory\n"
    cases += 1

    # The agent goes on: with space back, the same pending turn records it all.
    assert hook(data_dir, repo, "turn_end", reason="normal") == ""
    assert files_of(checkpoints(data_dir)[-1]) == {"data.bin": "added", "src/app.py": "modified"}
    assert cli(data_dir, "undo", "-C", repo).code == 0
    assert not (repo / "data.bin").exists() and (repo / "src/app.py").read_text() == "print('hi')\n"
    figure(
        f"#12 {cases} no-space/read-only cases, hook exit 0 in each "
        f"(read-only {'real, via ' + ' '.join(prefix) if prefix is not None else 'skipped'})"
    )


# -- 13 --------------------------------------------------------------------------------------


@contextlib.contextmanager
def denied(paths: set[str], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """In-process stand-in for chmod 000 when running as root without namespaces."""
    real_open, real_scandir = builtins.open, os.scandir
    real_blob = pygit2.Repository.create_blob_fromdisk

    def deny(path: Any) -> None:
        if os.fspath(path) in paths:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))

    def fake_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(path, int):
            deny(path)
        return real_open(path, *args, **kwargs)

    def fake_scandir(path: Any = ".") -> Any:
        deny(path)
        return real_scandir(path)

    def fake_blob(self: pygit2.Repository, path: str) -> pygit2.Oid:
        if path in paths:
            raise pygit2.GitError(f"could not open '{path}' for reading: Permission denied")
        return real_blob(self, path)

    with monkeypatch.context() as m:
        m.setattr(builtins, "open", fake_open)
        m.setattr(os, "scandir", fake_scandir)
        m.setattr(pygit2.Repository, "create_blob_fromdisk", fake_blob)
        yield


def test_13_unreadable_files_are_skipped_and_reported_never_a_crash(
    tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files and a directory the hook cannot read, and a FIFO: the capture goes on,
    each is named in the checkpoint's skips, the rest is recorded, and undo
    refuses to overwrite what it never captured."""
    root = make_repo(tmp_path / "repo", {"secret.txt": "v1\n", "ok.txt": "ok\n"})
    hook(data_dir, root, "session_start")
    assert hook(data_dir, root, "turn_start") == ""
    write(root, "secret.txt", "v2: the user's only copy\n")
    write(root, "locked-new.txt", "new and unreadable\n")
    write(root, "private/inner.txt", "inside an unreadable directory\n")
    write(root, "ok.txt", "ok, edited\n")
    os.mkfifo(root / "pipe")  # reading it would block forever
    unreadable = {"secret.txt", "locked-new.txt", "private"}
    prefix = unprivileged_prefix()

    if prefix is not None:
        for rel in unreadable:
            (root / rel).chmod(0)
        try:
            proc = hook_proc(
                data_dir,
                event("turn_end", root, SESSION, reason="normal"),
                prefix=prefix,
                timeout=60,
            )
            undo = cli_proc(data_dir, "undo", "-C", str(root), prefix=prefix)
        finally:
            for rel in unreadable:
                (root / rel).chmod(0o755 if (root / rel).is_dir() else 0o644)
        err = proc.stderr.decode(errors="replace")
        assert proc.returncode == 0 and err == "", f"exit {proc.returncode}: {err}"
        undo_code, undo_err = undo.returncode, undo.stderr + undo.stdout
    else:
        with denied({str(root / rel) for rel in unreadable}, monkeypatch):
            assert hook(data_dir, root, "turn_end", reason="normal") == ""
            run = cli(data_dir, "undo", "-C", root)
        undo_code, undo_err = run.code, run.err + run.out

    (cp,) = checkpoints(data_dir)
    skipped = {s["path"]: s["reason"] for s in cp["skipped"]}
    for rel in [*unreadable, "pipe"]:
        assert rel in skipped, f"{rel} must be reported as skipped: {cp['skipped']}"
    assert all("unreadable" in skipped[rel] for rel in unreadable), skipped
    assert files_of(cp).get("ok.txt") == "modified", "the readable change is still recorded"
    assert "locked-new.txt" not in files_of(cp) and "private/inner.txt" not in files_of(cp)
    assert (root / "secret.txt").read_text() == "v2: the user's only copy\n", (
        "undo overwrote a file it could not read (redo could never bring it back)"
    )
    # Left alone and named: refused (exit 4), or (since #12.1) skipped, as SPEC §5 says.
    assert undo_code in (0, 4) and "secret.txt" in undo_err, (undo_code, undo_err)
    figure(
        f"#13 unreadable files via {'real permissions' if prefix is not None else 'simulation'}"
        f" ({' '.join(prefix) if prefix else 'in-process'}); skipped: {sorted(skipped)}"
    )


VANISHING = """
import json, os, shutil, sys
from pathlib import Path
import snapshotter.store.capture as store_mod
from snapshotter.engine import Engine

root, data = Path(sys.argv[1]), sys.argv[2]
engine = Engine.open(root, data_dir_path=data)
real = store_mod.scan

def entries(tree):
    out, stack = {}, [("", engine.store.objects.repo[tree])]
    while stack:
        prefix, obj = stack.pop()
        for e in obj:
            if e.type_str == "tree":
                stack.append((prefix + e.name + "/", engine.store.objects.repo[e.id]))
            else:
                out[prefix + e.name] = [e.filemode, engine.store.objects.repo[e.id].data.decode()]
    return out

def racing_scan(*args, **kwargs):
    result = real(*args, **kwargs)  # between the walk and the hashing:
    os.unlink(root / "gone.txt")
    os.unlink(root / "swap.txt"); os.mkdir(root / "swap.txt")
    os.unlink(root / "fifo.txt"); os.mkfifo(root / "fifo.txt")
    os.unlink(root / "ln"); (root / "ln").write_text("now a file\\n")
    shutil.rmtree(root / "dir")
    return result

report = {}
for bulk in (0, 80):  # one by one, then enough files for the bulk pack path
    for rel in ("swap.txt", "fifo.txt", "ln", "dir"):
        p = root / rel
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif os.path.lexists(p):
            os.unlink(p)
    for rel in ("gone.txt", "swap.txt", "fifo.txt", "kept.txt", "dir/a.txt"):
        (root / rel).parent.mkdir(exist_ok=True)
        (root / rel).write_text(f"{rel} {bulk}\\n")
    os.symlink("kept.txt", root / "ln")
    engine.capture()
    for rel in ("gone.txt", "swap.txt", "fifo.txt", "kept.txt"):
        (root / rel).write_text(f"changed {rel}\\n")
    os.unlink(root / "ln"); os.symlink("elsewhere", root / "ln")
    for i in range(bulk):
        (root / f"bulk-{i}.txt").write_text(f"bulk {i}\\n")
    store_mod.scan = racing_scan
    capture = engine.capture()
    store_mod.scan = real
    again = engine.capture()
    report[str(bulk)] = {"racy": entries(capture.tree), "skipped": sorted(capture.skipped),
                         "again": entries(again.tree)}
print(json.dumps(report))
"""


def test_13_files_vanishing_mid_capture_are_skipped_never_a_hang(
    tmp_path: Path, data_dir: Path
) -> None:
    """Files deleted, or replaced by a directory, a FIFO or a link type change,
    between the walk and the hashing (one by one and in the bulk path): the
    capture completes (a FIFO must never be opened: that blocks forever),
    records no stale content, reports what changed under it, and the next
    capture sees the new state."""
    root = make_repo(tmp_path / "repo", {"kept.txt": "k\n"})
    try:
        proc = subprocess.run(
            [sys.executable, "-c", VANISHING, str(root), str(data_dir)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("capture hung on a file replaced by a FIFO mid-capture")
    assert proc.returncode == 0, proc.stderr
    for bulk, result in json.loads(proc.stdout).items():
        racy, again = result["racy"], result["again"]
        where = f"({bulk} other new files)"
        assert racy["kept.txt"] == [0o100644, "changed kept.txt\n"], f"{where} {racy}"
        assert "gone.txt" not in racy, f"{where} a vanished file recorded with stale content"
        assert "dir/a.txt" not in racy or racy["dir/a.txt"][1] == f"dir/a.txt {bulk}\n"
        for rel in ("swap.txt", "fifo.txt", "ln"):
            assert rel not in racy, f"{where} {rel} recorded as what it no longer is: {racy[rel]}"
            assert rel in result["skipped"], f"{where} {rel} replaced mid-capture is reported"
        assert sum(p.startswith("bulk-") for p in racy) == int(bulk), where
        assert "gone.txt" not in again and "dir/a.txt" not in again, where
        assert again["ln"] == [0o100644, "now a file\n"], f"{where} {again.get('ln')}"
        assert "fifo.txt" not in again and "swap.txt" not in again, where


# -- 15 --------------------------------------------------------------------------------------


def _hostile_tree(engine: Engine, name: bytes) -> str:
    """A tree with an entry libgit2 would refuse to build (``..``, ``/``...), written raw."""
    repo = engine.store.objects.repo
    blob = repo.create_blob(b"written outside the worktree\n")
    inner = b"100644 escape.txt\x00" + blob.raw
    inner_id = repo.odb.write(pygit2.enums.ObjectType.TREE, inner)
    raw = b"40000 " + name + b"\x00" + inner_id.raw
    return str(repo.odb.write(pygit2.enums.ObjectType.TREE, raw))


def test_15_restores_never_write_outside_the_worktree(tmp_path: Path, data_dir: Path) -> None:
    """A hostile store (``..``/absolute/``.git`` paths in checkpoints and trees),
    a symlinked parent directory, a destination symlink: every restore stays
    inside the worktree, and a rejected one writes nothing anywhere."""
    root = make_repo(
        tmp_path / "w" / "repo",
        {"sub/f.txt": "f v1\n", "cfg.txt": "cfg v1\n", "keep.txt": "keep\n"},
    )
    outside = tmp_path / "w" / "outside"
    write(outside, "f.txt", "outside f\n")
    write(outside, "new.txt", "outside new\n")
    write(outside, "target.txt", "outside target\n")
    watch = tmp_path / "w"  # the worktree's parent: nothing may appear here

    turn(data_dir, root, {"sub/f.txt": "f v2\n", "sub/new.txt": "new\n", "cfg.txt": "cfg v2\n"})
    # The user then swaps in links that lead outside.
    shutil.rmtree(root / "sub")
    os.symlink(outside, root / "sub")
    (root / "cfg.txt").unlink()
    os.symlink(outside / "target.txt", root / "cfg.txt")
    outside_before = snapshot_dir_bytes(outside)
    parent_before = sorted(os.listdir(watch))

    run = cli(data_dir, "undo", "-C", root)
    assert run.code == 4, f"the paths changed since the turn: {run}"
    run = cli(data_dir, "undo", "-C", root, "--force")
    assert "Traceback" not in run.err, run.err
    assert snapshot_dir_bytes(outside) == outside_before, (
        f"undo wrote or removed through a symlink (exit {run.code}: {run.err})"
    )
    if run.code == 0:  # replaced the destination link; never followed it
        assert not (root / "cfg.txt").is_symlink() and (root / "cfg.txt").read_text() == "cfg v1\n"
    else:
        assert run.code == 1 and "refusing" in run.err, run

    # A hostile state.json: paths and trees that point outside the worktree.
    (root / "sub").unlink()
    (root / "cfg.txt").unlink()
    engine = open_engine(root, data_dir)
    trees = []
    for version in ("v0", "v0b", "v1"):
        edit_files(
            root,
            {
                "sub/f.txt": f"f {version}\n",
                "cfg.txt": f"cfg {version}\n",
                "keep.txt": f"keep {version}\n",
            },
        )
        trees.append(engine.capture().tree)
    old, older, good = trees
    state_file = store_root(data_dir) / "state.json"
    pristine = state_file.read_bytes()
    hostile: list[tuple[str, str | None]] = [
        ("../escape.txt", None),
        ("sub/../../escape.txt", None),
        (str(watch / "escape.txt"), None),
        (".git/hooks/pre-commit", None),
        ("sub/.git/config", None),
        ("../escape.txt", _hostile_tree(engine, b"..")),
        ("a/escape.txt", _hostile_tree(engine, b"a/../..")),
    ]
    git_before = snapshot_dir_bytes(root / ".git")
    worktree_before = disk(root)
    rejected = 0
    for path, evil_tree in hostile:
        for op in ("undo", "reset", "redo"):
            state = json.loads(pristine)
            sess = state["sessions"].setdefault(SESSION, {})
            # Two checkpoints with different "before" trees, so a reset restores a
            # benign group (cfg.txt) before reaching the group with the bad path.
            benign = {
                "id": 89,
                "session_id": SESSION,
                "kind": "turn",
                "label": "benign",
                "created_at": "2026-01-01T00:00:00.000000Z",
                "before": old,
                "after": good,
                "files": [{"path": "cfg.txt", "status": "modified"}],
                "skipped": [],
                "undone": False,
                "parent": None,
            }
            files = [{"path": path, "status": "deleted"}]
            if evil_tree is None:
                files.insert(0, {"path": "keep.txt", "status": "modified"})
            evil = {
                **benign,
                "id": 90,
                "label": "evil",
                "before": evil_tree or older,
                "files": files,
                "undone": op == "redo",
            }
            state["checkpoints"] = [benign, evil]
            state["next_id"] = 91
            sess["redo"] = (
                [
                    {
                        "op": "undo",
                        "checkpoints": [90],
                        "paths": [f["path"] for f in files],
                        "tree": evil_tree or older,
                        "after": good,
                    }
                ]
                if op == "redo"
                else []
            )
            state_file.write_text(json.dumps(state))
            args = {
                "undo": ("undo", "--force"),
                "redo": ("redo", "--force"),
                "reset": ("reset", "--original", "--force"),
            }[op]
            run = cli(data_dir, *args, "-C", root)
            where = f"{op} of {path!r} ({'hostile tree' if evil_tree else 'hostile path'})"
            assert "Traceback" not in run.err, f"{where}: {run.err}"
            assert sorted(os.listdir(watch)) == parent_before, f"{where} wrote outside"
            if evil_tree is None or path.startswith(".."):
                assert run.code == 1 and "refusing" in run.err, f"{where}: {run}"
                assert disk(root) == worktree_before, f"{where}: a rejected restore wrote"
                rejected += 1
            else:  # a tree entry named "a/../..": the path is simply not found there
                now = disk(root)
                assert {
                    k
                    for k in now.keys() | worktree_before.keys()
                    if now.get(k) != worktree_before.get(k)
                } <= {"cfg.txt"}, where
                edit_files(root, {"cfg.txt": "cfg v1\n"})
            assert snapshot_dir_bytes(root / ".git") == git_before, f"{where} wrote into .git"
    state_file.write_bytes(pristine)
    assert not (root / ".git/hooks/pre-commit").exists()
    figure(
        f"#15 {rejected} hostile restores rejected before any write; 0 bytes written "
        "outside the worktree, into .git, or anywhere for a rejected one"
    )
