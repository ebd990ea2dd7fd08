"""Shared test builders: real git repositories, real hook processes, state read back.

- repositories: ``make_repo`` (``git init``, files, ``git commit`` with the real
  git CLI), ``write``, ``edit_files``, ``git``;
- hook players: ``run_hook`` / ``hook_ok`` start ``snapshotter hook`` as a real
  process fed an event as JSON on stdin, as docker-agent and Claude Code do
  (``event`` and ``claude_event`` build the two payload shapes; ``turn`` plays
  a docker-agent turn); ``hook_in_process`` (``hook_in_process_ok``) calls the
  function behind it here;
- commands: ``run_cli`` in a process (text, or bytes with ``text=False``;
  ``cli_ok`` when it must succeed), ``run_cli_in_process`` through ``cli.main``
  (a ``Run``);
- the API: ``open_engine`` (an ``Engine`` on a store that is created if need
  be), ``hook_input`` (the ``HookInput`` a runtime's event parses to),
  ``keep_loose`` (captures that leave packing to gc);
- the hook server: ``wait_for`` its socket (the ``server_socket`` fixture in
  conftest.py turns the server on);
- state readers: ``listed`` (``snapshotter list --json``), and for what no
  command shows (pending tool marks, ``next_id``) the one store's ``state.json``;
  ``blob_at`` reads a snapshot's file, ``worktree_bytes`` / ``worktree_entries``
  the worktree, ``captured`` what a capture's walk takes; ``age_session``
  moves a session into the past;
- sizes: ``fast_and_full`` parametrizes a stress test with a fast run for the
  default suite and its full size behind the ``slow`` marker.

The environment is the test's own (``conftest.hermetic``): a process started
here sees its HOME, data directory and runtime directory.

Over 400 lines on purpose: one builder per helper, all in the one module every
test imports them from (``from builders import ...``), in sections by job.
Beyond ``snapshotter.config`` (``open_engine``'s defaults) the package is
imported inside the builders that need it: conftest.py loads this module in
every test process.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import pygit2
import pytest

from snapshotter.config import DEFAULT_MAX_FILES, DEFAULT_MAX_NEW_FILE_SIZE

if TYPE_CHECKING:  # the package is imported where used: conftest loads this module first
    from snapshotter.engine import Engine
    from snapshotter.hooks.wire import HookInput
    from snapshotter.store.capture import Snapshot
    from snapshotter.store.resident import Resident
    from snapshotter.store.shadow import Store

# -- sizes: a fast run by default, the full-size one on demand -------------------------------

Size = TypeVar("Size")


def fast_and_full(fast: Size, full: Size) -> list[Any]:
    """Parameters ``[fast]`` and ``[full]``: the full-size run is marked ``slow``.

    The default run (``-m "not slow"`` in pyproject.toml) takes the fast one;
    ``pytest -m slow`` runs the full-size stress runs, with the same assertions.
    """
    return [pytest.param(fast, id="fast"), pytest.param(full, id="full", marks=pytest.mark.slow)]


# -- repositories ----------------------------------------------------------------------------


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run the real git CLI (only tests use it, to build fixtures and as an oracle)."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


def write(root: Path, rel: str, content: str | bytes = "", mode: int | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    if mode is not None:
        os.chmod(path, mode)
    return path


def edit_files(root: Path, edits: Mapping[str, str | bytes | None]) -> None:
    """An agent's edits: each path written with its content, or removed (None), a
    directory with all it holds."""
    for rel, content in edits.items():
        path = root / rel
        if content is not None:
            write(root, rel, content)
        elif path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()


def make_repo(
    root: Path, files: Mapping[str, str | bytes] | None = None, commit: bool = True
) -> Path:
    """A real git repository at ``root`` with ``files`` committed."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for rel, content in (files or {}).items():
        write(root, rel, content)
    if commit and files:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
    return root


# What the ``repo`` fixture holds: a small committed repository.
REPO_FILES: dict[str, str | bytes] = {
    "README.md": "# demo\n",
    "src/app.py": "print('hi')\n",
    "src/util.py": "X = 1\n",
}


@contextlib.contextmanager
def small_tmpfs(where: Path, options: str) -> Iterator[Path]:
    """A tmpfs mounted at ``where`` (``options``: ``size=4m``...), unmounted after;
    the test is skipped, saying why, where it cannot be mounted (not root)."""
    if os.geteuid() != 0:
        print("\n[tmpfs] skipped: mounting a small tmpfs needs root")
        pytest.skip("mounting a small tmpfs needs root")
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        print(f"\n[tmpfs] skipped: cannot mount a tmpfs here: {done.stderr.strip()}")
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


# -- hook events, in the shapes the runtimes send --------------------------------------------

# Claude Code names the session's transcript in every event.
TRANSCRIPT = "/home/u/.claude/projects/-repo/t.jsonl"


def event(name: str, cwd: Path | str, session: str = "s", **fields: Any) -> dict[str, Any]:
    """A docker-agent event (``turn_start``, ``pre_tool_use``, ``turn_end``...)."""
    return {"session_id": session, "cwd": str(cwd), "hook_event_name": name, **fields}


def claude_event(name: str, session: str, cwd: Path | str, **fields: Any) -> dict[str, Any]:
    """A Claude Code 2.x event (``UserPromptSubmit``, ``PreToolUse``, ``Stop``...)."""
    return {
        "session_id": session,
        "transcript_path": TRANSCRIPT,
        "cwd": str(cwd),
        "hook_event_name": name,
        **fields,
    }


def hook_input(name: str, cwd: Path | str, session: str = "s", **fields: Any) -> HookInput:
    """The ``HookInput`` a docker-agent ``event`` parses to, for the builtin called here."""
    from snapshotter.hooks.wire import HookInput

    return HookInput(**event(name, cwd, session, **fields))


# -- the API ---------------------------------------------------------------------------------


def open_engine(
    root: Path,
    data_dir: Path,
    *,
    max_new_file_size: int = DEFAULT_MAX_NEW_FILE_SIZE,
    max_files: int | None = DEFAULT_MAX_FILES,
    resident: Resident | None = None,
) -> Engine:
    """``Engine.open(root)`` on the store in ``data_dir``, created on first use.

    ``resident``: the watchers and caches of a hook server, for an engine as
    the server opens it.
    """
    from snapshotter.engine import Engine

    engine: Engine | None = Engine.open(
        root,
        data_dir_path=data_dir,
        max_new_file_size=max_new_file_size,
        max_files=max_files,
        resident=resident,
    )
    assert engine is not None, f"Engine.open({root}) should create a store"
    return engine


def keep_loose(_snapshot: Snapshot, loose: int) -> int:
    """A stand-in for ``Snapshot._pack_if_many`` (monkeypatched): captures leave every
    loose object they write loose, for a gc to pack (its threshold unchanged)."""
    return loose


# -- real processes --------------------------------------------------------------------------

# ``python -m snapshotter``: this venv's interpreter, whatever is on PATH.
SNAPSHOTTER: tuple[str, ...] = (sys.executable, "-m", "snapshotter")


# Runs a CLI command through the console script's entry; what it printed and loaded.
CLI_PROBE = """
import contextlib, io, json, sys
from snapshotter.cli.launcher import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(sys.argv[3:])
    except SystemExit as exc:
        code = exc.code
with open(sys.argv[1], "w") as f:
    json.dump({"modules": sorted(sys.modules), "out": out.getvalue(), "code": code}, f)
"""


def cli_probe(tmp_path: Path, root: Path, *args: str) -> dict[str, object]:
    """Run ``snapshotter ARGS`` in ``root`` through the console script's entry in a fresh
    interpreter: ``modules`` it loaded, ``out`` (stdout, then stderr) and exit ``code``."""
    report = tmp_path / f"cli-{time.monotonic_ns()}.json"
    done = subprocess.run(
        [sys.executable, "-c", CLI_PROBE, str(report), "-", *args],
        cwd=root,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    found: dict[str, object] = json.loads(report.read_text())
    assert found["code"] in (0, None), found
    found["out"] = f"{found['out']}{done.stderr.decode()}"
    return found


def argv(
    data_dir: Path | None, *args: str | bytes | Path, command: Sequence[str] = SNAPSHOTTER
) -> list[str]:
    """``snapshotter [--data-dir DIR] ARGS`` (no ``--data-dir``: the environment's).

    A ``bytes`` argument (a path that is not UTF-8) is decoded as the OS does
    (``os.fsdecode``), so the process receives exactly those bytes.
    """
    option = ["--data-dir", str(data_dir)] if data_dir is not None else []
    return [*command, *option, *(os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args)]


@overload
def run_cli(
    *args: str | bytes | Path,
    data_dir: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    errors: str = "strict",
    command: Sequence[str] = SNAPSHOTTER,
    prefix: Sequence[str] = (),
    text: Literal[True] = True,
) -> subprocess.CompletedProcess[str]: ...


@overload
def run_cli(
    *args: str | bytes | Path,
    data_dir: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    errors: str = "strict",
    command: Sequence[str] = SNAPSHOTTER,
    prefix: Sequence[str] = (),
    text: Literal[False],
) -> subprocess.CompletedProcess[bytes]: ...


def run_cli(
    *args: str | bytes | Path,
    data_dir: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    errors: str = "strict",
    command: Sequence[str] = SNAPSHOTTER,
    prefix: Sequence[str] = (),
    text: bool = True,
) -> subprocess.CompletedProcess[str] | subprocess.CompletedProcess[bytes]:
    """``snapshotter ARGS`` in its own process; ``env`` is laid over this one's.

    ``text=False``: the output as the bytes printed (names that are not UTF-8).
    """
    return subprocess.run(
        [*prefix, *argv(data_dir, *args, command=command)],
        capture_output=True,
        text=text,
        errors=errors if text else None,
        check=False,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def cli_ok(root: Path, *args: str | Path, data_dir: Path | None = None) -> str:
    """``snapshotter ARGS`` in its own process, run in ``root`` as a user would: it must
    exit 0; its stdout."""
    done = run_cli(*args, data_dir=data_dir, cwd=root)
    assert done.returncode == 0, f"snapshotter {' '.join(map(str, args))} failed: {done.stderr}"
    return done.stdout


@dataclass
class Run:
    """What a command run here did: its exit code, stdout and stderr."""

    code: int
    out: str
    err: str

    @classmethod
    def of(cls, done: subprocess.CompletedProcess[str]) -> Run:
        return cls(done.returncode, done.stdout, done.stderr)

    def one_line_error(self, *needles: str) -> None:
        """An error the way SPEC §7 wants it: one line on stderr, no traceback."""
        lines = self.err.strip().splitlines()
        assert len(lines) == 1, f"expected exactly one stderr line, got {self.err!r}"
        assert "Traceback" not in self.err, f"traceback leaked to stderr: {self.err!r}"
        for needle in needles:
            assert needle in self.err, f"expected {needle!r} in stderr {self.err!r}"


def run_cli_in_process(
    *args: str | Path,
    data_dir: Path | None = None,
    cwd: Path | None = None,
    stdin: bytes | None = None,
) -> Run:
    """``snapshotter ARGS`` through ``cli.main`` (what the console script runs), here.

    For tests about what a command does rather than about the process (its
    encoding, its terminal): no interpreter start-up per command. ``stdin``:
    what the command reads (a hook's event). Its output streams are binary
    underneath, as a process's are (``diff`` writes bytes).
    """
    from snapshotter.cli.main import main

    out, err = _text_stream(), _text_stream()
    line = argv(data_dir, *args, command=())
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        if stdin is not None:
            stack.enter_context(_stdin_from(stdin))
        try:
            main(line)
            code = 0
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    return Run(code, _text_of(out), _text_of(err))


def _text_stream() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="", write_through=True)


def _text_of(stream: io.TextIOWrapper) -> str:
    stream.flush()
    buffer = stream.buffer
    assert isinstance(buffer, io.BytesIO)
    return buffer.getvalue().decode(errors="replace")


@contextlib.contextmanager
def _stdin_from(data: bytes) -> Iterator[None]:
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(data))
    try:
        yield
    finally:
        sys.stdin = saved


def interruptible() -> None:
    """A child's ``preexec_fn``: Ctrl-C reaches it as it reaches a terminal's foreground
    command (SIGINT's default), even when this run was started with SIGINT ignored (a
    background job of a non-interactive shell ignores it, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def payload(sent: Mapping[str, Any] | bytes) -> bytes:
    return sent if isinstance(sent, bytes) else json.dumps(sent).encode()


def run_hook(
    sent: Mapping[str, Any] | bytes,
    data_dir: Path | None = None,
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    command: Sequence[str] = SNAPSHOTTER,
    prefix: Sequence[str] = (),
    preexec: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """One ``snapshotter hook`` process fed ``sent`` (an event, or raw bytes) on stdin.

    ``prefix`` runs it under another command (``unshare``...); ``args`` go
    after ``hook`` (``--arg max_checkpoints=1``).
    """
    return subprocess.run(
        [*prefix, *argv(data_dir, "hook", *args, command=command)],
        input=payload(sent),
        capture_output=True,
        check=False,
        timeout=timeout,
        cwd=cwd,
        preexec_fn=preexec,
        env={**os.environ, **(env or {})},
    )


def hook_ok(
    sent: Mapping[str, Any],
    data_dir: Path | None = None,
    *args: str,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    command: Sequence[str] = SNAPSHOTTER,
) -> None:
    """One event through ``snapshotter hook``: it must exit 0 quietly (SPEC §6)."""
    done = run_hook(sent, data_dir, *args, cwd=cwd, env=env, command=command)
    name = sent.get("hook_event_name")
    assert done.returncode == 0 and not done.stderr, (
        f"hook {name}: exit {done.returncode}, stderr {done.stderr!r}"
    )
    assert done.stdout.strip() in (b"", b"{}"), (
        f"hook {name} prints nothing or {{}}: {done.stdout!r}"
    )


def turn(
    root: Path,
    session: str,
    files: Mapping[str, str | bytes | None],
    data_dir: Path | None = None,
    *,
    process: bool = False,
) -> None:
    """A docker-agent turn: turn_start, the edits (``edit_files``), turn_end, each
    quietly through the hook's entry point (``command.run``) in this process, where
    the turn is a test's setup (two hook processes cost the suite ~0.25 s of CPU a
    turn, ~120 times a run); ``process``: through real ``snapshotter hook`` processes."""
    for name in ("turn_start", None, "turn_end"):
        if name is None:
            edit_files(root, files)
        elif process:
            hook_ok(event(name, root, session), data_dir)
        else:
            code, out, err = hook_in_process(event(name, root, session), data_dir)
            assert code == 0 and not err, f"hook {name}: exit {code}, stderr {err!r}"
            assert out.strip() in ("", "{}"), f"hook {name} prints nothing or {{}}: {out!r}"


def wait_for(path: Path, present: bool = True, limit: float = 60) -> None:
    """Until ``path`` exists (``present=False``: is gone), as a hook server's socket
    appears once the first hook started it; fails after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while path.exists() != present and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists() == present, f"{path} {'never appeared' if present else 'stayed'}"


def hook_in_process(
    sent: Mapping[str, Any] | bytes, data_dir: Path | None, args: Sequence[str] = ()
) -> tuple[int, str, str]:
    """The function behind ``snapshotter hook`` (``command.run``), here: (code, out, err)."""
    from snapshotter.hooks import command

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = command.run(io.BytesIO(payload(sent)), data_dir, list(args))
    return code, out.getvalue(), err.getvalue()


def hook_in_process_ok(
    sent: Mapping[str, Any], data_dir: Path | None, args: Sequence[str] = ()
) -> str:
    """``hook_in_process``, which must exit 0 (SPEC §6); its stderr (what it warned about)."""
    code, _out, err = hook_in_process(sent, data_dir, args)
    assert code == 0, f"hook {sent.get('hook_event_name')} exited {code}: {err}"
    return err


# -- state read back -------------------------------------------------------------------------


def listed(
    root: Path, data_dir: Path | None = None, *args: str, command: Sequence[str] = SNAPSHOTTER
) -> list[dict[str, Any]]:
    """``snapshotter list -C ROOT --json ARGS``: the checkpoints, newest last.

    Through ``cli.main`` in this process (what a test reads the history with is
    not what it tests: a ``list --json`` process costs ~0.2 s of the suite's CPU
    each, and this runs ~100 times); ``command``: in a process of that command.
    """
    if command == SNAPSHOTTER:
        run = run_cli_in_process("list", "-C", root, "--json", *args, data_dir=data_dir)
    else:
        run = Run.of(
            run_cli("list", "-C", root, "--json", *args, data_dir=data_dir, command=command)
        )
    assert run.code == 0, f"list --json failed: {run.err}"
    found = json.loads(run.out)  # one JSON document and nothing else
    assert isinstance(found, list), f"list --json prints a list: {run.out!r}"
    return found


def files_of(cp: Mapping[str, Any]) -> dict[str, str]:
    """A listed checkpoint's files: path -> status."""
    return {f["path"]: f["status"] for f in cp["files"]}


def store_root(data_dir: Path) -> Path:
    """The one store in ``data_dir``."""
    roots = [p for p in (data_dir / "snapshot").iterdir() if p.is_dir()]
    assert len(roots) == 1, f"expected exactly one store, found {roots}"
    return roots[0]


def load_state(data_dir: Path) -> dict[str, Any]:
    """The one store's ``state.json``: for what no command shows (pending marks, next id)."""
    data: dict[str, Any] = json.loads((store_root(data_dir) / "state.json").read_bytes())
    return data


def blob_at(engine: Engine, tree: str, rel: str) -> bytes | None:
    """The bytes of ``rel`` in the snapshot ``tree``, read from the store (None: not in it)."""
    entry = engine.store.entry(tree, rel)
    return None if entry is None else engine.store.blob(entry[1])


def worktree_bytes(root: Path) -> dict[str, bytes]:
    """Every file of the worktree but .git's: relative path -> bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] != ".git"
    }


# How state.json writes a time (config.now_iso): UTC, microseconds.
STATE_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"


def age_session(store: Store, session: str, days: float) -> None:
    """Move a session's activity and checkpoints ``days`` into the past (state.json)."""
    from snapshotter.history.state_file import load, save

    state = load(store)
    shift = timedelta(days=days)

    def back(stamp: str) -> str:
        moved = datetime.strptime(stamp, STATE_TIME).replace(tzinfo=UTC) - shift
        return moved.strftime(STATE_TIME)

    state.sessions[session].touched = back(state.sessions[session].touched)
    for cp in state.checkpoints:
        if cp.session_id == session:
            cp.created_at = back(cp.created_at)
    save(store, state)


def worktree_entries(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but .git's with its bytes, and every directory
    (``"dir/"``, empty): what an undo must give back exactly, empty directories too."""
    found: dict[str, bytes] = {}
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for d in dirs:
            found[(Path(dirpath) / d).relative_to(root).as_posix() + "/"] = b""
        for name in names:
            full = Path(dirpath) / name
            found[full.relative_to(root).as_posix()] = full.read_bytes()
    return found


def captured(root: Path) -> set[str]:
    """The paths a capture of the worktree at ``root`` takes (no size limit), by its walk."""
    from snapshotter.git.worktree import find_worktree
    from snapshotter.store.walk import scan

    return set(scan(find_worktree(root), previous=frozenset(), max_new_file_size=1 << 40).entries)


def snapshot_dir_bytes(path: Path) -> dict[str, bytes]:
    """Every file under ``path`` with its bytes (to prove a .git was not touched)."""
    found = {}
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            full = Path(dirpath) / name
            found[str(full.relative_to(path))] = full.read_bytes()
    return found


def reachable(git_dir: Path, trees: Iterable[str]) -> set[str]:
    """Every object below ``trees`` in the store at ``git_dir``; fails if one is missing."""
    repo = pygit2.Repository(str(git_dir))  # fresh: sees only what is on disk
    seen: set[str] = set()
    stack = list(trees)
    while stack:
        oid = stack.pop()
        if oid in seen:
            continue
        obj = repo.get(oid)
        assert obj is not None, f"object {oid} needed by a live tree is missing from the store"
        if isinstance(obj, pygit2.Blob):  # read it, so a damaged pack shows up here
            assert len(obj.data) == obj.size, f"blob {oid} cannot be read back whole"
        seen.add(oid)
        if isinstance(obj, pygit2.Tree):
            stack.extend(str(entry.id) for entry in obj)
    return seen
