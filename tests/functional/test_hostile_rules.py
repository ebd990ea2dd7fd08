"""Hostile ignore rules and rule files never hang a hook (issue 13 §9-§11).

- A FIFO named ``.gitignore``, ``info/exclude``, the excludes file or a nested
  ``.git``: nothing but a regular file is ever read, and nothing is opened in a
  way that blocks (§9).
- Patterns such as ``*a*a*a…b`` against long names: the matcher is
  O(path * pattern), not a backtracking regex (§10). Answers stay git's.
- A 3,000-line ``.gitignore``: each path tries only the patterns whose literal
  parts it holds (§11); the answers equal git's on a big rule file.

Hooks run as real ``snapshotter hook`` processes; their subprocess timeout is
a hang guard (a hung hook used to be killed by the agent at 20 s), not a
timing assertion.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import captured, event, git, run_cli, run_hook, write

from snapshotter import fileio
from snapshotter.git import rule_files, wildmatch

HANG_GUARD_S = 60


def hook(data_dir: Path, name: str, cwd: Path, **fields: Any) -> None:
    """One event through a real ``snapshotter hook``, its timeout the hang guard."""
    try:
        done = run_hook(event(name, cwd, "s1", **fields), data_dir, timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`snapshotter hook` ({name}) hung for {HANG_GUARD_S} s")
    assert done.returncode == 0, f"hook {name} exited {done.returncode}: {done.stderr!r}"


def checkpoint_count(data_dir: Path, cwd: Path) -> int:
    done = run_cli("list", "-C", cwd, "--json", data_dir=data_dir, timeout=HANG_GUARD_S)
    assert done.returncode == 0, f"list failed: {done.stderr!r}"
    return done.stdout.count('"id"')


def one_turn(data_dir: Path, cwd: Path, edit: Path) -> None:
    """A turn that edits ``edit``; the turn must be recorded."""
    hook(data_dir, "session_start", cwd)
    hook(data_dir, "turn_start", cwd)
    edit.write_text("changed by the agent\n")
    hook(data_dir, "turn_end", cwd, reason="normal")
    assert checkpoint_count(data_dir, cwd) >= 1, "the turn should have been recorded"


def git_lists(root: Path) -> set[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
        timeout=HANG_GUARD_S,
    ).stdout
    return {os.fsdecode(p) for p in out.split(b"\0") if p}


SCAN_IN_CHILD = """
import json, sys
from snapshotter.store.walk import scan
from snapshotter.git.worktree import find_worktree
tree = find_worktree(sys.argv[1])
print(json.dumps(sorted(scan(tree, previous=frozenset(), max_new_file_size=1 << 40).entries)))
"""


def captured_guarded(root: Path) -> set[str]:
    """``captured`` in a child process, so a matcher that hangs fails the test instead."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", SCAN_IN_CHILD, str(root)],
            capture_output=True,
            check=True,
            timeout=HANG_GUARD_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"scan() hung for {HANG_GUARD_S} s")
    return set(json.loads(done.stdout))


# -- §9: FIFOs where rule files are ----------------------------------------------------------


def test_fifo_rule_files_do_not_hang_the_hook(repo: Path, data_dir: Path, hermetic: Path) -> None:
    os.mkfifo(repo / ".gitignore")
    os.mkfifo(repo / "src" / ".gitignore")
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").unlink(missing_ok=True)
    os.mkfifo(repo / ".git" / "info" / "exclude")
    os.mkfifo(hermetic / "excludes-fifo")
    git(repo, "config", "core.excludesFile", str(hermetic / "excludes-fifo"))
    (repo / "vendor").mkdir()
    os.mkfifo(repo / "vendor" / ".git")  # not a repository: must not be read as a gitdir file
    write(repo, "vendor/lib.py", "x = 1\n")
    one_turn(data_dir, repo, repo / "src" / "app.py")


def test_fifo_dot_git_in_the_hook_directory_does_not_hang(repo: Path, data_dir: Path) -> None:
    (repo / "pkg").mkdir()
    os.mkfifo(repo / "pkg" / ".git")
    write(repo, "pkg/mod.py", "y = 2\n")
    one_turn(data_dir, repo / "pkg", repo / "pkg" / "mod.py")


def test_fifo_rule_file_reads_as_absent(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "rules")
    assert rule_files.read_rule_file(tmp_path / "rules") == (None, True), (
        "a FIFO is opened without blocking and not read"
    )
    assert rule_files.read_lines(tmp_path / "missing") is None


def test_the_safe_read_takes_regular_files_only(tmp_path: Path) -> None:
    """fileio.read_regular, which every reader of a file it did not write goes through."""
    os.mkfifo(tmp_path / "fifo")
    write(tmp_path, "file", "bytes\n")
    os.symlink("file", tmp_path / "link")
    assert fileio.read_regular(tmp_path / "fifo") is None, "opened without blocking, not read"
    assert fileio.read_regular(tmp_path / "file") == b"bytes\n"
    assert fileio.read_regular(tmp_path / "file", max_size=5) is None, "over the limit"
    with pytest.raises(OSError):
        fileio.read_regular(tmp_path / "link")  # never through a link, unless asked
    assert fileio.read_regular(tmp_path / "link", follow_symlinks=True) == b"bytes\n"
    os.symlink("fifo", tmp_path / "fifo-link")
    assert fileio.read_regular(tmp_path / "fifo-link", follow_symlinks=True) is None


# -- §10: patterns that make a backtracking matcher explode ------------------------------------

HOSTILE = [
    "*a" * 20 + "*b",  # the line: fails at the end of the name
    "*a" * 20 + "*b*",  # ends with "*": no literal suffix to reject it early
    "[a-z]*" * 12 + "?b*",  # classes between stars
]
# git before 2.41 (commit 1f2e05f0b7, "wildmatch: fix exponential behavior")
# hangs on these itself, so they are checked without git as the oracle.
HOSTILE_STARSTAR = [
    "a/" + "**/a/" * 12 + "**/b",  # "**" runs against a deep path
    "a/" + "**/a/" * 12 + "**/b/**",  # the same with no literal end
]
DEEP = "/".join(["a"] * 40)


def hostile_tree(root: Path, lines: list[str]) -> Path:
    root.mkdir()
    git(root, "init", "-q", "--template=", "-b", "main")
    write(root, ".gitignore", "".join(f"{line}\n" for line in lines))
    long_name = "a" * 200
    write(root, long_name, "x\n")
    write(root, "a" * 60 + "b" + "a" * 30, "matches several\n")
    write(root, f"{DEEP}/c", "deep\n")
    write(root, f"{DEEP}/b/x", "deep, under b\n")
    write(root, "keep.txt", "x\n")
    git(root, "add", ".gitignore", "keep.txt")
    git(root, "commit", "-q", "-m", "hostile rules")
    return root


def test_hostile_patterns_do_not_hang_the_hook(tmp_path: Path, data_dir: Path) -> None:
    root = hostile_tree(tmp_path / "repo", HOSTILE + HOSTILE_STARSTAR)
    one_turn(data_dir, root, root / "keep.txt")


def test_hostile_starstar_patterns_answer_as_git_would(tmp_path: Path) -> None:
    root = hostile_tree(tmp_path / "repo", HOSTILE_STARSTAR)
    kept = captured_guarded(root)
    assert f"{DEEP}/c" in kept and f"{DEEP}/b/x" not in kept, (
        f"a/**/a/…/**/b ignores {DEEP}/b (and so b/x) but not {DEEP}/c; kept {sorted(kept)}"
    )


def test_hostile_patterns_answer_as_git(tmp_path: Path) -> None:
    root = hostile_tree(tmp_path / "repo", HOSTILE)
    expected = git_lists(root)
    assert "a" * 60 + "b" + "a" * 30 not in expected, "fixture: git should ignore that name"
    assert captured_guarded(root) == expected, "scan() should keep exactly what git lists"


def test_automaton_and_regex_agree_on_every_conformance_pattern() -> None:
    """The two matchers read the same tokens; they must give the same answers."""
    from test_ignore_conformance import CASES

    rng = random.Random(13)
    subjects = {p.encode() for case in CASES for p in (*case.files, *case.tracked)}
    subjects |= {
        b"".join(
            rng.choice([b"a", b"b", b"/", b"x", b".", b"A"]) for _ in range(rng.randint(1, 12))
        )
        for _ in range(300)
    }
    lines = [
        ln
        for case in CASES
        for text in case.ignores.values()
        for ln in rule_files.parse_lines(text.encode() if isinstance(text, str) else text)
    ]
    lines += [line.encode() for line in HOSTILE + HOSTILE_STARSTAR]
    checked = 0
    for line in lines:
        for icase in (False, True):
            pattern = wildmatch.compile_pattern(line, icase)
            if not pattern.tokens:
                continue
            regex = wildmatch._regex(pattern.tokens)
            automaton = wildmatch._automaton(pattern.tokens)
            for subject in subjects:
                subject = subject.lower() if icase else subject
                assert (regex.fullmatch(subject) is not None) == automaton(subject), (
                    f"pattern {line!r} (icase={icase}) on {subject!r}: the matchers disagree"
                )
                checked += 1
    assert checked > 10_000, f"only {checked} pairs checked"


# -- §11: a big rule file -------------------------------------------------------------------------

BIG_RULES = int(os.environ.get("SNAPSHOTTER_BIG_RULES", "3000"))


def big_rules(n: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """``n`` varied pattern lines and ``n`` untracked paths that meet some of them."""
    rules, files = [], []
    for i in range(n):
        kind = i % 8
        rules.append(
            [
                f"name{i}.dat",
                f"*.ext{i}",
                f"/top{i}/",
                f"dir{i}/*.log",
                f"**/deep{i}",
                f"pre{i}*",
                f"!keep{i - 6}.ext{i - 6}",
                f"[nN]ame{i}.bin",
            ][kind]
        )
        j = rng.randrange(n)
        files.append(
            [
                f"d{j % 50}/name{j}.dat",
                f"d{j % 50}/f{i}.ext{j}",
                f"top{j}/x",
                f"dir{j}/a.log",
                f"q/deep{j}",
                f"d{j % 50}/pre{j}x",
                f"keep{j}.ext{j}",
                f"Name{j}.bin",
            ][rng.randrange(8)]
        )
    return rules, sorted(set(files))


def test_big_rule_file_answers_as_git(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "--template=", "-b", "main")
    rules, files = big_rules(BIG_RULES, random.Random(11))
    write(root, ".gitignore", "".join(f"{line}\n" for line in rules))
    for rel in files:
        write(root, rel, "x\n")
    expected = git_lists(root)
    assert 0 < len(expected) < len(files), "fixture: git should ignore some files, not all"
    assert captured(root) == expected, "scan() should keep exactly what git lists"


def test_a_path_tries_only_the_rules_that_can_match(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cost grows with the rules a path can meet, not with the length of the file."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "--template=", "-b", "main")
    rules, files = big_rules(BIG_RULES, random.Random(12))
    write(root, ".gitignore", "".join(f"{line}\n" for line in rules))
    for rel in files:
        write(root, rel, "x\n")
    tried = 0
    original = wildmatch.Pattern.matches

    def counting(self: wildmatch.Pattern, subject: bytes) -> bool:
        nonlocal tried
        tried += 1
        return original(self, subject)

    monkeypatch.setattr(wildmatch.Pattern, "matches", counting)
    walked = captured(root)
    paths = len(files) + 2 * len({rel.split("/")[0] for rel in files})  # files and dirs
    assert walked, "the walk should keep some files"
    assert tried <= 4 * paths, (
        f"{tried} pattern tests for about {paths} paths and {len(rules)} rules: "
        "each path should try only the rules whose literal parts it holds"
    )


def test_ignore_rules_benchmark_runs_and_agrees_with_git(tmp_path: Path) -> None:
    """``python -m benchmarks.ignore_rules`` end to end, small (no timing asserted)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.ignore_rules",
            "--rules",
            "200",
            "--files",
            "200",
            "--rounds",
            "1",
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        check=False,
        timeout=HANG_GUARD_S * 5,
    )
    assert done.returncode == 0, f"benchmark failed: {done.stdout}{done.stderr}"
    assert "git status" in done.stdout and "scan" in done.stdout, done.stdout
