"""The benchmark runner works end to end, on tiny worktrees (no timing asserted)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from builders import git, write

REPO_ROOT = Path(__file__).resolve().parents[2]

EXPECTED_FIGURES = {
    "floor",
    "python",
    "ref_first",
    "ref_nochange",
    "ref_edit10",
    "ref_changes",
    "ref_revert10",
    "ref_redo10",
    "first",
    "nochange",
    "nochange_served",
    "hook_first",
    "hook_first_prompt",
    "hook_first_now",
    "hook_alone",
    "hook",
    "hook_edit10",
    "undo10",
    "redo10",
    "undo10_cold",
    "redo10_cold",
    "list_cold",
    "api_nochange",
    "changes",
    "ref_store_first",
    "store_first",
    "store_first_shared",
    "server_rss",
    "server_hwm",
    "mcp_start",
    "mcp_tools",
    "mcp_call",
    "mcp_rss",
    "mcp_hwm",
    "checkpoints_growth",
    "checkpoints_growth_after_gc",
}
# Issue 16's table, row by row: (our figure, what it is divided by).
SUMMARY = {
    "first": "ref_first",
    "first_racy": "ref_first",
    "store_first": "ref_store_first",
    "nochange": "ref_nochange",
    "nochange_served": "ref_nochange",
    "hook_first": "floor",
    "hook_first_prompt": "floor",
    "hook_first_now": "floor",
    "hook_edit10": "ref_edit10",
    "undo10": "ref_revert10",
    "redo10": "ref_redo10",
    "undo10_cold": "ref_revert10",
    "redo10_cold": "ref_redo10",
    "server_rss": "server_hwm",
    "mcp_start": "python",
    "mcp_rss": "server_rss",
}
PROCESS_FIGURES = {
    "first",
    "nochange",
    "nochange_served",
    "hook_first",
    "hook_first_prompt",
    "hook_first_now",
    "hook_edit10",
    "undo10",
    "redo10",
    "undo10_cold",
    "redo10_cold",
}


def bench(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    out = tmp_path / "results.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--rounds",
            "1",
            "--json",
            str(out),
            "--tmp-dir",
            str(tmp_path / "tmp"),
            "--typing-pause",
            "0",
            *args,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CHECK" not in done.stdout, done.stdout
    return done, json.loads(out.read_text())


def fingerprint(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every file under ``root`` (.git included): content hash, mode, mtime."""
    found = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = Path(dirpath, name)
            st = path.lstat()
            found[str(path.relative_to(root))] = (
                hashlib.sha1(path.read_bytes()).hexdigest(),
                st.st_mode,
                st.st_mtime_ns,
            )
    return found


def processes_with_home_under(path: Path) -> list[int]:
    """Live processes whose HOME lies under ``path`` (the benchmark's hook servers would)."""
    marker = b"HOME=" + os.fsencode(str(path))
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
                state = (entry / "stat").read_text().rpartition(") ")[2][:1]
            except OSError:
                continue
            if state != "Z" and any(v.startswith(marker) for v in environ):
                found.append(int(entry.name))
    return found


def check_summary(document: dict[str, Any], label: str, checkpoints: bool = False) -> None:
    """Every row of issue 16's table is there for ``label``, with numbers that make sense."""
    rows = {r["key"]: r for r in document["summary"] if r["size"] == label}
    assert set(rows) == set(SUMMARY) | {"floor"}, f"summary rows for {label}: {sorted(rows)}"
    for key, row in rows.items():
        if key == "floor":
            assert row["ours"] > 0, row
            continue
        assert row["ours"] is not None and row["ours"] >= 0, row
        assert row["baseline"] is not None and row["baseline"] > 0, row
        assert row["ratio"] is not None, row
        assert abs(row["ratio"] - row["ours"] / row["baseline"]) < 1e-9, row
        if row["unit"] == "ms":
            assert row["ratio_floor"] is not None and row["ratio_floor"] > 0, row
        if key in PROCESS_FIGURES:
            assert row["ours_rss_mb"] > 0 and row["baseline_rss_mb"] > 0, row
    server = rows["server_rss"]
    assert 0 < server["ours"] <= server["baseline"], f"VmRSS above VmHWM: {server}"
    mcp = {r["key"]: r["median"] for r in document["rows"] if r["size"] == label}
    assert 0 < mcp["mcp_start"] <= mcp["mcp_tools"], f"start-up comes before tools/list: {mcp}"
    assert 0 < mcp["mcp_rss"] <= mcp["mcp_hwm"], f"the MCP server's VmRSS above its VmHWM: {mcp}"
    # A hook handled by the server is a small process; one that did the work itself is not,
    # and a session_start with no server running asks for one and does none of it.
    alone = {r["key"]: r for r in document["rows"] if r["size"] == label}["hook_alone"]
    assert rows["hook_edit10"]["ours_rss_mb"] < alone["peak_rss_mb"], (rows, alone)
    assert rows["hook_first"]["ours_rss_mb"] < alone["peak_rss_mb"], (rows, alone)
    keys = {r["key"] for r in document["rows"] if r["size"] == label}
    missing = (
        EXPECTED_FIGURES
        - keys
        - (set() if checkpoints else {"checkpoints_growth", "checkpoints_growth_after_gc"})
    )
    assert not missing, f"figures missing for {label}: {sorted(missing)}"
    assert all(r["median"] >= 0 and r["n"] >= 1 for r in document["rows"]), document["rows"]


def test_runner_measures_every_figure_then_reuses_its_cached_tree(tmp_path: Path) -> None:
    """One run on a synthetic tree (kept in a cache) and a worktree copy; a second run
    on the cached tree, its reference's first capture cut off at once. Three worktree
    runs in all: each costs seconds of the suite."""
    source = tmp_path / "project"
    source.mkdir()
    git(source, "init", "-q", "-b", "main")
    for i in range(40):
        write(source, f"pkg/mod{i % 4}/file{i}.py", f"value = {i}\n" * 20)
    write(source, ".gitignore", "*.log\n")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "base")
    write(source, "notes.md", "untracked, kept\n")
    write(source, "debug.log", "ignored\n")
    before = fingerprint(source)
    cache = tmp_path / "cache"

    done, document = bench(
        tmp_path,
        *("--sizes", "200", "--cache", str(cache), "--checkpoints", "5"),
        *("--worktree", str(source)),
    )

    for title in (
        "first capture / reference first",
        "bytes seeded from the source",
        "`snapshotter capture` no change, no server",
        "`snapshotter capture` no change, server running",
        "session_start, no server",
        "first prompt after session_start, no server",
        "hook with server, 10 files edited",
        "`undo` of a 10-file turn",
        "`redo` / reference redo",
        "hook server RSS after warm-up / its peak",
        "floor: git status --porcelain",
    ):
        assert done.stdout.count(f"| {title}") == 2, f"{title!r} not once per worktree"
    check_summary(document, "200", checkpoints=True)
    check_summary(document, "project")
    worktrees = {w["label"]: w for w in document["worktrees"]}
    assert worktrees["200"]["tracked"] == 200
    assert worktrees["project"]["tracked"] == 41
    assert worktrees["200"]["checkpoints"]["recorded"] == 5
    assert all(w["checks"] == [] for w in worktrees.values())
    assert document["targets"]
    # What was measured is snapshotter as `pip install .` lays it out (install.py).
    assert Path(document["versions"]["cli"][0]).parent.parent.name == "measured-install"
    # The user's worktree was only read; the temp dir is gone; no hook server is left.
    assert fingerprint(source) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "project", "results.json", "tmp"]
    assert list((tmp_path / "tmp").iterdir()) == []
    assert processes_with_home_under(tmp_path) == []

    (kept,) = cache.glob("synthetic-200-*")
    root = kept / "worktree"
    ready = (kept / "ready.json").stat().st_mtime_ns
    pristine = git(root, "status", "--porcelain")
    inode = (root / ".gitignore").stat().st_ino
    assert pristine == "?? assets/\n?? notes/\n", pristine

    # The reference's first capture stopped at once: a lower bound, and the run goes on.
    done, document = bench(
        tmp_path,
        *("--sizes", "200", "--cache", str(cache), "--checkpoints", "0", "--cold-rounds", "1"),
        *("--reference-first-limit", "0.001"),
    )

    check_summary(document, "200")
    (first,) = [r for r in document["summary"] if r["key"] == "first"]
    assert first["baseline_lower_bound"] and first["ratio_bound"] == "<", first
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("| first capture /")]
    assert "| > " in line and "| <" in line, f"the bound is not shown: {line}"
    assert (kept / "ready.json").stat().st_mtime_ns == ready, "the cached tree was regenerated"
    assert (root / ".gitignore").stat().st_ino == inode, "the cached tree was regenerated"
    assert git(root, "status", "--porcelain") == pristine, "the run's edits were left behind"
    assert [p.name for p in cache.iterdir()] == [kept.name], "a temp dir was left in the cache"
    assert processes_with_home_under(tmp_path) == []
