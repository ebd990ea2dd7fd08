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


# Config files as libgit2 reads them: ``config_file`` gives the same answer whether
# it read the file itself (a plain one) or through libgit2 (any other).
CONFIG_TEXTS = [
    b"[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    b'[remote "origin"]\n\turl = /src/repo\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
    b'[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n',
    b"[core]\nbare\n  worktree = /a b/c\nkey =\n# comment\n; other\n[Core]\nBare = FALSE\n",
    b'[sec "Sub"]\n\tKey = V\n',
    b"[core]\n\tx = caf\xc3\xa9\n\ty = \xff\xfe\n",
    b"[core]\n\tx=1\n\tx=2\n",
    b"",
    # Not plain: libgit2 reads these.
    b"[core]\n\tx = a  b\n",
    b'[core]\n\tx = "q"\n',
    b"[core]\n\tx = a # c\n",
    b"[core]\n\tx = a ; c\n",
    b"[a.b]\nc = d\n",
    b"[core] bare = true\n",
    b"x = 1\n",
    b"\xef\xbb\xbf[core]\nbare = true\n",
    b"[core]\r\nbare = true\r\n",
    b"[core]\n\tx = a\\\n b\n",
    b"[core]\n\tx = a\tb\n",
    b"[core]\n\tx = a\n# a comment \\\n",
]


def libgit2_values(path: Path) -> dict[str, str]:
    import pygit2

    found = {}
    for entry in pygit2.Config(str(path)):
        raw = entry.raw_value
        found[entry.raw_name.decode("utf-8", "surrogateescape").lower()] = (
            "true" if raw is None else raw.decode("utf-8", "surrogateescape")
        )
    return found


@pytest.mark.parametrize("text", CONFIG_TEXTS)
def test_a_config_file_reads_as_libgit2_reads_it(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "config"
    path.write_bytes(text)
    assert config.config_file(path) == libgit2_values(path)


def test_plain_files_are_read_without_libgit2_and_the_rest_through_it(tmp_path: Path) -> None:
    """What a no-change capture and ``list`` read (issue 24): git's own config files
    never need pygit2's import (~50 ms); anything git would read differently does."""
    path = tmp_path / "config"
    for text in CONFIG_TEXTS[:6]:
        path.write_bytes(text)
        assert config._plain_file(path) == libgit2_values(path), text
    for text in CONFIG_TEXTS[6:]:
        path.write_bytes(text)
        assert config._plain_file(path) is None, text
    path.write_bytes(b"[include]\n\tpath = other\n")
    assert config._plain_file(path) is None, "an include is libgit2's to follow"


def test_the_chain_is_read_plainly_only_when_every_file_is_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for key in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "XDG_CONFIG_HOME", "GIT_CONFIG_COUNT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    common = tmp_path / "git"
    common.mkdir()
    (home / ".gitconfig").write_bytes(b"[core]\n\texcludesFile = ~/ignore\n\tignorecase = true\n")
    (common / "config").write_bytes(b"[core]\n\tignoreCase = false\n")
    keys = ("core.excludesFile", "core.ignorecase", "core.attributesFile")
    expected = {"core.excludesFile": "~/ignore", "core.ignorecase": "false"}
    assert config._plain_chain(common, keys) == {
        "core.excludesfile": "~/ignore",
        "core.ignorecase": "false",
    }
    assert config.config_values(common, *keys) == {**expected, "core.attributesFile": None}
    (common / "config").write_bytes(b"[core]\n\texcludesFile = a\n\texcludesFile = b\n")
    assert config._plain_chain(common, keys) == {
        "core.excludesfile": "b",
        "core.ignorecase": "true",
    }
    assert config.config_value(common, "core.excludesFile") == "b", "the last one, as libgit2"
    (common / "config").write_bytes(b"[core]\n\tignoreCase = false\n")
    (home / ".gitconfig").write_bytes(b'[core]\n\texcludesFile = "~/quoted"\n')
    assert config._plain_chain(common, keys) is None, "a quoted value is libgit2's"
    assert config.config_value(common, "core.excludesFile") == "~/quoted"
    assert config._plain_chain(common, ("remote.origin.url",)) is None, "subsections: libgit2"
    (home / ".gitconfig").write_bytes(b"[core]\n\tignorecase\n")
    assert config._plain_chain(common, keys) is None, "a name without a value: libgit2's"
    assert config.config_values(common, "core.ignorecase") == {"core.ignorecase": "false"}
