"""snapshotter/git/config.py: which config files git reads, and how it reads a boolean."""

from __future__ import annotations

from pathlib import Path

import pytest

from snapshotter.errors import SnapshotterError
from snapshotter.git import config

SYSTEM, XDG, GLOBAL, LOCAL = 2, 3, 4, 5


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        (" Yes ", True),
        ("ON", True),
        ("1", True),
        ("-3", True),
        ("false", False),
        ("no", False),
        ("off", False),
        ("0", False),
        ("", False),
        ("maybe", None),
        ("1.0", None),
    ],
)
def test_git_bool_reads_booleans_as_git_does(text: str, value: bool | None) -> None:
    assert config.git_bool(text) is value
    assert config.truthy(text) is (value is True)


def test_truthy_of_unset_is_false() -> None:
    assert config.truthy(None) is False


def test_the_files_git_reads_follow_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GIT_CONFIG_NOSYSTEM", raising=False)
    monkeypatch.delenv("GIT_CONFIG_SYSTEM", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "h"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert config.config_files(tmp_path / "repo") == [
        (SYSTEM, Path("/etc/gitconfig")),
        (XDG, tmp_path / "h" / ".config" / "git" / "config"),
        (GLOBAL, tmp_path / "h" / ".gitconfig"),
        (LOCAL, tmp_path / "repo" / "config"),
    ]
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "yes")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "only"))
    assert config.config_files(None) == [(GLOBAL, tmp_path / "only")], "replaces both"
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "0")
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(tmp_path / "sys"))
    assert config.config_files(None)[0] == (SYSTEM, tmp_path / "sys")


def test_a_value_comes_from_the_most_specific_file_or_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "global"))
    (tmp_path / "global").write_text("[core]\n\tignoreCase = true\n\texcludesFile = ~/ex\n")
    common = tmp_path / "repo"
    common.mkdir()
    (common / "config").write_text("[core]\n\tignorecase = false\n")
    assert config.config_value(common, "core.excludesFile") == "~/ex"
    assert config.config_bool(common, "core.ignoreCase") is False, "the repository's wins"
    assert config.config_bool(None, "core.ignoreCase") is True
    assert config.config_value(common, "core.absent") is None
    assert config.config_bool(common, "core.absent") is None
    monkeypatch.setenv("GIT_CONFIG_COUNT", "2")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.ignorecase")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "yes")
    monkeypatch.setenv("GIT_CONFIG_KEY_1", "CORE.IGNORECASE")
    monkeypatch.setenv("GIT_CONFIG_VALUE_1", "off")
    assert config.config_bool(common, "core.ignoreCase") is False, "the last -c wins"
    monkeypatch.setenv("GIT_CONFIG_VALUE_1", "on")
    assert config.config_bool(common, "core.ignoreCase") is True


def test_a_repositorys_own_config_adds_its_worktree_config_when_asked(tmp_path: Path) -> None:
    common, git_dir = tmp_path / "common", tmp_path / "wt"
    common.mkdir()
    git_dir.mkdir()
    (git_dir / "config.worktree").write_text("[core]\n\tsparseCheckout\n")
    (common / "config").write_text("[core]\n\tBare = false\n")
    assert config.repository_config(git_dir, common) == {"core.bare": "false"}
    (common / "config").write_text("[core]\n\tbare = false\n[extensions]\n\tworktreeConfig = 1\n")
    found = config.repository_config(git_dir, common)
    assert found["core.sparsecheckout"] == "true", "a key without a value is true"
    assert config.config_file(tmp_path / "absent") == {}


def test_a_file_libgit2_cannot_parse_is_named_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "config").write_text("[core\n\tbroken")
    with pytest.raises(SnapshotterError, match=r"cannot read .*config") as caught:
        config.config_file(tmp_path / "config")
    assert "\n" not in str(caught.value)
