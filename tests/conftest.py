"""The hermetic test environment and its fixtures (builders: builders.py)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from builders import REPO_FILES, make_repo


def pytest_configure(config: pytest.Config) -> None:
    """Compile the package once, before any worker starts a hook process.

    The suite starts thousands of ``snapshotter hook`` processes. An editable
    install has no bytecode until an import writes it, and with
    PYTHONDONTWRITEBYTECODE set (as on CI machines) no import ever does: every
    process would compile the package again (~35 ms each). compileall writes it
    whatever that variable says; ``pip install .`` does the same for users.
    """
    if not hasattr(config, "workerinput"):  # the controller only, once
        import compileall

        compileall.compile_dir(Path(__file__).parent.parent / "snapshotter", quiet=1)
        if config.getoption("numprocesses", None) and not config.option.collectonly:
            rewrite_tests_once(config)


def rewrite_tests_once(config: pytest.Config) -> None:
    """pytest's rewritten test modules, cached once for every worker to read.

    Each xdist worker imports every test module, and pytest rewrites its asserts
    first (~3 s of CPU per worker for this suite). It caches the result only where
    bytecode may be written, so under PYTHONDONTWRITEBYTECODE every worker did it
    all again. Two collect-only runs without that variable write the cache (a
    worker reads a cached module whatever the variable says), half the files each.
    """
    import subprocess
    import sys

    files = sorted(str(p) for p in (Path(__file__).parent).rglob("test_*.py"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    line = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts="]
    line += ["--import-mode=importlib", "-p", "no:cacheprovider"]
    runs = [
        subprocess.Popen(
            [*line, *half],
            cwd=config.rootpath,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for half in (files[0::2], files[1::2])
    ]
    for run in runs:
        run.wait()  # a failure here is the workers' to report, as they collect


# Tests that take seconds each (``pytest --durations=30`` lists them). They run
# first after the unit tier, so none of them starts in the last seconds of a
# parallel run and holds up its end while the other workers sit idle.
LONG_FIRST = (
    "tests/functional/test_benchmarks_smoke.py",
    "tests/functional/test_mcp_recorded.py",
    "tests/functional/test_fuzz_hook.py",
    "tests/functional/test_crash_injection.py",
    "tests/functional/test_gc_incremental.py::test_a_gc_killed_at_any_step",
    "tests/functional/test_gc.py::test_gc_killed_mid_way",
    "tests/functional/test_api.py::test_readme_python_example",
    "tests/functional/test_agent_init.py::test_claude_code_settings_from_init",
    "tests/functional/test_gemini_recorded.py",
    "tests/functional/test_cli_e2e.py",
    "tests/functional/test_parallel_writes.py",
    "tests/functional/test_mcp_server.py",
    "tests/functional/test_restore_invariant.py",
    "tests/functional/test_hook_server.py",
    "tests/functional/test_copilot_recorded.py",
    "tests/functional/test_claude_code_recorded.py",
    "tests/functional/test_concurrency.py",
    "tests/functional/test_deep_trees.py",
    "tests/functional/test_byte_names.py::test_agent_overwrite",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The unit tier first (as collected), then ``LONG_FIRST``, then the rest."""

    def tier(item: pytest.Item) -> int:
        if item.nodeid.startswith("tests/unit/"):
            return 0
        return 1 if item.nodeid.startswith(LONG_FIRST) else 2

    items.sort(key=tier)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker per core, and at least three: a test spends much of its
    time waiting for the processes it starts, so even two cores keep three busy."""
    return max(3, os.cpu_count() or 1)


GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


# The real directories a test must never write into, taken before any test
# changes the environment: the default data directory and the hook servers'
# runtime directory (``$XDG_RUNTIME_DIR/snapshotter``, else ``/tmp/snapshotter-<uid>``).
REAL_HOME = Path(pwd.getpwuid(os.getuid()).pw_dir)
REAL_DATA_DIR = (
    Path(os.environ.get("XDG_DATA_HOME") or REAL_HOME / ".local" / "share") / "snapshotter"
)
REAL_RUNTIME_DIRS = sorted(
    {
        Path(os.environ["XDG_RUNTIME_DIR"]) / "snapshotter"
        if os.environ.get("XDG_RUNTIME_DIR")
        else Path(f"/tmp/snapshotter-{os.getuid()}"),
        Path(f"/run/user/{os.getuid()}/snapshotter"),
        Path(f"/tmp/snapshotter-{os.getuid()}"),
    }
)
# What a hook server runs as: started by a hook (the CLI's entry, which also runs
# forked commands), or by a test that wants the hooks-only server.
SERVER_MODULES = (b"snapshotter.cli.served", b"snapshotter.hooks.server")


def tree_state(root: Path, depth: int = 4) -> dict[str, tuple[bool, int, int]]:
    """Every entry under ``root`` (to ``depth`` levels, root included): kind, size, mtime."""
    found: dict[str, tuple[bool, int, int]] = {}
    stack = [(root, 0)]
    while stack:
        path, level = stack.pop()
        try:
            st = path.lstat()
        except OSError:
            continue
        is_dir = path.is_dir() and not path.is_symlink()
        found[str(path.relative_to(root))] = (is_dir, st.st_size, st.st_mtime_ns)
        if is_dir and level < depth:
            with contextlib.suppress(OSError):
                stack.extend((child, level + 1) for child in path.iterdir())
    return found


def hook_servers() -> dict[int, tuple[Path, str]]:
    """Live hook servers on this machine: pid -> (socket path, the server's HOME)."""
    found: dict[int, tuple[Path, str]] = {}
    proc = Path("/proc")
    if not proc.is_dir():
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            module = next((m for m in SERVER_MODULES if m in argv), None)
            if module is None:
                continue
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue  # gone, or not ours to read
        home = next((v[5:] for v in environ if v.startswith(b"HOME=")), b"")
        sock = argv[argv.index(module) + 1]  # the server's one argument
        found[int(entry.name)] = (Path(os.fsdecode(sock)), os.fsdecode(home))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is not running.
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1][:1] != "Z"
    return True


def stop_servers_of(home: Path) -> list[str]:
    """Stop every hook server started under this test's HOME; what went wrong, if anything.

    A server a test starts must not outlive it (it would hold files of a
    deleted tmp dir and answer the next test's hooks): each is asked to stop
    over its socket (SIGTERM without one) and waited for.
    """
    from snapshotter.hooks import client

    problems: list[str] = []
    deadline = time.monotonic() + 60
    asked: set[int] = set()
    while True:
        ours = {pid: sock for pid, (sock, h) in hook_servers().items() if h == str(home)}
        ours = {pid: sock for pid, sock in ours.items() if alive(pid)}
        if not ours:
            return problems
        for pid, sock in ours.items():
            if pid in asked:
                continue
            asked.add(pid)
            if any(sock.is_relative_to(real) for real in REAL_RUNTIME_DIRS):
                problems.append(
                    f"a hook server of this test used {sock}, in the real runtime directory"
                )
            try:
                client.stop(sock)
            except OSError:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGTERM)
        if time.monotonic() > deadline:
            for pid, sock in ours.items():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                problems.append(f"hook server {pid} ({sock}) did not stop when asked")
            return problems
        time.sleep(0.05)


def foreign_server_files(real: Path) -> set[str]:
    """Names in the real runtime dir that live hook servers of other HOMEs own."""
    owned: set[str] = set()
    for sock, _home in hook_servers().values():
        if sock.parent == real:
            owned |= {sock.name, sock.name + ".lock"}
    return owned


RealState = tuple[dict[str, tuple[bool, int, int]], dict[Path, dict[str, tuple[bool, int, int]]]]


def real_state() -> RealState:
    return tree_state(REAL_DATA_DIR), {d: tree_state(d, depth=1) for d in REAL_RUNTIME_DIRS}


def writes_into_real_dirs(before: RealState) -> list[str]:
    """What changed in the real data and runtime directories since ``before``."""
    problems = []
    if tree_state(REAL_DATA_DIR) != before[0]:
        problems.append(f"the test wrote into the real data directory {REAL_DATA_DIR}")
    for real, listed in before[1].items():
        after = tree_state(real, depth=1)
        # Other programs of this account may run hook servers meanwhile: their
        # sockets are not this test's doing. A new or changed entry is.
        changed = [n for n, state in after.items() if n != "." and listed.get(n) != state]
        if changed:  # /proc is read only then: it costs every test a few ms
            foreign = foreign_server_files(real)
            changed = sorted(name for name in changed if name not in foreign)
        if changed:
            problems.append(f"the test wrote into the real runtime directory {real}: {changed}")
    return problems


@pytest.fixture(scope="session", autouse=True)
def real_dirs_untouched() -> Iterator[None]:
    """The tripwire for module and session fixtures, which run outside ``hermetic``."""
    before = real_state()
    yield
    problems = writes_into_real_dirs(before)
    assert not problems, "hermetic test session broken:\n" + "\n".join(problems)


@pytest.fixture(autouse=True)
def hermetic(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A private HOME, git config, data dir and runtime dir for every test.

    libgit2 reads its config search path once per process, so it is
    redirected explicitly; changing HOME alone would not isolate it.

    A tripwire (as pre-commit's ``dont_write_to_home_directory``) fails the
    test if the real data directory or the real runtime directory changed
    while it ran, or if a hook server it started outlives it (issue 14).
    """
    # mkdtemp, not mktemp: a numbered directory lists the whole base temp dir (every
    # earlier test's directories) to find its number, ~1 ms a test late in a run.
    base = Path(tempfile.mkdtemp(prefix="env-", dir=tmp_path_factory.getbasetemp()))
    home = base / "home"
    runtime = base / "run"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    runtime.chmod(0o700)  # the hook client trusts only a private runtime dir
    before = real_state()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("SNAPSHOTTER_DATA_DIR", str(home / "data"))
    # No resident hook server outliving a test; test_hook_server.py turns it on.
    monkeypatch.setenv("SNAPSHOTTER_HOOK_SERVER", "0")
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)
    levels = (
        pygit2.enums.ConfigLevel.GLOBAL,
        pygit2.enums.ConfigLevel.XDG,
        pygit2.enums.ConfigLevel.SYSTEM,
    )
    saved = {level: pygit2.settings.search_path[level] for level in levels}
    for level in levels:
        pygit2.settings.search_path[level] = str(home)
    yield home
    for level, value in saved.items():
        pygit2.settings.search_path[level] = value
    problems = stop_servers_of(home) + writes_into_real_dirs(before)
    assert not problems, "hermetic test environment broken:\n" + "\n".join(problems)


@pytest.fixture
def data_dir(hermetic: Path) -> Path:
    return hermetic / "data"


@pytest.fixture
def server_socket(monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> Iterator[Path]:
    """The hook server turned on for this test: its socket path (the server is
    started by the first hook); stopped at the end."""
    from snapshotter.hooks import client

    monkeypatch.setenv("SNAPSHOTTER_HOOK_SERVER", "1")
    path = client.socket_path(data_dir)
    assert path is not None, "a private socket directory is available"
    yield path
    with contextlib.suppress(OSError):
        client.stop(path)


@pytest.fixture
def repo(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small committed repository: built with git once per run, copied per test."""
    template = tmp_path_factory.getbasetemp() / "repo-template"
    if not template.exists():
        make_repo(template, REPO_FILES)
    root = tmp_path / "repo"
    shutil.copytree(template, root, symlinks=True)
    return root
