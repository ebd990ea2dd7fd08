"""The benchmark runner works end to end, on a tiny worktree (no timing asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

EXPECTED_FIGURES = {
    "floor",
    "ref_first",
    "ref_nochange",
    "ref_edit10",
    "ref_changes",
    "ref_restore10",
    "first",
    "nochange",
    "nochange_watch",
    "edit10",
    "changes",
    "undo10",
    "hook",
    "ref_store_first",
    "store_first",
    "checkpoints_growth",
    "checkpoints_growth_after_gc",
}


def test_runner_measures_every_figure_at_200_files(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks",
            "--sizes",
            "200",
            "--rounds",
            "1",
            "--checkpoints",
            "5",
            "--json",
            str(out),
            "--tmp-dir",
            str(tmp_path),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "CHECK" not in done.stdout
    assert "| git status --porcelain (the floor)" in done.stdout
    assert "ours: undo of a 10-file checkpoint" in done.stdout

    document = json.loads(out.read_text())
    rows = document["rows"]
    assert {r["key"] for r in rows} >= EXPECTED_FIGURES
    assert all(r["size"] == "200" for r in rows)
    assert all(r["n"] >= 1 for r in rows)
    (worktree,) = document["worktrees"]
    assert worktree["tracked"] == 200
    assert worktree["checks"] == []
    assert worktree["checkpoints"]["recorded"] == 5
    assert document["targets"]
    # Everything lived in the temp dir given, and it is gone.
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
