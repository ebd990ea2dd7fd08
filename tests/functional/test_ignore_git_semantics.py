"""Ignore rules from where git takes them (issue 12 §3), git itself the oracle.

- A ``.gitignore`` that git cannot open but the index marks skip-worktree
  (sparse checkouts) is read from the index's blob, as ``dir.c`` does.
- The config chain is found as git finds it: ``GIT_CONFIG_GLOBAL`` (which
  replaces ``~/.gitconfig`` and ``$XDG_CONFIG_HOME/git/config``),
  ``GIT_CONFIG_SYSTEM``/``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_COUNT`` pairs;
  that decides ``core.excludesFile`` and ``core.ignorecase``.

Each test compares what ``scan()`` keeps with
``git ls-files --cached --others --exclude-standard`` in the same environment.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from builders import captured, git, write

from snapshotter.git import ignore


def git_lists(root: Path) -> set[str]:
    """What git counts as the project, minus tracked files absent from the worktree."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    return {p.decode() for p in out.split(b"\0") if p and os.path.lexists(root / p.decode())}


def assert_same_as_git(root: Path, must_leave_out: set[str]) -> None:
    expected, ours = git_lists(root), captured(root)
    assert must_leave_out.isdisjoint(expected), (
        f"the fixture should make git ignore {sorted(must_leave_out)}; git lists {sorted(expected)}"
    )
    assert ours == expected, (
        f"scan() should keep what git lists; only ours: {sorted(ours - expected)}, "
        f"only git's: {sorted(expected - ours)}"
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "--template=", "-b", "main")
    return path


def commit_rules(root: Path, rules: dict[str, str]) -> None:
    for rel, text in rules.items():
        write(root, rel, text)
    write(root, "keep/README", "kept\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "rules")


# -- skip-worktree and sparse checkouts --------------------------------------------------------


def test_skip_worktree_gitignore_missing_on_disk_is_read_from_the_index(root: Path) -> None:
    commit_rules(root, {".gitignore": "*.tmp\n", "sub/.gitignore": "*.o\n!keep.o\n"})
    git(root, "update-index", "--skip-worktree", ".gitignore", "sub/.gitignore")
    (root / ".gitignore").unlink()
    (root / "sub/.gitignore").unlink()
    for rel in ("a.tmp", "sub/b.tmp", "sub/c.o", "sub/keep.o", "sub/d.txt"):
        write(root, rel, "x\n")
    assert_same_as_git(root, {"a.tmp", "sub/b.tmp", "sub/c.o"})


def test_skip_worktree_gitignore_on_disk_wins_over_the_index(root: Path) -> None:
    commit_rules(root, {".gitignore": "*.tmp\n"})
    git(root, "update-index", "--skip-worktree", ".gitignore")
    write(root, ".gitignore", "*.log\n")
    for rel in ("a.tmp", "b.log", "c.txt"):
        write(root, rel, "x\n")
    assert_same_as_git(root, {"b.log"})


def test_tracked_gitignore_deleted_without_skip_worktree_is_not_read(root: Path) -> None:
    commit_rules(root, {".gitignore": "*.tmp\n"})
    (root / ".gitignore").unlink()
    write(root, "a.tmp", "x\n")
    assert "a.tmp" in git_lists(root), "git reads the index only for skip-worktree entries"
    assert_same_as_git(root, set())


def test_sparse_checkout_reads_excluded_gitignores_from_the_index(root: Path) -> None:
    commit_rules(
        root,
        {".gitignore": "*.tmp\nbuild/\n", "sub/.gitignore": "*.gen\n", "sub/file.txt": "tracked\n"},
    )
    git(root, "sparse-checkout", "set", "--no-cone", "/keep/")
    assert not (root / ".gitignore").exists() and not (root / "sub").exists(), (
        "the sparse checkout should have removed the rules from the worktree"
    )
    for rel in ("top.tmp", "build/out", "sub/x.gen", "sub/y.txt", "keep/z.tmp", "keep/w.txt"):
        write(root, rel, "x\n")
    assert_same_as_git(root, {"top.tmp", "build/out", "sub/x.gen", "keep/z.tmp"})


# -- the config chain as git finds it ----------------------------------------------------------


def excludes_config(home: Path, name: str, pattern: str, extra: str = "") -> Path:
    """A config file at ``home/name`` whose core.excludesFile holds ``pattern``."""
    rules = write(home, f"{name}.ignore", f"{pattern}\n")
    return write(home, name, f"[core]\n\texcludesFile = {rules}\n{extra}")


def make_files(root: Path, *names: str) -> None:
    for rel in names:
        write(root, rel, "x\n")


def test_git_config_global_sets_the_excludes_file(
    root: Path, hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = excludes_config(hermetic, "custom-global", "*.glob")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    make_files(root, "a.glob", "b.txt")
    assert_same_as_git(root, {"a.glob"})


def test_git_config_global_replaces_home_and_xdg_config(
    root: Path, hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    excludes_config(hermetic, ".gitconfig", "*.home")
    excludes_config(hermetic, ".config/git/config", "*.xdg")
    config = write(hermetic, "empty-global", "[user]\n\tname = x\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    # The default excludes file still applies when no config names one.
    write(hermetic, ".config/git/ignore", "*.default\n")
    make_files(root, "a.home", "b.xdg", "c.default", "d.txt")
    assert_same_as_git(root, {"c.default"})


def test_xdg_config_home_config_sets_the_excludes_file(
    root: Path, hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(hermetic / "elsewhere"))
    excludes_config(hermetic, "elsewhere/git/config", "*.xdg")
    write(hermetic, ".config/git/ignore", "*.notused\n")
    make_files(root, "a.xdg", "b.notused", "c.txt")
    assert_same_as_git(root, {"a.xdg"})


def test_home_gitconfig_beats_xdg_config(root: Path, hermetic: Path) -> None:
    excludes_config(hermetic, ".gitconfig", "*.home")
    excludes_config(hermetic, ".config/git/config", "*.xdg")
    make_files(root, "a.home", "b.xdg")
    assert_same_as_git(root, {"a.home"})


def test_git_config_system_is_read_unless_nosystem(
    root: Path, hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = excludes_config(hermetic, "system-config", "*.sys")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(config))
    make_files(root, "a.sys", "b.txt")
    assert_same_as_git(root, set())  # the hermetic environment sets GIT_CONFIG_NOSYSTEM=1
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM")
    assert_same_as_git(root, {"a.sys"})
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "false")
    assert_same_as_git(root, {"a.sys"})


def test_command_line_config_pairs_beat_the_files(
    root: Path, hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    excludes_config(hermetic, ".gitconfig", "*.home")
    rules = write(hermetic, "env.ignore", "*.env\n")
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.excludesfile")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(rules))
    make_files(root, "a.home", "b.env")
    assert_same_as_git(root, {"b.env"})


def test_ignorecase_from_the_global_config(
    root: Path, hermetic: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = write(hermetic, "icase-global", "[core]\n\tignorecase = true\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    git(root, "config", "--unset", "core.ignorecase", check=False)
    write(root, ".gitignore", "*.LOG\nBuild/\n")
    make_files(root, "a.log", "b.Log", "build/x", "c.txt")
    assert_same_as_git(root, {"a.log", "b.Log", "build/x"})


def test_ignorecase_in_a_nested_repository_follows_its_own_config(root: Path) -> None:
    write(root, ".gitignore", "*.LOG\n")
    inner = root / "inner"
    inner.mkdir()
    git(inner, "init", "-q", "--template=", "-b", "main")
    git(inner, "config", "core.ignorecase", "true")
    write(inner, ".gitignore", "*.TMP\n")
    make_files(root, "a.log", "inner/b.tmp", "inner/c.log", "inner/d.txt")
    ours = captured(root)
    inner_git = {f"inner/{p}" for p in git_lists(inner)}
    top_git = {p for p in git_lists(root) if not p.startswith("inner")}
    assert ours == top_git | inner_git, (
        f"each repository applies its own core.ignorecase: ours {sorted(ours)}, "
        f"git's {sorted(top_git | inner_git)}"
    )
    assert "inner/b.tmp" not in ours and "a.log" in ours, "fixture: the two repositories differ"


def test_readme_names_the_git_version_the_matcher_follows() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    version = ignore.GIT_SEMANTICS_VERSION
    assert f"git {version}" in readme, f"README should say the rules follow git {version}"
