"""snapshotter/git/ignore.py: git's ignore decision over in-memory pattern lines.

Which path a walk enters is walk.py's (an ignored directory is pruned); these
ask the rules alone, path by path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from snapshotter.git.ignore import IgnoreRules, global_excludes_file


def rules(gitignore: list[bytes], *, where: str = "", icase: bool = False) -> IgnoreRules:
    return IgnoreRules.for_repository(None, None, icase).with_gitignore(where, gitignore)


def test_the_last_matching_line_wins() -> None:
    found = rules([b"*.log", b"!keep.log", b"debug/*.log"])
    assert found.is_ignored("a.log", False)
    assert not found.is_ignored("keep.log", False)
    assert not found.is_ignored("x.txt", False)
    assert found.is_ignored("debug/keep.log", False), "a later line decides again"


def test_a_trailing_slash_names_directories_only() -> None:
    found = rules([b"build/"])
    assert found.is_ignored("build", True)
    assert found.is_ignored("src/build", True)
    assert not found.is_ignored("build", False)


def test_a_slash_anchors_the_pattern_to_its_files_directory() -> None:
    top = rules([b"/only-top", b"doc/*.md"])
    assert top.is_ignored("only-top", False)
    assert not top.is_ignored("a/only-top", False)
    assert top.is_ignored("doc/x.md", False)
    assert not top.is_ignored("a/doc/x.md", False), "a pattern with a slash is anchored"
    nested = rules([b"doc/*.md", b"/here"], where="sub")
    assert nested.is_ignored("sub/doc/x.md", False) and nested.is_ignored("sub/here", False)
    assert not nested.is_ignored("doc/x.md", False) and not nested.is_ignored("here", False)


def test_double_stars() -> None:
    found = rules([b"**/cache", b"logs/**", b"a/**/z"])
    assert found.is_ignored("cache", True) and found.is_ignored("x/y/cache", False)
    assert found.is_ignored("logs/a/b.txt", False)
    assert not found.is_ignored("logs", True), "logs/** is what is inside logs"
    assert found.is_ignored("a/z", False) and found.is_ignored("a/b/c/z", False)


def test_the_most_specific_source_decides() -> None:
    base = IgnoreRules.for_repository(exclude=[b"*.tmp", b"!keep.bak"], global_=[b"*.bak"])
    assert base.is_ignored("x.tmp", False) and base.is_ignored("x.bak", False)
    assert not base.is_ignored("keep.bak", False), "info/exclude is above core.excludesFile"
    top = base.with_gitignore("", [b"!x.tmp"])
    deeper = top.with_gitignore("d", [b"*.txt"])
    assert not top.is_ignored("x.tmp", False), ".gitignore is above info/exclude"
    assert deeper.is_ignored("d/a.txt", False) and not deeper.is_ignored("a.txt", False)
    assert deeper.is_ignored("d/x.bak", False), "no line of a nearer file: the next source"


def test_a_file_with_nothing_that_can_match_adds_no_source() -> None:
    base = IgnoreRules.for_repository([b"*.o"], None)
    assert base.with_gitignore("a", [b"[unterminated", b"trailing\\"]) is base
    assert base.with_gitignore("a", None) is base
    assert IgnoreRules.for_repository(None, []).sources == ()


def test_case_blind_rules_fold_every_source_added_later() -> None:
    found = rules([b"*.LOG", b"Build/"], icase=True)
    assert found.is_ignored("a.log", False) and found.is_ignored("B.Log", False)
    assert found.is_ignored("BUILD", True)
    assert not rules([b"*.LOG"]).is_ignored("a.log", False)


def test_names_that_are_not_utf8_match_their_bytes() -> None:
    name = os.fsdecode(b"caf\xe9.txt")
    assert rules([b"caf\xe9*"]).is_ignored(name, False)
    assert not rules([b"caf\xc3\xa9*"]).is_ignored(name, False)


def test_the_global_excludes_file_is_gits_default_unless_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert global_excludes_file(None) == tmp_path / "xdg" / "git" / "ignore"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    assert global_excludes_file("") == tmp_path / ".config" / "git" / "ignore"
    assert global_excludes_file("~/my-ignore") == tmp_path / "my-ignore"
