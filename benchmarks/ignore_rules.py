"""A big ``.gitignore`` against many untracked files: our walk beside git's (issue 13 §11).

``python -m benchmarks.ignore_rules [--rules 3000] [--files 3000] [--rounds 5]``

Builds one repository in a temp directory (removed at the end): a committed
``.gitignore`` of ``--rules`` varied lines (literal names, ``*.ext``,
anchored directories, ``dir/*.log``, ``**/name``, ``prefix*``, negations,
bracket classes) and ``--files`` untracked files that meet some of them. Then,
interleaved per round, it times:

- ``scan``: snapshotter's whole walk with the rules compiled afresh, as a hook
  process does it;
- ``scan (rules cached)``: the same walk in a process that compiled them before;
- ``git status --porcelain -uall``: the floor, in the same run.

Each figure is the median of its rounds; both sides must keep the same files.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def git(cwd: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


def rule_file(n: int, rng: random.Random) -> tuple[list[str], list[str]]:
    """``n`` pattern lines of eight kinds and ``n`` untracked paths."""
    rules, files = [], []
    for i in range(n):
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
            ][i % 8]
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
                f"src/m{j}/mod{i}.py",
            ][rng.randrange(9)]
        )
    return rules, sorted(set(files))


def build(root: Path, rules: list[str], files: list[str]) -> None:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("".join(f"{line}\n" for line in rules))
    git(root, "add", ".gitignore")
    git(root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "rules")
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")


def timed_scan(root: Path, fresh: bool) -> tuple[float, set[str]]:
    """(seconds, paths kept) of snapshotter's walk of ``root``; ``fresh``: rules compiled anew.

    THE ONLY PLACE the benchmarks reach into snapshotter's internals: the
    public API has no walk without a capture, and this figure is the walk
    alone. When the modules move, update the three imports below (the
    ignore-rule matcher with its compile cache, the walk, the worktree finder).
    """
    from snapshotter.git import ignore
    from snapshotter.git.worktree import find_worktree
    from snapshotter.store.walk import scan

    if fresh:
        ignore._compile.cache_clear()
    start = time.perf_counter()
    kept = set(scan(find_worktree(root), previous=frozenset(), max_new_file_size=1 << 40).entries)
    return time.perf_counter() - start, kept


def timed_git(root: Path) -> tuple[float, set[str]]:
    start = time.perf_counter()
    out = git(root, "status", "--porcelain", "-uall", "-z")
    took = time.perf_counter() - start
    listed = {os.fsdecode(entry[3:]) for entry in out.split(b"\0") if entry}
    tracked = {os.fsdecode(p) for p in git(root, "ls-files", "-z").split(b"\0") if p}
    return took, listed | tracked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=3000)
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    # Neither side may read the caller's own config (an excludes file would differ).
    os.environ.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    rng = random.Random(13)
    rules, _ = rule_file(args.rules, rng)
    _, files = rule_file(args.files, rng)
    figures: dict[str, list[float]] = {"scan": [], "scan (rules cached)": [], "git status": []}
    with tempfile.TemporaryDirectory(prefix="ignore-rules-bench-") as tmp:
        root = Path(tmp) / "repo"
        build(root, rules, files)
        for _ in range(args.rounds):
            took, ours = timed_scan(root, fresh=True)
            figures["scan"].append(took)
            took, _again = timed_scan(root, fresh=False)
            figures["scan (rules cached)"].append(took)
            took, theirs = timed_git(root)
            figures["git status"].append(took)
            if ours != theirs:
                print(
                    f"MISMATCH: only ours {sorted(ours - theirs)[:5]}, "
                    f"only git's {sorted(theirs - ours)[:5]}"
                )
                return 1
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"{len(rules)} rules, {len(files)} untracked files, {len(ours)} kept; "
        f"median of {args.rounds} rounds"
    )
    for name, samples in figures.items():
        print(f"  {name + ':':<24}{statistics.median(samples) * 1000:9.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
