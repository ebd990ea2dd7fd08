"""Hermetic test environment and real-git repository builders."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

import pygit2
import pytest

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def hermetic(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """A private HOME, git config and data dir for every test.

    libgit2 reads its config search path once per process, so it is
    redirected explicitly; changing HOME alone would not isolate it.
    """
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
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


@pytest.fixture
def data_dir(hermetic: Path) -> Path:
    return hermetic / "data"


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Run the real git CLI (only tests use it, to build fixtures and as an oracle)."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False
    )
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


def make_repo(root: Path, files: dict[str, str | bytes] | None = None, commit: bool = True) -> Path:
    """A real git repository at ``root`` with ``files`` committed."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for rel, content in (files or {}).items():
        write(root, rel, content)
    if commit and files:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "initial")
    return root


REPO_FILES: dict[str, str | bytes] = {
    "README.md": "# demo\n",
    "src/app.py": "print('hi')\n",
    "src/util.py": "X = 1\n",
}


@pytest.fixture
def repo(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small committed repository: built with git once per run, copied per test."""
    template = tmp_path_factory.getbasetemp() / "repo-template"
    if not template.exists():
        make_repo(template, REPO_FILES)
    root = tmp_path / "repo"
    shutil.copytree(template, root, symlinks=True)
    return root


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
