"""Shared test builders: real git repositories, real hook processes, state read back.

- repositories: ``make_repo`` (``git init``, files, ``git commit`` with the real
  git CLI), ``write``, ``git``;
- hook players: ``run_hook`` / ``hook_ok`` start ``snapshotter hook`` as a real
  process fed an event as JSON on stdin, as docker-agent and Claude Code do
  (``event`` and ``claude_event`` build the two payload shapes; ``turn`` plays
  a docker-agent turn); ``hook_in_process`` calls the function behind it here;
- commands: ``run_cli`` in a process, ``run_cli_in_process`` through ``cli.main``;
- state readers: ``listed`` (``snapshotter list --json``), and for what no
  command shows (pending tool marks, ``next_id``) the one store's ``state.json``;
- sizes: ``fast_and_full`` parametrizes a stress test with a fast run for the
  default suite and its full size behind the ``slow`` marker.

The environment is the test's own (``conftest.hermetic``): a process started
here sees its HOME, data directory and runtime directory.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pygit2
import pytest

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


# -- real processes --------------------------------------------------------------------------

# ``python -m snapshotter``: this venv's interpreter, whatever is on PATH.
SNAPSHOTTER: tuple[str, ...] = (sys.executable, "-m", "snapshotter")


def argv(
    data_dir: Path | None, *args: str | Path, command: Sequence[str] = SNAPSHOTTER
) -> list[str]:
    """``snapshotter [--data-dir DIR] ARGS`` (no ``--data-dir``: the environment's)."""
    option = ["--data-dir", str(data_dir)] if data_dir is not None else []
    return [*command, *option, *map(str, args)]


def run_cli(
    *args: str | Path,
    data_dir: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    errors: str = "strict",
    command: Sequence[str] = SNAPSHOTTER,
    prefix: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """``snapshotter ARGS`` in its own process; ``env`` is laid over this one's."""
    return subprocess.run(
        [*prefix, *argv(data_dir, *args, command=command)],
        capture_output=True,
        text=True,
        errors=errors,
        check=False,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def run_cli_in_process(
    *args: str | Path, data_dir: Path | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``snapshotter ARGS`` through ``cli.main`` (what the console script runs), here.

    For tests about what a command does rather than about the process (its
    encoding, its terminal): no interpreter start-up per command.
    """
    from snapshotter.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    line = argv(data_dir, *args, command=())
    with contextlib.ExitStack() as stack:
        if cwd is not None:
            stack.enter_context(contextlib.chdir(cwd))
        stack.enter_context(contextlib.redirect_stdout(out))
        stack.enter_context(contextlib.redirect_stderr(err))
        try:
            main(line)
            code = 0
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(line, code, out.getvalue(), err.getvalue())


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
    root: Path, session: str, files: Mapping[str, str | bytes], data_dir: Path | None = None
) -> None:
    """A docker-agent turn through real hook processes: turn_start, the edits, turn_end."""
    hook_ok(event("turn_start", root, session), data_dir)
    for rel, text in files.items():
        write(root, rel, text)
    hook_ok(event("turn_end", root, session), data_dir)


def hook_in_process(
    sent: Mapping[str, Any] | bytes, data_dir: Path | None, args: Sequence[str] = ()
) -> tuple[int, str, str]:
    """The function behind ``snapshotter hook`` (``command.run``), here: (code, out, err)."""
    from snapshotter.hooks import command

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = command.run(io.BytesIO(payload(sent)), data_dir, list(args))
    return code, out.getvalue(), err.getvalue()


# -- state read back -------------------------------------------------------------------------


def listed(
    root: Path, data_dir: Path | None = None, *args: str, command: Sequence[str] = SNAPSHOTTER
) -> list[dict[str, Any]]:
    """``snapshotter list -C ROOT --json ARGS``: the checkpoints, newest last."""
    done = run_cli("list", "-C", root, "--json", *args, data_dir=data_dir, command=command)
    assert done.returncode == 0, f"list --json failed: {done.stderr}"
    found = json.loads(done.stdout)  # one JSON document and nothing else
    assert isinstance(found, list), f"list --json prints a list: {done.stdout!r}"
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
